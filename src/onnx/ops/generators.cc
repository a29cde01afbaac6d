// ONNX ops that make tensors from attributes, shapes and counts: Constant,
// ConstantOfShape, Range, EyeLike, Trilu, OneHot.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

absl::Status Constant(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  const onnx::TensorProto* st = ctx.attr_t("value");
  if (st && st->data_type() == onnx::TensorProto::STRING) {
    ctx.set_string_output(
        0, {{st->dims().begin(), st->dims().end()}, {st->string_data().begin(), st->string_data().end()}});
    return absl::OkStatus();
  }
  if (ctx.has_attr("value_string") || ctx.has_attr("value_strings")) {
    StringTensor out;
    for (const auto& a : ctx.node().attribute()) {
      if (a.name() == "value_string") out.values = {a.s()};
      if (a.name() == "value_strings") {
        out.values.assign(a.strings().begin(), a.strings().end());
        out.dims = {static_cast<int64_t>(out.values.size())};
      }
    }
    ctx.set_string_output(0, std::move(out));
    return absl::OkStatus();
  }
  if (const onnx::TensorProto* t = ctx.attr_t("value")) {
    auto l = LiteralFromTensorProto(*t);
    if (!l.ok()) return ctx.Unsupported(std::string(l.status().message()));
    ctx.set_output(0, b.Constant(*std::move(l)));
  } else if (ctx.has_attr("value_float")) {
    ctx.set_output(0, b.Constant(Literal::Scalar<float>(ctx.attr_f("value_float", 0))));
  } else if (ctx.has_attr("value_floats")) {
    ctx.set_output(0, b.Constant(Literal::Vector<float>(ctx.attr_floats("value_floats"))));
  } else if (ctx.has_attr("value_int")) {
    ctx.set_output(0, b.Constant(Literal::Scalar<int64_t>(ctx.attr_i("value_int", 0))));
  } else if (ctx.has_attr("value_ints")) {
    ctx.set_output(0, b.Constant(Literal::Vector<int64_t>(ctx.attr_ints("value_ints"))));
  } else {
    return ctx.Unsupported("only tensor, float(s) and int(s) values (no strings or sparse tensors)");
  }
  return absl::OkStatus();
}

absl::Status ConstantOfShape(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstInts(0));
  for (int64_t d : shape)
    if (d < 0) return ctx.Error(absl::StrCat("the shape [", absl::StrJoin(shape, ","), "] has a negative dimension"));
  Literal value = Literal::Scalar<float>(0);
  if (const onnx::TensorProto* t = ctx.attr_t("value")) {
    auto l = LiteralFromTensorProto(*t);
    if (!l.ok()) return ctx.Unsupported(std::string(l.status().message()));
    if (l->element_count() != 1)
      return ctx.Error(absl::StrCat("value must hold one element; it holds ", l->element_count()));
    value = l->Reshape({});
  }
  ctx.set_output(0, ctx.b().Broadcast(ctx.b().Constant(value), shape, {}));
  return absl::OkStatus();
}

absl::Status Range(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Literal start, ctx.ConstInput(0));
  ASSIGN_OR_RETURN(Literal limit, ctx.ConstInput(1));
  ASSIGN_OR_RETURN(Literal delta, ctx.ConstInput(2));
  double s = start.GetAsDouble(0), l = limit.GetAsDouble(0), d = delta.GetAsDouble(0);
  if (d == 0) return ctx.Error("delta is 0");
  int64_t n = std::max<int64_t>(0, hlo::SaturatingInt64(std::ceil((l - s) / d)));
  hlo::PrimitiveType t = start.shape().element_type;
  Literal out(hlo::Shape(t, {n}));
  hlo::TypeSwitch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      T v = start.data<T>()[0], dd = delta.data<T>()[0];
      for (int64_t i = 0; i < n; ++i, v = static_cast<T>(v + dd)) out.data<T>()[i] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) out.data<T>()[i] = static_cast<T>(s + i * d);
    }
  });
  ctx.set_output(0, ctx.b().Constant(std::move(out)));
  return absl::OkStatus();
}

// col - row for the last two dims of `dims`, as s64.
Instruction* Diagonals(hlo::Builder& b, const std::vector<int64_t>& dims) {
  int64_t r = dims.size();
  hlo::Shape s(hlo::S64, dims);
  return b.Binary(Opcode::kSubtract, b.Iota(s, r - 1), b.Iota(s, r - 2));
}

absl::Status EyeLike(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (x->shape().rank() != 2) return ctx.Error("input must be 2-D");
  hlo::PrimitiveType t = x->shape().element_type;
  if (ctx.has_attr("dtype")) {
    ASSIGN_OR_RETURN(t, HloType(static_cast<int32_t>(ctx.attr_i("dtype", 1))));
  }
  hlo::Builder& b = ctx.b();
  Instruction* diag = Diagonals(b, x->shape().dims);
  Instruction* eq = b.Compare(diag, SplatLike(b, diag, ctx.attr_i("k", 0)), hlo::ComparisonDirection::kEq);
  ctx.set_output(0, b.Convert(eq, t));
  return absl::OkStatus();
}

absl::Status Trilu(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  int64_t k = 0;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(Literal kl, ctx.ConstInput(1));
    k = kl.GetAsInt64(0);
  }
  hlo::Builder& b = ctx.b();
  Instruction* diag = Diagonals(b, x->shape().dims);
  bool upper = ctx.attr_i("upper", 1) != 0;
  Instruction* keep =
      b.Compare(diag, SplatLike(b, diag, k), upper ? hlo::ComparisonDirection::kGe : hlo::ComparisonDirection::kLe);
  ctx.set_output(0, b.Select(keep, x, SplatLike(b, x, 0)));
  return absl::OkStatus();
}

absl::Status OneHot(NodeContext& ctx) {
  Instruction* idx = ctx.input(0);
  ASSIGN_OR_RETURN(Literal depth_l, ctx.ConstInput(1));
  Instruction* values = ctx.input(2);
  hlo::Builder& b = ctx.b();
  int64_t depth = hlo::SaturatingInt64(depth_l.GetAsDouble(0));
  int64_t r = idx->shape().rank() + 1;
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", -1), r));
  std::vector<int64_t> out = idx->shape().dims;
  out.insert(out.begin() + axis, depth);
  Instruction* i64 = b.Convert(idx, hlo::S64);
  // Negative indices count from the end of the depth.
  Instruction* neg = b.Compare(i64, SplatLike(b, i64, 0), hlo::ComparisonDirection::kLt);
  i64 = b.Select(neg, b.Binary(Opcode::kAdd, i64, SplatLike(b, i64, depth)), i64);
  std::vector<int64_t> map;
  for (int64_t i = 0; i < r; ++i)
    if (i != axis) map.push_back(i);
  Instruction* ib = b.Broadcast(i64, out, map);
  Instruction* eq = b.Compare(ib, b.Iota(hlo::Shape(hlo::S64, out), axis), hlo::ComparisonDirection::kEq);
  Instruction* off = b.Reshape(b.Slice(values, {0}, {1}, {1}), {});
  Instruction* on = b.Reshape(b.Slice(values, {1}, {2}, {1}), {});
  ctx.set_output(0, b.Select(eq, b.Broadcast(on, out, {}), b.Broadcast(off, out, {})));
  return absl::OkStatus();
}

}  // namespace

void RegisterGeneratorOps(Registry& r) {
  r.Add("Constant", Constant);
  r.Add("ConstantOfShape", ConstantOfShape, 9).value_inputs = {0};
  r.Add("Range", Range, 11).value_inputs = {0, 1, 2};
  r.Add("EyeLike", EyeLike, 9);
  r.Add("Trilu", Trilu, 14).value_inputs = {1};
  r.Add("OneHot", OneHot, 9).value_inputs = {1};
}

}  // namespace xonnx::onnx_import
