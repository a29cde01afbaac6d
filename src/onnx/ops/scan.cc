// Scan (opset 8, and 9 on): a body run once per slice of its scan inputs,
// lowered to an HLO while (see control_flow.h).
#include <algorithm>

#include "base/status.h"
#include "onnx/ops/control_flow.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

// One scan: `xs` are sliced along `in_axes`, the body runs per step, and its
// per-step outputs are stacked along `out_axes`.
absl::StatusOr<Step> RunScan(NodeContext& ctx, const onnx::GraphProto& body, std::vector<Instruction*> state,
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
  for (int k = 1; k < n_scan_in; ++k)
    if (xs[k]->shape().dims[axes[k]] != len)
      return ctx.Error(
          absl::StrCat("scan input ", k, " has ", xs[k]->shape().dims[axes[k]], " steps; scan input 0 has ", len));
  WhileLoop w;
  w.is_scan = true;
  w.body = &body;
  w.trips = b.ScalarConstant(hlo::S64, len);
  w.carried = state;
  w.xs = xs;
  w.x_axes = axes;
  w.x_reverse = in_dirs;
  w.length = len;
  w.y_axes = out_axes;
  w.y_reverse = out_dirs;
  absl::StatusOr<Step> lowered = EmitWhile(ctx, w);
  if (lowered.ok() || len > kMaxUnrolledIterations) return lowered;
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
  Step r;
  r.carried = state;
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
    r.ys.push_back(b.Concatenate(parts, axis));
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
  ASSIGN_OR_RETURN(Step r,
                   RunScan(ctx, *body, state, xs, ctx.attr_ints("scan_input_axes", std::vector<int64_t>(n_in, 0)),
                           ctx.attr_ints("scan_input_directions", std::vector<int64_t>(n_in, 0)),
                           ctx.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0)),
                           ctx.attr_ints("scan_output_directions", std::vector<int64_t>(n_out, 0))));
  for (int k = 0; k < n_state; ++k) ctx.set_output(k, r.carried[k]);
  for (int k = 0; k < n_out; ++k) ctx.set_output(n_state + k, r.ys[k]);
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
  // States are [batch, ...] and scan inputs [batch, seq, ...], all of one
  // batch and the scan inputs of one length.
  for (int k = 1; k < ctx.input_count(); ++k)
    if (!ctx.input(k)) return ctx.Error(absl::StrCat("input ", k, " is missing or not a tensor"));
  const hlo::Shape& first_x = ctx.input(1 + n_state)->shape();
  if (first_x.rank() < 2)
    return ctx.Error(absl::StrCat("scan input 0 must be [batch, sequence, ...], got rank ", first_x.rank()));
  int64_t batch = first_x.dims[0], seq = first_x.dims[1];
  for (int k = 0; k < n_state + n_in; ++k) {
    const hlo::Shape& s = ctx.input(1 + k)->shape();
    bool is_x = k >= n_state;
    if (s.rank() < (is_x ? 2 : 1) || s.dims[0] != batch || (is_x && s.dims[1] != seq))
      return ctx.Error(absl::StrCat(is_x ? "scan input " : "state ", is_x ? k - n_state : k, " has shape ",
                                    s.ToString(false), "; expected [", batch,
                                    is_x ? absl::StrCat(", ", seq) : std::string(), ", ...] as scan input 0 gives"));
  }
  if (ctx.has_input(0)) {
    ASSIGN_OR_RETURN(Literal lens, ctx.ConstInput(0));
    for (int64_t i = 0; i < lens.element_count(); ++i)
      if (lens.GetAsInt64(i) != seq)
        return ctx.Unsupported("opset-8 Scan with sequence_lens shorter than the sequence");
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
    ASSIGN_OR_RETURN(Step r, RunScan(ctx, *body, state, xs, std::vector<int64_t>(n_in, 0),
                                     ctx.attr_ints("directions", std::vector<int64_t>(n_in, 0)),
                                     std::vector<int64_t>(n_out, 0), std::vector<int64_t>(n_out, 0)));
    for (int k = 0; k < n_state; ++k) states[k].push_back(r.carried[k]);
    for (int k = 0; k < n_out; ++k) outs[k].push_back(r.ys[k]);
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

void RegisterScanOps(Registry& r) {
  r.Add("Scan", Scan8, 8, 8);
  r.Add("Scan", Scan, 9);
}

}  // namespace xonnx::onnx_import
