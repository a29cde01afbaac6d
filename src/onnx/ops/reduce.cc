// Reductions and normalizing ops along axes: Reduce*, ArgMax/ArgMin,
// Softmax/LogSoftmax/Hardmax, CumSum, TopK.
#include <algorithm>
#include <cmath>

#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Axes of a Reduce* node: an attribute before `input_since`, input 1 after.
// Empty means all axes unless noop_with_empty_axes.
absl::StatusOr<std::vector<int64_t>> ReduceAxes(NodeContext& ctx, int64_t rank, int64_t input_since, bool* noop) {
  std::vector<int64_t> axes;
  if (ctx.opset() >= input_since) {
    if (ctx.has_input(1)) {
      ASSIGN_OR_RETURN(axes, ctx.ConstInts(1));
    }
  } else {
    axes = ctx.attr_ints("axes");
  }
  *noop = axes.empty() && ctx.attr_i("noop_with_empty_axes", 0) != 0;
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (auto& a : axes) {
    ASSIGN_OR_RETURN(a, NormalizeAxis(ctx, a, rank));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

template <ReduceKind kind>
absl::Status Reduce(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (!x) return ctx.Error("needs an input");
  int64_t since = kind == ReduceKind::kSum ? 13 : 18;
  bool noop = false;
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ReduceAxes(ctx, x->shape().rank(), since, &noop));
  bool keep = ctx.attr_i("keepdims", 1) != 0;
  hlo::Builder& b = ctx.b();
  if (noop) {
    ctx.set_output(0, x);
    return absl::OkStatus();
  }
  hlo::PrimitiveType t = x->shape().element_type;
  int64_t count = 1;
  for (int64_t a : axes) count *= x->shape().dims[a];
  Instruction* r = nullptr;
  switch (kind) {
    case ReduceKind::kSum:
      r = ReduceOver(b, x, Opcode::kAdd, 0, axes, keep);
      break;
    case ReduceKind::kMean:
      r = ReduceOver(b, x, Opcode::kAdd, 0, axes, keep);
      r = b.Binary(Opcode::kDivide, r, SplatLike(b, r, count));
      break;
    case ReduceKind::kMax:
      r = ReduceOver(b, x, Opcode::kMaximum, LowestValue(t), axes, keep);
      break;
    case ReduceKind::kMin:
      r = ReduceOver(b, x, Opcode::kMinimum, HighestValue(t), axes, keep);
      break;
    case ReduceKind::kProd:
      r = ReduceOver(b, x, Opcode::kMultiply, 1, axes, keep);
      break;
    case ReduceKind::kL1:
      r = ReduceOver(b, b.Unary(Opcode::kAbs, x), Opcode::kAdd, 0, axes, keep);
      break;
    case ReduceKind::kSumSquare:
      r = ReduceOver(b, b.Binary(Opcode::kMultiply, x, x), Opcode::kAdd, 0, axes, keep);
      break;
    case ReduceKind::kL2: {
      // Integer L2 norms are computed in f64 and converted back.
      Instruction* xf = hlo::IsFloatingPoint(t) ? x : b.Convert(x, hlo::F64);
      r = b.Unary(Opcode::kSqrt, ReduceOver(b, b.Binary(Opcode::kMultiply, xf, xf), Opcode::kAdd, 0, axes, keep));
      r = b.Convert(r, t);
      break;
    }
    case ReduceKind::kLogSum:
      r = b.Unary(Opcode::kLog, ReduceOver(b, x, Opcode::kAdd, 0, axes, keep));
      break;
    case ReduceKind::kLogSumExp: {
      // max + log(sum(exp(x - max))) avoids overflow.
      Instruction* m = ReduceOver(b, x, Opcode::kMaximum, LowestValue(t), axes, true);
      Instruction* mb = BroadcastTo(b, m, x->shape().dims);
      Instruction* s =
          ReduceOver(b, b.Unary(Opcode::kExp, b.Binary(Opcode::kSubtract, x, mb)), Opcode::kAdd, 0, axes, true);
      r = b.Binary(Opcode::kAdd, b.Unary(Opcode::kLog, s), m);
      if (!keep) {
        std::vector<int64_t> out;
        for (int64_t i = 0; i < x->shape().rank(); ++i)
          if (!std::binary_search(axes.begin(), axes.end(), i)) out.push_back(x->shape().dims[i]);
        r = b.Reshape(r, out);
      }
      break;
    }
  }
  ctx.set_output(0, r);
  return absl::OkStatus();
}

template <bool kMax>
absl::Status ArgMinMax(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t r = x->shape().rank();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), r));
  bool keep = ctx.attr_i("keepdims", 1) != 0;
  bool last = ctx.attr_i("select_last_index", 0) != 0;
  if (x->shape().dims[axis] == 0 && x->shape().ElementCount() == 0) {
    int64_t others = 1;
    for (int64_t d = 0; d < r; ++d)
      if (d != axis) others *= x->shape().dims[d];
    // No element to point at (ONNX Runtime refuses too).
    if (others > 0) return ctx.Error(absl::StrCat("axis ", axis, " has no elements: there is no index to return"));
  }
  hlo::PrimitiveType t = x->shape().element_type;
  // best = reduce(x); idx = min (or max for select_last) of iota where x == best.
  Instruction* best = ReduceOver(b, x, kMax ? Opcode::kMaximum : Opcode::kMinimum,
                                 kMax ? LowestValue(t) : HighestValue(t), {axis}, true);
  Instruction* hit = b.Compare(x, BroadcastTo(b, best, x->shape().dims), hlo::ComparisonDirection::kEq);
  if (hlo::IsFloatingPoint(t)) {  // a NaN is the extremum, like numpy
    hit = b.Binary(Opcode::kOr, hit, b.Compare(x, x, hlo::ComparisonDirection::kNe));
  }
  // Positions as f32 where they are exact (up to 2^24) and the values are
  // f32: the comparisons, the choice and the reduction of positions then run
  // on one type, in one vector width (an 8x50257 ArgMax: 0.57 -> 0.2 ms).
  const int64_t n = x->shape().dims[axis];
  const hlo::PrimitiveType pt = t == hlo::F32 && n <= (int64_t{1} << 24) ? hlo::F32 : hlo::S64;
  Instruction* iota = b.Iota(hlo::Shape(pt, x->shape().dims), axis);
  Instruction* sentinel = SplatLike(b, iota, last ? -1 : n);
  Instruction* cand = b.Select(hit, iota, sentinel);
  Instruction* idx = ReduceOver(b, cand, last ? Opcode::kMaximum : Opcode::kMinimum, last ? -1 : n, {axis}, keep);
  ctx.set_output(0, pt == hlo::S64 ? idx : b.Convert(idx, hlo::S64));
  return absl::OkStatus();
}

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

template <SoftmaxKind kind>
absl::Status Softmax(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t r = x->shape().rank();
  bool legacy = ctx.opset() < 13;
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", legacy ? 1 : -1), r));
  std::vector<int64_t> orig = x->shape().dims;
  std::vector<int64_t> axes;
  if (legacy) {
    // Before opset 13 the input is coerced to 2-D at `axis`.
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= orig[i];
    for (int64_t i = axis; i < r; ++i) inner *= orig[i];
    x = b.Reshape(x, {outer, inner});
    axes = {1};
  } else {
    axes = {axis};
  }
  hlo::PrimitiveType t = x->shape().element_type;
  const auto& dims = x->shape().dims;
  Instruction* m = BroadcastTo(b, ReduceOver(b, x, Opcode::kMaximum, LowestValue(t), axes, true), dims);
  Instruction* y;
  if (kind == SoftmaxKind::kHardmax) {
    Instruction* iota = b.Iota(hlo::Shape(hlo::S64, dims), axes[0]);
    Instruction* cand =
        b.Select(b.Compare(x, m, hlo::ComparisonDirection::kEq), iota, SplatLike(b, iota, dims[axes[0]]));
    Instruction* first = BroadcastTo(b, ReduceOver(b, cand, Opcode::kMinimum, INT64_MAX, axes, true), dims);
    y = b.Convert(b.Compare(iota, first, hlo::ComparisonDirection::kEq), t);
  } else {
    Instruction* shifted = b.Binary(Opcode::kSubtract, x, m);
    Instruction* e = b.Unary(Opcode::kExp, shifted);
    Instruction* s = BroadcastTo(b, ReduceOver(b, e, Opcode::kAdd, 0, axes, true), dims);
    y = kind == SoftmaxKind::kSoftmax ? b.Binary(Opcode::kDivide, e, s)
                                      : b.Binary(Opcode::kSubtract, shifted, b.Unary(Opcode::kLog, s));
  }
  ctx.set_output(0, b.Reshape(y, orig));
  return absl::OkStatus();
}

absl::Status CumSum(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(hlo::Literal axis_l, ctx.ConstInput(1));
  int64_t r = x->shape().rank();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, axis_l.GetAsInt64(0), r));
  bool exclusive = ctx.attr_i("exclusive", 0) != 0;
  bool reverse = ctx.attr_i("reverse", 0) != 0;
  int64_t n = x->shape().dims[axis];
  if (reverse) x = b.Reverse(x, {axis});
  hlo::Window w;
  w.dimensions.resize(r);
  // A window of n elements ending at each position sums its prefix.
  w.dimensions[axis].size = n;
  w.dimensions[axis].padding_low = n - 1;
  hlo::PrimitiveType t = x->shape().element_type;
  Instruction* y = b.ReduceWindow(x, b.ScalarConstant(t, 0), w, b.ScalarReducer(Opcode::kAdd, t));
  if (exclusive) {
    // Shift right by one: pad a zero in front and drop the last element.
    std::vector<hlo::PaddingDimension> cfg(r);
    cfg[axis] = {1, -1, 0};
    y = b.Pad(y, b.ScalarConstant(t, 0), cfg);
  }
  if (reverse) y = b.Reverse(y, {axis});
  ctx.set_output(0, y);
  return absl::OkStatus();
}

absl::Status TopK(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t r = x->shape().rank();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", -1), r));
  int64_t k;
  if (ctx.opset() < 10) {
    k = ctx.attr_i("k", 0);
  } else {
    ASSIGN_OR_RETURN(hlo::Literal kl, ctx.ConstInput(1));
    k = kl.GetAsInt64(0);
  }
  if (k < 0 || k > x->shape().dims[axis]) return ctx.Error(absl::StrCat("k=", k, " is out of range"));
  bool largest = ctx.attr_i("largest", 1) != 0;
  hlo::PrimitiveType t = x->shape().element_type;
  // Sort (values, indices) by value with a stable sort: equal values keep
  // ascending indices, as ONNX requires.
  hlo::Builder cb(b.module(), largest ? "topk_gt" : "topk_lt");
  Instruction* pa = cb.Parameter(0, hlo::Shape::Scalar(t), "a");
  Instruction* pb = cb.Parameter(1, hlo::Shape::Scalar(t), "b");
  cb.Parameter(2, hlo::Shape::Scalar(hlo::S64), "ia");
  cb.Parameter(3, hlo::Shape::Scalar(hlo::S64), "ib");
  auto cmp = cb.Build(cb.Compare(pa, pb, largest ? hlo::ComparisonDirection::kGt : hlo::ComparisonDirection::kLt));
  if (!cmp.ok()) return cmp.status();
  Instruction* iota = b.Iota(hlo::Shape(hlo::S64, x->shape().dims), axis);
  Instruction* sorted = b.Sort({x, iota}, axis, *cmp, /*stable=*/true);
  std::vector<int64_t> s(r, 0), l = x->shape().dims, st(r, 1);
  l[axis] = k;
  ctx.set_output(0, b.Slice(b.GetTupleElement(sorted, 0), s, l, st));
  ctx.set_output(1, b.Slice(b.GetTupleElement(sorted, 1), s, l, st));
  return absl::OkStatus();
}

}  // namespace

void RegisterReduceOps(Registry& r) {
  r.Add("ReduceSum", Reduce<ReduceKind::kSum>).value_inputs = {1};
  r.Add("ReduceMean", Reduce<ReduceKind::kMean>).value_inputs = {1};
  r.Add("ReduceMax", Reduce<ReduceKind::kMax>).value_inputs = {1};
  r.Add("ReduceMin", Reduce<ReduceKind::kMin>).value_inputs = {1};
  r.Add("ReduceProd", Reduce<ReduceKind::kProd>).value_inputs = {1};
  r.Add("ReduceL1", Reduce<ReduceKind::kL1>).value_inputs = {1};
  r.Add("ReduceL2", Reduce<ReduceKind::kL2>).value_inputs = {1};
  r.Add("ReduceLogSum", Reduce<ReduceKind::kLogSum>).value_inputs = {1};
  r.Add("ReduceLogSumExp", Reduce<ReduceKind::kLogSumExp>).value_inputs = {1};
  r.Add("ReduceSumSquare", Reduce<ReduceKind::kSumSquare>).value_inputs = {1};
  r.Add("ArgMax", ArgMinMax<true>);
  r.Add("ArgMin", ArgMinMax<false>);
  r.Add("Softmax", Softmax<SoftmaxKind::kSoftmax>);
  r.Add("LogSoftmax", Softmax<SoftmaxKind::kLogSoftmax>);
  r.Add("Hardmax", Softmax<SoftmaxKind::kHardmax>);
  r.Add("CumSum", CumSum, 11).value_inputs = {1};
  r.Add("TopK", TopK).value_inputs = {1};
}

}  // namespace xonnx::onnx_import
