// oneDNN primitives for f32 convolutions and matrix products. Primitives and
// the memory objects that bind their arguments are created once at compile
// time; each run only points those at the frame's buffers.
#include "backends/cpu/onednn/dnnl_primitives.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "backends/cpu/kernels/vector_math.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/fingerprint.h"
#include "base/status.h"

namespace xonnx::cpu {
namespace dnnl_support {

dnnl::engine& Engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

Tag PlainTag(int rank) {
  switch (rank) {
    case 3:
      return Tag::ncw;
    case 4:
      return Tag::nchw;
    case 5:
      return Tag::ncdhw;
    default:
      return Tag::undef;
  }
}

Tag ChannelsLastTag(int rank) {
  switch (rank) {
    case 3:
      return Tag::nwc;
    case 4:
      return Tag::nhwc;
    case 5:
      return Tag::ndhwc;
    default:
      return Tag::undef;
  }
}

Tag GroupedWeightsTag(int rank) {  // rank of the ungrouped weights
  switch (rank) {
    case 3:
      return Tag::goiw;
    case 4:
      return Tag::goihw;
    case 5:
      return Tag::goidhw;
    default:
      return Tag::undef;
  }
}

Tag WeightsTag(int rank) {
  switch (rank) {
    case 3:
      return Tag::oiw;
    case 4:
      return Tag::oihw;
    case 5:
      return Tag::oidhw;
    default:
      return Tag::undef;
  }
}

memory::dims Dims(const std::vector<int64_t>& d) { return memory::dims(d.begin(), d.end()); }

namespace {

// Constant weights packed into the layout a primitive prefers, shared by
// every executable of the process that packs the same bytes into the same
// layout. A model's batch buckets are separate programs over the same
// weights: without sharing, each held (and spent the time to make) its own
// packed copy of every weight. Borrowed constants (weights bound without a
// copy, see hlo::Literal::Borrow) are recognized by their owner and
// address; other constants by a fingerprint of their bytes.
class PackedWeights {
 public:
  static PackedWeights& Get() {
    static PackedWeights* p = new PackedWeights;
    return *p;
  }

  std::shared_ptr<memory> Pack(const memory::desc& user, const memory::desc& packed, const hlo::Literal& constant) {
    Key key;
    key.data = std::as_const(constant).untyped_data();
    key.bytes = user.get_size();
    key.borrowed = constant.borrowed();
    key.owner = constant.owner();
    if (!key.borrowed)
      key.fingerprint = FingerprintOf(absl::string_view(static_cast<const char*>(key.data), key.bytes));
    if (auto found = Find(key, user, packed)) return found;
    // Packed outside the lock, so that other weights pack in parallel; two
    // threads packing the same weight at once keep the first copy.
    memory src(user, Engine(), const_cast<void*>(key.data));
    auto dst = std::make_shared<memory>(packed, Engine());
    dnnl::stream s(Engine());
    dnnl::reorder(src, *dst).execute(s, src, *dst);
    s.wait();
    std::lock_guard<std::mutex> l(mu_);
    if (auto found = FindLocked(key, user, packed)) return found;
    std::erase_if(entries_, [](const Entry& e) { return e.mem.expired(); });
    entries_.push_back({key, user, packed, dst});
    ++packed_;
    return dst;
  }

  PackedWeightStats Stats() {
    std::lock_guard<std::mutex> l(mu_);
    PackedWeightStats st;
    st.packed = packed_;
    for (const auto& e : entries_)
      if (auto m = e.mem.lock()) {
        ++st.alive;
        st.alive_bytes += m->get_desc().get_size();
      }
    return st;
  }

 private:
  struct Key {
    const void* data = nullptr;
    size_t bytes = 0;
    // Borrowed bytes are identified by their owner and address: while the
    // owner lives (the weak pointer has not expired), nothing else can be
    // at that address. Owned bytes by their fingerprint.
    bool borrowed = false;
    std::weak_ptr<const void> owner;
    Fingerprint128 fingerprint;
    bool Matches(const Key& o) const {
      if (bytes != o.bytes || borrowed != o.borrowed) return false;
      if (!borrowed) return fingerprint == o.fingerprint;
      return data == o.data && !owner.expired() && !owner.owner_before(o.owner) && !o.owner.owner_before(owner);
    }
  };
  struct Entry {
    Key key;
    memory::desc user, packed;
    std::weak_ptr<memory> mem;
  };

  std::shared_ptr<memory> Find(const Key& key, const memory::desc& user, const memory::desc& packed) {
    std::lock_guard<std::mutex> l(mu_);
    return FindLocked(key, user, packed);
  }
  std::shared_ptr<memory> FindLocked(const Key& key, const memory::desc& user, const memory::desc& packed) {
    for (const auto& e : entries_)
      if (e.key.Matches(key) && e.user == user && e.packed == packed)
        if (auto m = e.mem.lock()) return m;
    return nullptr;
  }

  std::mutex mu_;
  std::vector<Entry> entries_;
  int64_t packed_ = 0;
};

}  // namespace

std::shared_ptr<memory> PackWeights(const memory::desc& user, const memory::desc& packed,
                                    const hlo::Literal& constant) {
  return PackedWeights::Get().Pack(user, packed, constant);
}

size_t RoundUp64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace dnnl_support

bool DnnlHasVnni() {
  // Each ISA value is its predecessors' bits plus its own, so an ISA with
  // VNNI has all of the bits of one of the two that introduced it.
  auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  for (auto vnni : {dnnl::cpu_isa::avx512_core_vnni, dnnl::cpu_isa::avx2_vnni})
    if ((isa & static_cast<unsigned>(vnni)) == static_cast<unsigned>(vnni)) return true;
  return false;
}

namespace dnnl_support {

// Debian's oneDNN is built without concurrent execution, so a
// library-managed scratchpad belongs to the primitive and two calls running
// the same primitive at once would share it. Every primitive here therefore
// takes a user scratchpad, from the scratch region of the call's arena
// (Frame::Scratch, sized by Thunk::scratch_bytes).
dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The arguments of a convolution or a matrix product, in the order its runs
// pass their buffers (RunProduct): source, weights (the packed constant,
// when there is one), the bias if `bias`, result, scratchpad.
std::vector<PrimitiveRunner::Arg> ProductArgs(const memory::desc& src, const memory::desc& weights,
                                              std::shared_ptr<memory> packed, const memory::desc* bias,
                                              const memory::desc& dst, const memory::desc& scratchpad) {
  std::vector<PrimitiveRunner::Arg> args = {{DNNL_ARG_SRC, src, nullptr},
                                            {DNNL_ARG_WEIGHTS, weights, std::move(packed)}};
  if (bias) args.push_back({DNNL_ARG_BIAS, *bias, nullptr});
  args.push_back({DNNL_ARG_DST, dst, nullptr});
  args.push_back({DNNL_ARG_SCRATCHPAD, scratchpad, nullptr});
  return args;
}

// Runs a product made with ProductArgs on a call's buffers; `bias` is null
// when it has none. The scratchpad is the call's scratch region.
absl::Status RunProduct(PrimitiveRunner& product, Frame& f, void* src, void* weights, void* bias, void* dst) {
  void* args[5];
  int n = 0;
  args[n++] = src;
  args[n++] = weights;
  if (bias) args[n++] = bias;
  args[n++] = dst;
  args[n++] = f.Scratch();
  return product.Run(absl::MakeConstSpan(args, n));
}

ConvWindow ConvWindowOf(const hlo::Instruction& conv) {
  ConvWindow w;
  for (const auto& d : conv.window.dimensions) {
    w.strides.push_back(d.stride);
    w.dilations.push_back(d.window_dilation - 1);
    w.pad_l.push_back(d.padding_low);
    w.pad_r.push_back(d.padding_high);
  }
  return w;
}

std::vector<PrimitiveRunner::Arg> IntegerProductArgs(const memory::desc& src, std::shared_ptr<memory> packed,
                                                     const memory::desc& dst, const memory::desc& scratchpad,
                                                     bool zero_point) {
  memory::desc weights = packed->get_desc();
  std::vector<PrimitiveRunner::Arg> args = {{DNNL_ARG_SRC, src, nullptr},
                                            {DNNL_ARG_WEIGHTS, weights, std::move(packed)},
                                            {DNNL_ARG_DST, dst, nullptr},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad, nullptr}};
  if (zero_point)
    args.push_back(
        {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory::desc({1}, memory::data_type::s32, Tag::a), nullptr});
  return args;
}

absl::Status RunIntegerProduct(PrimitiveRunner& product, Frame& f, void* src, void* dst, void* zero_point) {
  void* args[5] = {src, nullptr, dst, f.Scratch(), zero_point};
  return product.Run(absl::MakeConstSpan(args, zero_point ? 5 : 4));
}

// A layout change from one buffer to another.
void MakeReorder(std::optional<PrimitiveRunner>& r, const dnnl::reorder::primitive_desc& pd) {
  r.emplace(dnnl::reorder(pd), std::vector<PrimitiveRunner::Arg>{{DNNL_ARG_FROM, pd.src_desc(), nullptr},
                                                                 {DNNL_ARG_TO, pd.dst_desc(), nullptr}});
}

// Whether the epilogue's swish runs after the primitive, over its result,
// instead of as a post-op. Over the results of EfficientNet's first 1x1 and
// depthwise convolutions (56x56 and 112x112), SwishF32 at 16 lanes took half
// the time of oneDNN 2.6's swish post-op, more than paying for reading the
// result once more while it is in cache; at batch 64, where it no longer
// is, the two measured the same. Narrower builds keep the post-op.
bool SwishAfter(const Epilogue& epilogue) {
  return epilogue.activation == Epilogue::kSwish && !epilogue.residual_after_activation && VectorMathIs16Wide();
}

// y = swish(y) over a primitive's result, split across the threads.
void SwishInPlace(void* data, size_t bytes) {
  float* y = static_cast<float*>(data);
  const int64_t n = bytes / sizeof(float);
  constexpr int64_t kGrain = 1 << 14;  // elements per task: 64 KiB
  const int64_t tasks = (n + kGrain - 1) / kGrain;
#pragma omp parallel for schedule(static) if (tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) SwishF32(y + t * kGrain, y + t * kGrain, std::min(kGrain, n - t * kGrain));
}

// The epilogue as oneDNN post-ops, with the user-provided scratchpad. The
// residual is a sum post-op: the output buffer is filled with it first and
// the primitive accumulates into it (oneDNN keeps its fast kernels for sum,
// unlike a full-tensor binary post-op); post-ops apply in order, so a sum
// after the activation adds the residual to the activation's result. A
// swish that SwishAfter runs afterwards is left out.
dnnl::primitive_attr EpilogueAttr(const Epilogue& epilogue) {
  dnnl::primitive_attr attr = UserScratchpad();
  dnnl::post_ops po;
  if (epilogue.residual && !epilogue.residual_after_activation) po.append_sum(1.0f);
  if (SwishAfter(epilogue)) {
    attr.set_post_ops(po);
    return attr;
  }
  switch (epilogue.activation) {
    case Epilogue::kNone:
      break;
    case Epilogue::kRelu:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      break;
    case Epilogue::kClip:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, epilogue.lo, epilogue.hi);
      break;
    case Epilogue::kSwish:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.f, 0.f);
      break;
    case Epilogue::kSigmoid:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.f, 0.f);
      break;
    case Epilogue::kHardSigmoid:  // oneDNN 2.6 has no hard sigmoid: a x + b, then the clip
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, epilogue.lo, epilogue.hi);
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.f, 1.f);
      break;
    case Epilogue::kHardSwish:  // x * relu6(x + 3) / 6
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.f, 0.f);
      break;
    case Epilogue::kTanh:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_tanh, 0.f, 0.f);
      break;
    case Epilogue::kGeluErf:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
      break;
    case Epilogue::kGeluTanh:
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
      break;
  }
  if (epilogue.residual && epilogue.residual_after_activation) po.append_sum(1.0f);
  attr.set_post_ops(po);
  return attr;
}

// The sum post-op adds to what the output holds, so the residual is copied
// there first, unless the arena already put the output over the residual
// (where the epilogue is the residual's last reader).
void PrefillResidual(Frame& f, BufferRef residual, BufferRef dst, size_t bytes) {
  if (f.Ptr(residual) != f.Ptr(dst)) std::memcpy(f.Ptr(dst), f.Ptr(residual), bytes);
}

}  // namespace dnnl_support

PackedWeightStats PackedWeightCount() { return dnnl_support::PackedWeights::Get().Stats(); }

}  // namespace xonnx::cpu
