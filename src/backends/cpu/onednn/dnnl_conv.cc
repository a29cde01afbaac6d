// oneDNN convolutions: which forms they take, which run blocked or with
// Winograd's algorithm, and the thunk that runs one with its epilogue.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/vector_math.h"
#include "backends/cpu/onednn/dnnl_primitives.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/fingerprint.h"
#include "base/status.h"

namespace xonnx::cpu {

using namespace dnnl_support;  // the primitives' vocabulary

namespace {

struct ConvState {
  memory::desc src, weights, dst;             // the activations as the arena holds them
  std::shared_ptr<memory> reordered_weights;  // set when the weights are constants
  memory::desc bias;
  bool has_bias = false;
  memory::desc scratchpad;
  // The primitive's own activation layouts, where they differ from the
  // arena's: oneDNN's Winograd kernels take only blocked ones, and a
  // convolution that runs blocked may read a plain source or write a plain
  // result (at the edges of a chain of blocked values). The source is
  // reordered into the call's scratch region, and the result computed there
  // (the residual, for the sum post-op, reordered in first) and reordered
  // out. The region holds the scratchpad, then the copies at these offsets.
  memory::desc run_src, run_dst;
  size_t run_src_at = 0, run_dst_at = 0;
  std::optional<PrimitiveRunner> conv;                          // ProductArgs
  std::optional<PrimitiveRunner> src_in, residual_in, dst_out;  // from, to; set where the layouts differ
  // Weights that are not constants, in the primitive's preferred layout:
  // reordered at each call into the scratch region at run_w_at (oneDNN's
  // fast kernels for channels-last activations take only blocked weights;
  // with plain ones it falls back to its reference kernel, 20-50x slower).
  std::optional<PrimitiveRunner> weights_in;
  size_t run_w_at = 0;
};

// Plans the layout changes between the arena's activations and the
// primitive's `pd` into st (its run layouts, copies and their offsets) and
// the call's scratch region; false when one would need scratch memory of
// its own (plain layout changes never do; one that did would own a library
// scratchpad that concurrent calls would share).
bool PlanLayoutCopies(ConvState* st, const dnnl::convolution_forward::primitive_desc& pd, bool has_residual,
                      size_t* scratch_bytes) {
  memory::desc rs = pd.src_desc(), rd = pd.dst_desc();
  std::optional<dnnl::reorder::primitive_desc> in_pd, res_pd, out_pd;
  if (rs != st->src) in_pd.emplace(Engine(), st->src, Engine(), rs);
  if (rd != st->dst) {
    out_pd.emplace(Engine(), rd, Engine(), st->dst);
    if (has_residual) res_pd.emplace(Engine(), st->dst, Engine(), rd);
  }
  for (const auto* r : {&in_pd, &res_pd, &out_pd})
    if (*r && (*r)->scratchpad_desc().get_size() != 0) return false;
  st->run_src = rs;
  st->run_dst = rd;
  st->run_src_at = RoundUp64(pd.scratchpad_desc().get_size());
  st->run_dst_at = st->run_src_at + (in_pd ? RoundUp64(rs.get_size()) : 0);
  *scratch_bytes = out_pd ? st->run_dst_at + rd.get_size()
                          : (in_pd ? st->run_src_at + rs.get_size() : pd.scratchpad_desc().get_size());
  if (in_pd) MakeReorder(st->src_in, *in_pd);
  if (res_pd) MakeReorder(st->residual_in, *res_pd);
  if (out_pd) MakeReorder(st->dst_out, *out_pd);
  return true;
}

// The weights in the primitive's layout `want`: constants packed once here,
// others reordered at each call into the scratch region (after
// `scratch_bytes`, which grows by them). False where the reorder would
// need a scratchpad of its own.
bool PlanWeights(ConvState* st, const memory::desc& user_w, const memory::desc& want,
                 const hlo::Literal* constant_weights, size_t* scratch_bytes) {
  st->weights = want;
  if (constant_weights) {
    st->reordered_weights = PackWeights(user_w, want, *constant_weights);
  } else if (st->weights != user_w) {
    dnnl::reorder::primitive_desc w_pd(Engine(), user_w, Engine(), st->weights);
    if (w_pd.scratchpad_desc().get_size() != 0) return false;
    st->run_w_at = RoundUp64(*scratch_bytes);
    *scratch_bytes = st->run_w_at + st->weights.get_size();
    MakeReorder(st->weights_in, w_pd);
  }
  return true;
}

// oneDNN falls back to its reference kernel for forms its fast kernels do
// not take in one layout (a dilation-8 3x3 convolution on blocked channels
// took 10 s where channels-last takes 20 ms): `pd`, if on it, is replaced by
// the primitive of another layout (0: plain, else a channel block; `make`
// builds it, `allowed` says which fit) that has a fast one, and the
// convolution runs there, with copies to and from it.
template <typename Make, typename Allowed>
void AvoidReferenceKernel(const Make& make, const Allowed& allowed,
                          std::optional<dnnl::convolution_forward::primitive_desc>* pd, int* run_block) {
  for (int block : {0, 16, 8}) {
    if (!IsReferenceKernel((*pd)->impl_info_str()) || block == *run_block || !allowed(block)) continue;
    try {
      auto alt = make(block);
      if (IsReferenceKernel(alt.impl_info_str())) continue;
      *pd = alt;
      *run_block = block;
    } catch (const dnnl::error&) {
      // No kernel for this layout: try the next.
    }
  }
}

// The block size a convolution runs on (0: plain). oneDNN has fast
// kernels for one layout on both sides, not for mixed ones: where the
// sides differ, the smaller side changes layout (on a tie, a plain side).
int RunBlock(const ConvLayouts& layouts, size_t src_bytes, size_t dst_bytes) {
  if (layouts.src_block == layouts.dst_block) return layouts.src_block;
  bool keep_src = layouts.src_block == 0 ? src_bytes > dst_bytes : src_bytes >= dst_bytes;
  return keep_src ? layouts.src_block : layouts.dst_block;
}

// The thunk of a convolution whose primitive and layout copies `st` holds:
// copies in, the primitive with its epilogue, copies out.
Thunk ConvThunk(std::shared_ptr<ConvState> st, const hlo::Instruction& in, const ThunkIo& io, const Epilogue& epilogue,
                const char* kind, size_t scratch_bytes) {
  bool has_bias = epilogue.bias != nullptr, has_residual = epilogue.residual != nullptr;
  BufferRef src = io.inputs[0], wref = io.inputs[1], dst = io.outputs[0];
  BufferRef bref = has_bias ? io.inputs.at(2) : BufferRef{};
  BufferRef rref = has_residual ? io.inputs.at(has_bias ? 3 : 2) : BufferRef{};
  Thunk t;
  t.name = in.name();
  t.kind = kind;
  t.scratch_bytes = scratch_bytes;
  bool swish_after = SwishAfter(epilogue);
  t.run = [st, src, wref, bref, rref, has_residual, dst, swish_after](Frame& f) -> absl::Status {
    void* x = f.Ptr(src);
    void* y = f.Ptr(dst);
    if (st->src_in) {
      x = f.Scratch() + st->run_src_at;
      RETURN_IF_ERROR(st->src_in->Run({f.Ptr(src), x}));
    }
    if (st->dst_out) {
      y = f.Scratch() + st->run_dst_at;
      if (has_residual) RETURN_IF_ERROR(st->residual_in->Run({f.Ptr(rref), y}));
    } else if (has_residual) {
      PrefillResidual(f, rref, dst, st->dst.get_size());
    }
    void* w = f.Ptr(wref);
    if (st->weights_in) {
      w = f.Scratch() + st->run_w_at;
      RETURN_IF_ERROR(st->weights_in->Run({f.Ptr(wref), w}));
    }
    RETURN_IF_ERROR(RunProduct(*st->conv, f, x, w, st->has_bias ? f.Ptr(bref) : nullptr, y));
    if (st->dst_out) RETURN_IF_ERROR(st->dst_out->Run({y, f.Ptr(dst)}));
    if (swish_after) SwishInPlace(f.Ptr(dst), st->dst.get_size());
    return absl::OkStatus();
  };
  return t;
}

}  // namespace

namespace {

// Whether a convolution's dimension numbers and window are a form oneDNN
// takes, whatever its element type.
bool DnnlConvForm(const hlo::Instruction& in) {
  if (in.batch_group_count != 1) return false;
  const auto& d = in.conv_dnums;
  int64_t ns = d.input_spatial_dimensions.size();
  if (ns < 1 || ns > 3) return false;
  // OIHW kernels with NCHW (as imported) or NHWC (after the layout pass)
  // activations.
  int64_t rank = ns + 2;
  bool channels_last = d.input_feature_dimension == rank - 1;
  int64_t feature = channels_last ? rank - 1 : 1, first_spatial = channels_last ? 1 : 2;
  if (d.input_batch_dimension != 0 || d.input_feature_dimension != feature || d.kernel_output_feature_dimension != 0 ||
      d.kernel_input_feature_dimension != 1 || d.output_batch_dimension != 0 || d.output_feature_dimension != feature)
    return false;
  for (int64_t i = 0; i < ns; ++i)
    if (d.input_spatial_dimensions[i] != i + first_spatial || d.kernel_spatial_dimensions[i] != i + 2 ||
        d.output_spatial_dimensions[i] != i + first_spatial)
      return false;
  for (const auto& w : in.window.dimensions)
    if (w.base_dilation != 1 || w.window_reversal || w.padding_low < 0 || w.padding_high < 0) return false;
  const hlo::Shape& xs = in.operand(0)->shape();
  const hlo::Shape& ws = in.operand(1)->shape();
  return xs.ElementCount() > 0 && ws.ElementCount() > 0 && in.shape().ElementCount() > 0;
}

}  // namespace

bool DnnlConvEligible(const hlo::Instruction& in) { return in.shape().element_type == hlo::F32 && DnnlConvForm(in); }

bool DnnlIntegerConvEligible(const hlo::Instruction& in) {
  return in.shape().element_type == hlo::S32 && DnnlConvForm(in);
}

// Whether Winograd's algorithm should beat the direct one: a 2-D, dense,
// stride-1, undilated 3x3 convolution in channels-last order whose channel
// counts in and out are multiples of 16 (oneDNN's kernels take no others).
// It does 2.25x (F(2x2,3x3)) to 4x (F(4x4,3x3)) fewer multiplications at
// the price of a larger transformed copy of the weights and blocked
// activations (a layout change where a neighbour runs plain). Measured on
// AVX-512 with oneDNN 2.6:
//  - ResNet's 3x3 convolutions at batch 1, 8 and 64: 0.35-0.9 of the
//    direct time with the layout changes counted, except where the
//    transformed weights (36 floats per input-output channel pair) outgrow
//    the caches while few output pixels share them (512 channels at 7x7,
//    batch 8: 1.2x slower).
//  - Narrow ones (16 to 48 channels on a side: DenseNet's 128 to 32,
//    SqueezeNet's and U-Net's): 0.4-0.8 of the direct time at batch 16 and
//    0.55-0.85 at batch 1 down to 13x13, but slower at 7x7 and batch 1,
//    where a 4x4 tile wastes much of the image. With them DenseNet-121,
//    SqueezeNet and U-Net run 10-17% faster, at batch 1 and 16.
bool WinogradPays(const hlo::Instruction& in, bool channels_last) {
  if (!channels_last || in.feature_group_count != 1 || in.window.dimensions.size() != 2) return false;
  for (const auto& w : in.window.dimensions)
    if (w.size != 3 || w.stride != 1 || w.window_dilation != 1) return false;
  const hlo::Shape& ws = in.operand(1)->shape();  // OIHW
  int64_t oc = ws.dims[0], ic = ws.dims[1];
  const hlo::Shape& out = in.shape();  // NHWC
  int64_t pixels = out.dims[0] * out.dims[1] * out.dims[2];
  if (oc % 16 != 0 || ic % 16 != 0) return false;
  if (std::min(oc, ic) < 64 && pixels < 128) return false;
  // 16 output channels: the direct kernel wins at every size measured
  // (U^2-Net-P's 64->16 at 320x320: 5.8 ms direct, 15.9 Winograd; 16->16
  // and 32->16 from 40x40 to 160x160: 1.3-2.3x), while 64 win 0.6x.
  if (oc < 32) return false;
  int64_t transformed_weight_bytes = oc * ic * 36 * 4;
  return transformed_weight_bytes <= (int64_t{16} << 20) || pixels >= 2048;
}

bool DnnlConvRunsWinograd(const hlo::Instruction& in, bool constant_weights, bool allow_winograd) {
  return allow_winograd && constant_weights && DnnlConvEligible(in) &&
         WinogradPays(in, in.conv_dnums.input_feature_dimension == in.shape().rank() - 1);
}

// Whether a convolution's source and result take 4 MB or more, so that
// it works outside the caches (see DnnlConvRunsBlocked).
bool OutgrowsCaches(const hlo::Instruction& conv) {
  constexpr int64_t kLargeConvBytes = int64_t{4} << 20;
  return (conv.operand(0)->shape().ElementCount() + conv.shape().ElementCount()) * 4 >= kLargeConvBytes;
}

// Blocks of 8 channels run on oneDNN's AVX2 kernels. Where the CPU has
// AVX-512, a count that is not a multiple of 16 stays channels-last instead,
// whose kernels (brgconv) take any count at full width: MNASNet at batch 16
// (24 and 40 channels, which made whole chains take blocks of 8) went from
// 57 to 43 ms a call on a Xeon, 1.3x ONNX Runtime's time to 0.95x.
int DnnlChannelBlock(int64_t channels) {
  static const bool eight = !CpuHasAvx512();
  return channels % 16 == 0 ? 16 : eight && channels % 8 == 0 ? 8 : 0;
}

bool DnnlConvRunsBlocked(const hlo::Instruction& in, bool constant_weights, bool allow_winograd) {
  if (!DnnlConvEligible(in) || in.window.dimensions.size() != 2) return false;
  bool channels_last = in.conv_dnums.input_feature_dimension == 3;
  if (!channels_last) return false;
  const hlo::Shape& ws = in.operand(1)->shape();  // OIHW
  int64_t in_channels = in.operand(0)->shape().dims[3];
  if (DnnlChannelBlock(ws.dims[0]) == 0 || DnnlChannelBlock(in_channels) == 0) return false;
  // Blocks of 8 channels and depthwise convolutions pay only where the
  // activations outgrow the caches: at batch 1, where they stay in the
  // caches, oneDNN's channels-last kernels are as fast or faster
  // (EfficientNet-B0 7% slower with every such convolution blocked,
  // MobileNetV2 3%); at batch 16, MNASNet and MobileNetV2 run 10-18% faster
  // with them.
  bool large = OutgrowsCaches(in);
  bool wide = ws.dims[0] % 16 == 0 && in_channels % 16 == 0;
  if (in.feature_group_count != 1)  // depthwise: one filter per channel
    return large && in.feature_group_count == in_channels && ws.dims[0] == in_channels && ws.dims[1] == 1;
  if (!wide && !large) return false;
  if (DnnlConvRunsWinograd(in, constant_weights, allow_winograd)) return true;
  for (const auto& w : in.window.dimensions)
    if (w.size != 1) return false;
  return true;
}

bool DnnlConvReadsChannelsFirst(const hlo::Instruction& in) {
  if (!DnnlConvEligible(in) || in.feature_group_count != 1 || in.window.dimensions.size() != 2) return false;
  if (in.conv_dnums.input_feature_dimension != 3) return false;
  const hlo::Instruction* t = in.operand(0);
  if (t->opcode() != hlo::Opcode::kTranspose || t->dimensions != std::vector<int64_t>{0, 2, 3, 1}) return false;
  int64_t in_channels = t->shape().dims[3];
  if (in_channels > 4 || DnnlChannelBlock(in.operand(1)->shape().dims[0]) == 0) return false;
  return OutgrowsCaches(in);
}

std::optional<Thunk> MakeDnnlConvThunk(const hlo::Instruction& in, const ThunkIo& io,
                                       const hlo::Literal* constant_weights, const Epilogue& epilogue,
                                       bool allow_winograd, ConvLayouts layouts,
                                       std::vector<std::shared_ptr<void>>* keep_alive) {
  if (!DnnlConvEligible(in)) return std::nullopt;
  const auto& d = in.conv_dnums;
  int64_t ns = d.input_spatial_dimensions.size();
  int64_t rank = ns + 2;
  bool channels_last = d.input_feature_dimension == rank - 1;
  const ConvWindow window = ConvWindowOf(in);
  const hlo::Shape& xs = in.operand(0)->shape();
  const hlo::Shape& ws = in.operand(1)->shape();
  int64_t g = in.feature_group_count;
  try {
    auto st = std::make_shared<ConvState>();
    memory::dims wdims = Dims(ws.dims);
    Tag wtag = WeightsTag(rank);
    if (g > 1) {
      wdims = {g, ws.dims[0] / g, ws.dims[1]};
      wdims.insert(wdims.end(), ws.dims.begin() + 2, ws.dims.end());
      wtag = GroupedWeightsTag(rank);
    }
    // oneDNN describes activations by logical NCHW dims plus a format tag.
    auto logical = [&](const std::vector<int64_t>& dims) {
      if (!channels_last) return Dims(dims);
      memory::dims l = {dims[0], dims[rank - 1]};
      l.insert(l.end(), dims.begin() + 1, dims.end() - 1);
      return l;
    };
    Tag act = channels_last ? ChannelsLastTag(rank) : PlainTag(rank);
    if ((layouts.src_block || layouts.dst_block) && (!channels_last || rank != 4)) return std::nullopt;
    auto activations = [&](const std::vector<int64_t>& dims, int block) {
      return memory::desc(logical(dims), memory::data_type::f32, block ? BlockedTag(block) : act);
    };
    st->src = layouts.src_channels_first ? memory::desc(logical(xs.dims), memory::data_type::f32, PlainTag(rank))
                                         : activations(xs.dims, layouts.src_block);
    st->dst = activations(in.shape().dims, layouts.dst_block);
    memory::desc user_w(wdims, memory::data_type::f32, wtag);
    // The weights take oneDNN's preferred (blocked) layout: constants
    // reordered once here, others at each call.
    memory::desc any_w(wdims, memory::data_type::f32, Tag::any);
    dnnl::primitive_attr attr = EpilogueAttr(epilogue);
    bool has_bias = epilogue.bias != nullptr;
    bool has_residual = epilogue.residual != nullptr;
    memory::desc bias_md({in.shape().dims[d.output_feature_dimension]}, memory::data_type::f32, Tag::a);
    auto make_pd = [&](dnnl::algorithm alg, const memory::desc& src, const memory::desc& dst) {
      auto desc =
          has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src, any_w, bias_md, dst,
                                                     window.strides, window.dilations, window.pad_l, window.pad_r)
                   : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src, any_w, dst,
                                                     window.strides, window.dilations, window.pad_l, window.pad_r);
      return dnnl::convolution_forward::primitive_desc(desc, attr, Engine());
    };
    bool winograd = false;
    int run_block = 0;
    size_t scratch_bytes = 0;  // the call's scratch region: scratchpad, then the layout copies
    auto plan_copies = [&](const dnnl::convolution_forward::primitive_desc& pd) {
      return PlanLayoutCopies(st.get(), pd, has_residual, &scratch_bytes);
    };
    std::optional<dnnl::convolution_forward::primitive_desc> pd;
    if (DnnlConvRunsWinograd(in, constant_weights != nullptr, allow_winograd)) {
      try {
        memory::desc any_src(st->src.dims(), memory::data_type::f32, Tag::any);
        memory::desc any_dst(st->dst.dims(), memory::data_type::f32, Tag::any);
        auto wpd = make_pd(dnnl::algorithm::convolution_winograd, any_src, any_dst);
        if (plan_copies(wpd)) {
          winograd = true;
          pd = wpd;
        }
      } catch (const dnnl::error&) {
        // No Winograd kernel for this form (post-op, padding, CPU): direct.
      }
    }
    if (!pd) {
      if (layouts.src_channels_first) {
        // oneDNN's first-layer kernels read the channels-first source as it
        // is and write the blocked result.
        run_block = layouts.dst_block;
        pd = make_pd(dnnl::algorithm::convolution_direct, st->src, st->dst);
      } else {
        run_block = RunBlock(layouts, st->src.get_size(), st->dst.get_size());
        pd = make_pd(dnnl::algorithm::convolution_direct, activations(xs.dims, run_block),
                     activations(in.shape().dims, run_block));
        const bool blockable = rank == 4 && channels_last;
        AvoidReferenceKernel(
            [&](int block) {
              return make_pd(dnnl::algorithm::convolution_direct, activations(xs.dims, block),
                             activations(in.shape().dims, block));
            },
            [&](int block) {
              return block == 0 ||
                     (blockable && xs.dims[rank - 1] % block == 0 && in.shape().dims[rank - 1] % block == 0);
            },
            &pd, &run_block);
      }
      if (!plan_copies(*pd)) return std::nullopt;
    }
    st->bias = bias_md;
    st->has_bias = has_bias;
    st->scratchpad = pd->scratchpad_desc();
    if (!PlanWeights(st.get(), user_w, pd->weights_desc(), constant_weights, &scratch_bytes)) return std::nullopt;
    st->conv.emplace(dnnl::convolution_forward(*pd),
                     ProductArgs(st->run_src, st->weights, st->reordered_weights, has_bias ? &st->bias : nullptr,
                                 st->run_dst, st->scratchpad));
    keep_alive->push_back(st);
    // A convolution left on oneDNN's reference kernel says so in its kind
    // (profiles, kernel listings and the model tests see it).
    const bool reference = IsReferenceKernel(pd->impl_info_str());
    return ConvThunk(std::move(st), in, io, epilogue,
                     winograd    ? "dnnl-conv-wino"
                     : run_block ? (reference ? "dnnl-conv-blocked-ref" : "dnnl-conv-blocked")
                                 : (reference ? "dnnl-conv-ref" : ""),
                     scratch_bytes);
  } catch (const dnnl::error&) {
    return std::nullopt;  // an unsupported configuration: use the reference kernel
  }
}
}  // namespace xonnx::cpu
