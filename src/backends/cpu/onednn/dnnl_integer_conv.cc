// oneDNN's 8-bit convolution for an integer product (PlanIntegerProducts):
// a u8 or s8 source, read through any strides, less its run-time zero
// point, convolved with s8 constant weights into an s32 result.
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/onednn/dnnl_primitives.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/status.h"

namespace xonnx::cpu {

using namespace dnnl_support;  // the primitives' vocabulary

namespace {

struct IntegerConvState {
  std::optional<PrimitiveRunner> conv;             // src, weights, dst, scratchpad[, zero point]
  std::optional<PrimitiveRunner> src_in, dst_out;  // layout copies, where the primitive's layouts differ
  size_t src_at = 0, dst_at = 0;                   // the copies' offsets in the call's scratch region
};

// A value's oneDNN description, (N, C, spatial...) in that order, from its
// dims and element strides and the positions of its batch, feature and
// spatial dims.
memory::desc Logical(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t batch,
                     int64_t feature, const std::vector<int64_t>& spatial, memory::data_type type) {
  memory::dims d = {dims[batch], dims[feature]}, s = {strides[batch], strides[feature]};
  for (int64_t k : spatial) {
    d.push_back(dims[k]);
    s.push_back(strides[k]);
  }
  return memory::desc(d, type, s);
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

}  // namespace

std::optional<Thunk> MakeDnnlIntegerConvThunk(const hlo::Instruction& in, const ThunkIo& io,
                                              const std::array<NarrowOperand, 2>& operands,
                                              std::vector<std::shared_ptr<void>>* keep_alive) {
  const NarrowOperand &x = operands[0], &w = operands[1];
  if (!DnnlIntegerConvEligible(in) || !x.source || !w.constant) return std::nullopt;
  const auto& d = in.conv_dnums;
  const ConvWindow window = ConvWindowOf(in);
  auto src_type = x.source->shape().element_type == hlo::U8 ? memory::data_type::u8 : memory::data_type::s8;
  memory::desc src = Logical(x.view.dims, x.view.strides, d.input_batch_dimension, d.input_feature_dimension,
                             d.input_spatial_dimensions, src_type);
  const auto& out_dims = in.shape().dims;
  memory::desc dst = Logical(out_dims, RowMajorStrides(out_dims), d.output_batch_dimension, d.output_feature_dimension,
                             d.output_spatial_dimensions, memory::data_type::s32);
  // The weights as stored (OI..., see DnnlConvEligible), grouped as oneDNN
  // wants them when the convolution has groups.
  const auto& wdims = w.constant->shape().dims;
  std::vector<int64_t> wstrides = RowMajorStrides(wdims);
  memory::dims wd(wdims.begin(), wdims.end()), ws(wstrides.begin(), wstrides.end());
  if (int64_t g = in.feature_group_count; g > 1) {
    wd[0] /= g;
    wd.insert(wd.begin(), g);
    ws.insert(ws.begin(), wd[1] * ws[0]);
  }
  memory::desc user_w(wd, memory::data_type::s8, ws);
  memory::desc any_w(wd, memory::data_type::s8, Tag::any);
  try {
    dnnl::primitive_attr attr = UserScratchpad();
    if (x.zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    auto make_pd = [&](const memory::desc& s, const memory::desc& o) {
      return dnnl::convolution_forward::primitive_desc(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, s,
                                          any_w, o, window.strides, window.dilations, window.pad_l, window.pad_r),
          attr, Engine());
    };
    // The arena's layouts when a fast kernel takes them (channels-last
    // ones do), else the primitive's own choice, with copies.
    std::optional<dnnl::convolution_forward::primitive_desc> pd;
    try {
      pd = make_pd(src, dst);
      if (IsReferenceKernel(pd->impl_info_str())) pd.reset();
    } catch (const dnnl::error&) {
    }
    if (!pd)
      pd = make_pd(memory::desc(src.dims(), src_type, Tag::any),
                   memory::desc(dst.dims(), memory::data_type::s32, Tag::any));
    auto st = std::make_shared<IntegerConvState>();
    size_t scratch = RoundUp64(pd->scratchpad_desc().get_size());
    st->src_at = st->dst_at = scratch;
    // A layout copy must not need a scratchpad of its own, which
    // concurrent calls would share (as for the f32 convolutions).
    auto copy = [](std::optional<PrimitiveRunner>& r, const memory::desc& from, const memory::desc& to) {
      dnnl::reorder::primitive_desc rpd(Engine(), from, Engine(), to);
      if (rpd.scratchpad_desc().get_size() != 0) return false;
      MakeReorder(r, rpd);
      return true;
    };
    if (pd->src_desc() != src) {
      if (!copy(st->src_in, src, pd->src_desc())) return std::nullopt;
      scratch += RoundUp64(pd->src_desc().get_size());
      st->dst_at = scratch;
    }
    if (pd->dst_desc() != dst) {
      if (!copy(st->dst_out, pd->dst_desc(), dst)) return std::nullopt;
      scratch += pd->dst_desc().get_size();
    }
    st->conv.emplace(dnnl::convolution_forward(*pd),
                     IntegerProductArgs(pd->src_desc(), PackWeights(user_w, pd->weights_desc(), *w.constant),
                                        pd->dst_desc(), pd->scratchpad_desc(), x.zero_point != nullptr));
    keep_alive->push_back(st);
    BufferRef src_ref = io.inputs.at(0), dst_ref = io.outputs.at(0);
    std::optional<BufferRef> zp;
    if (x.zero_point) zp = io.inputs.at(1);
    size_t offset = x.view.offset;  // one byte per element
    Thunk t;
    t.name = in.name();
    t.kind = st->src_in || st->dst_out ? "dnnl-int8-conv-reordered" : "";
    t.scratch_bytes = scratch;
    t.run = [st, src_ref, dst_ref, zp, offset](Frame& f) -> absl::Status {
      void* s = static_cast<char*>(f.Ptr(src_ref)) + offset;
      void* y = f.Ptr(dst_ref);
      if (st->src_in) {
        void* copy = f.Scratch() + st->src_at;
        RETURN_IF_ERROR(st->src_in->Run({s, copy}));
        s = copy;
      }
      void* out = st->dst_out ? f.Scratch() + st->dst_at : y;
      RETURN_IF_ERROR(RunIntegerProduct(*st->conv, f, s, out, zp ? f.Ptr(*zp) : nullptr));
      if (st->dst_out) RETURN_IF_ERROR(st->dst_out->Run({out, y}));
      return absl::OkStatus();
    };
    return t;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

}  // namespace xonnx::cpu
