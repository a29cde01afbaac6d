// Spectral ops: DFT, STFT and MelWeightMatrix. A DFT along an axis of
// static length is two constant [out, in] matrices (cos, sin) applied with
// dots, so it runs on the same kernels as everything else.
#include <cmath>

#include "base/status.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

// Contracts `x` along `axis` with the constant matrix m[out][in]; the new
// dim takes the axis' place.
Instruction* ApplyMatrix(hlo::Builder& b, Instruction* x, int64_t axis, const std::vector<std::vector<double>>& m) {
  int64_t out = m.size(), in = m.empty() ? 0 : m[0].size();
  Literal w(hlo::Shape(hlo::F64, {out, in}));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) w.data<double>()[o * in + i] = m[o][i];
  hlo::DotDimensionNumbers d;
  d.lhs_contracting_dimensions = {axis};
  d.rhs_contracting_dimensions = {1};
  Instruction* prod = b.Dot(x, b.Constant(w.Convert(x->shape().element_type)), d);
  int64_t r = x->shape().rank();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r - 1; ++i) {
    if (i == axis) perm.push_back(r - 1);
    perm.push_back(i);
  }
  if (axis == r - 1) perm.push_back(r - 1);
  return b.Transpose(prod, perm);
}

// DFT of (re, im) along `axis` (length n after padding/truncation to
// `length`): returns (re, im) with `bins` outputs.
std::pair<Instruction*, Instruction*> Dft(hlo::Builder& b, Instruction* re, Instruction* im, int64_t axis,
                                          int64_t length, bool inverse, bool onesided) {
  int64_t n = re->shape().dims[axis];
  auto fit = [&](Instruction* v) {
    if (!v || n == length) return v;
    int64_t r = v->shape().rank();
    if (n > length) {
      std::vector<int64_t> s(r, 0), l = v->shape().dims, st(r, 1);
      l[axis] = length;
      return b.Slice(v, s, l, st);
    }
    std::vector<hlo::PaddingDimension> cfg(r);
    cfg[axis].edge_padding_high = length - n;
    return b.Pad(v, b.ScalarConstant(v->shape().element_type, 0), cfg);
  };
  re = fit(re);
  im = fit(im);
  int64_t bins = onesided ? length / 2 + 1 : length;
  double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / length : 1.0;
  std::vector<std::vector<double>> c(bins, std::vector<double>(length)), s = c;
  for (int64_t k = 0; k < bins; ++k)
    for (int64_t t = 0; t < length; ++t) {
      double a = 2 * M_PI * static_cast<double>((k * t) % length) / length;
      c[k][t] = std::cos(a) * scale;
      s[k][t] = sign * std::sin(a) * scale;
    }
  // (re + i im)(cos + i s) = (re cos - im s) + i (re s + im cos)
  Instruction* out_re = ApplyMatrix(b, re, axis, c);
  Instruction* out_im = ApplyMatrix(b, re, axis, s);
  if (im) {
    out_re = b.Binary(Opcode::kSubtract, out_re, ApplyMatrix(b, im, axis, s));
    out_im = b.Binary(Opcode::kAdd, out_im, ApplyMatrix(b, im, axis, c));
  }
  return {out_re, out_im};
}

// Splits [..., 1|2] into real and imaginary parts (imaginary null for real input).
std::pair<Instruction*, Instruction*> Parts(hlo::Builder& b, Instruction* x) {
  int64_t r = x->shape().rank();
  std::vector<int64_t> dims(x->shape().dims.begin(), x->shape().dims.end() - 1);
  auto part = [&](int64_t k) {
    std::vector<int64_t> s(r, 0), l = x->shape().dims, st(r, 1);
    s[r - 1] = k;
    l[r - 1] = k + 1;
    return b.Reshape(b.Slice(x, s, l, st), dims);
  };
  return {part(0), x->shape().dims.back() == 2 ? part(1) : nullptr};
}

Instruction* Complex(hlo::Builder& b, Instruction* re, Instruction* im) {
  std::vector<int64_t> d = re->shape().dims;
  d.push_back(1);
  return b.Concatenate({b.Reshape(re, d), b.Reshape(im, d)}, d.size() - 1);
}

absl::Status DftOp(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t r = x->shape().rank();
  if (r < 2 || (x->shape().dims.back() != 1 && x->shape().dims.back() != 2))
    return ctx.Error("input must end in a dimension of 1 (real) or 2 (complex)");
  int64_t axis_value = ctx.attr_i("axis", 1);
  if (ctx.opset() >= 20) {  // the axis became input 2 (default -2: the last signal dim)
    axis_value = -2;
    if (ctx.has_input(2)) {
      ASSIGN_OR_RETURN(Literal a, ctx.ConstInput(2));
      axis_value = a.GetAsInt64(0);
    }
    if (axis_value < 0) axis_value += r;  // counted against the input's rank, including the complex dim
  }
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, axis_value, r - 1));
  bool inverse = ctx.attr_i("inverse", 0) != 0, onesided = ctx.attr_i("onesided", 0) != 0;
  if (inverse && onesided) return ctx.Unsupported("inverse with onesided");
  int64_t length = x->shape().dims[axis];
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(Literal l, ctx.ConstInput(1));
    length = l.GetAsInt64(0);
  }
  auto [re, im] = Parts(b, x);
  auto [yr, yi] = Dft(b, re, im, axis, length, inverse, onesided);
  ctx.set_output(0, Complex(b, yr, yi));
  return absl::OkStatus();
}

absl::Status Stft(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  if (x->shape().rank() != 3) return ctx.Error("signal must be [batch, length, 1|2]");
  ASSIGN_OR_RETURN(Literal step_l, ctx.ConstInput(1));
  int64_t step = step_l.GetAsInt64(0);
  Instruction* window = ctx.input(2);
  int64_t frame = window ? window->shape().dims[0] : 0;
  if (ctx.has_input(3)) {
    ASSIGN_OR_RETURN(Literal fl, ctx.ConstInput(3));
    frame = fl.GetAsInt64(0);
  }
  if (frame <= 0 || step <= 0) return ctx.Error("frame_length and frame_step must be positive");
  int64_t batch = x->shape().dims[0], len = x->shape().dims[1], c = x->shape().dims[2];
  int64_t frames = (len - frame) / step + 1;
  bool onesided = ctx.attr_i("onesided", 1) != 0;
  std::vector<Instruction*> parts;
  for (int64_t f = 0; f < frames; ++f)
    parts.push_back(
        b.Reshape(b.Slice(x, {0, f * step, 0}, {batch, f * step + frame, c}, {1, 1, 1}), {batch, 1, frame, c}));
  Instruction* framed = b.Concatenate(parts, 1);  // [batch, frames, frame, c]
  if (window)
    framed = b.Binary(Opcode::kMultiply, framed,
                      b.Broadcast(b.Convert(window, x->shape().element_type), framed->shape().dims, {2}));
  auto [re, im] = Parts(b, framed);
  auto [yr, yi] = Dft(b, re, im, 2, frame, false, onesided);
  ctx.set_output(0, Complex(b, yr, yi));
  return absl::OkStatus();
}

absl::Status MelWeightMatrix(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Literal bins_l, ctx.ConstInput(0));
  ASSIGN_OR_RETURN(Literal dft_l, ctx.ConstInput(1));
  ASSIGN_OR_RETURN(Literal rate_l, ctx.ConstInput(2));
  ASSIGN_OR_RETURN(Literal lo_l, ctx.ConstInput(3));
  ASSIGN_OR_RETURN(Literal hi_l, ctx.ConstInput(4));
  int64_t mel = bins_l.GetAsInt64(0), dft = dft_l.GetAsInt64(0), rate = rate_l.GetAsInt64(0);
  double lo = lo_l.GetAsDouble(0), hi = hi_l.GetAsDouble(0);
  int64_t spec = dft / 2 + 1;
  // Triangular filters between mel-spaced points mapped to FFT bins (the
  // ONNX reference's integer bin placement).
  double lo_mel = 2595 * std::log10(1 + lo / 700), hi_mel = 2595 * std::log10(1 + hi / 700);
  double step = (hi_mel - lo_mel) / (mel + 2);
  std::vector<int64_t> bin(mel + 2);
  for (int64_t i = 0; i < mel + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (i * step + lo_mel) / 2595) - 1);
    bin[i] = hlo::SaturatingInt64(std::floor((dft + 1) * hz / rate));
  }
  Literal out(hlo::Shape(hlo::F64, {spec, mel}));
  auto at = [&](int64_t j, int64_t i) -> double& { return out.data<double>()[j * mel + i]; };
  for (int64_t i = 0; i < mel; ++i) {
    int64_t l = bin[i], c = bin[i + 1], h = bin[i + 2];
    if (c == l) {
      if (c >= 0 && c < spec) at(c, i) = 1;
    } else {
      for (int64_t j = l; j <= c; ++j)
        if (j >= 0 && j < spec) at(j, i) = static_cast<double>(j - l) / (c - l);
    }
    if (h > c)
      for (int64_t j = c; j < h; ++j)
        if (j >= 0 && j < spec) at(j, i) = static_cast<double>(h - j) / (h - c);
  }
  ASSIGN_OR_RETURN(hlo::PrimitiveType t, HloType(static_cast<int32_t>(ctx.attr_i("output_datatype", 1))));
  ctx.set_output(0, ctx.b().Constant(out.Convert(t)));
  return absl::OkStatus();
}

}  // namespace

void RegisterSpectralOps(Registry& r) {
  r.Add("DFT", DftOp, 17).value_inputs = {1, 2};
  r.Add("STFT", Stft, 17).value_inputs = {1, 3};
  r.Add("MelWeightMatrix", MelWeightMatrix, 17).value_inputs = {0, 1, 2, 3, 4};
}

}  // namespace xonnx::onnx_import
