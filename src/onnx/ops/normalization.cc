// Normalization ONNX ops: batch, instance, layer, group, mean-variance, LRN
// and Lp normalization.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "onnx/ops/normalize.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {

using hlo::Instruction;
using hlo::Opcode;

Normalized Normalize(hlo::Builder& b, Instruction* x, const std::vector<int64_t>& axes, double eps) {
  int64_t count = 1;
  for (int64_t a : axes) count *= x->shape().dims[a];
  const auto& dims = x->shape().dims;
  Instruction* mean = ReduceOver(b, x, Opcode::kAdd, 0, axes, true);
  mean = b.Binary(Opcode::kDivide, mean, SplatLike(b, mean, count));
  Instruction* centered = b.Binary(Opcode::kSubtract, x, BroadcastTo(b, mean, dims));
  Instruction* var = ReduceOver(b, b.Binary(Opcode::kMultiply, centered, centered), Opcode::kAdd, 0, axes, true);
  var = b.Binary(Opcode::kDivide, var, SplatLike(b, var, count));
  Instruction* inv = b.Unary(Opcode::kRsqrt, b.Binary(Opcode::kAdd, var, SplatLike(b, var, eps)));
  return {b.Binary(Opcode::kMultiply, centered, BroadcastTo(b, inv, dims)), mean, inv};
}

Normalized RmsNormalize(hlo::Builder& b, Instruction* x, const std::vector<int64_t>& axes, double eps) {
  int64_t count = 1;
  for (int64_t a : axes) count *= x->shape().dims[a];
  Instruction* ms = ReduceOver(b, b.Binary(Opcode::kMultiply, x, x), Opcode::kAdd, 0, axes, true);
  ms = b.Binary(Opcode::kDivide, ms, SplatLike(b, ms, count));
  Instruction* inv = b.Unary(Opcode::kRsqrt, b.Binary(Opcode::kAdd, ms, SplatLike(b, ms, eps)));
  return {b.Binary(Opcode::kMultiply, x, BroadcastTo(b, inv, x->shape().dims)), nullptr, inv};
}

NormalizedFrom NormalizeFrom(hlo::Builder& b, Instruction* x, int64_t axis, double eps, bool rms, bool stash_f32) {
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < x->shape().rank(); ++i) axes.push_back(i);
  hlo::PrimitiveType t = x->shape().element_type;
  Instruction* xc = stash_f32 && (t == hlo::F16 || t == hlo::BF16) ? b.Convert(x, hlo::F32) : x;
  Normalized n = rms ? RmsNormalize(b, xc, axes, eps) : Normalize(b, xc, axes, eps);
  return {b.Convert(n.y, t), n};
}

namespace {

// Broadcasts a per-channel [C] vector along dim 1 of `like`.
Instruction* PerChannel(hlo::Builder& b, Instruction* v, Instruction* like) {
  return b.Broadcast(b.Reshape(v, {like->shape().dims[1]}), like->shape().dims, {1});
}

// Training mode: normalize with the batch statistics (population variance)
// and output the updated running mean and variance.
absl::Status BatchNormalizationTraining(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  hlo::PrimitiveType t = x->shape().element_type;
  std::vector<int64_t> axes = {0};
  for (int64_t i = 2; i < x->shape().rank(); ++i) axes.push_back(i);
  int64_t count = 1;
  for (int64_t a : axes) count *= x->shape().dims[a];
  double eps = ctx.attr_f("epsilon", 1e-5f), momentum = ctx.attr_f("momentum", 0.9f);
  Instruction* mean = ReduceOver(b, x, Opcode::kAdd, 0, axes, false);
  mean = b.Binary(Opcode::kDivide, mean, SplatLike(b, mean, count));
  Instruction* centered = b.Binary(Opcode::kSubtract, x, PerChannel(b, mean, x));
  Instruction* var = ReduceOver(b, b.Binary(Opcode::kMultiply, centered, centered), Opcode::kAdd, 0, axes, false);
  var = b.Binary(Opcode::kDivide, var, SplatLike(b, var, count));
  Instruction* s = b.Binary(Opcode::kMultiply, b.Convert(ctx.input(1), t),
                            b.Unary(Opcode::kRsqrt, b.Binary(Opcode::kAdd, var, SplatLike(b, var, eps))));
  Instruction* y = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, centered, PerChannel(b, s, x)),
                            PerChannel(b, b.Convert(ctx.input(2), t), x));
  auto running = [&](int input, Instruction* current) {
    Instruction* old = b.Convert(ctx.input(input), t);
    return b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, old, SplatLike(b, old, momentum)),
                    b.Binary(Opcode::kMultiply, current, SplatLike(b, current, 1 - momentum)));
  };
  ctx.set_output(0, y);
  ctx.set_output(1, running(3, mean));
  ctx.set_output(2, running(4, var));
  return absl::OkStatus();
}

absl::Status BatchNormalization(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  if (ctx.attr_i("training_mode", 0) != 0) return BatchNormalizationTraining(ctx);
  if (ctx.opset() < 6 && ctx.has_attr("consumed_inputs")) return ctx.Unsupported("consumed_inputs (opset < 6)");
  if (x->shape().rank() < 2) return ctx.Error("input must have a channel dim");
  hlo::PrimitiveType t = x->shape().element_type;
  float eps = ctx.attr_f("epsilon", 1e-5f);
  Instruction* scale = ctx.input(1);
  Instruction* bias = ctx.input(2);
  Instruction* mean = ctx.input(3);
  Instruction* var = ctx.input(4);
  // y = x * s + (B - mean * s) with s = scale / sqrt(var + eps): the
  // per-channel vectors fold to constants when the statistics are weights.
  Instruction* s = b.Binary(
      Opcode::kMultiply, b.Convert(scale, t),
      b.Unary(Opcode::kRsqrt, b.Binary(Opcode::kAdd, b.Convert(var, t), SplatLike(b, b.Convert(var, t), eps))));
  Instruction* shift =
      b.Binary(Opcode::kSubtract, b.Convert(bias, t), b.Binary(Opcode::kMultiply, b.Convert(mean, t), s));
  ctx.set_output(0,
                 b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, x, PerChannel(b, s, x)), PerChannel(b, shift, x)));
  return absl::OkStatus();
}

// NormalizeFrom with the node's axis (default -1), epsilon (default 1e-5)
// and stash_type (default 1: f32 statistics).
absl::StatusOr<NormalizedFrom> NormalizeFromAxis(NodeContext& ctx, Instruction* x, bool rms) {
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", -1), x->shape().rank()));
  return NormalizeFrom(ctx.b(), x, axis, ctx.attr_f("epsilon", 1e-5f), rms, ctx.attr_i("stash_type", 1) == 1);
}

// RMSNormalization (opset 23), and ONNX Runtime's SimplifiedLayerNormalization,
// which it registers in the ONNX domain with the same inputs and attributes:
// X / sqrt(mean(X^2) + epsilon) * scale over the axes from `axis` on;
// outputs Y and (ONNX Runtime's only) the inverse RMS.
absl::Status RMSNormalization(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (!hlo::IsFloatingPoint(x->shape().element_type)) return ctx.Unsupported("non-float input");
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(NormalizedFrom n, NormalizeFromAxis(ctx, x, /*rms=*/true));
  Instruction* scale = b.Convert(ctx.input(1), x->shape().element_type);
  ctx.set_output(0, b.Binary(Opcode::kMultiply, n.y, BroadcastTo(b, scale, x->shape().dims)));
  if (ctx.wants_output(1)) ctx.set_output(1, n.stats.inv_std);
  return absl::OkStatus();
}

absl::Status InstanceNormalization(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  Normalized n = Normalize(b, x, SpatialAxes(x), ctx.attr_f("epsilon", 1e-5f));
  Instruction* y = b.Binary(Opcode::kMultiply, n.y, PerChannel(b, ctx.input(1), x));
  ctx.set_output(0, b.Binary(Opcode::kAdd, y, PerChannel(b, ctx.input(2), x)));
  return absl::OkStatus();
}

absl::Status LayerNormalization(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(NormalizedFrom n, NormalizeFromAxis(ctx, x, /*rms=*/false));
  Instruction* y = b.Binary(Opcode::kMultiply, n.y, BroadcastTo(b, ctx.input(1), x->shape().dims));
  if (ctx.has_input(2)) y = b.Binary(Opcode::kAdd, y, BroadcastTo(b, ctx.input(2), x->shape().dims));
  ctx.set_output(0, y);
  ctx.set_output(1, n.stats.mean);
  ctx.set_output(2, n.stats.inv_std);
  return absl::OkStatus();
}

absl::Status GroupNormalization(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t groups = ctx.attr_i("num_groups", 0);
  const auto& dims = x->shape().dims;
  if (x->shape().rank() < 2 || groups <= 0 || dims[1] % groups)
    return ctx.Error("channels must divide into num_groups");
  int64_t n = dims[0], c = dims[1], rest = x->shape().ElementCount() / (n * c);
  hlo::PrimitiveType t = x->shape().element_type;
  bool upcast = ctx.attr_i("stash_type", 1) == 1 && (t == hlo::F16 || t == hlo::BF16);
  Instruction* xg = b.Reshape(upcast ? b.Convert(x, hlo::F32) : x, {n, groups, c / groups * rest});
  Instruction* y = b.Reshape(b.Convert(Normalize(b, xg, {2}, ctx.attr_f("epsilon", 1e-5f)).y, t), dims);
  // Opset 18 has one scale/bias per group, opset 21 one per channel.
  auto per_channel = [&](Instruction* v) {
    if (v->shape().ElementCount() == groups && groups != c)
      v = b.Reshape(b.Broadcast(v, {groups, c / groups}, {0}), {c});
    return PerChannel(b, v, x);
  };
  y = b.Binary(Opcode::kMultiply, y, per_channel(ctx.input(1)));
  ctx.set_output(0, b.Binary(Opcode::kAdd, y, per_channel(ctx.input(2))));
  return absl::OkStatus();
}

absl::Status MeanVarianceNormalization(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  std::vector<int64_t> axes = ctx.attr_ints("axes", {0, 2, 3});
  for (auto& a : axes) {
    ASSIGN_OR_RETURN(a, NormalizeAxis(ctx, a, x->shape().rank()));
  }
  ctx.set_output(0, Normalize(ctx.b(), x, axes, 1e-9).y);
  return absl::OkStatus();
}

absl::Status LRN(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t size = ctx.attr_i("size", 0);
  if (size <= 0) return ctx.Error("size must be positive");
  double alpha = ctx.attr_f("alpha", 1e-4f), beta = ctx.attr_f("beta", 0.75f), bias = ctx.attr_f("bias", 1.0f);
  hlo::PrimitiveType t = x->shape().element_type;
  hlo::Window w;
  w.dimensions.resize(x->shape().rank());
  w.dimensions[1] = {size, 1, (size - 1) / 2, size - 1 - (size - 1) / 2, 1, 1, false};
  Instruction* sq =
      b.ReduceWindow(b.Binary(Opcode::kMultiply, x, x), b.ScalarConstant(t, 0), w, b.ScalarReducer(Opcode::kAdd, t));
  Instruction* den =
      b.Binary(Opcode::kAdd, SplatLike(b, sq, bias), b.Binary(Opcode::kMultiply, sq, SplatLike(b, sq, alpha / size)));
  ctx.set_output(0, b.Binary(Opcode::kDivide, x, b.Binary(Opcode::kPower, den, SplatLike(b, den, beta))));
  return absl::OkStatus();
}

absl::Status LpNormalization(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", -1), x->shape().rank()));
  int64_t p = ctx.attr_i("p", 2);
  Instruction* norm;
  if (p == 1)
    norm = ReduceOver(b, b.Unary(Opcode::kAbs, x), Opcode::kAdd, 0, {axis}, true);
  else if (p == 2)
    norm = b.Unary(Opcode::kSqrt, ReduceOver(b, b.Binary(Opcode::kMultiply, x, x), Opcode::kAdd, 0, {axis}, true));
  else
    return ctx.Error("p must be 1 or 2");
  ctx.set_output(0, b.Binary(Opcode::kDivide, x, BroadcastTo(b, norm, x->shape().dims)));
  return absl::OkStatus();
}

}  // namespace

void RegisterNormalizationOps(Registry& r) {
  r.Add("BatchNormalization", BatchNormalization);
  r.Add("InstanceNormalization", InstanceNormalization);
  r.Add("LayerNormalization", LayerNormalization, 17);
  r.Add("RMSNormalization", RMSNormalization, 23);
  // ONNX Runtime's name for it, in the ONNX domain from version 1; ONNX
  // itself has no op of that name.
  r.Add("SimplifiedLayerNormalization", RMSNormalization);
  r.Add("MeanVarianceNormalization", MeanVarianceNormalization, 9);
  r.Add("LRN", LRN);
  r.Add("LpNormalization", LpNormalization);
  r.Add("GroupNormalization", GroupNormalization, 18);
}

}  // namespace xonnx::onnx_import
