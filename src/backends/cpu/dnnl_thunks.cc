// oneDNN primitives for f32 convolutions and matrix products. Primitives and
// the memory objects that bind their arguments are created once at compile
// time; each run only points those at the frame's buffers.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "backends/cpu/thunks.h"
#include "backends/cpu/vector_math.h"
#include "base/fingerprint.h"
#include "base/status.h"

namespace xonnx::cpu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

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

// oneDNN's blocked activation layout for 2-D convolutions: channels in
// blocks of 16, each block stored whole per pixel ([N][C/16][H][W][16]).
// With a channel count divisible by 16 it has the plain layout's size.
constexpr Tag kBlocked = Tag::aBcd16b;

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

size_t RoundUp64(size_t n) { return (n + 63) / 64 * 64; }

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
};

struct DotState {
  memory::desc a, b, c, bias;
  bool has_bias = false;
  std::shared_ptr<memory> packed;  // the constant rhs in oneDNN's layout
  memory::desc scratchpad;
  std::optional<PrimitiveRunner> matmul;  // ProductArgs
};

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
bool SwishAfter(const Epilogue& epilogue) { return epilogue.activation == Epilogue::kSwish && VectorMathIs16Wide(); }

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
// unlike a full-tensor binary post-op). A swish that SwishAfter runs
// afterwards is left out.
dnnl::primitive_attr EpilogueAttr(const Epilogue& epilogue) {
  dnnl::primitive_attr attr = UserScratchpad();
  dnnl::post_ops po;
  if (epilogue.residual) po.append_sum(1.0f);
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
  }
  attr.set_post_ops(po);
  return attr;
}

// The sum post-op adds to what the output holds, so the residual is copied
// there first, unless the arena already put the output over the residual
// (where the epilogue is the residual's last reader).
void PrefillResidual(Frame& f, BufferRef residual, BufferRef dst, size_t bytes) {
  if (f.Ptr(residual) != f.Ptr(dst)) std::memcpy(f.Ptr(dst), f.Ptr(residual), bytes);
}

}  // namespace

bool DnnlConvEligible(const hlo::Instruction& in) {
  if (in.shape().element_type != hlo::F32 || in.batch_group_count != 1) return false;
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

// Whether Winograd's algorithm should beat the direct one: a 2-D, dense,
// stride-1, undilated 3x3 convolution in channels-last order with at least 64
// channels in and out. It does 2.25x (F(2x2,3x3)) to 4x (F(4x4,3x3)) fewer
// multiplications at the price of a larger transformed copy of the weights
// and a layout change of the activations on each side. Measured on AVX-512
// with oneDNN 2.6 (ResNet's 3x3 convolutions at batch 1, 8 and 64): 0.35-0.9
// of the direct time with the layout changes counted, except with few
// channels (slower below 64) and where the transformed weights (36 floats per
// input-output channel pair) outgrow the caches while few output pixels
// share them (512 channels at 7x7, batch 8: 1.2x slower).
bool WinogradPays(const hlo::Instruction& in, bool channels_last) {
  if (!channels_last || in.feature_group_count != 1 || in.window.dimensions.size() != 2) return false;
  for (const auto& w : in.window.dimensions)
    if (w.size != 3 || w.stride != 1 || w.window_dilation != 1) return false;
  const hlo::Shape& ws = in.operand(1)->shape();  // OIHW
  int64_t oc = ws.dims[0], ic = ws.dims[1];
  if (oc < 64 || ic < 64) return false;
  const hlo::Shape& out = in.shape();  // NHWC
  int64_t pixels = out.dims[0] * out.dims[1] * out.dims[2];
  int64_t transformed_weight_bytes = oc * ic * 36 * 4;
  return transformed_weight_bytes <= (int64_t{16} << 20) || pixels >= 2048;
}

bool DnnlConvRunsWinograd(const hlo::Instruction& in, bool constant_weights, bool allow_winograd) {
  return allow_winograd && constant_weights && DnnlConvEligible(in) &&
         WinogradPays(in, in.conv_dnums.input_feature_dimension == in.shape().rank() - 1);
}

bool DnnlConvRunsBlocked(const hlo::Instruction& in, bool constant_weights, bool allow_winograd) {
  if (!DnnlConvEligible(in) || in.feature_group_count != 1 || in.window.dimensions.size() != 2) return false;
  bool channels_last = in.conv_dnums.input_feature_dimension == 3;
  if (!channels_last) return false;
  const hlo::Shape& ws = in.operand(1)->shape();  // OIHW
  if (ws.dims[0] % 16 != 0 || ws.dims[1] % 16 != 0) return false;
  if (DnnlConvRunsWinograd(in, constant_weights, allow_winograd)) return true;
  for (const auto& w : in.window.dimensions)
    if (w.size != 1) return false;
  return true;
}

PackedWeightStats PackedWeightCount() { return PackedWeights::Get().Stats(); }

std::optional<Thunk> MakeDnnlConvThunk(const hlo::Instruction& in, const ThunkIo& io,
                                       const hlo::Literal* constant_weights, const Epilogue& epilogue,
                                       bool allow_winograd, ConvLayouts layouts,
                                       std::vector<std::shared_ptr<void>>* keep_alive) {
  if (!DnnlConvEligible(in)) return std::nullopt;
  const auto& d = in.conv_dnums;
  int64_t ns = d.input_spatial_dimensions.size();
  int64_t rank = ns + 2;
  bool channels_last = d.input_feature_dimension == rank - 1;
  memory::dims strides, dil, pad_l, pad_r;
  for (const auto& w : in.window.dimensions) {
    strides.push_back(w.stride);
    dil.push_back(w.window_dilation - 1);
    pad_l.push_back(w.padding_low);
    pad_r.push_back(w.padding_high);
  }
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
    if ((layouts.src_blocked || layouts.dst_blocked) && (!channels_last || rank != 4)) return std::nullopt;
    auto activations = [&](const std::vector<int64_t>& dims, bool blocked) {
      return memory::desc(logical(dims), memory::data_type::f32, blocked ? kBlocked : act);
    };
    st->src = activations(xs.dims, layouts.src_blocked);
    st->dst = activations(in.shape().dims, layouts.dst_blocked);
    memory::desc user_w(wdims, memory::data_type::f32, wtag);
    // Constant weights may take oneDNN's preferred (blocked) layout, reordered once here.
    memory::desc any_w(wdims, memory::data_type::f32, constant_weights ? Tag::any : wtag);
    dnnl::primitive_attr attr = EpilogueAttr(epilogue);
    bool has_bias = epilogue.bias != nullptr;
    bool has_residual = epilogue.residual != nullptr;
    memory::desc bias_md({in.shape().dims[d.output_feature_dimension]}, memory::data_type::f32, Tag::a);
    auto make_pd = [&](dnnl::algorithm alg, const memory::desc& src, const memory::desc& dst) {
      auto desc = has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src, any_w,
                                                             bias_md, dst, strides, dil, pad_l, pad_r)
                           : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src, any_w, dst,
                                                             strides, dil, pad_l, pad_r);
      return dnnl::convolution_forward::primitive_desc(desc, attr, Engine());
    };
    bool winograd = false, runs_blocked = false;
    size_t scratch_bytes = 0;  // the call's scratch region: scratchpad, then the layout copies
    // The layout changes between the arena's activations and the
    // primitive's; false when one would need scratch memory of its own
    // (plain layout changes never do; one that did would own a library
    // scratchpad that concurrent calls would share).
    auto plan_copies = [&](const dnnl::convolution_forward::primitive_desc& pd) {
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
      scratch_bytes = out_pd ? st->run_dst_at + rd.get_size()
                             : (in_pd ? st->run_src_at + rs.get_size() : pd.scratchpad_desc().get_size());
      if (in_pd) MakeReorder(st->src_in, *in_pd);
      if (res_pd) MakeReorder(st->residual_in, *res_pd);
      if (out_pd) MakeReorder(st->dst_out, *out_pd);
      return true;
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
      // oneDNN has fast kernels for one layout on both sides, not for mixed
      // ones: with one side blocked, the smaller side changes layout.
      runs_blocked = layouts.src_blocked && layouts.dst_blocked;
      if (layouts.src_blocked != layouts.dst_blocked) {
        size_t plain_side = layouts.src_blocked ? st->dst.get_size() : st->src.get_size();
        size_t blocked_side = layouts.src_blocked ? st->src.get_size() : st->dst.get_size();
        runs_blocked = plain_side <= blocked_side;
      }
      pd = make_pd(dnnl::algorithm::convolution_direct, activations(xs.dims, runs_blocked),
                   activations(in.shape().dims, runs_blocked));
      if (!plan_copies(*pd)) return std::nullopt;
    }
    st->bias = bias_md;
    st->has_bias = has_bias;
    st->scratchpad = pd->scratchpad_desc();
    st->weights = pd->weights_desc();
    if (constant_weights)
      st->reordered_weights = PackedWeights::Get().Pack(user_w, pd->weights_desc(), *constant_weights);
    st->conv.emplace(dnnl::convolution_forward(*pd),
                     ProductArgs(st->run_src, st->weights, st->reordered_weights, has_bias ? &st->bias : nullptr,
                                 st->run_dst, st->scratchpad));
    keep_alive->push_back(st);
    BufferRef src = io.inputs[0], wref = io.inputs[1], dst = io.outputs[0];
    BufferRef bref = has_bias ? io.inputs.at(2) : BufferRef{};
    BufferRef rref = has_residual ? io.inputs.at(has_bias ? 3 : 2) : BufferRef{};
    Thunk t;
    t.name = in.name();
    t.kind = winograd ? "dnnl-conv-wino" : runs_blocked ? "dnnl-conv-blocked" : "";
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
      RETURN_IF_ERROR(RunProduct(*st->conv, f, x, f.Ptr(wref), st->has_bias ? f.Ptr(bref) : nullptr, y));
      if (st->dst_out) RETURN_IF_ERROR(st->dst_out->Run({y, f.Ptr(dst)}));
      if (swish_after) SwishInPlace(f.Ptr(dst), st->dst.get_size());
      return absl::OkStatus();
    };
    return t;
  } catch (const dnnl::error&) {
    return std::nullopt;  // an unsupported configuration: use the reference kernel
  }
}

namespace {

// A dot in oneDNN's terms: C[batch, m, n] = A[batch, m, k] · B[batch, k, n],
// with A and B each stored transposed or not.
struct DotForm {
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool ta = false, tb = false;  // A stored [k, m]; B stored [n, k]
};

std::optional<DotForm> DotFormOf(const hlo::Instruction& in) {
  if (in.opcode() != hlo::Opcode::kDot || in.shape().element_type != hlo::F32) return std::nullopt;
  const auto& d = in.dot_dnums;
  const hlo::Shape& as = in.operand(0)->shape();
  const hlo::Shape& bs = in.operand(1)->shape();
  int64_t nb = d.lhs_batch_dimensions.size();
  if (d.lhs_contracting_dimensions.size() != 1 || as.rank() != nb + 2 || bs.rank() != nb + 2) return std::nullopt;
  for (int64_t i = 0; i < nb; ++i)
    if (d.lhs_batch_dimensions[i] != i || d.rhs_batch_dimensions[i] != i) return std::nullopt;
  int64_t lc = d.lhs_contracting_dimensions[0], rc = d.rhs_contracting_dimensions[0];
  if (lc < nb || rc < nb) return std::nullopt;
  DotForm f;
  for (int64_t i = 0; i < nb; ++i) f.batch *= as.dims[i];
  f.ta = lc == nb;
  f.tb = rc == nb + 1;
  f.m = as.dims[f.ta ? nb + 1 : nb];
  f.k = as.dims[lc];
  f.n = bs.dims[f.tb ? nb : nb + 1];
  if (in.shape().ElementCount() == 0 || f.k == 0) return std::nullopt;
  return f;
}

}  // namespace

std::optional<int64_t> DnnlDotColumns(const hlo::Instruction& in) {
  auto f = DotFormOf(in);
  if (!f) return std::nullopt;
  return f->n;
}

namespace {

// An operand as oneDNN's [batch, rows, cols] with the strides of `view`
// (row-major when absent); nullopt when its batch dims do not nest.
std::optional<memory::desc> OperandDesc(const hlo::Shape& shape, const std::optional<StridedView>& view, int64_t nb,
                                        int64_t row_dim, int64_t col_dim) {
  StridedView v = view ? *view : StridedView::RowMajor(shape.dims);
  int64_t batch = 1, rows = shape.dims[row_dim], cols = shape.dims[col_dim];
  for (int64_t i = 0; i < nb; ++i) batch *= shape.dims[i];
  for (int64_t i = 0; i + 1 < nb; ++i)
    if (v.strides[i] != v.strides[i + 1] * shape.dims[i + 1]) return std::nullopt;
  int64_t batch_stride = nb > 0 ? v.strides[nb - 1] : rows * cols;
  return memory::desc({batch, rows, cols}, memory::data_type::f32,
                      {batch_stride, v.strides[row_dim], v.strides[col_dim]});
}

}  // namespace

bool DnnlDotViewable(const hlo::Instruction& dot, const StridedView& view) {
  if (dot.dot_dnums.lhs_batch_dimensions.size() > 1) return false;
  size_t r = view.dims.size();
  if (r < 2 || view.strides.size() != r) return false;
  for (int64_t d : view.dims)
    if (d <= 0) return false;
  for (int64_t s : view.strides)
    if (s <= 0) return false;
  return view.strides[r - 1] == 1 || view.strides[r - 2] == 1;
}

std::optional<Thunk> MakeDnnlDotThunk(const hlo::Instruction& in, const ThunkIo& io, const hlo::Literal* constant_rhs,
                                      const Epilogue& epilogue, const DotViews& views,
                                      std::vector<std::shared_ptr<void>>* keep_alive) {
  auto form = DotFormOf(in);
  if (!form) return std::nullopt;
  auto [batch, m, k, n, ta, tb] = *form;
  int64_t nb = in.dot_dnums.lhs_batch_dimensions.size();
  auto a_desc = OperandDesc(in.operand(0)->shape(), views.lhs, nb, ta ? nb + 1 : nb, ta ? nb : nb + 1);
  auto b_desc = OperandDesc(in.operand(1)->shape(), views.rhs, nb, tb ? nb + 1 : nb, tb ? nb : nb + 1);
  if (!a_desc || !b_desc) return std::nullopt;
  if (views.rhs) constant_rhs = nullptr;  // packing reads the constant row-major
  // Element offsets of the views into their buffers, in bytes.
  size_t a_off = views.lhs ? views.lhs->offset * sizeof(float) : 0;
  size_t b_off = views.rhs ? views.rhs->offset * sizeof(float) : 0;
  try {
    auto st = std::make_shared<DotState>();
    st->a = *a_desc;
    st->b = *b_desc;
    st->c = memory::desc({batch, m, n}, memory::data_type::f32, memory::dims{m * n, n, 1});
    // Constant weights are packed once into oneDNN's preferred layout.
    memory::desc b_any({batch, k, n}, memory::data_type::f32, Tag::any);
    const memory::desc& b_md = constant_rhs ? b_any : st->b;
    st->has_bias = epilogue.bias != nullptr;
    st->bias = memory::desc({1, 1, n}, memory::data_type::f32, memory::dims{n, n, 1});
    auto desc =
        st->has_bias ? dnnl::matmul::desc(st->a, b_md, st->bias, st->c) : dnnl::matmul::desc(st->a, b_md, st->c);
    dnnl::matmul::primitive_desc pd(desc, EpilogueAttr(epilogue), Engine());
    st->scratchpad = pd.scratchpad_desc();
    if (constant_rhs) st->packed = PackedWeights::Get().Pack(st->b, pd.weights_desc(), *constant_rhs);
    st->matmul.emplace(dnnl::matmul(pd), ProductArgs(st->a, st->b, st->packed, st->has_bias ? &st->bias : nullptr,
                                                     st->c, st->scratchpad));
    keep_alive->push_back(st);
    BufferRef a = io.inputs[0], b = io.inputs[1], c = io.outputs[0];
    BufferRef bias = st->has_bias ? io.inputs.at(2) : BufferRef{};
    bool has_residual = epilogue.residual != nullptr;
    BufferRef residual = has_residual ? io.inputs.at(st->has_bias ? 3 : 2) : BufferRef{};
    Thunk t;
    t.name = in.name();
    t.scratch_bytes = st->scratchpad.get_size();
    bool swish_after = SwishAfter(epilogue);
    t.run = [st, a, b, c, bias, residual, has_residual, a_off, b_off, swish_after](Frame& f) -> absl::Status {
      if (has_residual) PrefillResidual(f, residual, c, st->c.get_size());
      RETURN_IF_ERROR(RunProduct(*st->matmul, f, static_cast<char*>(f.Ptr(a)) + a_off,
                                 static_cast<char*>(f.Ptr(b)) + b_off, st->has_bias ? f.Ptr(bias) : nullptr, f.Ptr(c)));
      if (swish_after) SwishInPlace(f.Ptr(c), st->c.get_size());
      return absl::OkStatus();
    };
    return t;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

}  // namespace xonnx::cpu
