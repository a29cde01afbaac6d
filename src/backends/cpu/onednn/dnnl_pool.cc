// Max pooling on oneDNN's pooling primitive: a reduce-window by maximum from
// -inf (or the lowest float) over the spatial dims of channels-last (or channels-first) f32
// activations, as the importer writes MaxPool and the layout pass leaves it,
// or of blocked ones where the blocked-layout planner keeps them so.
// oneDNN's kernel reads each input row once per window row with the
// channels vectorized; the generic reduce-window kernel walked every window
// position per output.
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "backends/cpu/onednn/dnnl_primitives.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/kernels.h"

namespace xonnx::cpu {

using namespace dnnl_support;  // the primitives' vocabulary

namespace {

struct PoolState {
  memory::desc scratchpad;
  std::optional<PrimitiveRunner> pool;
};

// The activation layout: channels-last when the window's last dim is
// trivial, channels-first when its second is; the batch dim's must be
// trivial too. nullopt for other windows.
std::optional<bool> PoolChannelsLast(const hlo::Window& w) {
  auto trivial = [](const hlo::WindowDimension& d) {
    return d.size == 1 && d.stride == 1 && d.padding_low == 0 && d.padding_high == 0 && d.window_dilation == 1;
  };
  int64_t r = w.dimensions.size();
  if (r < 3 || r > 5 || !trivial(w.dimensions[0])) return std::nullopt;
  if (trivial(w.dimensions[r - 1])) return true;
  if (trivial(w.dimensions[1])) return false;
  return std::nullopt;
}

// Whether the reduce-window is a max pool of f32 values from -inf (or the
// lowest float) over spatial dims, and their layout when it is.
std::optional<bool> MaxPoolLayout(const hlo::Instruction& in) {
  const hlo::Shape& xs = in.operand(0)->shape();
  const hlo::Shape& os = in.shape();
  if (in.operand_count() != 2 || xs.element_type != hlo::F32 || !os.IsArray() || os.ElementCount() == 0) return {};
  std::optional<hlo::Opcode> op = eval::MatchScalarBinary(*in.to_apply());
  const hlo::Instruction* init = in.operand(1);
  if (op != hlo::Opcode::kMaximum || init->opcode() != hlo::Opcode::kConstant ||
      init->literal->GetAsDouble(0) > std::numeric_limits<float>::lowest())
    return std::nullopt;
  std::optional<bool> channels_last = PoolChannelsLast(in.window);
  if (!channels_last) return std::nullopt;
  int64_t r = xs.rank(), first = *channels_last ? 1 : 2;
  for (int64_t d = first; d < first + r - 2; ++d) {
    const hlo::WindowDimension& w = in.window.dimensions[d];
    if (w.base_dilation != 1 || w.window_reversal || w.padding_low < 0 || w.padding_high < 0) return std::nullopt;
  }
  return channels_last;
}

}  // namespace

bool DnnlChannelsLastMaxPool(const hlo::Instruction& in) {
  if (in.opcode() != hlo::Opcode::kReduceWindow) return false;
  std::optional<bool> channels_last = MaxPoolLayout(in);
  return channels_last && *channels_last;
}

std::optional<Thunk> MakeDnnlPoolThunk(const hlo::Instruction& in, const ThunkIo& io, int block) {
  std::optional<bool> channels_last = MaxPoolLayout(in);
  if (!channels_last || (block && (!*channels_last || in.shape().rank() != 4))) return std::nullopt;
  const hlo::Shape& xs = in.operand(0)->shape();
  const hlo::Shape& os = in.shape();
  int64_t r = xs.rank(), first = *channels_last ? 1 : 2;
  memory::dims strides, kernel, dilation, pad_l, pad_r;
  for (int64_t d = first; d < first + r - 2; ++d) {
    const hlo::WindowDimension& w = in.window.dimensions[d];
    strides.push_back(w.stride);
    kernel.push_back(w.size);
    dilation.push_back(w.window_dilation - 1);
    pad_l.push_back(w.padding_low);
    pad_r.push_back(w.padding_high);
  }
  auto logical = [&](const std::vector<int64_t>& dims) {
    if (!*channels_last) return Dims(dims);
    memory::dims l = {dims[0], dims[r - 1]};
    l.insert(l.end(), dims.begin() + 1, dims.end() - 1);
    return l;
  };
  Tag tag = block ? BlockedTag(block) : *channels_last ? ChannelsLastTag(r) : PlainTag(r);
  try {
    auto st = std::make_shared<PoolState>();
    memory::desc src(logical(xs.dims), memory::data_type::f32, tag), dst(logical(os.dims), memory::data_type::f32, tag);
    // Padding is never the maximum: oneDNN's max pooling skips it, as the
    // reduce-window's -inf init does.
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, src, dst,
                                        strides, kernel, dilation, pad_l, pad_r);
    dnnl::pooling_v2_forward::primitive_desc pd(desc, UserScratchpad(), Engine());
    if (pd.dst_desc() != dst) return std::nullopt;
    st->scratchpad = pd.scratchpad_desc();
    st->pool.emplace(dnnl::pooling_v2_forward(pd),
                     std::vector<PrimitiveRunner::Arg>{{DNNL_ARG_SRC, src, nullptr},
                                                       {DNNL_ARG_DST, dst, nullptr},
                                                       {DNNL_ARG_SCRATCHPAD, st->scratchpad, nullptr}});
    Thunk t;
    t.name = in.name();
    t.kind = block ? "dnnl-pool-blocked" : "dnnl-pool";
    t.scratch_bytes = st->scratchpad.get_size();
    BufferRef x = io.inputs[0], y = io.outputs[0];
    t.run = [st, x, y](Frame& f) -> absl::Status {
      void* args[3] = {f.Ptr(x), f.Ptr(y), f.Scratch()};
      return st->pool->Run(args);
    };
    return t;
  } catch (const dnnl::error&) {
    return std::nullopt;  // a form oneDNN does not take: the next kernel in the table
  }
}

}  // namespace xonnx::cpu
