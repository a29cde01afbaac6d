// Shape and data-movement ONNX ops: Shape, Reshape, Transpose, Concat,
// Split, Slice, Pad, Expand, Tile (gathers and scatters are in
// gather_scatter.cc, ops that make tensors from attributes and shapes in
// generators.cc).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

int64_t Product(const std::vector<int64_t>& d, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, d.size()); ++i) p *= d[i];
  return p;
}

Instruction* Int64Vector(hlo::Builder& b, const std::vector<int64_t>& v) {
  return b.Constant(Literal::Vector<int64_t>(v));
}

absl::Status Shape(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (!x) return ctx.Error("needs an input");
  std::vector<int64_t> d = x->shape().dims;
  int64_t r = d.size();
  int64_t start = ctx.attr_i("start", 0), end = ctx.attr_i("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  ctx.set_output(0, Int64Vector(ctx.b(), std::vector<int64_t>(d.begin() + start, d.begin() + end)));
  return absl::OkStatus();
}

absl::Status Size(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (!x) return ctx.Error("needs an input");
  ctx.set_output(0, ctx.b().Constant(Literal::Scalar<int64_t>(x->shape().ElementCount())));
  return absl::OkStatus();
}

absl::Status Reshape(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  std::vector<int64_t> shape;
  if (ctx.opset() < 5) {
    shape = ctx.attr_ints("shape");
  } else {
    ASSIGN_OR_RETURN(shape, ctx.ConstInts(1));
  }
  bool allowzero = ctx.attr_i("allowzero", 0) != 0;
  const auto& xd = x->shape().dims;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= xd.size()) return ctx.Error("shape has 0 beyond the input rank");
      shape[i] = xd[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) return ctx.Error("shape has more than one -1");
      infer = i;
    } else if (shape[i] < 0) {
      return ctx.Error(absl::StrCat("invalid dimension ", shape[i], " in shape"));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x->shape().ElementCount() % known)
      return ctx.Error(absl::StrCat("cannot infer -1: ", x->shape().ElementCount(), " elements into [",
                                    absl::StrJoin(shape, ","), "]"));
    shape[infer] = x->shape().ElementCount() / known;
  }
  if (Product(shape) != x->shape().ElementCount())
    return ctx.Error(
        absl::StrCat("cannot reshape ", x->shape().ToString(false), " to [", absl::StrJoin(shape, ","), "]"));
  ctx.set_output(0, ctx.b().Reshape(x, shape));
  return absl::OkStatus();
}

absl::Status Flatten(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  int64_t r = x->shape().rank();
  int64_t axis = ctx.attr_i("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) return ctx.Error("axis out of range");
  const auto& d = x->shape().dims;
  ctx.set_output(0, ctx.b().Reshape(x, {Product(d, 0, axis), Product(d, axis)}));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> AxesFromAttrOrInput(NodeContext& ctx, int input_index, int64_t input_since) {
  if (ctx.opset() >= input_since) {
    if (!ctx.has_input(input_index)) return std::vector<int64_t>{};
    return ctx.ConstInts(input_index);
  }
  return ctx.attr_ints("axes");
}

absl::Status Squeeze(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesFromAttrOrInput(ctx, 1, 13));
  int64_t r = x->shape().rank();
  std::vector<bool> drop(r, false);
  if (axes.empty()) {
    for (int64_t i = 0; i < r; ++i) drop[i] = x->shape().dims[i] == 1;
  }
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(ctx, a, r));
    if (x->shape().dims[ax] != 1)
      return ctx.Error(absl::StrCat("cannot squeeze axis ", a, " of size ", x->shape().dims[ax]));
    drop[ax] = true;
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < r; ++i)
    if (!drop[i]) out.push_back(x->shape().dims[i]);
  ctx.set_output(0, ctx.b().Reshape(x, out));
  return absl::OkStatus();
}

absl::Status Unsqueeze(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesFromAttrOrInput(ctx, 1, 13));
  int64_t r = x->shape().rank() + axes.size();
  std::vector<bool> inserted(r, false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(ctx, a, r));
    if (inserted[ax]) return ctx.Error("repeated axis");
    inserted[ax] = true;
  }
  std::vector<int64_t> out;
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(inserted[i] ? 1 : x->shape().dims[k++]);
  ctx.set_output(0, ctx.b().Reshape(x, out));
  return absl::OkStatus();
}

absl::Status Transpose(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  int64_t r = x->shape().rank();
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) {
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  for (auto& p : perm) {
    ASSIGN_OR_RETURN(p, NormalizeAxis(ctx, p, r));
  }
  ctx.set_output(0, ctx.b().Transpose(x, perm));
  return absl::OkStatus();
}

absl::Status Concat(NodeContext& ctx) {
  std::vector<Instruction*> xs;
  for (int i = 0; i < ctx.input_count(); ++i)
    if (ctx.has_input(i)) xs.push_back(ctx.input(i));
  if (xs.empty() || !xs[0]) return ctx.Error("needs inputs");
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), xs[0]->shape().rank()));
  // Empty tensors contribute nothing and may have any other dims (PyTorch
  // concatenates [0] with [N, 4]). When all are empty and agree as ONNX
  // says, their concatenation still has the summed axis ([0, 1] four
  // times along axis 1 is [0, 4], a detector's boxes when none is found).
  std::vector<Instruction*> nonempty;
  for (Instruction* x : xs)
    if (x && x->shape().ElementCount() > 0) nonempty.push_back(x);
  if (nonempty.empty()) {
    bool agree = true;
    for (Instruction* x : xs) {
      if (!x || x->shape().rank() != xs[0]->shape().rank()) return ctx.Error("inputs must have the same rank");
      for (int64_t d = 0; d < x->shape().rank(); ++d)
        agree &= d == axis || x->shape().dims[d] == xs[0]->shape().dims[d];
    }
    nonempty = agree ? xs : std::vector<Instruction*>{xs[0]};
  }
  ctx.set_output(0, ctx.b().Concatenate(nonempty, axis));
  return absl::OkStatus();
}

absl::Status Split(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  int64_t r = x->shape().rank();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), r));
  int64_t dim = x->shape().dims[axis];
  std::vector<int64_t> sizes;
  if (ctx.opset() >= 13 && ctx.has_input(1)) {
    ASSIGN_OR_RETURN(sizes, ctx.ConstInts(1));
  } else if (ctx.opset() < 13) {
    sizes = ctx.attr_ints("split");
  }
  int64_t n = ctx.output_count();
  if (sizes.empty()) {
    if (ctx.has_attr("num_outputs")) n = ctx.attr_i("num_outputs", n);
    int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != dim)
    return ctx.Error(absl::StrCat("split sizes [", absl::StrJoin(sizes, ","), "] do not add up to ", dim));
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> s(r, 0), l = x->shape().dims, st(r, 1);
    s[axis] = start;
    l[axis] = start + sizes[i];
    ctx.set_output(i, ctx.b().Slice(x, s, l, st));
    start += sizes[i];
  }
  return absl::OkStatus();
}

// Slices x along `axis` with ONNX start/end/step semantics (clamping,
// negative indices, negative steps).
Instruction* SliceAxis(hlo::Builder& b, Instruction* x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  int64_t d = x->shape().dims[axis];
  int64_t r = x->shape().rank();
  if (d == 0) return x;  // nothing to take, whatever the bounds
  // A step longer than the axis takes one element, as a step of its length
  // does (numpy's rule); clamped, the slice's size arithmetic cannot
  // overflow (a step of INT64_MAX took nothing, not the first element).
  step = std::clamp<int64_t>(step, -d, d);
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
  } else {
    start = std::clamp<int64_t>(start, 0, d - 1);
    end = std::clamp<int64_t>(end, -1, d - 1);
    // Reverse the axis and slice forward.
    x = b.Reverse(x, {axis});
    start = d - 1 - start;
    end = d - 1 - end;
    step = -step;
  }
  std::vector<int64_t> s(r, 0), l = x->shape().dims, st(r, 1);
  s[axis] = start;
  l[axis] = std::max(start, end);
  st[axis] = step;
  return b.Slice(x, s, l, st);
}

absl::Status Slice(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  int64_t r = x->shape().rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    ASSIGN_OR_RETURN(starts, ctx.ConstInts(1));
    ASSIGN_OR_RETURN(ends, ctx.ConstInts(2));
    if (ctx.has_input(3)) {
      ASSIGN_OR_RETURN(axes, ctx.ConstInts(3));
    }
    if (ctx.has_input(4)) {
      ASSIGN_OR_RETURN(steps, ctx.ConstInts(4));
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return ctx.Error("starts, ends, axes and steps must have the same length");
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, axes[i], r));
    if (steps[i] == 0) return ctx.Error("step 0");
    x = SliceAxis(ctx.b(), x, axis, starts[i], ends[i], steps[i]);
  }
  ctx.set_output(0, x);
  return absl::OkStatus();
}

absl::Status Expand(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstInts(1));
  auto dims = BroadcastDims(x->shape().dims, shape);
  if (!dims.ok()) return ctx.Error(std::string(dims.status().message()));
  ctx.set_output(0, BroadcastTo(ctx.b(), x, *dims));
  return absl::OkStatus();
}

absl::Status Tile(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ASSIGN_OR_RETURN(std::vector<int64_t> reps, ctx.ConstInts(1));
  int64_t r = x->shape().rank();
  if (static_cast<int64_t>(reps.size()) != r) return ctx.Error("repeats must have one entry per dimension");
  // [d0, d1] -> broadcast to [r0, d0, r1, d1] -> reshape [r0*d0, r1*d1].
  std::vector<int64_t> bdims, map, out;
  for (int64_t i = 0; i < r; ++i) {
    bdims.push_back(reps[i]);
    bdims.push_back(x->shape().dims[i]);
    map.push_back(2 * i + 1);
    out.push_back(reps[i] * x->shape().dims[i]);
  }
  ctx.set_output(0, ctx.b().Reshape(ctx.b().Broadcast(x, bdims, map), out));
  return absl::OkStatus();
}

absl::Status Pad(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t r = x->shape().rank();
  hlo::PrimitiveType t = x->shape().element_type;
  std::vector<int64_t> pads;
  std::string mode = ctx.attr_s("mode", "constant");
  Instruction* value;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints("pads");
    value = b.ScalarConstant(t, ctx.attr_f("value", 0));
  } else {
    ASSIGN_OR_RETURN(pads, ctx.ConstInts(1));
    value = ctx.has_input(2) ? b.Reshape(ctx.input(2), {}) : b.ScalarConstant(t, 0);
  }
  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.has_input(3)) {
    ASSIGN_OR_RETURN(axes, ctx.ConstInts(3));
    for (auto& a : axes) {
      ASSIGN_OR_RETURN(a, NormalizeAxis(ctx, a, r));
    }
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    return ctx.Error(absl::StrCat("pads has ", pads.size(), " entries, expected ", 2 * axes.size()));
  std::vector<int64_t> lo(r, 0), hi(r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    lo[axes[i]] = pads[i];
    hi[axes[i]] = pads[i + axes.size()];
  }
  if (mode == "constant") {
    std::vector<hlo::PaddingDimension> cfg(r);
    for (int64_t i = 0; i < r; ++i) cfg[i] = {lo[i], hi[i], 0};
    ctx.set_output(0, b.Pad(x, value, cfg));
    return absl::OkStatus();
  }
  if (mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.Error(absl::StrCat("unknown mode '", mode, "'"));
  for (int64_t a = 0; a < r; ++a) {
    if (lo[a] < 0 || hi[a] < 0) return ctx.Unsupported(absl::StrCat("negative pads with mode ", mode));
    if (lo[a] == 0 && hi[a] == 0) continue;
    int64_t d = x->shape().dims[a];
    auto slice = [&](int64_t s, int64_t e) {
      std::vector<int64_t> st(r, 0), li = x->shape().dims, sp(r, 1);
      st[a] = s;
      li[a] = e;
      return b.Slice(x, st, li, sp);
    };
    auto repeat = [&](Instruction* one, int64_t n) {
      std::vector<int64_t> dims = one->shape().dims;
      dims[a] = n;
      return BroadcastTo(b, one, dims);
    };
    std::vector<Instruction*> parts;
    if (mode == "reflect") {
      if (lo[a] >= d || hi[a] >= d) return ctx.Unsupported("reflect padding as large as the dimension");
      if (lo[a]) parts.push_back(b.Reverse(slice(1, lo[a] + 1), {a}));
      parts.push_back(x);
      if (hi[a]) parts.push_back(b.Reverse(slice(d - 1 - hi[a], d - 1), {a}));
    } else if (mode == "edge") {
      if (lo[a]) parts.push_back(repeat(slice(0, 1), lo[a]));
      parts.push_back(x);
      if (hi[a]) parts.push_back(repeat(slice(d - 1, d), hi[a]));
    } else {  // wrap
      if (lo[a] > d || hi[a] > d) return ctx.Unsupported("wrap padding larger than the dimension");
      if (lo[a]) parts.push_back(slice(d - lo[a], d));
      parts.push_back(x);
      if (hi[a]) parts.push_back(slice(0, hi[a]));
    }
    x = b.Concatenate(parts, a);
  }
  ctx.set_output(0, x);
  return absl::OkStatus();
}

absl::Status DepthToSpace(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (x->shape().rank() != 4) return ctx.Error("input must be 4-D");
  int64_t bs = ctx.attr_i("blocksize", 0);
  auto d = x->shape().dims;
  if (bs <= 0 || d[1] % (bs * bs)) return ctx.Error("channels must be divisible by blocksize^2");
  hlo::Builder& b = ctx.b();
  int64_t c = d[1] / (bs * bs);
  Instruction* y;
  if (ctx.attr_s("mode", "DCR") == "DCR") {
    y = b.Transpose(b.Reshape(x, {d[0], bs, bs, c, d[2], d[3]}), {0, 3, 4, 1, 5, 2});
  } else {
    y = b.Transpose(b.Reshape(x, {d[0], c, bs, bs, d[2], d[3]}), {0, 1, 4, 2, 5, 3});
  }
  ctx.set_output(0, b.Reshape(y, {d[0], c, d[2] * bs, d[3] * bs}));
  return absl::OkStatus();
}

absl::Status SpaceToDepth(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (x->shape().rank() != 4) return ctx.Error("input must be 4-D");
  int64_t bs = ctx.attr_i("blocksize", 0);
  auto d = x->shape().dims;
  if (bs <= 0 || d[2] % bs || d[3] % bs) return ctx.Error("spatial dims must be divisible by blocksize");
  hlo::Builder& b = ctx.b();
  Instruction* y = b.Transpose(b.Reshape(x, {d[0], d[1], d[2] / bs, bs, d[3] / bs, bs}), {0, 3, 5, 1, 2, 4});
  ctx.set_output(0, b.Reshape(y, {d[0], d[1] * bs * bs, d[2] / bs, d[3] / bs}));
  return absl::OkStatus();
}

absl::Status Dropout(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (ctx.opset() >= 12 && ctx.has_input(2)) {
    ASSIGN_OR_RETURN(Literal training, ctx.ConstInput(2));
    double ratio = 0.5;
    if (ctx.has_input(1)) {
      ASSIGN_OR_RETURN(Literal r, ctx.ConstInput(1));
      ratio = r.GetAsDouble(0);
    }
    if (training.GetAsInt64(0) != 0 && ratio != 0) {
      // Training mode: keep each element with probability 1 - ratio and
      // scale the kept ones by 1 / (1 - ratio).
      hlo::Builder& b = ctx.b();
      Instruction* u = RandomUniform01(ctx, x->shape().dims);
      Instruction* keep = b.Compare(u, Splat(b, hlo::F32, ratio, x->shape().dims), hlo::ComparisonDirection::kGe);
      Instruction* scaled = b.Binary(Opcode::kMultiply, x, SplatLike(b, x, 1.0 / (1.0 - ratio)));
      ctx.set_output(0, b.Select(keep, scaled, SplatLike(b, x, 0)));
      ctx.set_output(1, keep);
      return absl::OkStatus();
    }
  }
  ctx.set_output(0, x);
  if (ctx.wants_output(1)) ctx.set_output(1, Splat(ctx.b(), hlo::PRED, 1, x->shape().dims));
  return absl::OkStatus();
}

}  // namespace

void RegisterShapeOps(Registry& r) {
  r.Add("Shape", Shape);
  r.Add("Size", Size);
  r.Add("Reshape", Reshape).value_inputs = {1};
  r.Add("Flatten", Flatten);
  r.Add("Squeeze", Squeeze).value_inputs = {1};
  r.Add("Unsqueeze", Unsqueeze).value_inputs = {1};
  r.Add("Transpose", Transpose);
  r.Add("Concat", Concat);
  r.Add("Split", Split).value_inputs = {1};
  r.Add("Slice", Slice).value_inputs = {1, 2, 3, 4};
  r.Add("Expand", Expand, 8).value_inputs = {1};
  r.Add("Tile", Tile, 6).value_inputs = {1};
  r.Add("Pad", Pad).value_inputs = {1, 3};
  r.Add("DepthToSpace", DepthToSpace);
  r.Add("SpaceToDepth", SpaceToDepth);
  r.Add("Dropout", Dropout).value_inputs = {1, 2};
}

}  // namespace xonnx::onnx_import
