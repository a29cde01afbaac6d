// Differentiation rules of data movement, reductions, products and
// selection (the elementwise arithmetic is in rules.cc).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autodiff/vjp.h"
#include "base/status.h"

namespace xonnx::autodiff {

namespace {

using hlo::Instruction;
using hlo::Opcode;
using Ops = std::vector<Instruction*>;

std::string Module(const std::string& computations, const std::string& body) {
  return absl::StrCat("HloModule m\n", computations, "ENTRY main {\n", body, "}\n");
}

const char kAdder[] = "add {\n  p = f64[] parameter(0)\n  q = f64[] parameter(1)\n  ROOT s = f64[] add(p, q)\n}\n";

// The cotangent of one side of a dot: the cotangent contracted with the
// other side over that side's free dimensions (batch with batch), then
// transposed into this side's dimension order.
Instruction* DotSide(Graph& g, Instruction& y, Instruction* ct, bool lhs) {
  const hlo::DotDimensionNumbers& d = y.dot_dnums;
  const Instruction* self = y.operand(lhs ? 0 : 1);
  Instruction* other = y.operand(lhs ? 1 : 0);
  const auto& self_batch = lhs ? d.lhs_batch_dimensions : d.rhs_batch_dimensions;
  const auto& other_batch = lhs ? d.rhs_batch_dimensions : d.lhs_batch_dimensions;
  const auto& self_contract = lhs ? d.lhs_contracting_dimensions : d.rhs_contracting_dimensions;
  const auto& other_contract = lhs ? d.rhs_contracting_dimensions : d.lhs_contracting_dimensions;
  auto free_dims = [](int64_t rank, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> out;
    for (int64_t k = 0; k < rank; ++k)
      if (std::find(a.begin(), a.end(), k) == a.end() && std::find(b.begin(), b.end(), k) == b.end()) out.push_back(k);
    return out;
  };
  std::vector<int64_t> self_free = free_dims(self->shape().rank(), self_batch, self_contract);
  std::vector<int64_t> other_free = free_dims(other->shape().rank(), other_batch, other_contract);
  const int64_t nb = self_batch.size();
  const int64_t lhs_free = lhs ? self_free.size() : other_free.size();
  hlo::DotDimensionNumbers n;
  for (int64_t k = 0; k < nb; ++k) {
    n.lhs_batch_dimensions.push_back(k);
    n.rhs_batch_dimensions.push_back(other_batch[k]);
  }
  for (size_t j = 0; j < other_free.size(); ++j) {
    n.lhs_contracting_dimensions.push_back(lhs ? nb + lhs_free + j : nb + j);
    n.rhs_contracting_dimensions.push_back(other_free[j]);
  }
  Instruction* r = g.Op(Opcode::kDot, {ct, other}, [&](Instruction* i) {
    i->dot_dnums = n;
    i->precision = y.precision;
  });
  // Which dimension of `self` each of the result's holds.
  std::vector<int64_t> holds(self_batch.begin(), self_batch.end());
  holds.insert(holds.end(), self_free.begin(), self_free.end());
  std::vector<int64_t> rest = other_contract;
  std::sort(rest.begin(), rest.end());
  for (int64_t o : rest) {
    size_t idx = std::find(other_contract.begin(), other_contract.end(), o) - other_contract.begin();
    holds.push_back(self_contract[idx]);
  }
  std::vector<int64_t> perm(holds.size());
  for (size_t p = 0; p < holds.size(); ++p) perm[holds[p]] = p;
  return g.Transpose(r, perm);
}

// The operand's dims as a broadcast of the reduced cotangent: the
// dimensions of `rank` not in `reduced`.
std::vector<int64_t> Kept(int64_t rank, const std::vector<int64_t>& reduced) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < rank; ++k)
    if (std::find(reduced.begin(), reduced.end(), k) == reduced.end()) out.push_back(k);
  return out;
}

// The cotangent of a broadcast's operand: the cotangent summed over the
// dimensions the broadcast added, in the operand's dimension order.
Instruction* Unbroadcast(Graph& g, Instruction& y, Instruction* ct) {
  const std::vector<int64_t>& map = y.dimensions;
  std::vector<int64_t> added = Kept(y.shape().rank(), map);
  Instruction* sum = g.ReduceSum(ct, added);
  std::vector<int64_t> sorted = map;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> perm;
  for (int64_t d : map) perm.push_back(std::find(sorted.begin(), sorted.end(), d) - sorted.begin());
  return g.Reshape(g.Transpose(sum, perm), y.operand(0)->shape().dims);
}

// The cotangent of a maximum or minimum: the cotangent goes to the elements
// equal to the result, split evenly among ties (as JAX does); where the
// init value won (no element equals it), to none.
Ops ChooserRule(Graph& g, Instruction& y, Instruction* ct) {
  Instruction* x = y.operand(0);
  std::vector<int64_t> kept = Kept(x->shape().rank(), y.dimensions);
  Instruction* chosen = g.Op(Opcode::kCompare, {x, g.Broadcast(&y, x->shape().dims, kept)},
                             [](Instruction* i) { i->comparison_direction = hlo::ComparisonDirection::kEq; });
  Instruction* ones = g.KeepWhere(chosen, g.Full(1, x->shape()));
  Instruction* count = g.ReduceSum(ones, y.dimensions);
  Instruction* share = g.Binary(Opcode::kDivide, ct, g.Binary(Opcode::kMaximum, count, g.Full(1, count->shape())));
  return {g.Binary(Opcode::kMultiply, ones, g.Broadcast(share, x->shape().dims, kept)), nullptr};
}

// The cotangent of a sum: broadcast back over the reduced dimensions; the
// init value gets the sum of the cotangent (it is added once per result).
// Reductions by maximum or minimum go to ChooserRule.
Ops ReduceRule(Graph& g, Instruction& y, Instruction* ct) {
  const hlo::Computation* r = y.to_apply();
  const Instruction* root = r ? r->root() : nullptr;
  if (y.operand_count() != 2 || !root || root->operand_count() != 2 ||
      root->operand(0)->opcode() != Opcode::kParameter || root->operand(1)->opcode() != Opcode::kParameter)
    return {g.Fail(Unimplemented("autodiff: only sums, maxima and minima (reduce) are differentiated"))};
  if (root->opcode() == Opcode::kMaximum || root->opcode() == Opcode::kMinimum) return ChooserRule(g, y, ct);
  if (root->opcode() != Opcode::kAdd)
    return {g.Fail(Unimplemented("autodiff: only sums, maxima and minima (reduce) are differentiated"))};
  const Instruction* x = y.operand(0);
  Instruction* back = g.Broadcast(ct, x->shape().dims, Kept(x->shape().rank(), y.dimensions));
  std::vector<int64_t> all(ct->shape().rank());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  return {back, g.ReduceSum(ct, all)};
}

// The cotangent of a slice: padded with zeros back to the operand's size.
Ops SliceRule(Graph& g, Instruction& y, Instruction* ct) {
  const hlo::Shape& x = y.operand(0)->shape();
  std::vector<hlo::PaddingDimension> config;
  for (int64_t k = 0; k < x.rank(); ++k) {
    int64_t n = y.shape().dims[k], start = y.slice_starts[k], stride = y.slice_strides[k];
    int64_t last = n > 0 ? start + (n - 1) * stride + 1 : start;
    config.push_back({start, x.dims[k] - last, n > 0 ? stride - 1 : 0});
  }
  Instruction* zero = g.Full(0, hlo::Shape(x.element_type, {}));
  return {g.Op(Opcode::kPad, {ct, zero}, [&](Instruction* i) { i->padding_config = config; })};
}

// The cotangent of a pad: the operand's elements sliced out of it; the
// padding value gets the sum of the rest.
Ops PadRule(Graph& g, Instruction& y, Instruction* ct) {
  const hlo::Shape& x = y.operand(0)->shape();
  std::vector<int64_t> starts, limits, strides;
  for (int64_t k = 0; k < x.rank(); ++k) {
    const hlo::PaddingDimension& p = y.padding_config[k];
    if (p.edge_padding_low < 0 || p.edge_padding_high < 0)
      return {g.Fail(Unimplemented("autodiff: pad with negative padding is not differentiated"))};
    starts.push_back(p.edge_padding_low);
    limits.push_back(p.edge_padding_low + (x.dims[k] > 0 ? (x.dims[k] - 1) * (p.interior_padding + 1) + 1 : 0));
    strides.push_back(p.interior_padding + 1);
  }
  Instruction* dx = g.Op(Opcode::kSlice, {ct}, [&](Instruction* i) {
    i->slice_starts = starts;
    i->slice_limits = limits;
    i->slice_strides = strides;
  });
  std::vector<int64_t> all(x.rank());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  Instruction* dv = g.Binary(Opcode::kSubtract, g.ReduceSum(ct, all), g.ReduceSum(dx, all));
  return {dx, dv};
}

Ops ConcatenateRule(Graph& g, Instruction& y, Instruction* ct) {
  const int64_t dim = y.dimensions.at(0);
  Ops out;
  int64_t at = 0;
  for (const Instruction* x : y.operands()) {
    std::vector<int64_t> starts(x->shape().rank(), 0), limits = y.shape().dims, strides(x->shape().rank(), 1);
    starts[dim] = at;
    limits[dim] = at + x->shape().dims[dim];
    at = limits[dim];
    out.push_back(g.Op(Opcode::kSlice, {ct}, [&](Instruction* i) {
      i->slice_starts = starts;
      i->slice_limits = limits;
      i->slice_strides = strides;
    }));
  }
  return out;
}

// clamp(lo, x, hi) is min(max(x, lo), hi): hi's cotangent where
// max(x, lo) > hi, else lo's where x < lo, else x's (summed over the
// elements when a bound is a scalar).
Ops ClampRule(Graph& g, Instruction& y, Instruction* ct) {
  Instruction *lo = y.operand(0), *x = y.operand(1), *hi = y.operand(2);
  auto full = [&](Instruction* b) { return b->shape().rank() == 0 ? g.Broadcast(b, x->shape().dims, {}) : b; };
  auto compare = [&](Instruction* a, Instruction* b, hlo::ComparisonDirection d) {
    return g.Op(Opcode::kCompare, {a, b}, [&](Instruction* i) { i->comparison_direction = d; });
  };
  Instruction* above = compare(g.Binary(Opcode::kMaximum, x, full(lo)), full(hi), hlo::ComparisonDirection::kGt);
  Instruction* not_above = g.Unary(Opcode::kNot, above);
  Instruction* x_below = compare(x, full(lo), hlo::ComparisonDirection::kLt);
  Instruction* below = g.Binary(Opcode::kAnd, x_below, not_above);
  Instruction* inside = g.Binary(Opcode::kAnd, g.Unary(Opcode::kNot, x_below), not_above);
  auto bound = [&](Instruction* b, Instruction* where) {
    Instruction* v = g.KeepWhere(where, ct);
    if (b->shape().rank() > 0) return v;
    std::vector<int64_t> all(x->shape().rank());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    return g.ReduceSum(v, all);
  };
  return {bound(lo, below), g.KeepWhere(inside, ct), bound(hi, above)};
}

// A grouped convolution's kernel [.., O, .., I/G, ..] regrouped for its
// transpose: O split into (G, O/G) and G moved in front of I/G, giving
// O/G output and I input features (JAX's _reshape_axis_out_of, then
// _reshape_axis_into).
Instruction* Regroup(Graph& g, Instruction* w, int64_t out_dim, int64_t in_dim, int64_t groups) {
  std::vector<int64_t> dims = w->shape().dims;
  std::vector<int64_t> split = dims;
  split[out_dim] = dims[out_dim] / groups;
  split.insert(split.begin() + out_dim, groups);  // G at out_dim, O/G after it
  Instruction* s = g.Reshape(w, split);
  // Move the G axis right before the input-feature axis, then merge them.
  int64_t in_after = in_dim + (in_dim > out_dim ? 1 : 0);
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < static_cast<int64_t>(split.size()); ++k)
    if (k != out_dim) perm.push_back(k);
  int64_t at = std::find(perm.begin(), perm.end(), in_after) - perm.begin();
  perm.insert(perm.begin() + at, out_dim);
  std::vector<int64_t> merged = dims;
  merged[out_dim] = dims[out_dim] / groups;
  merged[in_dim] = dims[in_dim] * groups;
  return g.Reshape(g.Transpose(s, perm), merged);
}

// The cotangents of a convolution (with feature groups, not batch groups),
// as JAX transposes conv_general_dilated: the input's is a convolution of
// the cotangent with the spatially reversed kernel, its features swapped
// (and regrouped), the forward strides becoming input dilation; the
// kernel's a convolution of the input with the cotangent, batch and feature
// swapped on both, the feature groups becoming batch groups.
Ops ConvolutionRule(Graph& g, Instruction& y, Instruction* ct) {
  if (y.batch_group_count != 1)
    return {g.Fail(Unimplemented("autodiff: convolutions with batch groups are not differentiated yet"))};
  const int64_t groups = y.feature_group_count;
  Instruction *x = y.operand(0), *w = y.operand(1);
  const hlo::ConvolutionDimensionNumbers& d = y.conv_dnums;
  const size_t n = d.input_spatial_dimensions.size();
  hlo::Window dx_window, dw_window;
  for (size_t k = 0; k < n; ++k) {
    const hlo::WindowDimension& f = y.window.dimensions[k];
    int64_t in = Dilate(x->shape().dims[d.input_spatial_dimensions[k]], f.base_dilation);
    int64_t kernel = Dilate(w->shape().dims[d.kernel_spatial_dimensions[k]], f.window_dilation);
    int64_t out = Dilate(y.shape().dims[d.output_spatial_dimensions[k]], f.stride);
    dx_window.dimensions.push_back(TransposedWindow(f, x->shape().dims[d.input_spatial_dimensions[k]],
                                                    y.shape().dims[d.output_spatial_dimensions[k]]));
    hlo::WindowDimension b;  // for the kernel's: the cotangent is the window
    b.size = y.shape().dims[d.output_spatial_dimensions[k]];
    b.stride = f.window_dilation;
    b.base_dilation = f.base_dilation;
    b.window_dilation = f.stride;
    b.padding_low = f.padding_low;
    b.padding_high = (out - in) + (kernel - f.padding_low - 1);
    dw_window.dimensions.push_back(b);
  }
  Instruction* kernel =
      groups == 1 ? w : Regroup(g, w, d.kernel_output_feature_dimension, d.kernel_input_feature_dimension, groups);
  Instruction* reversed =
      g.Op(Opcode::kReverse, {kernel}, [&](Instruction* i) { i->dimensions = d.kernel_spatial_dimensions; });
  hlo::ConvolutionDimensionNumbers a;
  a.input_batch_dimension = d.output_batch_dimension;
  a.input_feature_dimension = d.output_feature_dimension;
  a.input_spatial_dimensions = d.output_spatial_dimensions;
  a.kernel_input_feature_dimension = d.kernel_output_feature_dimension;
  a.kernel_output_feature_dimension = d.kernel_input_feature_dimension;
  a.kernel_spatial_dimensions = d.kernel_spatial_dimensions;
  a.output_batch_dimension = d.input_batch_dimension;
  a.output_feature_dimension = d.input_feature_dimension;
  a.output_spatial_dimensions = d.input_spatial_dimensions;
  Instruction* dx = g.Op(Opcode::kConvolution, {ct, reversed}, [&](Instruction* i) {
    i->window = dx_window;
    i->conv_dnums = a;
    i->feature_group_count = groups;
    i->precision = y.precision;
  });
  hlo::ConvolutionDimensionNumbers b;
  b.input_batch_dimension = d.input_feature_dimension;
  b.input_feature_dimension = d.input_batch_dimension;
  b.input_spatial_dimensions = d.input_spatial_dimensions;
  b.kernel_input_feature_dimension = d.output_batch_dimension;
  b.kernel_output_feature_dimension = d.output_feature_dimension;
  b.kernel_spatial_dimensions = d.output_spatial_dimensions;
  b.output_batch_dimension = d.kernel_input_feature_dimension;
  b.output_feature_dimension = d.kernel_output_feature_dimension;
  b.output_spatial_dimensions = d.kernel_spatial_dimensions;
  Instruction* dw = g.Op(Opcode::kConvolution, {x, ct}, [&](Instruction* i) {
    i->window = dw_window;
    i->conv_dnums = b;
    i->batch_group_count = groups;
    i->precision = y.precision;
  });
  return {dx, dw};
}

// A dynamic slice's cotangent is written into zeros where the slice was
// read (dynamic-update-slice clamps the starts as dynamic-slice did).
Ops DynamicSliceRule(Graph& g, Instruction& y, Instruction* ct) {
  std::vector<Instruction*> operands = {g.Full(0, y.operand(0)->shape()), ct};
  for (int64_t k = 1; k < y.operand_count(); ++k) operands.push_back(y.operand(k));
  return {g.Op(Opcode::kDynamicUpdateSlice, operands)};
}

// The operand's cotangent is the cotangent with the update's region zeroed;
// the update's is that region of the cotangent.
Ops DynamicUpdateSliceRule(Graph& g, Instruction& y, Instruction* ct) {
  const Instruction* u = y.operand(1);
  std::vector<Instruction*> starts(y.operands().begin() + 2, y.operands().end());
  std::vector<Instruction*> zeroed = {ct, g.Full(0, u->shape())};
  zeroed.insert(zeroed.end(), starts.begin(), starts.end());
  std::vector<Instruction*> read = {ct};
  read.insert(read.end(), starts.begin(), starts.end());
  return {g.Op(Opcode::kDynamicUpdateSlice, zeroed),
          g.Op(Opcode::kDynamicSlice, read, [&](Instruction* i) { i->dynamic_slice_sizes = u->shape().dims; })};
}

// A gather's cotangent is scattered back, added where indices repeat.
Ops GatherRule(Graph& g, Instruction& y, Instruction* ct) {
  Instruction* x = y.operand(0);
  const hlo::GatherDimensionNumbers& d = y.gather_dnums;
  hlo::ScatterDimensionNumbers s;
  s.update_window_dims = d.offset_dims;
  s.inserted_window_dims = d.collapsed_slice_dims;
  s.scatter_dims_to_operand_dims = d.start_index_map;
  s.index_vector_dim = d.index_vector_dim;
  hlo::Computation* add = g.Adder(x->shape().element_type);
  return {g.Op(Opcode::kScatter, {g.Full(0, x->shape()), y.operand(1), ct},
               [&](Instruction* i) {
                 i->scatter_dnums = s;
                 i->indices_are_sorted = y.indices_are_sorted;
                 i->AppendCalledComputation(add);
               }),
          nullptr};
}

// A scatter that adds: the operand's cotangent is the cotangent itself, the
// updates' the cotangent gathered where they were added.
Ops ScatterRule(Graph& g, Instruction& y, Instruction* ct) {
  const hlo::Computation* r = y.to_apply();
  const Instruction* root = r ? r->root() : nullptr;
  if (!root || root->opcode() != Opcode::kAdd)
    return {g.Fail(Unimplemented("autodiff: only scatters that add are differentiated"))};
  const hlo::ScatterDimensionNumbers& s = y.scatter_dnums;
  const Instruction* updates = y.operand(2);
  hlo::GatherDimensionNumbers d;
  d.offset_dims = s.update_window_dims;
  d.collapsed_slice_dims = s.inserted_window_dims;
  d.start_index_map = s.scatter_dims_to_operand_dims;
  d.index_vector_dim = s.index_vector_dim;
  std::vector<int64_t> sizes;
  size_t window = 0;
  for (int64_t k = 0; k < y.shape().rank(); ++k) {
    bool inserted =
        std::find(s.inserted_window_dims.begin(), s.inserted_window_dims.end(), k) != s.inserted_window_dims.end();
    sizes.push_back(inserted ? 1 : updates->shape().dims[s.update_window_dims.at(window++)]);
  }
  Instruction* du = g.Op(Opcode::kGather, {ct, y.operand(1)}, [&](Instruction* i) {
    i->gather_dnums = d;
    i->gather_slice_sizes = sizes;
  });
  return {ct, nullptr, du};
}

}  // namespace

std::vector<Rule> StructuralRules() {
  std::string x23 = "  x = f64[2,3] parameter(0)\n";
  return {
      {Opcode::kConvert,
       [](Graph& g, Instruction& y, Instruction* ct) {
         hlo::PrimitiveType t = y.operand(0)->shape().element_type;
         hlo::Shape s(t, ct->shape().dims);
         return Ops{hlo::IsFloatingPoint(t) ? g.Op(Opcode::kConvert, {ct}, nullptr, &s) : nullptr};
       },
       Module("", x23 + "  f = f32[2,3] convert(x)\n  ROOT y = f64[2,3] convert(f)\n")},
      {Opcode::kBroadcast, [](Graph& g, Instruction& y, Instruction* ct) { return Ops{Unbroadcast(g, y, ct)}; },
       Module("", x23 + "  ROOT y = f64[2,4,3] broadcast(x), dimensions={0,2}\n")},
      {Opcode::kReshape,
       [](Graph& g, Instruction& y, Instruction* ct) { return Ops{g.Reshape(ct, y.operand(0)->shape().dims)}; },
       Module("", x23 + "  ROOT y = f64[3,2] reshape(x)\n")},
      {Opcode::kTranspose,
       [](Graph& g, Instruction& y, Instruction* ct) {
         std::vector<int64_t> inverse(y.dimensions.size());
         for (size_t k = 0; k < inverse.size(); ++k) inverse[y.dimensions[k]] = k;
         return Ops{g.Transpose(ct, inverse)};
       },
       Module("", "  x = f64[2,3,4] parameter(0)\n  ROOT y = f64[4,2,3] transpose(x), dimensions={2,0,1}\n")},
      {Opcode::kReverse,
       [](Graph& g, Instruction& y, Instruction* ct) {
         return Ops{g.Op(Opcode::kReverse, {ct}, [&](Instruction* i) { i->dimensions = y.dimensions; })};
       },
       Module("", x23 + "  ROOT y = f64[2,3] reverse(x), dimensions={1}\n")},
      {Opcode::kReduce, ReduceRule,
       Module(kAdder,
              x23 + "  z = f64[] parameter(1)\n  ROOT y = f64[3] reduce(x, z), dimensions={0}, to_apply=add\n")},
      {Opcode::kDot,
       [](Graph& g, Instruction& y, Instruction* ct) {
         return Ops{DotSide(g, y, ct, true), DotSide(g, y, ct, false)};
       },
       Module("",
              "  a = f64[2,3,4] parameter(0)\n  b = f64[2,5,3] parameter(1)\n"
              "  ROOT y = f64[2,4,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, "
              "rhs_batch_dims={0}, rhs_contracting_dims={2}\n")},
      {Opcode::kConvolution, ConvolutionRule,
       Module("",
              "  x = f64[2,2,6,5] parameter(0)\n  w = f64[3,2,3,2] parameter(1)\n"
              "  ROOT y = f64[2,3,3,4] convolution(x, w), window={size=3x2 stride=2x1 pad=1_0x0_1 rhs_dilate=1x2}, "
              "dim_labels=bf01_oi01->bf01\n")},
      {Opcode::kSelect,
       [](Graph& g, Instruction& y, Instruction* ct) {
         Instruction* p = y.operand(0);
         return Ops{nullptr, g.KeepWhere(p, ct), g.KeepWhere(g.Unary(Opcode::kNot, p), ct)};
       },
       Module("", x23 + "  w = f64[2,3] parameter(1)\n  p = pred[2,3] compare(x, w), direction=GT\n"
                        "  ROOT y = f64[2,3] select(p, x, w)\n")},
      {Opcode::kClamp, ClampRule,
       Module("",
              x23 + "  lo = f64[] parameter(1)\n  hi = f64[2,3] parameter(2)\n  ROOT y = f64[2,3] clamp(lo, x, hi)\n")},
      {Opcode::kSlice, SliceRule,
       Module("", "  x = f64[5,4] parameter(0)\n  ROOT y = f64[2,3] slice(x), slice={[0:4:2], [1:4]}\n")},
      {Opcode::kPad, PadRule,
       Module("", x23 + "  v = f64[] parameter(1)\n  ROOT y = f64[4,4] pad(x, v), padding=1_0_1x0_1\n")},
      {Opcode::kReduceWindow, ReduceWindowVjp,
       Module(kAdder,
              "  x = f64[2,7,6] parameter(0)\n  z = f64[] parameter(1)\n"
              "  ROOT y = f64[2,3,5] reduce-window(x, z), window={size=1x3x2 stride=1x2x1 pad=0_0x1_0x1_0 "
              "rhs_dilate=1x1x2}, to_apply=add\n")},
      {Opcode::kDynamicSlice, DynamicSliceRule,
       Module("",
              "  x = f64[5,4] parameter(0)\n  i = s32[] constant(1)\n  j = s32[] constant(2)\n"
              "  ROOT y = f64[2,2] dynamic-slice(x, i, j), dynamic_slice_sizes={2,2}\n")},
      {Opcode::kDynamicUpdateSlice, DynamicUpdateSliceRule,
       Module("",
              "  x = f64[4,4] parameter(0)\n  u = f64[2,3] parameter(1)\n  i = s32[] constant(1)\n"
              "  j = s32[] constant(0)\n  ROOT y = f64[4,4] dynamic-update-slice(x, u, i, j)\n")},
      {Opcode::kGather, GatherRule,
       Module("",
              "  x = f64[4,3] parameter(0)\n  idx = s32[3,1] constant({{2}, {0}, {2}})\n"
              "  ROOT y = f64[3,3] gather(x, idx), offset_dims={1}, collapsed_slice_dims={0}, "
              "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n")},
      {Opcode::kScatter, ScatterRule,
       Module(kAdder,
              "  x = f64[4,3] parameter(0)\n  idx = s32[3,1] constant({{2}, {0}, {2}})\n"
              "  u = f64[3,3] parameter(1)\n"
              "  ROOT y = f64[4,3] scatter(x, idx, u), update_window_dims={1}, inserted_window_dims={0}, "
              "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n")},
      {Opcode::kConcatenate, ConcatenateRule,
       Module("", x23 + "  w = f64[2,2] parameter(1)\n  ROOT y = f64[2,5] concatenate(x, w), dimensions={1}\n")},
  };
}

}  // namespace xonnx::autodiff
