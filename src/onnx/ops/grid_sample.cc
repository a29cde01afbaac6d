// GridSample (2-D): the source coordinates are computed elementwise from the
// grid, every interpolation tap is a batched gather from the flattened image,
// and the taps are blended with weights broadcast over the channels. The
// padding rules (zeros, border, reflection) follow the ONNX reference,
// including its reflection of integer taps.
#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

class Sampler {
 public:
  Sampler(hlo::Builder& b, Instruction* x, Instruction* grid, bool align, std::string padding)
      : b_(b), x_(x), align_(align), padding_(std::move(padding)) {
    const auto& d = x->shape().dims;
    n_ = d[0], c_ = d[1], h_ = d[2], w_ = d[3];
    const auto& g = grid->shape().dims;
    ho_ = g[1], wo_ = g[2];
    t_ = x->shape().element_type;
    auto coord = [&](int64_t k) {
      return b.Convert(b.Reshape(b.Slice(grid, {0, 0, 0, k}, {n_, ho_, wo_, k + 1}, {1, 1, 1, 1}), {n_, ho_, wo_}), t_);
    };
    gx_ = coord(0);
    gy_ = coord(1);
    std::vector<int64_t> flat_dims = {n_, c_, h_ * w_};
    flat_ = b.Reshape(x, flat_dims);
  }

  Instruction* S(double v) { return Splat(b_, t_, v, {n_, ho_, wo_}); }
  Instruction* Add(Instruction* a, Instruction* c) { return b_.Binary(Opcode::kAdd, a, c); }
  Instruction* Sub(Instruction* a, Instruction* c) { return b_.Binary(Opcode::kSubtract, a, c); }
  Instruction* Mul(Instruction* a, Instruction* c) { return b_.Binary(Opcode::kMultiply, a, c); }
  Instruction* Lt(Instruction* a, Instruction* c) { return b_.Compare(a, c, hlo::ComparisonDirection::kLt); }
  Instruction* Gt(Instruction* a, Instruction* c) { return b_.Compare(a, c, hlo::ComparisonDirection::kGt); }

  // Normalized [-1, 1] to pixel coordinates.
  Instruction* Denormalize(Instruction* g, int64_t len) {
    if (align_) return Mul(Mul(Add(g, S(1)), S(0.5)), S(len - 1));
    return Mul(Sub(Mul(Add(g, S(1)), S(len)), S(1)), S(0.5));
  }
  double Lo() const { return align_ ? 0 : -0.5; }
  double Hi(int64_t len) const { return align_ ? len - 1 : len - 0.5; }

  // Reflects into [lo, hi] by the nearer border until inside.
  Instruction* Reflect(Instruction* v, double lo, double hi) {
    double rng = hi - lo;
    auto fold = [&](Instruction* dx, Instruction* even_base, Instruction* odd_base, bool even_adds) {
      Instruction* n = b_.Unary(Opcode::kFloor, b_.Binary(Opcode::kDivide, dx, S(rng)));  // dx >= 0: trunc == floor
      Instruction* r = Sub(dx, Mul(n, S(rng)));
      Instruction* even = b_.Compare(b_.Binary(Opcode::kRemainder, n, S(2)), S(0), hlo::ComparisonDirection::kEq);
      Instruction* a = even_adds ? Add(even_base, r) : Sub(even_base, r);
      Instruction* c = even_adds ? Sub(odd_base, r) : Add(odd_base, r);
      return b_.Select(even, a, c);
    };
    if (rng <= 0) return S(lo);
    Instruction* below = fold(Sub(S(lo), v), S(lo), S(hi), true);
    Instruction* above = fold(Sub(v, S(hi)), S(hi), S(lo), false);
    return b_.Select(Lt(v, S(lo)), below, b_.Select(Gt(v, S(hi)), above, v));
  }

  // The source coordinate after the padding rule for out-of-range points.
  Instruction* Pad(Instruction* v, int64_t len) {
    if (padding_ == "border") return b_.Clamp(b_.ScalarConstant(t_, 0), v, b_.ScalarConstant(t_, len - 1));
    if (padding_ == "reflection") return Reflect(v, Lo(), Hi(len));
    return v;
  }

  // The image value at integer taps (xi, yi) (float-valued), [N, C, Ho, Wo].
  Instruction* Tap(Instruction* xi, Instruction* yi) {
    Instruction* valid = nullptr;
    if (padding_ == "zeros") {
      valid = b_.Binary(Opcode::kAnd,
                        b_.Binary(Opcode::kAnd, b_.Compare(xi, S(0), hlo::ComparisonDirection::kGe), Lt(xi, S(w_))),
                        b_.Binary(Opcode::kAnd, b_.Compare(yi, S(0), hlo::ComparisonDirection::kGe), Lt(yi, S(h_))));
    } else if (padding_ == "reflection") {
      xi = Reflect(xi, Lo(), Hi(w_));
      yi = Reflect(yi, Lo(), Hi(h_));
    }
    auto index = [&](Instruction* v, int64_t len) {
      // Truncation toward zero, then clamped (zeros mode masks the rest).
      Instruction* i = b_.Convert(v, hlo::S64);
      return b_.Clamp(b_.ScalarConstant(hlo::S64, 0), i, b_.ScalarConstant(hlo::S64, len - 1));
    };
    Instruction* flat =
        Add64(b_.Binary(Opcode::kMultiply, index(yi, h_), Splat(b_, hlo::S64, w_, {n_, ho_, wo_})), index(xi, w_));
    std::vector<int64_t> d1 = {n_, ho_ * wo_, 1};
    Instruction* nidx = b_.Iota(hlo::Shape(hlo::S64, d1), 0);
    Instruction* idx = b_.Concatenate({nidx, b_.Reshape(flat, d1)}, 2);  // [N, P, 2] = (n, flat)
    hlo::GatherDimensionNumbers gd;
    gd.offset_dims = {2};
    gd.collapsed_slice_dims = {0, 2};
    gd.start_index_map = {0, 2};
    gd.index_vector_dim = 2;
    Instruction* v = b_.Gather(flat_, idx, gd, {1, c_, 1});  // [N, P, C]
    v = b_.Reshape(b_.Transpose(v, {0, 2, 1}), {n_, c_, ho_, wo_});
    if (valid)
      v = b_.Select(b_.Broadcast(valid, {n_, c_, ho_, wo_}, {0, 2, 3}), v, Splat(b_, t_, 0, {n_, c_, ho_, wo_}));
    return v;
  }
  Instruction* Add64(Instruction* a, Instruction* c) { return b_.Binary(Opcode::kAdd, a, c); }
  Instruction* Weighted(Instruction* value, Instruction* weight) {
    return b_.Binary(Opcode::kMultiply, value, b_.Broadcast(weight, {n_, c_, ho_, wo_}, {0, 2, 3}));
  }

  absl::StatusOr<Instruction*> Run(const std::string& mode) {
    Instruction* x = Denormalize(gx_, w_);
    Instruction* y = Denormalize(gy_, h_);
    if (mode == "nearest") {
      x = Pad(b_.Unary(Opcode::kRoundNearestEven, x), w_);
      y = Pad(b_.Unary(Opcode::kRoundNearestEven, y), h_);
      return Tap(x, y);
    }
    if (mode == "bilinear" || mode == "linear") {
      x = Pad(x, w_);
      y = Pad(y, h_);
      Instruction* x1 = b_.Unary(Opcode::kFloor, x);
      Instruction* y1 = b_.Unary(Opcode::kFloor, y);
      Instruction* x2 = Add(x1, S(1));
      Instruction* y2 = Add(y1, S(1));
      Instruction* dx1 = Sub(x, x1);
      Instruction* dx2 = Sub(x2, x);
      Instruction* dy1 = Sub(y, y1);
      Instruction* dy2 = Sub(y2, y);
      Instruction* out = Weighted(Tap(x1, y1), Mul(dy2, dx2));
      out = b_.Binary(Opcode::kAdd, out, Weighted(Tap(x2, y1), Mul(dy2, dx1)));
      out = b_.Binary(Opcode::kAdd, out, Weighted(Tap(x1, y2), Mul(dy1, dx2)));
      return b_.Binary(Opcode::kAdd, out, Weighted(Tap(x2, y2), Mul(dy1, dx1)));
    }
    if (mode == "bicubic" || mode == "cubic") {
      x = Pad(x, w_);
      y = Pad(y, h_);
      Instruction* fx = b_.Unary(Opcode::kFloor, x);
      Instruction* fy = b_.Unary(Opcode::kFloor, y);
      auto coeffs = [&](Instruction* t) {
        const double A = -0.75;
        Instruction* t1 = Add(t, S(1));
        Instruction* s = Sub(S(1), t);
        Instruction* s1 = Sub(S(2), t);
        return std::vector<Instruction*>{Sub(Mul(Add(Mul(Sub(Mul(S(A), t1), S(5 * A)), t1), S(8 * A)), t1), S(4 * A)),
                                         Add(Mul(Mul(Sub(Mul(S(A + 2), t), S(A + 3)), t), t), S(1)),
                                         Add(Mul(Mul(Sub(Mul(S(A + 2), s), S(A + 3)), s), s), S(1)),
                                         Sub(Mul(Add(Mul(Sub(Mul(S(A), s1), S(5 * A)), s1), S(8 * A)), s1), S(4 * A))};
      };
      std::vector<Instruction*> cx = coeffs(Sub(x, fx)), cy = coeffs(Sub(y, fy));
      Instruction* out = nullptr;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          Instruction* v = Weighted(Tap(Add(fx, S(j - 1)), Add(fy, S(i - 1))), Mul(cy[i], cx[j]));
          out = out ? b_.Binary(Opcode::kAdd, out, v) : v;
        }
      return out;
    }
    return absl::InvalidArgumentError(absl::StrCat("unknown mode '", mode, "'"));
  }

 private:
  hlo::Builder& b_;
  Instruction* x_;
  bool align_;
  std::string padding_;
  int64_t n_, c_, h_, w_, ho_, wo_;
  hlo::PrimitiveType t_;
  Instruction *gx_, *gy_, *flat_;
};

absl::Status GridSample(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* grid = ctx.input(1);
  if (!x || !grid) return ctx.Error("needs X and grid");
  if (x->shape().rank() != 4 || grid->shape().rank() != 4 || grid->shape().dims[3] != 2)
    return ctx.Unsupported("only 2-D sampling (X [N,C,H,W], grid [N,Ho,Wo,2])");
  if (!hlo::IsFloatingPoint(x->shape().element_type)) return ctx.Unsupported("non-float X");
  std::string padding = ctx.attr_s("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return ctx.Error(absl::StrCat("unknown padding_mode '", padding, "'"));
  Sampler s(ctx.b(), x, grid, ctx.attr_i("align_corners", 0) != 0, padding);
  auto y = s.Run(ctx.attr_s("mode", "bilinear"));
  if (!y.ok()) return ctx.Error(std::string(y.status().message()));
  ctx.set_output(0, *y);
  return absl::OkStatus();
}

}  // namespace

void RegisterGridSampleOps(Registry& r) { r.Add("GridSample", GridSample, 16); }

}  // namespace xonnx::onnx_import

namespace xonnx::onnx_import {
namespace {

// RoiAlign with a fixed sampling grid per bin (sampling_ratio > 0, or the
// adaptive grid computed from rois known at compile time): sample points
// are bilinear taps gathered per roi from its batch entry, with the
// reference's clamping rules, then averaged or max-reduced per bin.
absl::Status RoiAlign(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* rois = ctx.input(1);
  Instruction* batch_idx = ctx.input(2);
  hlo::Builder& b = ctx.b();
  if (!x || !rois || !batch_idx || x->shape().rank() != 4)
    return ctx.Error("needs X [N,C,H,W], rois [R,4], batch_indices [R]");
  hlo::PrimitiveType t = x->shape().element_type;
  int64_t c = x->shape().dims[1], h = x->shape().dims[2], w = x->shape().dims[3];
  int64_t r = rois->shape().dims[0];
  int64_t ph = ctx.attr_i("output_height", 1), pw = ctx.attr_i("output_width", 1);
  int64_t ratio = ctx.attr_i("sampling_ratio", 0);
  double scale = ctx.attr_f("spatial_scale", 1.0f);
  bool half_pixel = ctx.attr_s("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  std::string mode = ctx.attr_s("mode", "avg");
  if (ratio <= 0) return ctx.Unsupported("sampling_ratio=0 (an adaptive sampling grid per roi)");
  // A batch index past N would be clamped by the gather.
  RETURN_IF_ERROR(ctx.CheckIndexRange(batch_idx, 0, x->shape().dims[0] - 1, "batch_indices"));
  int64_t gh = ratio, gw = ratio;
  std::vector<int64_t> sd = {r, ph, pw, gh, gw};
  auto S = [&](double v) { return Splat(b, t, v, sd); };
  auto col = [&](int64_t k) {  // rois[:, k] * scale - offset, broadcast to the sample dims
    Instruction* v = b.Reshape(b.Slice(b.Convert(rois, t), {0, k}, {r, k + 1}, {1, 1}), {r});
    v = b.Binary(Opcode::kSubtract, b.Binary(Opcode::kMultiply, v, Splat(b, t, scale, {r})),
                 Splat(b, t, half_pixel ? 0.5 : 0, {r}));
    return b.Broadcast(v, sd, {0});
  };
  auto add = [&](Instruction* a, Instruction* q) { return b.Binary(Opcode::kAdd, a, q); };
  auto sub = [&](Instruction* a, Instruction* q) { return b.Binary(Opcode::kSubtract, a, q); };
  auto mul = [&](Instruction* a, Instruction* q) { return b.Binary(Opcode::kMultiply, a, q); };
  auto div = [&](Instruction* a, Instruction* q) { return b.Binary(Opcode::kDivide, a, q); };
  Instruction* x0 = col(0);
  Instruction* y0 = col(1);
  Instruction* rw = sub(col(2), x0);
  Instruction* rh = sub(col(3), y0);
  if (!half_pixel) {
    rw = b.Binary(Opcode::kMaximum, rw, S(1));
    rh = b.Binary(Opcode::kMaximum, rh, S(1));
  }
  Instruction* bh = div(rh, S(ph));
  Instruction* bw = div(rw, S(pw));
  auto iota = [&](int64_t dim) { return b.Convert(b.Iota(hlo::Shape(hlo::S64, sd), dim), t); };
  Instruction* y = add(add(y0, mul(iota(1), bh)), div(mul(add(iota(3), S(0.5)), bh), S(gh)));
  Instruction* xx = add(add(x0, mul(iota(2), bw)), div(mul(add(iota(4), S(0.5)), bw), S(gw)));
  // Points beyond one pixel outside the image contribute nothing.
  Instruction* outside = b.Binary(Opcode::kOr,
                                  b.Binary(Opcode::kOr, b.Compare(y, S(-1), hlo::ComparisonDirection::kLt),
                                           b.Compare(y, S(h), hlo::ComparisonDirection::kGt)),
                                  b.Binary(Opcode::kOr, b.Compare(xx, S(-1), hlo::ComparisonDirection::kLt),
                                           b.Compare(xx, S(w), hlo::ComparisonDirection::kGt)));
  y = b.Binary(Opcode::kMaximum, y, S(0));
  xx = b.Binary(Opcode::kMaximum, xx, S(0));
  auto low_high = [&](Instruction* v, int64_t len, Instruction** low, Instruction** high, Instruction** frac) {
    Instruction* l = b.Unary(Opcode::kFloor, v);
    Instruction* at_end = b.Compare(l, S(len - 1), hlo::ComparisonDirection::kGe);
    l = b.Select(at_end, S(len - 1), l);
    v = b.Select(at_end, l, v);
    *low = l;
    *high = b.Select(at_end, l, add(l, S(1)));
    *frac = sub(v, l);
  };
  Instruction *yl, *yh, *ly, *xl, *xh, *lx;
  low_high(y, h, &yl, &yh, &ly);
  low_high(xx, w, &xl, &xh, &lx);
  Instruction* hy = sub(S(1), ly);
  Instruction* hx = sub(S(1), lx);
  int64_t p = ph * pw * gh * gw;
  Instruction* flat_x = b.Reshape(x, {x->shape().dims[0], c, h * w});
  Instruction* bidx = b.Broadcast(b.Convert(batch_idx, hlo::S64), {r, p, 1}, {0});
  auto tap = [&](Instruction* yi, Instruction* xi, Instruction* weight) {
    Instruction* flat =
        b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, b.Convert(yi, hlo::S64), Splat(b, hlo::S64, w, sd)),
                 b.Convert(xi, hlo::S64));
    Instruction* idx = b.Concatenate({bidx, b.Reshape(flat, {r, p, 1})}, 2);
    hlo::GatherDimensionNumbers gd;
    gd.offset_dims = {2};
    gd.collapsed_slice_dims = {0, 2};
    gd.start_index_map = {0, 2};
    gd.index_vector_dim = 2;
    Instruction* v = b.Transpose(b.Gather(flat_x, idx, gd, {1, c, 1}), {0, 2, 1});  // [R, C, P]
    Instruction* wv = b.Select(outside, S(0), weight);
    return b.Binary(Opcode::kMultiply, v, b.Broadcast(b.Reshape(wv, {r, p}), {r, c, p}, {0, 2}));
  };
  Instruction* v1 = tap(yl, xl, mul(hy, hx));
  Instruction* v2 = tap(yl, xh, mul(hy, lx));
  Instruction* v3 = tap(yh, xl, mul(ly, hx));
  Instruction* v4 = tap(yh, xh, mul(ly, lx));
  Instruction* out;
  if (mode == "avg") {
    Instruction* sum = add(add(v1, v2), add(v3, v4));
    Instruction* s = ReduceOver(b, b.Reshape(sum, {r, c, ph, pw, gh * gw}), Opcode::kAdd, 0, {4}, false);
    out = b.Binary(Opcode::kDivide, s, Splat(b, t, gh * gw, {r, c, ph, pw}));
  } else if (mode == "max") {
    Instruction* m = b.Binary(Opcode::kMaximum, b.Binary(Opcode::kMaximum, v1, v2), b.Binary(Opcode::kMaximum, v3, v4));
    out = ReduceOver(b, b.Reshape(m, {r, c, ph, pw, gh * gw}), Opcode::kMaximum, LowestValue(t), {4}, false);
  } else {
    return ctx.Error(absl::StrCat("unknown mode '", mode, "'"));
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

}  // namespace

void RegisterRoiAlignOps(Registry& r) { r.Add("RoiAlign", RoiAlign, 10); }

}  // namespace xonnx::onnx_import
