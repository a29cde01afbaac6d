// oneDNN's runtime as the CPU backend's primitives use it (internal
// header): the engine, layouts, weights packed once per process, a runner
// that binds a primitive's arguments once, and the epilogue as post-ops.
// The convolution and matrix-product thunks (dnnl_conv.cc, dnnl_matmul.cc)
// are built from these.
#ifndef XONNX_BACKENDS_CPU_ONEDNN_DNNL_PRIMITIVES_H_
#define XONNX_BACKENDS_CPU_ONEDNN_DNNL_PRIMITIVES_H_

#include <atomic>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/status.h"
#include "hlo/ir.h"

namespace xonnx::cpu::dnnl_support {

using memory = dnnl::memory;
using Tag = memory::format_tag;

// The CPU engine every primitive runs on.
dnnl::engine& Engine();
// Activation layouts of rank 3-5: plain (NC...), channels-last (N...C).
Tag PlainTag(int rank);
Tag ChannelsLastTag(int rank);
// oneDNN's blocked activation layouts for 2-D convolutions: channels in
// blocks of 8 or 16, each block stored whole per pixel
// ([N][C/block][H][W][block]). With a channel count divisible by the block
// it has the plain layout's size.
inline Tag BlockedTag(int block) { return block == 8 ? Tag::aBcd8b : Tag::aBcd16b; }
// Weight layouts (OI..., and grouped GOI... for `rank` ungrouped dims).
Tag GroupedWeightsTag(int rank);
Tag WeightsTag(int rank);
memory::dims Dims(const std::vector<int64_t>& d);
size_t RoundUp64(size_t n);

// A constant weight in the layout `packed`, from its bytes in layout
// `user`: packed once per process and shared by every executable that packs
// the same weight the same way.
std::shared_ptr<memory> PackWeights(const memory::desc& user, const memory::desc& packed, const hlo::Literal& constant);

// A primitive attribute with the user-provided scratchpad (see
// dnnl_primitives.cc for why every primitive takes one).
dnnl::primitive_attr UserScratchpad();

// Whether oneDNN chose its reference implementation ("ref:any") for a
// primitive: correct, but orders of magnitude slower than its JIT kernels.
inline bool IsReferenceKernel(const char* impl) { return std::string(impl).rfind("ref", 0) == 0; }

// Runs one primitive on a call's buffers. The dnnl::memory objects that
// point it at them, and the stream, are made once and re-pointed on each
// run: making them with an argument map on every run took about 30 heap
// allocations, longer than a small convolution's own work (the 1x1
// convolutions of a squeeze-and-excitation block take 2 us). A run that
// finds them in use by a concurrent call of the same executable makes its
// own for that run.
class PrimitiveRunner {
 public:
  static constexpr int kMaxArgs = 8;
  // One argument: its oneDNN id and layout, or a constant memory (packed
  // weights) that every run passes as it is.
  struct Arg {
    int id;
    memory::desc md;
    std::shared_ptr<memory> constant;
  };

  PrimitiveRunner(dnnl::primitive prim, std::vector<Arg> args)
      : prim_(std::move(prim)), args_(std::move(args)), stream_(Engine()) {
    for (const Arg& a : args_) bound_.push_back(a.constant ? *a.constant : memory(a.md, Engine(), DNNL_MEMORY_NONE));
  }

  // Executes the primitive with args[i] at ptrs[i] (not read for constant
  // arguments) and waits for it.
  absl::Status Run(absl::Span<void* const> ptrs) {
    dnnl_exec_arg_t c_args[kMaxArgs];
    const int n = static_cast<int>(args_.size());
    if (ptrs.size() != args_.size() || n > kMaxArgs)
      return Internal("a primitive run got %d of %d buffers", ptrs.size(), n);
    const bool mine = !busy_.test_and_set(std::memory_order_acquire);
    std::vector<memory> own;  // a concurrent run's: allocated only then
    dnnl::stream own_stream;
    if (!mine) own.reserve(n);
    for (int i = 0; i < n; ++i) {
      const Arg& a = args_[i];
      dnnl_memory_t m;
      if (a.constant) {
        m = a.constant->get();
      } else if (mine) {
        bound_[i].set_data_handle(ptrs[i]);
        m = bound_[i].get();
      } else {
        m = own.emplace_back(a.md, Engine(), ptrs[i]).get();
      }
      c_args[i] = {a.id, m};
    }
    if (!mine) own_stream = dnnl::stream(Engine());
    dnnl_stream_t s = mine ? stream_.get() : own_stream.get();
    dnnl_status_t st = dnnl_primitive_execute(prim_.get(), s, n, c_args);
    if (st == dnnl_success) st = dnnl_stream_wait(s);
    if (mine) busy_.clear(std::memory_order_release);
    if (st != dnnl_success) return Internal("oneDNN failed to run a primitive (status %d)", static_cast<int>(st));
    return absl::OkStatus();
  }

 private:
  dnnl::primitive prim_;
  std::vector<Arg> args_;
  dnnl::stream stream_;
  std::vector<memory> bound_;
  std::atomic_flag busy_;
};

// The arguments of a convolution or a matrix product, in the order its runs
// pass their buffers (RunProduct): source, weights (the packed constant,
// when there is one), the bias if `bias`, result, scratchpad.
std::vector<PrimitiveRunner::Arg> ProductArgs(const memory::desc& src, const memory::desc& weights,
                                              std::shared_ptr<memory> packed, const memory::desc* bias,
                                              const memory::desc& dst, const memory::desc& scratchpad);
// Runs a product made with ProductArgs on a call's buffers; `bias` is null
// when it has none. The scratchpad is the call's scratch region.
absl::Status RunProduct(PrimitiveRunner& product, Frame& f, void* src, void* weights, void* bias, void* dst);
// A convolution's window in oneDNN's terms: strides, dilations (oneDNN
// counts 0 for none), padding before and after.
struct ConvWindow {
  memory::dims strides, dilations, pad_l, pad_r;
};
ConvWindow ConvWindowOf(const hlo::Instruction& conv);

// The arguments of an 8-bit integer product (MakeDnnlIntegerConvThunk,
// MakeDnnlIntegerDotThunk), in the order RunIntegerProduct passes them:
// source, the packed constant weights, result, scratchpad, and the
// source's run-time zero point (one s32) if `zero_point`.
std::vector<PrimitiveRunner::Arg> IntegerProductArgs(const memory::desc& src, std::shared_ptr<memory> packed,
                                                     const memory::desc& dst, const memory::desc& scratchpad,
                                                     bool zero_point);
// Runs a product made with IntegerProductArgs; `zero_point` is null when it
// has none.
absl::Status RunIntegerProduct(PrimitiveRunner& product, Frame& f, void* src, void* dst, void* zero_point);

// A layout change from one buffer to another.
void MakeReorder(std::optional<PrimitiveRunner>& r, const dnnl::reorder::primitive_desc& pd);
// Whether the epilogue's swish runs after the primitive, over its result.
bool SwishAfter(const Epilogue& epilogue);
// y = swish(y) over a primitive's result, split across the threads.
void SwishInPlace(void* data, size_t bytes);
// The epilogue as oneDNN post-ops, with the user-provided scratchpad.
dnnl::primitive_attr EpilogueAttr(const Epilogue& epilogue);
// Copies the residual into the output before a sum post-op, unless the
// arena put the output over it.
void PrefillResidual(Frame& f, BufferRef residual, BufferRef dst, size_t bytes);

}  // namespace xonnx::cpu::dnnl_support

#endif  // XONNX_BACKENDS_CPU_ONEDNN_DNNL_PRIMITIVES_H_
