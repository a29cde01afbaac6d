// If, Loop and Scan. An If with a known condition converts its branch
// inline; with a runtime condition it becomes an HLO conditional whose two
// branch computations take the values they capture as one tuple. Loop and
// Scan are unrolled over a trip count / sequence length known at compile
// time, with a runtime loop condition applied as a mask on the carried
// state; a Loop with a runtime trip count becomes an HLO while.
#include <algorithm>
#include <set>

#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

constexpr int64_t kMaxUnrolledIterations = 4096;

// Binds a subgraph input to `v`, reshaped to the rank the subgraph declares.
void Bind(hlo::Builder& b, GraphValues& scope, const onnx::ValueInfoProto& decl, Instruction* v) {
  if (decl.type().tensor_type().has_shape()) {
    const auto& shape = decl.type().tensor_type().shape();
    if (shape.dim_size() != v->shape().rank() && shape.dim_size() <= 1 && v->shape().ElementCount() == 1)
      v = b.Reshape(v, std::vector<int64_t>(shape.dim_size(), 1));
  }
  scope.values[decl.name()] = v;
}

absl::StatusOr<std::vector<Instruction*>> Outputs(NodeContext& ctx, const onnx::GraphProto& g, const GraphValues& scope) {
  std::vector<Instruction*> outs;
  for (const auto& o : g.output()) {
    auto it = scope.values.find(o.name());
    if (it == scope.values.end()) return ctx.Error(absl::StrCat("subgraph output '", o.name(), "' is never produced"));
    outs.push_back(it->second);
  }
  return outs;
}

// A scalar pred from a bool tensor of one element.
Instruction* ScalarPred(hlo::Builder& b, Instruction* v) { return b.Convert(b.Reshape(v, {}), hlo::PRED); }

bool IsConst(const Instruction* i, bool value) {
  return i->opcode() == Opcode::kConstant && (i->literal->GetAsDouble(0) != 0) == value;
}

// An If on a runtime condition: one computation per branch, both taking the
// tuple of the non-constant values the branches capture (constants are
// copied in, so that shape-like values stay known inside the branches).
absl::Status IfAsConditional(NodeContext& ctx, Instruction* cond, const onnx::GraphProto& then_g,
                             const onnx::GraphProto& else_g) {
  hlo::Builder& b = ctx.b();
  std::set<std::string> none, free;
  FreeNames(then_g, none, free);
  FreeNames(else_g, none, free);
  std::vector<std::string> captured;
  std::vector<Instruction*> captured_values;
  for (const std::string& name : free) {
    auto it = ctx.values().values.find(name);
    if (it == ctx.values().values.end()) {
      if (ctx.values().strings.count(name)) continue;  // strings are host values: visible to the branches as they are
      if (ctx.values().sequences.count(name) || ctx.values().nones.count(name))
        return ctx.RequireConstant(cond, "the condition of an If whose branches read sequences or optionals").status();
      return ctx.Error(absl::StrCat("a branch reads '", name, "', which is not defined"));
    }
    if (it->second->opcode() == Opcode::kConstant) continue;
    captured.push_back(name);
    captured_values.push_back(it->second);
  }
  Instruction* operand = b.Tuple(captured_values);
  if (!operand) return b.status();
  std::vector<hlo::Computation*> branches;
  std::vector<std::vector<Instruction*>> outs;
  for (const onnx::GraphProto* g : {&then_g, &else_g}) {
    hlo::Builder bb(b.module(), g == &then_g ? "if_then" : "if_else");
    bb.set_folder(b.folder());
    bb.set_metadata(b.metadata());
    Instruction* p = bb.Parameter(0, operand->shape(), "captured");
    GraphValues scope;
    scope.strings = ctx.values().strings;
    for (const auto& [name, v] : ctx.values().values)
      if (v->opcode() == Opcode::kConstant) scope.values[name] = bb.Constant(*v->literal);
    for (size_t j = 0; j < captured.size(); ++j) scope.values[captured[j]] = bb.GetTupleElement(p, j);
    RETURN_IF_ERROR(ctx.ConvertSubgraphInto(bb, *g, scope));
    for (const auto& out : g->output())
      if (scope.sequences.count(out.name()) || scope.nones.count(out.name()))
        return ctx.RequireConstant(cond, "the condition of an If whose branches return sequences or optionals").status();
    ASSIGN_OR_RETURN(std::vector<Instruction*> o, Outputs(ctx, *g, scope));
    outs.push_back(o);
    ASSIGN_OR_RETURN(hlo::Computation * c, bb.Build(bb.Tuple(o)));
    branches.push_back(c);
  }
  const auto& t = outs[0];
  const auto& e = outs[1];
  if (t.size() != e.size()) return ctx.Error("branches have different output counts");
  for (size_t k = 0; k < t.size(); ++k)
    if (!t[k]->shape().Compatible(e[k]->shape()))
      return ctx.Unsupported(absl::StrCat("branches produce different shapes for output ", k, " (",
                                          t[k]->shape().ToString(false), " vs ", e[k]->shape().ToString(false),
                                          ") and the condition is only known at run time"));
  Instruction* c = b.Conditional(cond, branches, {operand, operand});
  for (size_t k = 0; k < t.size(); ++k) ctx.set_output(k, b.GetTupleElement(c, k));
  return absl::OkStatus();
}

absl::Status If(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  const onnx::GraphProto* then_g = ctx.attr_g("then_branch");
  const onnx::GraphProto* else_g = ctx.attr_g("else_branch");
  if (!then_g || !else_g) return ctx.Error("needs then_branch and else_branch");
  Instruction* cond = ScalarPred(b, ctx.input(0));
  if (cond->opcode() == Opcode::kConstant) {
    const onnx::GraphProto* g = IsConst(cond, true) ? then_g : else_g;
    GraphValues scope = ctx.values();
    RETURN_IF_ERROR(ctx.ConvertSubgraph(*g, scope));
    for (int k = 0; k < g->output_size(); ++k) RETURN_IF_ERROR(ctx.SetOutputFrom(k, scope, g->output(k).name()));
    return absl::OkStatus();
  }
  return IfAsConditional(ctx, cond, *then_g, *else_g);
}

// A Loop whose trip count is not known at compile time (or too large to
// unroll) and that has no scan outputs becomes an HLO while over the tuple
// (i, condition, trip count, loop-carried values..., captured values...).
absl::Status LoopAsWhile(NodeContext& ctx, const onnx::GraphProto& body, Instruction* trips, Instruction* cond,
                         const std::vector<Instruction*>& state) {
  hlo::Builder& b = ctx.b();
  hlo::Module* m = b.module();
  int n_state = state.size();
  std::set<std::string> none, free;
  FreeNames(body, none, free);
  std::vector<std::string> captured;
  std::vector<Instruction*> captured_values;
  for (const std::string& name : free) {
    auto it = ctx.values().values.find(name);
    if (it == ctx.values().values.end()) {
      if (ctx.values().strings.count(name)) return ctx.Unsupported("a loop body reading string tensors");
      return ctx.Error(absl::StrCat("the body reads '", name, "', which is not defined"));
    }
    captured.push_back(name);
    captured_values.push_back(it->second);
  }
  Instruction* m_value = trips ? b.Convert(b.Reshape(trips, {}), hlo::S64) : b.ScalarConstant(hlo::S64, INT64_MAX);
  std::vector<Instruction*> init = {b.ScalarConstant(hlo::S64, 0), cond, m_value};
  init.insert(init.end(), state.begin(), state.end());
  init.insert(init.end(), captured_values.begin(), captured_values.end());
  Instruction* tuple = b.Tuple(init);
  if (!tuple) return b.status();
  const hlo::Shape& ts = tuple->shape();

  hlo::Builder cb(m, "loop_condition");
  Instruction* cp = cb.Parameter(0, ts, "state");
  Instruction* go = cb.Binary(Opcode::kAnd, cb.GetTupleElement(cp, 1),
                              cb.Compare(cb.GetTupleElement(cp, 0), cb.GetTupleElement(cp, 2), hlo::ComparisonDirection::kLt));
  ASSIGN_OR_RETURN(hlo::Computation * condition, cb.Build(go));

  hlo::Builder bb(m, "loop_body");
  bb.set_folder(b.folder());
  bb.set_metadata(b.metadata());
  Instruction* bp = bb.Parameter(0, ts, "state");
  GraphValues scope;
  Instruction* i = bb.GetTupleElement(bp, 0);
  Bind(bb, scope, body.input(0), i);
  Bind(bb, scope, body.input(1), bb.GetTupleElement(bp, 1));
  for (int k = 0; k < n_state; ++k) Bind(bb, scope, body.input(2 + k), bb.GetTupleElement(bp, 3 + k));
  for (size_t j = 0; j < captured.size(); ++j) scope.values[captured[j]] = bb.GetTupleElement(bp, 3 + n_state + j);
  RETURN_IF_ERROR(ctx.ConvertSubgraphInto(bb, body, scope));
  std::vector<Instruction*> next = {bb.Binary(Opcode::kAdd, i, bb.ScalarConstant(hlo::S64, 1))};
  for (int k = 0; k < body.output_size(); ++k) {
    auto it = scope.values.find(body.output(k).name());
    if (it == scope.values.end()) return ctx.Error(absl::StrCat("body output '", body.output(k).name(), "' is never produced"));
    Instruction* v = it->second;
    if (k == 0) v = bb.Convert(bb.Reshape(v, {}), hlo::PRED);
    else if (!v->shape().Compatible(state[k - 1]->shape()))
      return ctx.Unsupported(absl::StrCat("loop-carried value ", k - 1, " changes shape across iterations"));
    next.push_back(v);
    if (k == 0) next.push_back(bb.GetTupleElement(bp, 2));
  }
  for (size_t j = 0; j < captured.size(); ++j) next.push_back(bb.GetTupleElement(bp, 3 + n_state + j));
  ASSIGN_OR_RETURN(hlo::Computation * loop_body, bb.Build(bb.Tuple(next)));
  Instruction* w = b.While(condition, loop_body, tuple);
  for (int k = 0; k < n_state; ++k) ctx.set_output(k, b.GetTupleElement(w, 3 + k));
  return absl::OkStatus();
}

// A Loop carrying sequences or optionals: their lengths and presence must be
// known at compile time, so the loop is unrolled with its trip count and
// condition known then.
absl::Status LoopOverValues(NodeContext& ctx, const onnx::GraphProto& body) {
  hlo::Builder& b = ctx.b();
  int n_state = ctx.input_count() - 2;
  if (body.input_size() != 2 + n_state || body.output_size() != 1 + n_state)
    return ctx.Unsupported("scan outputs of a Loop that carries sequences or optionals");
  int64_t trips = kMaxUnrolledIterations + 1;
  if (ctx.has_input(0)) {
    ASSIGN_OR_RETURN(Literal m, ctx.ConstInput(0));
    trips = m.GetAsInt64(0);
  }
  auto known_pred = [&](Instruction* v, const char* what) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(Literal l, ctx.RequireConstant(ScalarPred(b, v), what));
    return l.GetAsDouble(0) != 0;
  };
  bool go = true;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(go, known_pred(ctx.input(1), "the condition of a Loop that carries sequences or optionals"));
  }
  // The carried values live in `carried` under the body's input names.
  GraphValues carried;
  for (int k = 0; k < n_state; ++k)
    if (!ctx.values().Copy(ctx.node().input(2 + k), carried, body.input(2 + k).name()))
      return ctx.Error(absl::StrCat("loop-carried input '", ctx.node().input(2 + k), "' is not defined"));
  int64_t i = 0;
  for (; i < trips && go; ++i) {
    if (i == kMaxUnrolledIterations)
      return ctx.Unsupported(absl::StrCat("a Loop carrying sequences over more than ", kMaxUnrolledIterations,
                                          " iterations (it is unrolled)"));
    GraphValues scope = ctx.values();
    for (int k = 0; k < n_state; ++k) carried.Copy(body.input(2 + k).name(), scope, body.input(2 + k).name());
    Bind(b, scope, body.input(0), b.Constant(Literal::Scalar<int64_t>(i)));
    Bind(b, scope, body.input(1), b.Constant(Literal::Scalar<bool>(true)));
    RETURN_IF_ERROR(ctx.ConvertSubgraph(body, scope));
    GraphValues next;
    for (int k = 0; k < n_state; ++k) {
      const std::string& out = body.output(1 + k).name();
      if (!scope.Copy(out, next, body.input(2 + k).name()))
        return ctx.Error(absl::StrCat("body output '", out, "' is never produced"));
    }
    carried = std::move(next);
    auto c = scope.values.find(body.output(0).name());
    if (c == scope.values.end()) return ctx.Error("the body's condition output is not a tensor");
    ASSIGN_OR_RETURN(go, known_pred(c->second, "the condition of a Loop that carries sequences or optionals"));
  }
  for (int k = 0; k < n_state; ++k) RETURN_IF_ERROR(ctx.SetOutputFrom(k, carried, body.input(2 + k).name()));
  return absl::OkStatus();
}

absl::Status Loop(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  const onnx::GraphProto* body = ctx.attr_g("body");
  if (!body) return ctx.Error("needs a body");
  for (int k = 2; k < ctx.input_count(); ++k)
    if (ctx.sequence_input(k) || ctx.is_none(k)) return LoopOverValues(ctx, *body);
  int n_state_in = ctx.input_count() - 2;
  int n_scan_out = body->output_size() - 1 - n_state_in;
  Instruction* trip_input = ctx.has_input(0) ? ctx.input(0) : nullptr;
  bool trips_known = trip_input && trip_input->opcode() == Opcode::kConstant;
  if (n_scan_out == 0 && (!trips_known || trip_input->literal->GetAsInt64(0) > kMaxUnrolledIterations)) {
    std::vector<Instruction*> state;
    for (int k = 0; k < n_state_in; ++k) state.push_back(ctx.input(2 + k));
    Instruction* cond = ctx.has_input(1) ? ScalarPred(b, ctx.input(1)) : b.Constant(Literal::Scalar<bool>(true));
    return LoopAsWhile(ctx, *body, trip_input, cond, state);
  }
  if (!trip_input) return ctx.Unsupported("scan outputs of a Loop without a trip count");
  ASSIGN_OR_RETURN(Literal m, ctx.ConstInput(0));
  int64_t trips = m.GetAsInt64(0);
  if (trips > kMaxUnrolledIterations)
    return ctx.Unsupported(absl::StrCat("scan outputs over a trip count of ", trips, " (unrolled up to ", kMaxUnrolledIterations, ")"));
  Instruction* active = ctx.has_input(1) ? ScalarPred(b, ctx.input(1)) : b.Constant(Literal::Scalar<bool>(true));
  int n_state = ctx.input_count() - 2;
  std::vector<Instruction*> state;
  for (int k = 0; k < n_state; ++k) state.push_back(ctx.input(2 + k));
  int n_scan = body->output_size() - 1 - n_state;
  if (body->input_size() != 2 + n_state || n_scan < 0) return ctx.Error("body inputs/outputs do not match the loop state");
  std::vector<std::vector<Instruction*>> scans(n_scan);
  for (int64_t i = 0; i < trips && !IsConst(active, false); ++i) {
    GraphValues scope = ctx.values();
    Bind(b, scope, body->input(0), b.Constant(Literal::Scalar<int64_t>(i)));
    Bind(b, scope, body->input(1), active);
    for (int k = 0; k < n_state; ++k) Bind(b, scope, body->input(2 + k), state[k]);
    RETURN_IF_ERROR(ctx.ConvertSubgraph(*body, scope));
    ASSIGN_OR_RETURN(auto outs, Outputs(ctx, *body, scope));
    if (n_scan > 0 && active->opcode() != Opcode::kConstant) {
      // Scan outputs take one row per iteration run: the count must be known.
      ASSIGN_OR_RETURN(Literal known, ctx.RequireConstant(active, "the condition of a Loop with scan outputs"));
      active = b.Constant(std::move(known));
    }
    bool always = IsConst(active, true);
    for (int k = 0; k < n_state; ++k) {
      Instruction* next = outs[1 + k];
      if (!next->shape().Compatible(state[k]->shape()))
        return ctx.Unsupported(absl::StrCat("loop-carried value ", k, " changes shape across iterations"));
      state[k] = always ? next : b.Select(b.Broadcast(active, next->shape().dims, {}), next, state[k]);
    }
    for (int k = 0; k < n_scan; ++k) {
      std::vector<int64_t> d = outs[1 + n_state + k]->shape().dims;
      d.insert(d.begin(), 1);
      scans[k].push_back(b.Reshape(outs[1 + n_state + k], d));
    }
    active = b.Binary(Opcode::kAnd, active, ScalarPred(b, outs[0]));
  }
  for (int k = 0; k < n_state; ++k) ctx.set_output(k, state[k]);
  for (int k = 0; k < n_scan; ++k) {
    if (scans[k].empty()) return ctx.Unsupported("a Loop with scan outputs that runs zero iterations");
    ctx.set_output(n_state + k, b.Concatenate(scans[k], 0));
  }
  return absl::OkStatus();
}

struct ScanResult {
  std::vector<Instruction*> states, outputs;
};

// One scan: `xs` are sliced along `in_axes`, the body runs per step, and its
// per-step outputs are stacked along `out_axes`.
absl::StatusOr<ScanResult> RunScan(NodeContext& ctx, const onnx::GraphProto& body, std::vector<Instruction*> state,
                                   const std::vector<Instruction*>& xs, const std::vector<int64_t>& in_axes,
                                   const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                                   const std::vector<int64_t>& out_dirs) {
  hlo::Builder& b = ctx.b();
  int n_state = state.size(), n_scan_in = xs.size();
  int n_scan_out = body.output_size() - n_state;
  if (n_scan_in < 1 || n_scan_out < 0 || body.input_size() != n_state + n_scan_in)
    return ctx.Error("the body's inputs and outputs do not match the scan");
  std::vector<int64_t> axes;
  for (int k = 0; k < n_scan_in; ++k) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(ctx, in_axes[k], xs[k]->shape().rank()));
    axes.push_back(a);
  }
  int64_t len = xs[0]->shape().dims[axes[0]];
  if (len > kMaxUnrolledIterations) return ctx.Unsupported("a scan longer than the unroll limit");
  std::vector<std::vector<Instruction*>> outs(n_scan_out);
  for (int64_t t = 0; t < len; ++t) {
    GraphValues scope = ctx.values();
    for (int k = 0; k < n_state; ++k) Bind(b, scope, body.input(k), state[k]);
    for (int k = 0; k < n_scan_in; ++k) {
      Instruction* x = xs[k];
      int64_t pos = in_dirs[k] ? len - 1 - t : t;
      std::vector<int64_t> s(x->shape().rank(), 0), l = x->shape().dims, st(x->shape().rank(), 1);
      s[axes[k]] = pos;
      l[axes[k]] = pos + 1;
      std::vector<int64_t> d = x->shape().dims;
      d.erase(d.begin() + axes[k]);
      Bind(b, scope, body.input(n_state + k), b.Reshape(b.Slice(x, s, l, st), d));
    }
    RETURN_IF_ERROR(ctx.ConvertSubgraph(body, scope));
    ASSIGN_OR_RETURN(auto o, Outputs(ctx, body, scope));
    for (int k = 0; k < n_state; ++k) state[k] = o[k];
    for (int k = 0; k < n_scan_out; ++k) outs[k].push_back(o[n_state + k]);
  }
  ScanResult r;
  r.states = state;
  for (int k = 0; k < n_scan_out; ++k) {
    if (outs[k].empty()) return ctx.Unsupported("a Scan over an empty sequence");
    if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
    ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, out_axes[k], outs[k][0]->shape().rank() + 1));
    std::vector<Instruction*> parts;
    for (Instruction* e : outs[k]) {
      std::vector<int64_t> d = e->shape().dims;
      d.insert(d.begin() + axis, 1);
      parts.push_back(b.Reshape(e, d));
    }
    r.outputs.push_back(b.Concatenate(parts, axis));
  }
  return r;
}

absl::Status Scan(NodeContext& ctx) {
  const onnx::GraphProto* body = ctx.attr_g("body");
  if (!body) return ctx.Error("needs a body");
  int64_t n_in = ctx.attr_i("num_scan_inputs", 0);
  int n_state = ctx.input_count() - n_in;
  int n_out = body->output_size() - n_state;
  if (n_in < 1 || n_state < 0 || n_out < 0) return ctx.Error("bad num_scan_inputs");
  std::vector<Instruction*> state, xs;
  for (int k = 0; k < n_state; ++k) state.push_back(ctx.input(k));
  for (int k = 0; k < n_in; ++k) xs.push_back(ctx.input(n_state + k));
  ASSIGN_OR_RETURN(ScanResult r, RunScan(ctx, *body, state, xs, ctx.attr_ints("scan_input_axes", std::vector<int64_t>(n_in, 0)),
                                         ctx.attr_ints("scan_input_directions", std::vector<int64_t>(n_in, 0)),
                                         ctx.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0)),
                                         ctx.attr_ints("scan_output_directions", std::vector<int64_t>(n_out, 0))));
  for (int k = 0; k < n_state; ++k) ctx.set_output(k, r.states[k]);
  for (int k = 0; k < n_out; ++k) ctx.set_output(n_state + k, r.outputs[k]);
  return absl::OkStatus();
}

// Opset 8: input 0 is sequence_lens, states are [batch, ...] and scan inputs
// [batch, seq, ...]; each batch entry is an independent scan.
absl::Status Scan8(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  const onnx::GraphProto* body = ctx.attr_g("body");
  if (!body) return ctx.Error("needs a body");
  int64_t n_in = ctx.attr_i("num_scan_inputs", 0);
  int n_state = ctx.input_count() - 1 - n_in;
  int n_out = body->output_size() - n_state;
  if (n_in < 1 || n_state < 0 || n_out < 0) return ctx.Error("bad num_scan_inputs");
  int64_t batch = ctx.input(1)->shape().dims[0];
  int64_t seq = ctx.input(1 + n_state)->shape().dims[1];
  if (ctx.has_input(0)) {
    ASSIGN_OR_RETURN(Literal lens, ctx.ConstInput(0));
    for (int64_t i = 0; i < lens.element_count(); ++i)
      if (lens.GetAsInt64(i) != seq) return ctx.Unsupported("opset-8 Scan with sequence_lens shorter than the sequence");
  }
  auto row = [&](Instruction* x, int64_t i) {
    std::vector<int64_t> s(x->shape().rank(), 0), l = x->shape().dims, st(x->shape().rank(), 1);
    s[0] = i;
    l[0] = i + 1;
    std::vector<int64_t> d(x->shape().dims.begin() + 1, x->shape().dims.end());
    return b.Reshape(b.Slice(x, s, l, st), d);
  };
  std::vector<std::vector<Instruction*>> states(n_state), outs(n_out);
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<Instruction*> state, xs;
    for (int k = 0; k < n_state; ++k) state.push_back(row(ctx.input(1 + k), i));
    for (int k = 0; k < n_in; ++k) xs.push_back(row(ctx.input(1 + n_state + k), i));
    ASSIGN_OR_RETURN(ScanResult r, RunScan(ctx, *body, state, xs, std::vector<int64_t>(n_in, 0),
                                           ctx.attr_ints("directions", std::vector<int64_t>(n_in, 0)),
                                           std::vector<int64_t>(n_out, 0), std::vector<int64_t>(n_out, 0)));
    for (int k = 0; k < n_state; ++k) states[k].push_back(r.states[k]);
    for (int k = 0; k < n_out; ++k) outs[k].push_back(r.outputs[k]);
  }
  auto stack = [&](const std::vector<Instruction*>& v) {
    std::vector<Instruction*> parts;
    for (Instruction* e : v) {
      std::vector<int64_t> d = e->shape().dims;
      d.insert(d.begin(), 1);
      parts.push_back(b.Reshape(e, d));
    }
    return b.Concatenate(parts, 0);
  };
  for (int k = 0; k < n_state; ++k) ctx.set_output(k, stack(states[k]));
  for (int k = 0; k < n_out; ++k) ctx.set_output(n_state + k, stack(outs[k]));
  return absl::OkStatus();
}

}  // namespace

void RegisterControlFlowOps(Registry& r) {
  r.Add("If", If, 1);
  r.Add("Loop", Loop, 1);
  r.Add("Scan", Scan8, 8, 8);
  r.Add("Scan", Scan, 9);
}

}  // namespace xonnx::onnx_import
