// Resize and Upsample. Interpolation is separable, so each resized axis is
// one constant [out, in] weight matrix computed on the host with the ONNX
// reference's exact rules (coordinate transform, neighbours with edge
// clamping, nearest rounding, cubic coefficients, exclude_outside), applied
// with a dot; nearest mode gathers instead so any element type stays exact.
#include <algorithm>
#include <cmath>

#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
};

// One axis: weights[o][i] and, for tf_crop_and_resize, which rows extrapolate.
struct AxisPlan {
  int64_t in = 0, out = 0;
  std::vector<std::vector<double>> weights;
  std::vector<bool> extrapolate;
};

// Antialiasing (opset 18) widens the linear/cubic filter by 1/scale when
// downscaling and normalizes the taps, as the reference does.
std::vector<double> AntialiasCoefficients(const ResizeAttrs& a, double ratio, double scale) {
  scale = std::min(scale, 1.0);
  std::vector<double> c;
  if (a.mode == "linear") {
    int64_t start = hlo::SaturatingInt64(std::floor(-1 / scale)) + 1;
    for (int64_t k = start; k < start + 2 - 2 * start; ++k)
      c.push_back(std::clamp(1 - std::abs((k - ratio) * scale), 0.0, 1.0));
  } else {
    double A = a.cubic_a;
    auto kernel = [A](double x) {
      x = std::abs(x);
      if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
      if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
      return 0.0;
    };
    int64_t start = hlo::SaturatingInt64(std::floor(-2 / scale)) + 1;
    for (int64_t k = start; k < 2 - start; ++k) c.push_back(kernel(scale * (k - ratio)));
  }
  double sum = 0;
  for (double v : c) sum += v;
  for (double& v : c) v /= sum;
  return c;
}

std::vector<double> Coefficients(const ResizeAttrs& a, double ratio, bool integral, double scale) {
  if (a.antialias && a.mode != "nearest") return AntialiasCoefficients(a, ratio, scale);
  if (a.mode == "nearest") {
    if (integral) return {0, 1};
    if (a.nearest_mode == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (a.nearest_mode == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (a.nearest_mode == "floor") return {1, 0};
    return {0, 1};  // ceil
  }
  if (a.mode == "linear") return {1 - ratio, ratio};
  double A = a.cubic_a, r = ratio, s = 1 - ratio;
  return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
          ((A + 2) * s - (A + 3)) * s * s + 1, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
}

AxisPlan PlanAxis(const ResizeAttrs& a, int64_t in, int64_t out, double scale, bool from_sizes, double roi_start,
                  double roi_end) {
  AxisPlan p;
  p.in = in;
  p.out = out;
  p.weights.assign(out, std::vector<double>(in, 0.0));
  p.extrapolate.assign(out, false);
  // The reference uses the real-valued width (scale x input), which sizes
  // make the integer output.
  double out_width = from_sizes ? out : scale * in;
  // v / scale, exactly where the scale is out / in: 11 / (22 / 60) in
  // doubles is 30.000000000000004, and a ceil then picks the wrong element.
  auto unscale = [&](double v) { return from_sizes ? v * in / out : v / scale; };
  for (int64_t o = 0; o < out; ++o) {
    double x = o, x_ori;
    if (a.coord == "align_corners") {
      x_ori = out_width == 1 ? 0.0 : x * (in - 1) / (out_width - 1);
    } else if (a.coord == "asymmetric") {
      x_ori = unscale(x);
    } else if (a.coord == "tf_crop_and_resize") {
      x_ori = out_width == 1 ? (roi_end - roi_start) * (in - 1) / 2
                             : x * (roi_end - roi_start) * (in - 1) / (out_width - 1);
      x_ori += roi_start * (in - 1);
      if (x_ori < 0 || x_ori > in - 1) {
        p.extrapolate[o] = true;
        continue;
      }
    } else if (a.coord == "tf_half_pixel_for_nearest") {
      x_ori = unscale(x + 0.5);
    } else if (a.coord == "pytorch_half_pixel") {
      // The operator: 0 when the output has one element (its integer
      // length, as ONNX Runtime reads it: scale 0.5 of 3 is 1.5 wide).
      x_ori = out == 1 ? 0.0 : unscale(x + 0.5) - 0.5;
    } else if (a.coord == "half_pixel_symmetric") {
      // Opset 19: half_pixel, re-centred for the integer output size.
      double adjustment = out / out_width;
      double center = in / 2.0;
      x_ori = center * (1 - adjustment) + unscale(x + 0.5) - 0.5;
    } else {
      x_ori = unscale(x + 0.5) - 0.5;
    }
    double fl = std::floor(x_ori);
    bool integral = x_ori == fl;
    double ratio = integral ? 1.0 : x_ori - fl;
    std::vector<double> c = Coefficients(a, ratio, integral, scale);
    int64_t n = c.size();
    // The n indices nearest to x_ori (ties to the smaller), as the reference
    // picks them in the edge-padded array.
    int64_t pad = (n + 1) / 2;
    std::vector<int64_t> cand;
    for (int64_t i = -pad; i < in + pad; ++i) cand.push_back(i);
    std::stable_sort(cand.begin(), cand.end(), [&](int64_t l, int64_t r) {
      double dl = std::abs(x_ori - l), dr = std::abs(x_ori - r);
      return dl < dr || (dl == dr && l < r);
    });
    cand.resize(n);
    std::sort(cand.begin(), cand.end());
    if (a.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (cand[k] < 0 || cand[k] >= in) c[k] = 0;
        sum += c[k];
      }
      for (double& v : c) v /= sum;
    }
    for (int64_t k = 0; k < n; ++k) p.weights[o][std::clamp<int64_t>(cand[k], 0, in - 1)] += c[k];
  }
  return p;
}

// Applies one axis plan to x along `axis`.
Instruction* ApplyAxis(hlo::Builder& b, Instruction* x, int64_t axis, const AxisPlan& p, const ResizeAttrs& a) {
  const auto& dims = x->shape().dims;
  int64_t r = dims.size();
  hlo::PrimitiveType t = x->shape().element_type;
  std::vector<int64_t> out_dims = dims;
  out_dims[axis] = p.out;
  Instruction* y;
  if (a.mode == "nearest") {
    std::vector<int64_t> idx(p.out, 0);
    for (int64_t o = 0; o < p.out; ++o)
      for (int64_t i = 0; i < p.in; ++i)
        if (p.weights[o][i] > 0.5) idx[o] = i;
    // Each input element repeated s times in a row (an integer upscale,
    // the common case) is a broadcast along a new dim after the axis and a
    // reshape that merges them: data movement the backend fuses or copies
    // in runs, where a gather would look up every element.
    int64_t s = p.in > 0 ? p.out / p.in : 0;
    bool repeats = s >= 1 && p.in * s == p.out;
    for (int64_t o = 0; repeats && o < p.out; ++o) repeats = idx[o] == o / s;
    if (repeats) {
      std::vector<int64_t> wide = dims, keep;
      wide.insert(wide.begin() + axis + 1, s);
      for (int64_t i = 0; i < r + 1; ++i)
        if (i != axis + 1) keep.push_back(i);
      y = b.Reshape(b.Broadcast(x, wide, keep), out_dims);
    } else {
      y = TakeAlongAxis(b, x, b.Constant(Literal::Vector<int64_t>(idx)), axis);
    }
  } else {
    Literal w(hlo::Shape(hlo::F64, {p.out, p.in}));
    for (int64_t o = 0; o < p.out; ++o)
      for (int64_t i = 0; i < p.in; ++i) w.data<double>()[o * p.in + i] = p.weights[o][i];
    hlo::DotDimensionNumbers d;
    d.lhs_contracting_dimensions = {axis};
    d.rhs_contracting_dimensions = {1};
    Instruction* prod = b.Dot(x, b.Constant(w.Convert(t)), d);  // dims without axis, then out
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < r - 1; ++i) {
      if (i == axis) perm.push_back(r - 1);
      perm.push_back(i);
    }
    if (axis == r - 1) perm.push_back(r - 1);
    y = b.Transpose(prod, perm);
  }
  if (std::any_of(p.extrapolate.begin(), p.extrapolate.end(), [](bool v) { return v; })) {
    Literal mask(hlo::Shape(hlo::PRED, {p.out}));
    for (int64_t o = 0; o < p.out; ++o) mask.data<bool>()[o] = p.extrapolate[o];
    Instruction* m = b.Broadcast(b.Constant(mask), out_dims, {axis});
    y = b.Select(m, Splat(b, t, a.extrapolation, out_dims), y);
  }
  return y;
}

absl::Status ResizeImpl(NodeContext& ctx, Instruction* x, const ResizeAttrs& a, std::vector<double> scales,
                        std::vector<int64_t> sizes, std::vector<double> roi) {
  int64_t r = x->shape().rank();
  const auto& dims = x->shape().dims;
  if (!sizes.empty() && static_cast<int64_t>(sizes.size()) != r)
    return ctx.Error("sizes must have one entry per dimension");
  if (!scales.empty() && static_cast<int64_t>(scales.size()) != r)
    return ctx.Error("scales must have one entry per dimension");
  if (sizes.empty() && scales.empty()) return ctx.Error("needs scales or sizes");
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic")
    return ctx.Error(absl::StrCat("unknown mode '", a.mode, "'"));
  static const char* kCoords[] = {"half_pixel", "half_pixel_symmetric",      "pytorch_half_pixel", "align_corners",
                                  "asymmetric", "tf_half_pixel_for_nearest", "tf_crop_and_resize"};
  if (std::find(std::begin(kCoords), std::end(kCoords), a.coord) == std::end(kCoords))
    return ctx.Error(absl::StrCat("unknown coordinate_transformation_mode '", a.coord, "'"));
  if (!hlo::IsFloatingPoint(x->shape().element_type) && a.mode != "nearest")
    return ctx.Unsupported(absl::StrCat(a.mode, " interpolation of non-float tensors"));
  Instruction* y = x;
  // Inner axes first: the reference interpolates the outer axis last.
  for (int64_t axis = r - 1; axis >= 0; --axis) {
    int64_t out = sizes.empty() ? hlo::SaturatingInt64(std::floor(dims[axis] * scales[axis])) : sizes[axis];
    double scale = sizes.empty() ? scales[axis] : static_cast<double>(out) / dims[axis];
    if (out == dims[axis] && scale == 1.0 && a.coord != "tf_crop_and_resize") continue;
    if (out <= 0 || dims[axis] == 0) return ctx.Error("empty output or input dimension");
    double rs = roi.empty() ? 0 : roi[axis], re = roi.empty() ? 1 : roi[axis + r];
    y = ApplyAxis(ctx.b(), y, axis, PlanAxis(a, dims[axis], out, scale, !sizes.empty(), rs, re), a);
  }
  ctx.set_output(0, y);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> ConstDoubles(NodeContext& ctx, int i) {
  ASSIGN_OR_RETURN(Literal l, ctx.ConstInput(i));
  std::vector<double> v(l.element_count());
  for (int64_t k = 0; k < l.element_count(); ++k) v[k] = l.GetAsDouble(k);
  return v;
}

absl::Status Resize(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (!x) return ctx.Error("needs X");
  ResizeAttrs a;
  a.mode = ctx.attr_s("mode", "nearest");
  if (ctx.opset() < 11) {
    a.coord = "asymmetric";
    a.nearest_mode = "floor";
    ASSIGN_OR_RETURN(std::vector<double> scales, ConstDoubles(ctx, 1));
    return ResizeImpl(ctx, x, a, scales, {}, {});
  }
  a.coord = ctx.attr_s("coordinate_transformation_mode", "half_pixel");
  a.nearest_mode = ctx.attr_s("nearest_mode", "round_prefer_floor");
  a.cubic_a = ctx.attr_f("cubic_coeff_a", -0.75f);
  a.exclude_outside = ctx.attr_i("exclude_outside", 0) != 0;
  a.extrapolation = ctx.attr_f("extrapolation_value", 0.0f);
  a.antialias = ctx.attr_i("antialias", 0) != 0;
  if (ctx.attr_s("keep_aspect_ratio_policy", "stretch") != "stretch")
    return ctx.Unsupported("keep_aspect_ratio_policy other than stretch");
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
  if (ctx.has_input(1) && a.coord == "tf_crop_and_resize") {
    ASSIGN_OR_RETURN(roi, ConstDoubles(ctx, 1));
  }
  if (ctx.has_input(2)) {
    ASSIGN_OR_RETURN(scales, ConstDoubles(ctx, 2));
  }
  if (ctx.has_input(3)) {
    ASSIGN_OR_RETURN(sizes, ctx.ConstInts(3));
  }
  if (!scales.empty() && !sizes.empty()) return ctx.Error("give scales or sizes, not both");
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (!axes.empty()) {
    // Opset 18: scales/sizes/roi name only these axes.
    int64_t r = x->shape().rank();
    std::vector<double> full_scales(r, 1.0), full_roi;
    std::vector<int64_t> full_sizes = x->shape().dims;
    if (!roi.empty()) {
      full_roi.assign(2 * r, 0.0);
      for (int64_t i = 0; i < r; ++i) full_roi[i + r] = 1.0;
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(ctx, axes[k], r));
      if (!scales.empty()) full_scales[ax] = scales[k];
      if (!sizes.empty()) full_sizes[ax] = sizes[k];
      if (!roi.empty()) {
        full_roi[ax] = roi[k];
        full_roi[ax + r] = roi[k + axes.size()];
      }
    }
    if (!scales.empty()) scales = full_scales;
    if (!sizes.empty()) sizes = full_sizes;
    roi = full_roi;
  }
  return ResizeImpl(ctx, x, a, scales, sizes, roi);
}

absl::Status Upsample(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ResizeAttrs a;
  a.mode = ctx.attr_s("mode", "nearest");
  a.coord = "asymmetric";
  a.nearest_mode = "floor";
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    for (float f : ctx.attr_floats("scales")) scales.push_back(f);
  } else {
    ASSIGN_OR_RETURN(scales, ConstDoubles(ctx, 1));
  }
  return ResizeImpl(ctx, x, a, scales, {}, {});
}

}  // namespace

void RegisterResizeOps(Registry& r) {
  r.Add("Resize", Resize, 10).value_inputs = {1, 2, 3};
  r.Add("Upsample", Upsample, 7, 9).value_inputs = {1};
}

}  // namespace xonnx::onnx_import
