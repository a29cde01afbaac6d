// Transposed convolutions on oneDNN's deconvolution primitive. The importer
// writes ONNX ConvTranspose as XLA does: a convolution over the input
// dilated by the stride (lhs/base dilation), with the kernel's spatial dims
// reversed and its feature dims swapped. oneDNN's deconvolution computes
// the same sum without the zeros of the dilated input, from the kernel in
// its original orientation, so the thunk undoes the importer's reversal
// and regrouping once, at compile time, on the constant weights.
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "backends/cpu/onednn/dnnl_primitives.h"
#include "backends/cpu/runtime/thunks.h"

namespace xonnx::cpu {

using namespace dnnl_support;  // the primitives' vocabulary

namespace {

struct DeconvState {
  memory::desc src, weights, dst, scratchpad;
  std::shared_ptr<memory> packed_weights;
  std::optional<PrimitiveRunner> deconv;
};

// The activations' layout: plain (N, C, spatial...) or channels-last, the
// same on both sides; nullopt for other dimension orders.
std::optional<bool> ChannelsLast(const hlo::ConvolutionDimensionNumbers& d, int64_t rank) {
  for (bool last : {false, true}) {
    int64_t feature = last ? rank - 1 : 1, first_spatial = last ? 1 : 2;
    bool ok = d.input_batch_dimension == 0 && d.output_batch_dimension == 0 && d.input_feature_dimension == feature &&
              d.output_feature_dimension == feature;
    for (int64_t i = 0; ok && i < rank - 2; ++i)
      ok = d.input_spatial_dimensions[i] == first_spatial + i && d.output_spatial_dimensions[i] == first_spatial + i;
    if (ok) return last;
  }
  return std::nullopt;
}

// The deconvolution's weights, [groups][out/groups][in/groups][k...] with
// each spatial dim in the deconvolution's order, from the convolution's
// kernel K (in features at kernel_input_feature_dimension, all output
// features at kernel_output_feature_dimension, spatial dims reversed).
hlo::Literal DeconvWeights(const hlo::Instruction& in, const hlo::Literal& k, int64_t groups) {
  const auto& d = in.conv_dnums;
  const hlo::Shape& ks = k.shape();
  std::vector<int64_t> kst = ks.Strides();
  int64_t ns = d.kernel_spatial_dimensions.size();
  int64_t in_g = ks.dims[d.kernel_input_feature_dimension], out = ks.dims[d.kernel_output_feature_dimension];
  int64_t out_g = out / groups;
  std::vector<int64_t> dims = {groups, out_g, in_g}, spatial;
  for (int64_t s : d.kernel_spatial_dimensions) spatial.push_back(ks.dims[s]);
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  hlo::Literal w(hlo::Shape(hlo::F32, dims));
  const float* src = k.data<float>();
  float* dst = w.data<float>();
  std::vector<int64_t> j(ns, 0);
  int64_t at = 0;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < out_g; ++o)
      for (int64_t i = 0; i < in_g; ++i) {
        std::fill(j.begin(), j.end(), 0);
        int64_t base =
            i * kst[d.kernel_input_feature_dimension] + (g * out_g + o) * kst[d.kernel_output_feature_dimension];
        while (true) {
          int64_t off = base;
          for (int64_t s = 0; s < ns; ++s) off += (spatial[s] - 1 - j[s]) * kst[d.kernel_spatial_dimensions[s]];
          dst[at++] = src[off];
          int64_t s = ns - 1;
          for (; s >= 0; --s) {
            if (++j[s] < spatial[s]) break;
            j[s] = 0;
          }
          if (s < 0) break;
        }
      }
  return w;
}

}  // namespace

std::optional<Thunk> MakeDnnlDeconvThunk(const hlo::Instruction& in, const ThunkIo& io,
                                         const hlo::Literal* constant_weights,
                                         std::vector<std::shared_ptr<void>>* keep_alive) {
  if (!constant_weights || in.shape().element_type != hlo::F32 || in.batch_group_count != 1) return std::nullopt;
  const auto& d = in.conv_dnums;
  int64_t ns = d.input_spatial_dimensions.size(), rank = ns + 2;
  if (ns < 1 || ns > 3 || in.shape().ElementCount() == 0) return std::nullopt;
  std::optional<bool> channels_last = ChannelsLast(d, rank);
  if (!channels_last) return std::nullopt;
  // Strides of the deconvolution are the convolution's base dilation; its
  // padding what the convolution's leaves of the kernel's extent.
  memory::dims strides, dil, pad_l, pad_r;
  bool dilated = false;
  for (int64_t s = 0; s < ns; ++s) {
    const hlo::WindowDimension& w = in.window.dimensions[s];
    if (w.stride != 1 || w.window_reversal) return std::nullopt;
    dilated |= w.base_dilation > 1;
    int64_t extent = (w.size - 1) * w.window_dilation;
    strides.push_back(w.base_dilation);
    dil.push_back(w.window_dilation - 1);
    pad_l.push_back(extent - w.padding_low);
    pad_r.push_back(extent - w.padding_high);
  }
  if (!dilated) return std::nullopt;
  const hlo::Shape& xs = in.operand(0)->shape();
  int64_t groups = in.feature_group_count;
  int64_t cin = xs.dims[d.input_feature_dimension], cout = in.shape().dims[d.output_feature_dimension];
  if (cin % groups || cout % groups) return std::nullopt;
  auto logical = [&](const std::vector<int64_t>& dims) {
    if (!*channels_last) return Dims(dims);
    memory::dims l = {dims[0], dims[rank - 1]};
    l.insert(l.end(), dims.begin() + 1, dims.end() - 1);
    return l;
  };
  Tag act = *channels_last ? ChannelsLastTag(rank) : PlainTag(rank);
  try {
    auto st = std::make_shared<DeconvState>();
    st->src = memory::desc(logical(xs.dims), memory::data_type::f32, act);
    st->dst = memory::desc(logical(in.shape().dims), memory::data_type::f32, act);
    hlo::Literal w = DeconvWeights(in, *constant_weights, groups);
    memory::dims wdims = Dims(w.shape().dims);
    Tag wtag = GroupedWeightsTag(rank);
    if (groups == 1) {
      wdims.erase(wdims.begin());
      wtag = WeightsTag(rank);
    }
    memory::desc user_w(wdims, memory::data_type::f32, wtag);
    memory::desc any_w(wdims, memory::data_type::f32, Tag::any);
    dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                           st->src, any_w, st->dst, strides, dil, pad_l, pad_r);
    dnnl::deconvolution_forward::primitive_desc pd(desc, UserScratchpad(), Engine());
    st->weights = pd.weights_desc();
    st->scratchpad = pd.scratchpad_desc();
    st->packed_weights = PackWeights(user_w, st->weights, w);
    st->deconv.emplace(dnnl::deconvolution_forward(pd),
                       ProductArgs(st->src, st->weights, st->packed_weights, nullptr, st->dst, st->scratchpad));
    keep_alive->push_back(st);
    Thunk t;
    t.name = in.name();
    t.kind = "dnnl-deconv";
    t.scratch_bytes = st->scratchpad.get_size();
    BufferRef src = io.inputs[0], dst = io.outputs[0];
    t.run = [st, src, dst](Frame& f) -> absl::Status {
      return RunProduct(*st->deconv, f, f.Ptr(src), nullptr, nullptr, f.Ptr(dst));
    };
    return t;
  } catch (const dnnl::error&) {
    return std::nullopt;  // a form oneDNN does not take: the next kernel in the table
  }
}

}  // namespace xonnx::cpu
