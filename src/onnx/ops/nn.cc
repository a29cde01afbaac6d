// Neural-network ONNX ops: MatMul, Gemm, Conv, ConvTranspose, pooling, Gelu
// and CenterCropPad (normalizations are in normalization.cc).
#include <algorithm>
#include <cmath>

#include "base/status.h"
#include "onnx/ops/activations.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

}  // namespace

absl::StatusOr<Instruction*> NumpyMatMul(NodeContext& ctx, Instruction* a, Instruction* b) {
  if (!a || !b) return ctx.Error("needs two inputs");
  hlo::Builder& bb = ctx.b();
  std::vector<int64_t> ad = a->shape().dims, bd = b->shape().dims;
  if (ad.empty() || bd.empty()) return ctx.Error("inputs must not be scalars");
  bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) {
    ad.insert(ad.begin(), 1);
    a = bb.Reshape(a, ad);
  }
  if (b_vec) {
    bd.push_back(1);
    b = bb.Reshape(b, bd);
  }
  int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  if (bd[bd.size() - 2] != k)
    return ctx.Error(
        absl::StrCat("inner dimensions differ: ", a->shape().ToString(false), " x ", b->shape().ToString(false)));
  hlo::DotDimensionNumbers d;
  Instruction* r;
  std::vector<int64_t> out_dims;
  if (bd.size() == 2) {
    // [..., M, K] x [K, N]: fold the batch into M, one plain matrix product.
    std::vector<int64_t> batch(ad.begin(), ad.end() - 2);
    int64_t rows = m;
    for (int64_t x : batch) rows *= x;
    d.lhs_contracting_dimensions = {1};
    d.rhs_contracting_dimensions = {0};
    r = bb.Dot(bb.Reshape(a, {rows, k}), b, d);
    out_dims = batch;
    out_dims.push_back(m);
    out_dims.push_back(n);
  } else {
    std::vector<int64_t> abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2);
    auto batch = BroadcastDims(abatch, bbatch);
    if (!batch.ok()) return ctx.Error(std::string(batch.status().message()));
    std::vector<int64_t> at = *batch, bt = *batch;
    at.insert(at.end(), {m, k});
    bt.insert(bt.end(), {k, n});
    a = BroadcastTo(bb, a, at);
    b = BroadcastTo(bb, b, bt);
    int64_t nb = batch->size();
    for (int64_t i = 0; i < nb; ++i) {
      d.lhs_batch_dimensions.push_back(i);
      d.rhs_batch_dimensions.push_back(i);
    }
    d.lhs_contracting_dimensions = {nb + 1};
    d.rhs_contracting_dimensions = {nb};
    r = bb.Dot(a, b, d);
    out_dims = *batch;
    out_dims.push_back(m);
    out_dims.push_back(n);
  }
  if (b_vec) out_dims.pop_back();
  if (a_vec) out_dims.erase(out_dims.end() - (b_vec ? 1 : 2));
  return bb.Reshape(r, out_dims);
}

absl::StatusOr<Instruction*> GemmWithAttributes(NodeContext& ctx) {
  Instruction* a = ctx.input(0);
  Instruction* b = ctx.input(1);
  hlo::Builder& bb = ctx.b();
  if (!a || !b || a->shape().rank() != 2 || b->shape().rank() != 2) return ctx.Error("A and B must be 2-D");
  bool ta = ctx.attr_i("transA", 0), tb = ctx.attr_i("transB", 0);
  hlo::DotDimensionNumbers d;
  d.lhs_contracting_dimensions = {ta ? 0 : 1};
  d.rhs_contracting_dimensions = {tb ? 1 : 0};
  Instruction* y = bb.Dot(a, b, d);
  if (!y) return y;
  float alpha = ctx.attr_f("alpha", 1.0f), beta = ctx.attr_f("beta", 1.0f);
  if (alpha != 1.0f) y = bb.Binary(Opcode::kMultiply, y, SplatLike(bb, y, alpha));
  if (ctx.has_input(2) && beta != 0.0f) {
    Instruction* c = BroadcastTo(bb, ctx.input(2), y->shape().dims);
    if (beta != 1.0f) c = bb.Binary(Opcode::kMultiply, c, SplatLike(bb, c, beta));
    y = bb.Binary(Opcode::kAdd, y, c);
  }
  return y;
}

namespace {

absl::Status MatMul(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Instruction * y, NumpyMatMul(ctx, ctx.input(0), ctx.input(1)));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

absl::Status Gemm(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Instruction * y, GemmWithAttributes(ctx));
  if (!y) return absl::OkStatus();  // the builder holds the error
  ctx.set_output(0, y);
  return absl::OkStatus();
}

// Per-spatial-dim padding from pads/auto_pad (ONNX conv and pool rules).
struct SpatialPads {
  std::vector<int64_t> lo, hi;
};

absl::StatusOr<SpatialPads> ComputePads(NodeContext& ctx, const std::vector<int64_t>& in, const std::vector<int64_t>& k,
                                        const std::vector<int64_t>& strides, const std::vector<int64_t>& dil) {
  size_t n = in.size();
  // Every window attribute has one value per spatial dim, each at least 1
  // (models may say otherwise; they are read per dim and divided by below).
  if (k.size() != n || strides.size() != n || dil.size() != n)
    return ctx.Error(absl::StrCat("kernel_shape, strides and dilations need ", n, " values each, not ", k.size(), ", ",
                                  strides.size(), " and ", dil.size()));
  for (size_t i = 0; i < n; ++i)
    if (k[i] < 1 || strides[i] < 1 || dil[i] < 1)
      return ctx.Error(absl::StrCat("kernel_shape, strides and dilations must be at least 1, not ", k[i], ", ",
                                    strides[i], " and ", dil[i], " for spatial dim ", i));
  SpatialPads p{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0)};
  std::string auto_pad = ctx.attr_s("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) return ctx.Error(absl::StrCat("pads has ", pads.size(), " entries, expected ", 2 * n));
    for (size_t i = 0; i < n; ++i) {
      p.lo[i] = pads[i];
      p.hi[i] = pads[i + n];
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (in[i] + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + (k[i] - 1) * dil[i] + 1 - in[i]);
      int64_t small = total / 2;
      p.lo[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      p.hi[i] = total - p.lo[i];
    }
  } else if (auto_pad != "VALID") {
    return ctx.Error(absl::StrCat("unknown auto_pad '", auto_pad, "'"));
  }
  // A window wider than the padded input has no position to start from:
  // no output at all, which ONNX Runtime refuses as well.
  for (size_t i = 0; i < n; ++i) {
    const int64_t span = (k[i] - 1) * dil[i] + 1, padded = in[i] + p.lo[i] + p.hi[i];
    if (span > padded)
      return ctx.Error(absl::StrCat("the window spans ", span, " elements of spatial dim ", i,
                                    ", more than its padded size ", padded, " (", in[i], " + pads ", p.lo[i], " and ",
                                    p.hi[i], ")"));
  }
  return p;
}

hlo::ConvolutionDimensionNumbers NchwDnums(int64_t ns) {
  hlo::ConvolutionDimensionNumbers d;
  d.input_batch_dimension = 0;
  d.input_feature_dimension = 1;
  d.kernel_output_feature_dimension = 0;
  d.kernel_input_feature_dimension = 1;
  d.output_batch_dimension = 0;
  d.output_feature_dimension = 1;
  for (int64_t i = 0; i < ns; ++i) {
    d.input_spatial_dimensions.push_back(i + 2);
    d.kernel_spatial_dimensions.push_back(i + 2);
    d.output_spatial_dimensions.push_back(i + 2);
  }
  return d;
}

}  // namespace

Instruction* AddChannelBias(hlo::Builder& b, Instruction* y, Instruction* bias) {
  if (!bias || !y) return y;
  return b.Binary(Opcode::kAdd, y, b.Broadcast(b.Reshape(bias, {y->shape().dims[1]}), y->shape().dims, {1}));
}

absl::StatusOr<Instruction*> ConvWithAttributes(NodeContext& ctx, Instruction* x, Instruction* w) {
  if (!x || !w) return ctx.Error("needs X and W");
  int64_t ns = x->shape().rank() - 2;
  if (ns < 1 || w->shape().rank() != ns + 2) return ctx.Error("X and W must have the same rank >= 3");
  std::vector<int64_t> in(x->shape().dims.begin() + 2, x->shape().dims.end());
  std::vector<int64_t> k(w->shape().dims.begin() + 2, w->shape().dims.end());
  std::vector<int64_t> kernel_shape = ctx.attr_ints("kernel_shape", k);
  if (kernel_shape != k) return ctx.Error("kernel_shape differs from W's spatial dims");
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> dil = ctx.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  if (static_cast<int64_t>(strides.size()) != ns || static_cast<int64_t>(dil.size()) != ns)
    return ctx.Error(
        absl::StrCat("strides and dilations need ", ns, " values each, not ", strides.size(), " and ", dil.size()));
  ASSIGN_OR_RETURN(SpatialPads p, ComputePads(ctx, in, k, strides, dil));
  if (static_cast<int64_t>(p.lo.size()) != ns || static_cast<int64_t>(p.hi.size()) != ns)
    return ctx.Error(absl::StrCat("pads need ", 2 * ns, " values"));
  hlo::Window win;
  for (int64_t i = 0; i < ns; ++i) win.dimensions.push_back({k[i], strides[i], p.lo[i], p.hi[i], dil[i], 1, false});
  int64_t group = ctx.attr_i("group", 1);
  return ctx.b().Convolution(x, w, win, NchwDnums(ns), group);
}

namespace {

absl::Status Conv(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Instruction * y, ConvWithAttributes(ctx, ctx.input(0), ctx.input(1)));
  ctx.set_output(0, AddChannelBias(ctx.b(), y, ctx.input(2)));
  return absl::OkStatus();
}

absl::Status ConvTranspose(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* w = ctx.input(1);
  hlo::Builder& b = ctx.b();
  if (!x || !w) return ctx.Error("needs X and W");
  int64_t ns = x->shape().rank() - 2;
  int64_t group = ctx.attr_i("group", 1);
  std::vector<int64_t> in(x->shape().dims.begin() + 2, x->shape().dims.end());
  std::vector<int64_t> k(w->shape().dims.begin() + 2, w->shape().dims.end());
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> dil = ctx.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> out_pad = ctx.attr_ints("output_padding", std::vector<int64_t>(ns, 0));
  std::vector<int64_t> out_shape = ctx.attr_ints("output_shape");
  std::string auto_pad = ctx.attr_s("auto_pad", "NOTSET");
  std::vector<int64_t> lo(ns, 0), hi(ns, 0);
  if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (out_shape.size() == static_cast<size_t>(ns + 2)) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    for (int64_t i = 0; i < ns; ++i) {
      int64_t target = out_shape.empty() ? in[i] * strides[i] : out_shape[i];
      int64_t total = strides[i] * (in[i] - 1) + out_pad[i] + (k[i] - 1) * dil[i] + 1 - target;
      // Floor division, as the ONNX reference: a negative total (output
      // larger than the natural size) pads at the end.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (auto_pad == "SAME_UPPER") {
        lo[i] = half;
        hi[i] = total - half;
      } else {
        hi[i] = half;
        lo[i] = total - half;
      }
    }
  } else if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
    for (int64_t i = 0; i < ns; ++i) {
      lo[i] = pads[i];
      hi[i] = pads[i + ns];
    }
  }
  // W is [C_in, C_out/g, k...]; regroup it to [C_in/g, C_out, k...] and flip
  // the spatial dims: a transposed conv is a conv over the dilated input.
  std::vector<int64_t> wd = w->shape().dims;
  int64_t cin = wd[0], cout_g = wd[1];
  if (cin % group) return ctx.Error("input channels not divisible by group");
  std::vector<int64_t> g5 = {group, cin / group, cout_g};
  g5.insert(g5.end(), k.begin(), k.end());
  std::vector<int64_t> perm = {1, 0, 2};
  for (int64_t i = 0; i < ns; ++i) perm.push_back(3 + i);
  std::vector<int64_t> regrouped = {cin / group, group * cout_g};
  regrouped.insert(regrouped.end(), k.begin(), k.end());
  Instruction* wk = b.Reshape(b.Transpose(b.Reshape(w, g5), perm), regrouped);
  std::vector<int64_t> spatial;
  for (int64_t i = 0; i < ns; ++i) spatial.push_back(2 + i);
  wk = b.Reverse(wk, spatial);
  hlo::ConvolutionDimensionNumbers d = NchwDnums(ns);
  d.kernel_input_feature_dimension = 0;
  d.kernel_output_feature_dimension = 1;
  hlo::Window win;
  for (int64_t i = 0; i < ns; ++i) {
    int64_t ext = (k[i] - 1) * dil[i];
    win.dimensions.push_back({k[i], 1, ext - lo[i], ext - hi[i] + out_pad[i], dil[i], strides[i], false});
  }
  Instruction* y = b.Convolution(x, wk, win, d, group);
  ctx.set_output(0, AddChannelBias(b, y, ctx.input(2)));
  return absl::OkStatus();
}

// Window over [N, C, spatial...] for pooling, with ceil_mode handled by
// extra high padding.
absl::StatusOr<hlo::Window> PoolWindow(NodeContext& ctx, Instruction* x, std::vector<int64_t>* extra_hi) {
  int64_t ns = x->shape().rank() - 2;
  if (ns < 1) return ctx.Error("input must have spatial dims");
  std::vector<int64_t> in(x->shape().dims.begin() + 2, x->shape().dims.end());
  std::vector<int64_t> k = ctx.attr_ints("kernel_shape");
  if (static_cast<int64_t>(k.size()) != ns) return ctx.Error("kernel_shape must have one entry per spatial dim");
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> dil = ctx.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  ASSIGN_OR_RETURN(SpatialPads p, ComputePads(ctx, in, k, strides, dil));
  bool ceil_mode = ctx.attr_i("ceil_mode", 0) != 0;
  hlo::Window w;
  w.dimensions.resize(2);
  extra_hi->assign(ns, 0);
  for (int64_t i = 0; i < ns; ++i) {
    int64_t span = (k[i] - 1) * dil[i] + 1;
    int64_t padded = in[i] + p.lo[i] + p.hi[i];
    int64_t extra = 0;
    if (ceil_mode) {
      int64_t out = (padded - span + strides[i] - 1) / strides[i] + 1;
      // The last window must start inside the input or the low padding.
      if ((out - 1) * strides[i] >= in[i] + p.lo[i]) --out;
      extra = std::max<int64_t>(0, (out - 1) * strides[i] + span - padded);
    }
    (*extra_hi)[i] = extra;
    w.dimensions.push_back({k[i], strides[i], p.lo[i], p.hi[i] + extra, dil[i], 1, false});
  }
  return w;
}

// MaxPool with its Indices output: every window is gathered through a
// constant [positions, window] table of flat input indices (padding points
// at an extra -inf element), so the maximum and its first position come out
// of plain reductions. Indices are flat over the input tensor, row-major or,
// with storage_order=1, column-major over the spatial dims.
absl::Status MaxPoolWithIndices(NodeContext& ctx, Instruction* x, const hlo::Window& w) {
  hlo::Builder& b = ctx.b();
  hlo::PrimitiveType t = x->shape().element_type;
  const auto& dims = x->shape().dims;
  int64_t ns = dims.size() - 2, n = dims[0], c = dims[1];
  std::vector<int64_t> in(dims.begin() + 2, dims.end()), out(ns), kernel(ns);
  int64_t len = 1, positions = 1, window = 1;
  for (int64_t i = 0; i < ns; ++i) {
    const auto& wd = w.dimensions[i + 2];
    int64_t span = (wd.size - 1) * wd.window_dilation + 1;
    out[i] = (in[i] + wd.padding_low + wd.padding_high - span) / wd.stride + 1;
    kernel[i] = wd.size;
    len *= in[i];
    positions *= out[i];
    window *= wd.size;
  }
  bool column_major = ctx.attr_i("storage_order", 0) != 0;
  hlo::Literal gather_table(hlo::Shape(hlo::S64, {positions, window}));
  hlo::Literal value_table(hlo::Shape(hlo::S64, {positions, window}));
  std::vector<int64_t> o(ns, 0), k(ns, 0);
  for (int64_t p = 0; p < positions; ++p) {
    std::fill(k.begin(), k.end(), 0);
    for (int64_t q = 0; q < window; ++q) {
      int64_t row = 0, col = 0, col_stride = 1;
      bool inside = true;
      for (int64_t i = 0; i < ns; ++i) {
        const auto& wd = w.dimensions[i + 2];
        int64_t pos = o[i] * wd.stride - wd.padding_low + k[i] * wd.window_dilation;
        inside &= pos >= 0 && pos < in[i];
        row = row * in[i] + pos;
        col += pos * col_stride;
        col_stride *= in[i];
      }
      gather_table.data<int64_t>()[p * window + q] = inside ? row : len;
      value_table.data<int64_t>()[p * window + q] = inside ? (column_major ? col : row) : 0;
      for (int64_t i = ns - 1; i >= 0 && ++k[i] == kernel[i]; --i) k[i] = 0;
    }
    for (int64_t i = ns - 1; i >= 0 && ++o[i] == out[i]; --i) o[i] = 0;
  }
  std::vector<hlo::PaddingDimension> cfg(3);
  cfg[2].edge_padding_high = 1;
  Instruction* flat = b.Pad(b.Reshape(x, {n, c, len}), b.ScalarConstant(t, LowestValue(t)), cfg);
  hlo::GatherDimensionNumbers d;
  d.offset_dims = {0, 1};
  d.collapsed_slice_dims = {2};
  d.start_index_map = {2};
  d.index_vector_dim = 2;
  Instruction* vals = b.Gather(flat, b.Constant(gather_table), d, {n, c, 1});  // [N, C, P, K]
  std::vector<int64_t> vd = {n, c, positions, window};
  Instruction* m = ReduceOver(b, vals, Opcode::kMaximum, LowestValue(t), {3}, false);
  Instruction* hit = b.Compare(vals, b.Broadcast(m, vd, {0, 1, 2}), hlo::ComparisonDirection::kEq);
  Instruction* kio = b.Iota(hlo::Shape(hlo::S64, vd), 3);
  Instruction* first =
      ReduceOver(b, b.Select(hit, kio, SplatLike(b, kio, window)), Opcode::kMinimum, INT64_MAX, {3}, false);
  Instruction* chosen = b.Compare(kio, b.Broadcast(first, vd, {0, 1, 2}), hlo::ComparisonDirection::kEq);
  Instruction* table = b.Broadcast(b.Constant(value_table), vd, {2, 3});
  Instruction* spatial = ReduceOver(b, b.Select(chosen, table, SplatLike(b, table, 0)), Opcode::kAdd, 0, {3}, false);
  // Add the batch and channel offsets: (n * C + c) * len.
  hlo::Shape ps(hlo::S64, {n, c, positions});
  Instruction* base = b.Binary(
      Opcode::kMultiply,
      b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, b.Iota(ps, 0), Splat(b, hlo::S64, c, ps.dims)), b.Iota(ps, 1)),
      Splat(b, hlo::S64, len, ps.dims));
  std::vector<int64_t> out_dims = {n, c};
  out_dims.insert(out_dims.end(), out.begin(), out.end());
  ctx.set_output(0, b.Reshape(m, out_dims));
  ctx.set_output(1, b.Reshape(b.Binary(Opcode::kAdd, base, spatial), out_dims));
  return absl::OkStatus();
}

absl::Status MaxPool(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  std::vector<int64_t> extra;
  ASSIGN_OR_RETURN(hlo::Window w, PoolWindow(ctx, x, &extra));
  if (ctx.wants_output(1)) return MaxPoolWithIndices(ctx, x, w);
  hlo::PrimitiveType t = x->shape().element_type;
  hlo::Builder& b = ctx.b();
  ctx.set_output(0, b.ReduceWindow(x, b.ScalarConstant(t, LowestValue(t)), w, b.ScalarReducer(Opcode::kMaximum, t)));
  return absl::OkStatus();
}

absl::Status AveragePool(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  std::vector<int64_t> extra;
  ASSIGN_OR_RETURN(hlo::Window w, PoolWindow(ctx, x, &extra));
  hlo::PrimitiveType t = x->shape().element_type;
  hlo::Builder& b = ctx.b();
  Instruction* zero = b.ScalarConstant(t, 0);
  Instruction* sum = b.ReduceWindow(x, zero, w, b.ScalarReducer(Opcode::kAdd, t));
  // The divisor counts the window's elements inside the input, plus the
  // explicit padding when count_include_pad (never the ceil_mode extension).
  // It depends on the spatial position alone: counted over [1, 1, spatial...]
  // (a constant the folder computes once, however large the batch and the
  // channels) and broadcast along the other dims.
  std::vector<int64_t> spatial_dims = x->shape().dims;
  spatial_dims[0] = spatial_dims[1] = 1;
  Instruction* ones = Splat(b, t, 1, spatial_dims);
  hlo::Window cw = w;
  if (ctx.attr_i("count_include_pad", 0) != 0) {
    std::vector<hlo::PaddingDimension> cfg(x->shape().rank());
    for (size_t i = 2; i < cw.dimensions.size(); ++i) {
      cfg[i] = {cw.dimensions[i].padding_low, cw.dimensions[i].padding_high - extra[i - 2], 0};
      cw.dimensions[i].padding_low = 0;
      cw.dimensions[i].padding_high = extra[i - 2];
    }
    ones = b.Pad(ones, b.ScalarConstant(t, 1), cfg);
  }
  Instruction* count = b.ReduceWindow(ones, zero, cw, b.ScalarReducer(Opcode::kAdd, t));
  std::vector<int64_t> out_spatial(count->shape().dims.begin() + 2, count->shape().dims.end()), keep;
  for (int64_t i = 2; i < sum->shape().rank(); ++i) keep.push_back(i);
  count = b.Broadcast(b.Reshape(count, out_spatial), sum->shape().dims, keep);
  ctx.set_output(0, b.Binary(Opcode::kDivide, sum, count));
  return absl::OkStatus();
}

absl::Status MaxUnpool(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* idx = ctx.input(1);
  hlo::Builder& b = ctx.b();
  const auto& dims = x->shape().dims;
  int64_t ns = dims.size() - 2;
  std::vector<int64_t> k = ctx.attr_ints("kernel_shape");
  std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  if (static_cast<int64_t>(k.size()) != ns) return ctx.Error("kernel_shape must have one entry per spatial dim");
  // Indices address the default unpooled shape; a larger output_shape pads
  // that result at the end of each dim (as the reference does).
  std::vector<int64_t> out = {dims[0], dims[1]};
  for (int64_t i = 0; i < ns; ++i) out.push_back((dims[i + 2] - 1) * strides[i] - pads[i] - pads[i + ns] + k[i]);
  std::vector<int64_t> requested = out;
  if (ctx.has_input(2)) {
    ASSIGN_OR_RETURN(requested, ctx.ConstInts(2));
    if (requested.size() != out.size()) return ctx.Error("output_shape has the wrong rank");
    for (size_t i = 0; i < out.size(); ++i)
      if (requested[i] < out[i]) return ctx.Unsupported("an output_shape smaller than the default unpooled shape");
  }
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  int64_t m = x->shape().ElementCount();
  // Indices into the flattened unpooled tensor, as MaxPool gives them; the
  // scatter would drop the others.
  RETURN_IF_ERROR(ctx.CheckIndexRange(idx, 0, total - 1, "indices"));
  hlo::ScatterDimensionNumbers sd;
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 1;
  hlo::Builder cb(b.module(), "unpool_replace");
  cb.Parameter(0, hlo::Shape::Scalar(x->shape().element_type), "old");
  auto comb = cb.Build(cb.Parameter(1, hlo::Shape::Scalar(x->shape().element_type), "new"));
  if (!comb.ok()) return comb.status();
  Instruction* y = b.Scatter(Splat(b, x->shape().element_type, 0, {total}), b.Reshape(b.Convert(idx, hlo::S64), {m}),
                             b.Reshape(x, {m}), sd, *comb);
  std::vector<hlo::PaddingDimension> cfg(out.size());
  for (size_t i = 0; i < out.size(); ++i) cfg[i].edge_padding_high = requested[i] - out[i];
  ctx.set_output(0, b.Pad(b.Reshape(y, out), b.ScalarConstant(x->shape().element_type, 0), cfg));
  return absl::OkStatus();
}

absl::Status GlobalAveragePool(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t count = 1;
  for (int64_t a : SpatialAxes(x)) count *= x->shape().dims[a];
  Instruction* s = ReduceOver(b, x, Opcode::kAdd, 0, SpatialAxes(x), true);
  ctx.set_output(0, b.Binary(Opcode::kDivide, s, SplatLike(b, s, count)));
  return absl::OkStatus();
}

// (sum |x|^p)^(1/p) over each window; padding contributes zeros.
absl::Status LpPool(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  std::vector<int64_t> extra;
  ASSIGN_OR_RETURN(hlo::Window w, PoolWindow(ctx, x, &extra));
  double p = ctx.attr_i("p", 2);
  hlo::PrimitiveType t = x->shape().element_type;
  Instruction* powered = b.Binary(Opcode::kPower, b.Unary(Opcode::kAbs, x), SplatLike(b, x, p));
  Instruction* sum = b.ReduceWindow(powered, b.ScalarConstant(t, 0), w, b.ScalarReducer(Opcode::kAdd, t));
  ctx.set_output(0, b.Binary(Opcode::kPower, sum, SplatLike(b, sum, 1.0 / p)));
  return absl::OkStatus();
}

absl::Status GlobalLpPool(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  double p = ctx.attr_i("p", 2);
  Instruction* powered = b.Binary(Opcode::kPower, b.Unary(Opcode::kAbs, x), SplatLike(b, x, p));
  Instruction* sum = ReduceOver(b, powered, Opcode::kAdd, 0, SpatialAxes(x), true);
  ctx.set_output(0, b.Binary(Opcode::kPower, sum, SplatLike(b, sum, 1.0 / p)));
  return absl::OkStatus();
}

absl::Status GlobalMaxPool(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ctx.set_output(0,
                 ReduceOver(ctx.b(), x, Opcode::kMaximum, LowestValue(x->shape().element_type), SpatialAxes(x), true));
  return absl::OkStatus();
}

absl::Status CenterCropPad(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstInts(1));
  int64_t r = x->shape().rank();
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  if (axes.size() != shape.size()) return ctx.Error("shape must have one entry per axis");
  for (size_t k = 0; k < axes.size(); ++k) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(ctx, axes[k], r));
    int64_t d = x->shape().dims[a], target = shape[k];
    if (target < d) {  // crop, centred (extra row at the end)
      std::vector<int64_t> s(r, 0), l = x->shape().dims, st(r, 1);
      s[a] = (d - target) / 2;
      l[a] = s[a] + target;
      x = b.Slice(x, s, l, st);
    } else if (target > d) {  // pad with zeros, centred
      std::vector<hlo::PaddingDimension> cfg(r);
      cfg[a].edge_padding_low = (target - d) / 2;
      cfg[a].edge_padding_high = target - d - cfg[a].edge_padding_low;
      x = b.Pad(x, b.ScalarConstant(x->shape().element_type, 0), cfg);
    }
  }
  ctx.set_output(0, x);
  return absl::OkStatus();
}

absl::Status Gelu(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (!hlo::IsFloatingPoint(x->shape().element_type)) return ctx.Unsupported("non-float input");
  ctx.set_output(0, GeluOf(ctx.b(), x, ctx.attr_s("approximate", "none") == "tanh"));
  return absl::OkStatus();
}

}  // namespace

void RegisterNnOps(Registry& r) {
  r.Add("MatMul", MatMul);
  r.Add("Gemm", Gemm);
  r.Add("Conv", Conv);
  r.Add("ConvTranspose", ConvTranspose);
  r.Add("MaxPool", MaxPool);
  r.Add("MaxUnpool", MaxUnpool, 9).value_inputs = {2};
  r.Add("AveragePool", AveragePool);
  r.Add("GlobalAveragePool", GlobalAveragePool);
  r.Add("GlobalMaxPool", GlobalMaxPool);
  r.Add("LpPool", LpPool, 2);
  r.Add("GlobalLpPool", GlobalLpPool, 2);
  r.Add("CenterCropPad", CenterCropPad, 18).value_inputs = {1};
  r.Add("Gelu", Gelu, 20);
}

}  // namespace xonnx::onnx_import
