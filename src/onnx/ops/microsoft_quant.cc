// ONNX Runtime's quantized ops (com.microsoft) that its quantizer and its
// optimizer write: DynamicQuantizeMatMul (a dynamically quantized A times
// int8 weights), QGemm, and the element-wise QLinearAdd and QLinearMul.
// Integer products accumulate in int32; results are rescaled in f32 and,
// where quantized, rounded half to even and saturated, as in quant.cc.
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "onnx/ops/quantize.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// A scale (or zero point) given per tensor or per output column, broadcast
// to the product's (..., N) shape.
Instruction* PerColumn(hlo::Builder& b, Instruction* p, const std::vector<int64_t>& dims) {
  if (p->shape().ElementCount() == 1) return b.Broadcast(b.Reshape(p, {}), dims, {});
  return b.Broadcast(b.Reshape(p, {dims.back()}), dims, {static_cast<int64_t>(dims.size()) - 1});
}

// Input `i` as a scalar f32 (a per-tensor scale or zero point).
Instruction* ScalarF32(NodeContext& ctx, int i) { return ctx.b().Reshape(ctx.b().Convert(ctx.input(i), hlo::F32), {}); }

// Input `i` minus its zero point (input i + 2), in f32: exact for 8-bit values.
Instruction* CenteredF32(NodeContext& ctx, int i) {
  hlo::Builder& b = ctx.b();
  Instruction* x = ctx.input(i);
  const auto& dims = x->shape().dims;
  Instruction* v = b.Convert(x, hlo::F32);
  if (!ctx.has_input(i + 2)) return v;
  return b.Binary(Opcode::kSubtract, v, b.Broadcast(ScalarF32(ctx, i + 2), dims, {}));
}

// v (f32, of x's shape) quantized at the scale and zero point of inputs
// `scale` and `zp` (absent: x's type).
Instruction* QuantizeAt(NodeContext& ctx, Instruction* v, int scale, int zp, hlo::PrimitiveType fallback) {
  hlo::Builder& b = ctx.b();
  const auto& dims = v->shape().dims;
  v = b.Binary(Opcode::kDivide, v, b.Broadcast(ScalarF32(ctx, scale), dims, {}));
  v = b.Unary(Opcode::kRoundNearestEven, v);
  if (ctx.has_input(zp)) v = b.Binary(Opcode::kAdd, v, b.Broadcast(ScalarF32(ctx, zp), dims, {}));
  return Saturate(b, v, ctx.has_input(zp) ? ctx.input(zp)->shape().element_type : fallback);
}

// DynamicQuantizeMatMul: A (float) quantized as DynamicQuantizeLinear does,
// times B (int8 or uint8, zero point per tensor or per column), rescaled by
// A's and B's scales, plus bias.
absl::Status DynamicQuantizeMatMul(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* a = ctx.input(0);
  if (a->shape().element_type != hlo::F32) return ctx.Unsupported("A of a type other than float");
  DynamicQuantized dq = DynamicQuantize(b, a);
  Instruction* ac = b.Binary(Opcode::kSubtract, b.Convert(dq.q, hlo::S32),
                             b.Broadcast(b.Convert(dq.zp, hlo::S32), a->shape().dims, {}));
  ASSIGN_OR_RETURN(Instruction * wc, Centered(ctx, ctx.input(1), 3, -1));  // zero point per tensor or column
  ASSIGN_OR_RETURN(Instruction * acc, NumpyMatMul(ctx, ac, wc));
  const auto& dims = acc->shape().dims;
  Instruction* scale = b.Binary(Opcode::kMultiply, b.Broadcast(dq.scale, dims, {}),
                                PerColumn(b, b.Convert(ctx.input(2), hlo::F32), dims));
  Instruction* y = b.Binary(Opcode::kMultiply, b.Convert(acc, hlo::F32), scale);
  if (ctx.has_input(4)) y = b.Binary(Opcode::kAdd, y, PerColumn(b, b.Convert(ctx.input(4), hlo::F32), dims));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

// QGemm: alpha * (A - a_zp) op (B - b_zp) * a_scale * b_scale, plus C (int32
// at that same scale), as float or, with y_scale, quantized.
absl::Status QGemm(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* a = ctx.input(0);
  Instruction* w = ctx.input(3);
  if (a->shape().rank() != 2 || w->shape().rank() != 2) return ctx.Error("A and B must be 2-D");
  bool ta = ctx.attr_i("transA", 0), tb = ctx.attr_i("transB", 0);
  ASSIGN_OR_RETURN(Instruction * ac, Centered(ctx, a, 2, 0));
  // b's zero point and scale are per column of op(B): along B's dim 0 when transposed.
  ASSIGN_OR_RETURN(Instruction * wc, Centered(ctx, w, 5, tb ? 0 : 1));
  hlo::DotDimensionNumbers d;
  d.lhs_contracting_dimensions = {ta ? 0 : 1};
  d.rhs_contracting_dimensions = {tb ? 1 : 0};
  Instruction* acc = b.Dot(ac, wc, d);
  if (!acc) return absl::OkStatus();
  const auto& dims = acc->shape().dims;
  if (ctx.has_input(6)) acc = b.Binary(Opcode::kAdd, acc, BroadcastTo(b, b.Convert(ctx.input(6), hlo::S32), dims));
  Instruction* scale = b.Binary(Opcode::kMultiply, b.Broadcast(ScalarF32(ctx, 1), dims, {}),
                                PerColumn(b, b.Convert(ctx.input(4), hlo::F32), dims));
  float alpha = ctx.attr_f("alpha", 1.0f);
  if (alpha != 1.0f) scale = b.Binary(Opcode::kMultiply, scale, SplatLike(b, scale, alpha));
  Instruction* y = b.Binary(Opcode::kMultiply, b.Convert(acc, hlo::F32), scale);
  if (ctx.has_input(7)) y = QuantizeAt(ctx, y, 7, 8, a->shape().element_type);
  ctx.set_output(0, y);
  return absl::OkStatus();
}

// QLinearAdd and QLinearMul (inputs A, A_scale, A_zp, B, B_scale, B_zp,
// C_scale, C_zp; numpy broadcasting), in ONNX Runtime's f32 arithmetic,
// whose rounding the results must match: the sum as round((sa (A - za) +
// sb (B - zb)) / sc) + zc; the product as round((A - za) (B - zb) (sa sb /
// sc) + zc), the zero point added before rounding (which decides ties).
absl::Status QLinearBinary(NodeContext& ctx, Opcode op) {
  hlo::Builder& b = ctx.b();
  Instruction* x = CenteredF32(ctx, 0);
  Instruction* y = CenteredF32(ctx, 3);
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastDims(x->shape().dims, y->shape().dims));
  x = BroadcastTo(b, x, dims);
  y = BroadcastTo(b, y, dims);
  Instruction* sa = ScalarF32(ctx, 1);
  Instruction* sb = ScalarF32(ctx, 4);
  Instruction* sc = ScalarF32(ctx, 6);
  auto splat = [&](Instruction* scalar) { return b.Broadcast(scalar, dims, {}); };
  Instruction* zc = ctx.has_input(7) ? splat(ScalarF32(ctx, 7)) : nullptr;
  Instruction* v;
  if (op == Opcode::kAdd) {
    v = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, splat(sa), x), b.Binary(Opcode::kMultiply, splat(sb), y));
    v = b.Unary(Opcode::kRoundNearestEven, b.Binary(Opcode::kDivide, v, splat(sc)));
    if (zc) v = b.Binary(Opcode::kAdd, v, zc);
  } else {
    Instruction* ratio = b.Binary(Opcode::kDivide, b.Binary(Opcode::kMultiply, sa, sb), sc);
    v = b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, x, y), splat(ratio));
    if (zc) v = b.Binary(Opcode::kAdd, v, zc);
  }
  hlo::PrimitiveType t = ctx.has_input(7) ? ctx.input(7)->shape().element_type : ctx.input(0)->shape().element_type;
  ctx.set_output(0, Saturate(b, v, t));
  return absl::OkStatus();
}

absl::Status QLinearAdd(NodeContext& ctx) { return QLinearBinary(ctx, Opcode::kAdd); }
absl::Status QLinearMul(NodeContext& ctx) { return QLinearBinary(ctx, Opcode::kMultiply); }

// x (8-bit) mapped element by element through `fn`, as ONNX Runtime maps
// it: a table of fn over every value of x's type, then a lookup. fn is
// ONNX's f32 arithmetic (dequantize, the function, requantize); with the
// scales constant the constant folder computes the table here, exactly, so
// no compiler's float rewrites can move a value across a rounding boundary:
// XLA folds the chain (q * scale) * alpha into q * (scale * alpha), whose
// product rounds differently, and QLinearLeakyRelu's requantized values
// then land on the other side of a half.
Instruction* ThroughTable(hlo::Builder& b, Instruction* x, const std::function<Instruction*(Instruction*)>& fn) {
  hlo::PrimitiveType t = x->shape().element_type;
  bool is_signed = t == hlo::S8;
  std::vector<int32_t> keys(256);
  for (int k = 0; k < 256; ++k) keys[k] = is_signed ? k - 128 : k;
  Instruction* table = fn(b.Convert(b.Constant(hlo::Literal::Vector<int32_t>(keys)), t));
  std::vector<int64_t> dims = x->shape().dims;
  Instruction* index = b.Convert(x, hlo::S32);
  if (is_signed) index = b.Binary(Opcode::kAdd, index, SplatLike(b, index, 128));
  dims.push_back(1);
  index = b.Reshape(index, dims);
  hlo::GatherDimensionNumbers d;
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = static_cast<int64_t>(dims.size()) - 1;
  return b.Gather(table, index, d, {1});
}

// An 8-bit input of QLinear ops: the table's keys must cover its values.
absl::Status CheckEightBit(NodeContext& ctx, int i) {
  hlo::PrimitiveType t = ctx.input(i)->shape().element_type;
  if (t != hlo::U8 && t != hlo::S8)
    return ctx.Error(absl::StrCat("input ", i, " must be uint8 or int8, not ", hlo::PrimitiveTypeName(t)));
  return absl::OkStatus();
}

// q (of input i's type) dequantized at input i's scale (i + 1) and zero
// point (i + 2), in f32.
Instruction* DequantizedF32(NodeContext& ctx, Instruction* q, int i) {
  hlo::Builder& b = ctx.b();
  const auto& dims = q->shape().dims;
  Instruction* v = b.Convert(q, hlo::F32);
  if (ctx.has_input(i + 2)) v = b.Binary(Opcode::kSubtract, v, b.Broadcast(ScalarF32(ctx, i + 2), dims, {}));
  return b.Binary(Opcode::kMultiply, v, b.Broadcast(ScalarF32(ctx, i + 1), dims, {}));
}

// QLinearSigmoid and QLinearLeakyRelu (X, X_scale, X_zp, Y_scale, Y_zp):
// the activation of the dequantized value, quantized at Y's parameters.
absl::Status QLinearActivation(NodeContext& ctx, bool leaky) {
  RETURN_IF_ERROR(CheckEightBit(ctx, 0));
  hlo::Builder& b = ctx.b();
  float alpha = ctx.attr_f("alpha", 0.01f);
  hlo::PrimitiveType t = ctx.input(0)->shape().element_type;
  ctx.set_output(0, ThroughTable(b, ctx.input(0), [&](Instruction* q) {
                   Instruction* x = DequantizedF32(ctx, q, 0);
                   Instruction* y;
                   if (leaky) {
                     y = b.Select(b.Compare(x, SplatLike(b, x, 0), hlo::ComparisonDirection::kGe), x,
                                  b.Binary(Opcode::kMultiply, x, SplatLike(b, x, alpha)));
                   } else {
                     y = b.Unary(Opcode::kLogistic, x);
                   }
                   return QuantizeAt(ctx, y, 3, 4, t);
                 }));
  return absl::OkStatus();
}
absl::Status QLinearSigmoid(NodeContext& ctx) { return QLinearActivation(ctx, false); }
absl::Status QLinearLeakyRelu(NodeContext& ctx) { return QLinearActivation(ctx, true); }

// QLinearConcat (Y_scale, Y_zp, then X, X_scale, X_zp per input): each input
// requantized to Y's parameters (through a table, as the activations),
// concatenated along `axis`.
absl::Status QLinearConcat(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  if (ctx.input_count() < 5 || (ctx.input_count() - 2) % 3)
    return ctx.Error("inputs must be Y_scale, Y_zp, then triples");
  hlo::PrimitiveType t = ctx.input(2)->shape().element_type;
  std::vector<Instruction*> parts;
  for (int i = 2; i + 2 < ctx.input_count(); i += 3) {
    RETURN_IF_ERROR(CheckEightBit(ctx, i));
    parts.push_back(ThroughTable(b, ctx.input(i),
                                 [&](Instruction* q) { return QuantizeAt(ctx, DequantizedF32(ctx, q, i), 0, 1, t); }));
  }
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), parts[0]->shape().rank()));
  ctx.set_output(0, b.Concatenate(parts, axis));
  return absl::OkStatus();
}

// QLinearGlobalAveragePool (X, x_scale, x_zp, y_scale, y_zp; channels_last):
// the mean over the spatial axes of the dequantized input, quantized.
absl::Status QLinearGlobalAveragePool(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* xq = ctx.input(0);
  int64_t r = xq->shape().rank();
  if (r < 3) return ctx.Error("input must have a batch, a channel and spatial axes");
  bool channels_last = ctx.attr_i("channels_last", 0) != 0;
  std::vector<int64_t> axes;
  for (int64_t i = channels_last ? 1 : 2; i < (channels_last ? r - 1 : r); ++i) axes.push_back(i);
  int64_t count = 1;
  for (int64_t a : axes) count *= xq->shape().dims[a];
  Instruction* x =
      b.Binary(Opcode::kMultiply, CenteredF32(ctx, 0), b.Broadcast(ScalarF32(ctx, 1), xq->shape().dims, {}));
  Instruction* mean = ReduceOver(b, x, Opcode::kAdd, 0, axes, /*keepdims=*/true);
  mean = b.Binary(Opcode::kDivide, mean, SplatLike(b, mean, count));
  ctx.set_output(0, QuantizeAt(ctx, mean, 3, 4, xq->shape().element_type));
  return absl::OkStatus();
}

}  // namespace

void RegisterMicrosoftQuantOps(Registry& r) {
  for (auto [op, fn] : {std::pair<const char*, Converter>{"DynamicQuantizeMatMul", DynamicQuantizeMatMul},
                        {"QGemm", QGemm},
                        {"QLinearAdd", QLinearAdd},
                        {"QLinearMul", QLinearMul},
                        {"QLinearSigmoid", QLinearSigmoid},
                        {"QLinearLeakyRelu", QLinearLeakyRelu},
                        {"QLinearConcat", QLinearConcat},
                        {"QLinearGlobalAveragePool", QLinearGlobalAveragePool}})
    r.Add({.domain = "com.microsoft", .op_type = op, .min_opset = 1, .max_opset = 1, .fn = fn});
}

}  // namespace xonnx::onnx_import
