// RNN, GRU and LSTM, unrolled over the (static) sequence length: one matrix
// product for the input projections of all steps, then one small product
// per step and direction. sequence_lens masks finished batch entries: their
// state is carried unchanged and their outputs are zero, which also makes the
// reverse direction start at each entry's own last step.
#include <cmath>
#include <functional>
#include <tuple>
#include <utility>

#include "base/status.h"
#include "onnx/ops/activations.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

enum class Cell { kRnn, kGru, kLstm };

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

absl::StatusOr<Instruction*> Apply(NodeContext& ctx, const Activation& a, Instruction* x) {
  if (Instruction* y = NamedActivation(ctx.b(), a.name, x, a.alpha, a.beta)) return y;
  return ctx.Unsupported(absl::StrCat("activation '", a.name, "'"));
}

// Rows [k*h, (k+1)*h) of a [n*h, d] matrix.
Instruction* Rows(hlo::Builder& b, Instruction* m, int64_t k, int64_t h) {
  return b.Slice(m, {k * h, 0}, {(k + 1) * h, m->shape().dims[1]}, {1, 1});
}

Instruction* MatMulT(hlo::Builder& b, Instruction* x, Instruction* w) {  // x [m,k] . w[n,k]^T
  hlo::DotDimensionNumbers d;
  d.lhs_contracting_dimensions = {1};
  d.rhs_contracting_dimensions = {1};
  return b.Dot(x, w, d);
}

// The node's activations, `per_dir` per direction (f, g[, h]): the named
// ones with their alphas and betas, else the op's defaults.
std::vector<Activation> Activations(NodeContext& ctx, int per_dir, int64_t dirs) {
  std::vector<std::string> names;
  for (const auto& a : ctx.node().attribute())
    if (a.name() == "activations")
      for (const auto& s : a.strings()) names.push_back(s);
  std::vector<float> alphas = ctx.attr_floats("activation_alpha"), betas = ctx.attr_floats("activation_beta");
  // The ONNX defaults: LSTM (Sigmoid, Tanh, Tanh), GRU (Sigmoid, Tanh), RNN (Tanh).
  const std::vector<std::string> defaults = per_dir == 3   ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : per_dir == 2 ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                           : std::vector<std::string>{"Tanh"};
  std::vector<Activation> acts;
  for (int64_t k = 0; k < per_dir * dirs; ++k) {
    Activation a;
    a.name = k < static_cast<int64_t>(names.size()) ? names[k] : defaults[k % per_dir];
    ActivationDefaults(a.name, &a.alpha, &a.beta);
    if (k < static_cast<int64_t>(alphas.size())) a.alpha = alphas[k];
    if (k < static_cast<int64_t>(betas.size())) a.beta = betas[k];
    acts.push_back(a);
  }
  return acts;
}

// Y, Y_h and Y_c from each direction's values, in the node's layout.
void SetOutputs(NodeContext& ctx, const std::vector<Instruction*>& y_dirs, const std::vector<Instruction*>& h_dirs,
                const std::vector<Instruction*>& c_dirs, int64_t layout) {
  hlo::Builder& b = ctx.b();
  Instruction* y = b.Concatenate(y_dirs, 1);   // [seq, dirs, batch, hidden]
  Instruction* yh = b.Concatenate(h_dirs, 0);  // [dirs, batch, hidden]
  Instruction* yc = c_dirs.empty() ? nullptr : b.Concatenate(c_dirs, 0);
  if (layout) {
    y = b.Transpose(y, {2, 0, 1, 3});
    yh = b.Transpose(yh, {1, 0, 2});
    if (yc) yc = b.Transpose(yc, {1, 0, 2});
  }
  ctx.set_output(0, y);
  ctx.set_output(1, yh);
  ctx.set_output(2, yc);
}

// Direction d's initial hidden (input 5) or cell (input 6) state, zeros
// when the node has none: [batch, hidden].
Instruction* InitialState(NodeContext& ctx, int input, int64_t d, int64_t layout, hlo::PrimitiveType t, int64_t batch,
                          int64_t hidden) {
  hlo::Builder& b = ctx.b();
  if (!ctx.has_input(input)) return Splat(b, t, 0, {batch, hidden});
  Instruction* s = ctx.input(input);
  if (layout) s = b.Transpose(s, {1, 0, 2});
  return b.Reshape(b.Slice(s, {d, 0, 0}, {d + 1, batch, hidden}, {1, 1, 1}), {batch, hidden});
}

// One step's gate inputs: xg(k) is gate k's input projection, hr(v, k)
// its recurrent term for state v, clipped() applies the node's clip, and
// peep(k, c, v) adds LSTM's peephole term (v unchanged without one).
struct GateTerms {
  std::function<Instruction*(int64_t)> xg;
  std::function<Instruction*(Instruction*, int64_t)> hr;
  std::function<Instruction*(Instruction*)> clipped;
  std::function<Instruction*(int64_t, Instruction*, Instruction*)> peep;
};

// A GRU step (gate order z, r, h): the new hidden state.
absl::StatusOr<Instruction*> GruStep(NodeContext& ctx, const GateTerms& t, const Activation& f, const Activation& g,
                                     Instruction* h, bool linear_before_reset) {
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(Instruction * z, Apply(ctx, f, t.clipped(b.Binary(Opcode::kAdd, t.xg(0), t.hr(h, 0)))));
  ASSIGN_OR_RETURN(Instruction * rr, Apply(ctx, f, t.clipped(b.Binary(Opcode::kAdd, t.xg(1), t.hr(h, 1)))));
  Instruction* pre = linear_before_reset ? b.Binary(Opcode::kAdd, t.xg(2), b.Binary(Opcode::kMultiply, rr, t.hr(h, 2)))
                                         : b.Binary(Opcode::kAdd, t.xg(2), t.hr(b.Binary(Opcode::kMultiply, rr, h), 2));
  ASSIGN_OR_RETURN(Instruction * hh, Apply(ctx, g, t.clipped(pre)));
  return b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, b.Binary(Opcode::kSubtract, SplatLike(b, z, 1), z), hh),
                  b.Binary(Opcode::kMultiply, z, h));
}

// An LSTM step (gate order in W and R: input, output, forget, cell) with
// activations acts[0..2]: the new hidden and cell states.
absl::StatusOr<std::pair<Instruction*, Instruction*>> LstmStep(NodeContext& ctx, const GateTerms& t,
                                                               const Activation* acts, Instruction* h, Instruction* c) {
  hlo::Builder& b = ctx.b();
  auto gate = [&](int64_t k, Instruction* cc) { return t.peep(k, cc, b.Binary(Opcode::kAdd, t.xg(k), t.hr(h, k))); };
  ASSIGN_OR_RETURN(Instruction * i, Apply(ctx, acts[0], t.clipped(gate(0, c))));
  ASSIGN_OR_RETURN(Instruction * fg, Apply(ctx, acts[0], t.clipped(gate(2, c))));
  ASSIGN_OR_RETURN(Instruction * cc, Apply(ctx, acts[1], t.clipped(b.Binary(Opcode::kAdd, t.xg(3), t.hr(h, 3)))));
  Instruction* c_new = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, fg, c), b.Binary(Opcode::kMultiply, i, cc));
  ASSIGN_OR_RETURN(Instruction * o, Apply(ctx, acts[0], t.clipped(gate(1, c_new))));
  ASSIGN_OR_RETURN(Instruction * hc, Apply(ctx, acts[2], c_new));
  return std::make_pair(b.Binary(Opcode::kMultiply, o, hc), c_new);
}

template <Cell kCell>
absl::Status Recurrent(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* x = ctx.input(0);
  Instruction* w = ctx.input(1);
  Instruction* r = ctx.input(2);
  if (!x || !w || !r) return ctx.Error("needs X, W and R");
  if (x->shape().rank() != 3 || w->shape().rank() != 3 || r->shape().rank() != 3)
    return ctx.Error(absl::StrCat("X, W and R must have rank 3, not ", x->shape().rank(), ", ", w->shape().rank(),
                                  " and ", r->shape().rank()));
  int64_t layout = ctx.attr_i("layout", 0);
  if (layout) x = b.Transpose(x, {1, 0, 2});
  hlo::PrimitiveType t = x->shape().element_type;
  int64_t seq = x->shape().dims[0], batch = x->shape().dims[1], in = x->shape().dims[2];
  int64_t hidden = ctx.attr_i("hidden_size", r->shape().dims.back());
  std::string direction = ctx.attr_s("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int gates = kCell == Cell::kLstm ? 4 : kCell == Cell::kGru ? 3 : 1;
  if (w->shape().dims != std::vector<int64_t>{dirs, gates * hidden, in}) return ctx.Error("W has the wrong shape");
  float clip = ctx.attr_f("clip", 0);
  bool linear_before_reset = ctx.attr_i("linear_before_reset", 0) != 0;
  if (kCell == Cell::kLstm && ctx.attr_i("input_forget", 0) != 0) return ctx.Unsupported("input_forget=1");
  const int per_dir = kCell == Cell::kLstm ? 3 : kCell == Cell::kGru ? 2 : 1;  // activations per direction
  std::vector<Activation> acts = Activations(ctx, per_dir, dirs);
  Instruction* lens = nullptr;
  if (ctx.has_input(4)) lens = b.Broadcast(b.Convert(ctx.input(4), hlo::S64), {batch, hidden}, {0});
  auto state = [&](int input, int64_t d) { return InitialState(ctx, input, d, layout, t, batch, hidden); };
  std::vector<Instruction*> y_dirs, h_dirs, c_dirs;
  Instruction* x2 = b.Reshape(x, {seq * batch, in});
  for (int64_t d = 0; d < dirs; ++d) {
    Instruction* wd = b.Reshape(b.Slice(w, {d, 0, 0}, {d + 1, gates * hidden, in}, {1, 1, 1}), {gates * hidden, in});
    Instruction* rd =
        b.Reshape(b.Slice(r, {d, 0, 0}, {d + 1, gates * hidden, hidden}, {1, 1, 1}), {gates * hidden, hidden});
    // All steps' input projections at once, plus the W bias: [seq, batch, G*h].
    Instruction* xw = b.Reshape(MatMulT(b, x2, wd), {seq, batch, gates * hidden});
    Instruction* wb = nullptr;
    Instruction* rb = nullptr;
    if (ctx.has_input(3)) {
      Instruction* bias =
          b.Reshape(b.Slice(ctx.input(3), {d, 0}, {d + 1, 2 * gates * hidden}, {1, 1}), {2 * gates * hidden});
      wb = b.Slice(bias, {0}, {gates * hidden}, {1});
      rb = b.Slice(bias, {gates * hidden}, {2 * gates * hidden}, {1});
      xw = b.Binary(Opcode::kAdd, xw, b.Broadcast(wb, xw->shape().dims, {2}));
    }
    auto gate_rows = [&](Instruction* m, int64_t k) { return Rows(b, m, k, hidden); };
    auto vec = [&](Instruction* v, int64_t k) {  // bias slice k broadcast to [batch, hidden]
      return b.Broadcast(b.Slice(v, {k * hidden}, {(k + 1) * hidden}, {1}), {batch, hidden}, {1});
    };
    auto clipped = [&](Instruction* v) {
      return clip > 0 ? b.Clamp(b.ScalarConstant(t, -clip), v, b.ScalarConstant(t, clip)) : v;
    };
    const Activation* f = &acts[d * per_dir];
    Instruction* h = state(5, d);
    Instruction* c = kCell == Cell::kLstm ? state(6, d) : nullptr;
    Instruction* peep = kCell == Cell::kLstm && ctx.has_input(7)
                            ? b.Reshape(b.Slice(ctx.input(7), {d, 0}, {d + 1, 3 * hidden}, {1, 1}), {3 * hidden})
                            : nullptr;
    bool reverse = direction == "reverse" || (direction == "bidirectional" && d == 1);
    std::vector<Instruction*> ys(seq);
    // Each step's gate projections are slices of the [seq * batch, G*h]
    // rows taken straight into the gates' arithmetic (which reads slices in
    // place), not a step slice sliced again.
    Instruction* xrows = b.Reshape(xw, {seq * batch, gates * hidden});
    for (int64_t step = 0; step < seq; ++step) {
      int64_t ti = reverse ? seq - 1 - step : step;
      auto xg = [&](int64_t k) {
        return b.Slice(xrows, {ti * batch, k * hidden}, {(ti + 1) * batch, (k + 1) * hidden}, {1, 1});
      };
      // One product of h with every gate's rows of R per step (a step's
      // cost is mostly the product's fixed cost at these sizes), sliced
      // per gate; only GRU's candidate gate without linear_before_reset
      // multiplies another vector, (r * h), and keeps a product of its own.
      int64_t shared_gates = kCell == Cell::kGru && !linear_before_reset ? 2 : gates;
      Instruction* hall = MatMulT(b, h, b.Slice(rd, {0, 0}, {shared_gates * hidden, hidden}, {1, 1}));
      auto hr = [&](Instruction* hh, int64_t k) {
        Instruction* v = hh == h && k < shared_gates ? b.Slice(hall, {0, k * hidden}, {batch, (k + 1) * hidden}, {1, 1})
                                                     : MatMulT(b, hh, gate_rows(rd, k));
        return rb ? b.Binary(Opcode::kAdd, v, vec(rb, k)) : v;
      };
      Instruction* h_new;
      Instruction* c_new = nullptr;
      if (kCell == Cell::kRnn) {
        ASSIGN_OR_RETURN(h_new, Apply(ctx, *f, clipped(b.Binary(Opcode::kAdd, xg(0), hr(h, 0)))));
      } else if (kCell == Cell::kGru) {
        GateTerms terms{xg, hr, clipped, nullptr};
        ASSIGN_OR_RETURN(h_new, GruStep(ctx, terms, acts[d * per_dir], acts[d * per_dir + 1], h, linear_before_reset));
      } else {
        auto peep_term = [&](int64_t k, Instruction* cc, Instruction* v) {
          return peep ? b.Binary(Opcode::kAdd, v, b.Binary(Opcode::kMultiply, vec(peep, k), cc)) : v;
        };
        GateTerms terms{xg, hr, clipped, peep_term};
        ASSIGN_OR_RETURN(std::tie(h_new, c_new), LstmStep(ctx, terms, &acts[d * per_dir], h, c));
      }
      if (lens) {
        Instruction* live = b.Compare(Splat(b, hlo::S64, ti, {batch, hidden}), lens, hlo::ComparisonDirection::kLt);
        ys[ti] = b.Select(live, h_new, SplatLike(b, h_new, 0));
        h_new = b.Select(live, h_new, h);
        if (c_new) c_new = b.Select(live, c_new, c);
      } else {
        ys[ti] = h_new;
      }
      h = h_new;
      c = c_new;
    }
    std::vector<Instruction*> ys4;
    for (Instruction* yt : ys) ys4.push_back(b.Reshape(yt, {1, 1, batch, hidden}));
    y_dirs.push_back(seq > 0 ? b.Concatenate(ys4, 0) : nullptr);
    h_dirs.push_back(b.Reshape(h, {1, batch, hidden}));
    if (c) c_dirs.push_back(b.Reshape(c, {1, batch, hidden}));
  }
  SetOutputs(ctx, y_dirs, h_dirs, c_dirs, layout);
  return absl::OkStatus();
}

}  // namespace

void RegisterRnnOps(Registry& r) {
  r.Add("RNN", Recurrent<Cell::kRnn>, 7);
  r.Add("GRU", Recurrent<Cell::kGru>, 7);
  r.Add("LSTM", Recurrent<Cell::kLstm>, 7);
}

}  // namespace xonnx::onnx_import
