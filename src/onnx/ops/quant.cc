// Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv. Integer products
// accumulate in int32 like the reference; requantization rounds half to even
// and saturates to the output type.
#include <cmath>

#include "base/status.h"
#include "onnx/ops/quantize.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {

using hlo::Instruction;
using hlo::Opcode;

absl::StatusOr<Instruction*> AlongAxis(NodeContext& ctx, Instruction* p, Instruction* x, int64_t axis_attr) {
  hlo::Builder& b = ctx.b();
  if (p->shape().ElementCount() == 1) return b.Broadcast(b.Reshape(p, {}), x->shape().dims, {});
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, axis_attr, x->shape().rank()));
  if (p->shape().rank() != 1 || p->shape().dims[0] != x->shape().dims[axis])
    return ctx.Error("per-axis scale/zero point must be 1-D with the size of the axis");
  return b.Broadcast(p, x->shape().dims, {axis});
}

Instruction* Saturate(hlo::Builder& b, Instruction* v, hlo::PrimitiveType t) {
  v = b.Unary(Opcode::kRoundNearestEven, v);
  hlo::PrimitiveType f = v->shape().element_type;
  return b.Convert(b.Clamp(b.ScalarConstant(f, LowestValue(t)), v, b.ScalarConstant(f, HighestValue(t))), t);
}

namespace {

absl::Status QuantizeLinear(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  if (ctx.attr_i("block_size", 0) != 0) return ctx.Unsupported("block quantization (block_size)");
  if (ctx.attr_i("precision", 0) != 0) return ctx.Unsupported("a division precision other than x's (precision)");
  hlo::PrimitiveType out_t = ctx.has_input(2) ? ctx.input(2)->shape().element_type : hlo::U8;
  if (!ctx.has_input(2) && ctx.has_attr("output_dtype")) {
    ASSIGN_OR_RETURN(out_t, HloType(static_cast<int32_t>(ctx.attr_i("output_dtype", 2))));
  }
  hlo::PrimitiveType f = x->shape().element_type == hlo::F64 ? hlo::F64 : hlo::F32;
  int64_t axis = ctx.attr_i("axis", 1);
  ASSIGN_OR_RETURN(Instruction * scale, AlongAxis(ctx, b.Convert(ctx.input(1), f), x, axis));
  Instruction* v = b.Binary(Opcode::kDivide, b.Convert(x, f), scale);
  v = b.Unary(Opcode::kRoundNearestEven, v);
  if (ctx.has_input(2)) {
    ASSIGN_OR_RETURN(Instruction * zp, AlongAxis(ctx, b.Convert(ctx.input(2), f), x, axis));
    v = b.Binary(Opcode::kAdd, v, zp);
  }
  ctx.set_output(0, Saturate(b, v, out_t));
  return absl::OkStatus();
}

absl::Status DequantizeLinear(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  if (ctx.attr_i("block_size", 0) != 0) return ctx.Unsupported("block quantization (block_size)");
  hlo::PrimitiveType f = ctx.input(1)->shape().element_type;
  int64_t axis = ctx.attr_i("axis", 1);
  Instruction* v = b.Convert(x, hlo::F32);
  if (ctx.has_input(2)) {
    ASSIGN_OR_RETURN(Instruction * zp, AlongAxis(ctx, b.Convert(ctx.input(2), hlo::F32), x, axis));
    v = b.Binary(Opcode::kSubtract, v, zp);
  }
  ASSIGN_OR_RETURN(Instruction * scale, AlongAxis(ctx, b.Convert(ctx.input(1), hlo::F32), x, axis));
  ctx.set_output(0, b.Convert(b.Binary(Opcode::kMultiply, v, scale), f));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Instruction*> Centered(NodeContext& ctx, Instruction* x, int zp_input, int64_t axis) {
  hlo::Builder& b = ctx.b();
  Instruction* v = b.Convert(x, hlo::S32);
  if (!ctx.has_input(zp_input)) return v;
  ASSIGN_OR_RETURN(Instruction * zp, AlongAxis(ctx, b.Convert(ctx.input(zp_input), hlo::S32), x, axis));
  return b.Binary(Opcode::kSubtract, v, zp);
}

DynamicQuantized DynamicQuantize(hlo::Builder& b, Instruction* x) {
  std::vector<int64_t> all;
  for (int64_t i = 0; i < x->shape().rank(); ++i) all.push_back(i);
  Instruction* zero = b.ScalarConstant(hlo::F32, 0);
  Instruction* mx =
      b.Binary(Opcode::kMaximum, ReduceOver(b, x, Opcode::kMaximum, LowestValue(hlo::F32), all, false), zero);
  Instruction* mn =
      b.Binary(Opcode::kMinimum, ReduceOver(b, x, Opcode::kMinimum, HighestValue(hlo::F32), all, false), zero);
  Instruction* scale = b.Binary(Opcode::kDivide, b.Binary(Opcode::kSubtract, mx, mn), b.ScalarConstant(hlo::F32, 255));
  Instruction* zp = Saturate(b, b.Binary(Opcode::kSubtract, zero, b.Binary(Opcode::kDivide, mn, scale)), hlo::U8);
  Instruction* q = b.Binary(
      Opcode::kAdd,
      b.Unary(Opcode::kRoundNearestEven, b.Binary(Opcode::kDivide, x, b.Broadcast(scale, x->shape().dims, {}))),
      b.Broadcast(b.Convert(zp, hlo::F32), x->shape().dims, {}));
  return {Saturate(b, q, hlo::U8), scale, zp};
}

namespace {

absl::Status DynamicQuantizeLinear(NodeContext& ctx) {
  DynamicQuantized d = DynamicQuantize(ctx.b(), ctx.input(0));
  ctx.set_output(0, d.q);
  ctx.set_output(1, d.scale);
  ctx.set_output(2, d.zp);
  return absl::OkStatus();
}

absl::Status MatMulInteger(NodeContext& ctx) {
  Instruction* a = ctx.input(0);
  Instruction* w = ctx.input(1);
  // a's zero point is per row (axis -2 when 1-D of size M), b's per column.
  ASSIGN_OR_RETURN(Instruction * ac, Centered(ctx, a, 2, a->shape().rank() >= 2 ? -2 : 0));
  ASSIGN_OR_RETURN(Instruction * bc, Centered(ctx, w, 3, -1));
  ASSIGN_OR_RETURN(Instruction * y, NumpyMatMul(ctx, ac, bc));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

absl::Status ConvInteger(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Instruction * xc, Centered(ctx, ctx.input(0), 2, 1));
  ASSIGN_OR_RETURN(Instruction * wc, Centered(ctx, ctx.input(1), 3, 0));
  ASSIGN_OR_RETURN(Instruction * y, ConvWithAttributes(ctx, xc, wc));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

// Requantizes an int32 accumulator: round(acc * in_scale / y_scale) + y_zp.
absl::StatusOr<Instruction*> Requantize(NodeContext& ctx, Instruction* acc, Instruction* in_scale, int y_scale_input,
                                        int y_zp_input) {
  hlo::Builder& b = ctx.b();
  const auto& dims = acc->shape().dims;
  Instruction* ys = b.Broadcast(b.Reshape(b.Convert(ctx.input(y_scale_input), hlo::F32), {}), dims, {});
  Instruction* v = b.Binary(Opcode::kDivide, b.Binary(Opcode::kMultiply, b.Convert(acc, hlo::F32), in_scale), ys);
  v = b.Unary(Opcode::kRoundNearestEven, v);
  hlo::PrimitiveType t = ctx.has_input(y_zp_input) ? ctx.input(y_zp_input)->shape().element_type : hlo::U8;
  if (ctx.has_input(y_zp_input))
    v = b.Binary(Opcode::kAdd, v, b.Broadcast(b.Reshape(b.Convert(ctx.input(y_zp_input), hlo::F32), {}), dims, {}));
  return Saturate(b, v, t);
}

absl::Status QLinearMatMul(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* a = ctx.input(0);
  Instruction* w = ctx.input(3);
  ASSIGN_OR_RETURN(Instruction * ac, Centered(ctx, a, 2, a->shape().rank() >= 2 ? -2 : 0));
  ASSIGN_OR_RETURN(Instruction * bc, Centered(ctx, w, 5, -1));
  ASSIGN_OR_RETURN(Instruction * acc, NumpyMatMul(ctx, ac, bc));
  const auto& dims = acc->shape().dims;
  Instruction* as = b.Convert(ctx.input(1), hlo::F32);
  Instruction* bs = b.Convert(ctx.input(4), hlo::F32);
  Instruction* s =
      b.Binary(Opcode::kMultiply, BroadcastTo(b, b.Reshape(as, {}), dims),
               bs->shape().ElementCount() == 1 ? BroadcastTo(b, b.Reshape(bs, {}), dims)
                                               : b.Broadcast(bs, dims, {static_cast<int64_t>(dims.size()) - 1}));
  ASSIGN_OR_RETURN(Instruction * y, Requantize(ctx, acc, s, 6, 7));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

absl::Status QLinearConv(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(Instruction * xc, Centered(ctx, ctx.input(0), 2, 1));
  ASSIGN_OR_RETURN(Instruction * wc, Centered(ctx, ctx.input(3), 5, 0));
  ASSIGN_OR_RETURN(Instruction * acc, ConvWithAttributes(ctx, xc, wc));
  const auto& dims = acc->shape().dims;
  if (ctx.has_input(8)) acc = b.Binary(Opcode::kAdd, acc, b.Broadcast(b.Convert(ctx.input(8), hlo::S32), dims, {1}));
  Instruction* xs = b.Broadcast(b.Reshape(b.Convert(ctx.input(1), hlo::F32), {}), dims, {});
  Instruction* ws = b.Convert(ctx.input(4), hlo::F32);
  ws = ws->shape().ElementCount() == 1 ? b.Broadcast(b.Reshape(ws, {}), dims, {}) : b.Broadcast(ws, dims, {1});
  ASSIGN_OR_RETURN(Instruction * y, Requantize(ctx, acc, b.Binary(Opcode::kMultiply, xs, ws), 6, 7));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

}  // namespace

void RegisterQuantOps(Registry& r) {
  r.Add("QuantizeLinear", QuantizeLinear, 10);
  r.Add("DequantizeLinear", DequantizeLinear, 10);
  r.Add("DynamicQuantizeLinear", DynamicQuantizeLinear, 11);
  r.Add("MatMulInteger", MatMulInteger, 10);
  r.Add("ConvInteger", ConvInteger, 10);
  r.Add("QLinearMatMul", QLinearMatMul, 10);
  r.Add("QLinearConv", QLinearConv, 10);
}

}  // namespace xonnx::onnx_import
