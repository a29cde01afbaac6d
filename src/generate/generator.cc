#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generate/generator_impl.h"
#include "generate/new_slots.h"
#include "runtime/clients.h"
#include "runtime/public_status.h"
#include "runtime/session_impl.h"
#include "xonnx/generate.h"
#include "xonnx/session.h"

namespace xonnx {
namespace {

Status GenerateError(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

// How far apart two runs' logits are, relative to their size: infinity
// when either has a value that is not finite.
float Distance(const std::vector<float>& x, const std::vector<float>& y) {
  float scale = 0, worst = 0;
  for (size_t v = 0; v < x.size(); ++v) {
    if (!std::isfinite(x[v]) || !std::isfinite(y[v])) return std::numeric_limits<float>::infinity();
    scale = std::max(scale, std::fabs(x[v]));
    worst = std::max(worst, std::fabs(x[v] - y[v]));
  }
  return worst / (scale + 1e-6f);
}

// Cache slots are allocated in steps of this many, so that nearby lengths
// share compiled programs.
constexpr int64_t kCapacityStep = 64;
// The most slots a cache may have (prompt and new tokens).
constexpr int64_t kMaxSlots = int64_t{1} << 22;

}  // namespace

Generator::Generator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generator::~Generator() = default;

StatusOr<std::unique_ptr<Generator>> Generator::Open(const std::string& model_path, const SessionOptions& options,
                                                     KvCachePlacement cache) {
  auto impl = std::make_unique<Impl>();
  impl->path = model_path;
  impl->options = options;
  // kAuto: on the device unless the plugin is xonnx's CPU plugin (the
  // client is the one the session will share), which reads a host cache
  // in place and is given only the new slots to write into it.
  bool device = cache == KvCachePlacement::kDevice;
  if (cache == KvCachePlacement::kAuto && options.plugin != SessionOptions::kNoPlugin) {
    absl::StatusOr<std::shared_ptr<pjrt::Client>> client = GetClient(options);
    device = client.ok() && TraitsOf(*(*client)->plugin()).xla;
  }
  // Opened rewritten when each present is Concat(past, new): the model
  // then returns only the new slots, or with the cache on the device the
  // past with them written in (RewritePresents).
  const PresentForm form = device ? PresentForm::kWrittenInPlace : PresentForm::kNewSlots;
  bool rewritten = false;
  StatusOr<std::unique_ptr<Session::Impl>> opened = PublicCall(model_path, [&] {
    return Session::Impl::OpenRewritten(
        model_path, options, [form](onnx::ModelProto* m) { return RewritePresents(m, form); }, RewriteTag(form),
        &rewritten);
  });
  if (opened.ok()) {
    impl->session.reset(new Session(std::move(*opened)));
  } else if (rewritten) {  // a rewritten model the session refuses is opened as it is
    rewritten = false;
    StatusOr<std::unique_ptr<Session>> plain = Session::Open(model_path, options);
    if (!plain.ok()) return plain.status();
    impl->session = std::move(*plain);
  } else {
    return opened.status();
  }
  StatusOr<DecoderStyle> style = DetectDecoderStyle(impl->session->inputs(), impl->session->outputs());
  if (!style.ok()) return Status(style.status().code(), absl::StrCat(model_path, ": ", style.status().message()));
  impl->style = std::move(*style);
  // com.microsoft's GroupQueryAttention keeps its cache its own way (a
  // sequence's new keys at its length, no gaps): fed this way, and checked
  // by the probe below like the rest. Other domains' fused attention ops
  // are refused: fed either way without knowing theirs, they could give
  // wrong tokens. ONNX's own Attention (opset 23) concatenates its past and
  // new keys as the plain ops do.
  for (const auto& [op, count] : impl->session->Info().op_counts) {
    if (op == "com.microsoft.GroupQueryAttention") {
      impl->policy = CachePolicy::kWrittenAtLength;
    } else if (op.find('.') != std::string::npos && op.find("Attention") != std::string::npos) {
      return Status(StatusCode::kUnimplemented,
                    absl::StrCat(model_path, ": the model uses ", op, " (", count,
                                 " nodes), whose key/value cache this runtime does not drive; supported: attention "
                                 "of plain ops (MatMul, Softmax) or ONNX's Attention with a concatenated cache, and "
                                 "com.microsoft's GroupQueryAttention"));
    }
  }
  impl->new_slots_only = rewritten && !device;
  if (device) {
    Status placed = impl->PlaceCacheOnDevice(rewritten);
    if (!placed.ok() && cache == KvCachePlacement::kDevice)
      return Status(placed.code(), absl::StrCat(model_path, ": ", placed.message()));
    // kAuto: kept in host memory, with the model as the host needs it.
    if (!placed.ok()) return Open(model_path, options, KvCachePlacement::kHost);
  } else if (cache == KvCachePlacement::kAuto && impl->policy == CachePolicy::kWrittenAtLength) {
    // GroupQueryAttention returns the whole cache from every token's call:
    // left in the plugin's memory, even xonnx's CPU plugin's, it is not
    // copied out to the host cache each step. Where it cannot stay, the
    // host cache serves.
    (void)impl->PlaceCacheOnDevice(false);
  }
  Status probed = impl->Probe();
  // kAuto: a model the device path fails on (a plugin that refuses its
  // program, say) may still run with the host cache.
  if (!probed.ok() && impl->device_cache && cache == KvCachePlacement::kAuto)
    return Open(model_path, options, KvCachePlacement::kHost);
  if (!probed.ok()) return Status(probed.code(), absl::StrCat(model_path, ": ", probed.message()));
  return std::unique_ptr<Generator>(new Generator(std::move(impl)));
}

Status Generator::Impl::PlaceCacheOnDevice(bool rewritten) {
  Session::Impl& m = *session->impl_;
  const char* why = nullptr;
  if (policy == CachePolicy::kConcatenated && !rewritten)
    why = "its presents are not each Concat(past_key_values.N.*, new keys or values) along the sequence";
  else if (m.stages.split())
    why = "it runs in graph stages (parts of it on the host)";
  else if (!m.buckets.empty())
    why = "the session has batch buckets";
  else if (m.num_devices() != 1)
    why = "the session spans several devices";
  if (why)
    return Status(StatusCode::kUnimplemented, absl::StrCat("the key/value cache cannot stay on the device: ", why));
  device_cache = true;
  runner = m.runner.get();
  // Every call feeds the whole cache (the program writes into it), and
  // each present may take its past's buffer.
  empty_past_ok = policy == CachePolicy::kWrittenAtLength;
  std::map<std::string, std::string> aliases;
  for (size_t k = 0; k < style.past.size(); ++k) aliases[style.past[k].name] = style.present[k];
  runner->set_aliases(std::move(aliases));
  return OkStatus();
}

Generator::Impl::Run Generator::Impl::NewRun(int64_t batch, int64_t capacity) const {
  Run run;
  run.batch = batch;
  run.capacity = capacity;
  for (size_t k = 0; k < style.past.size(); ++k)
    run.cache.emplace_back(style.cache_dtype, std::vector<int64_t>{batch, style.heads, capacity, style.head_dim});
  run.valid.assign(batch, std::vector<uint8_t>(capacity, 0));
  run.positions.assign(batch, 0);
  return run;
}

// The runtime feeds the whole cache, its unwritten slots masked, adds one
// token at a time, and pads a batch's prompts on the left (for
// GroupQueryAttention: sequences at their own lengths, prompts padded on
// the right; see CachePolicy). A model that does not honour the mask over
// its past or over padding, or that counts positions from the past's
// length (its rotary or learned positions would then be wrong after the
// prompt), would compute something else than it was trained to, and give
// wrong tokens without an error. So these must give the same last logits,
// or the model is refused: three tokens in one call; two and then one; and
// the same three after a padding token in a batch of two, then one more
// token.
Status Generator::Impl::Probe() {
  std::vector<std::vector<float>> whole, stepped, padded, stepped_on, padded_on;
  auto run = [&]() {
    Run a = NewRun(1, 3), b = NewRun(1, 6), c = NewRun(2, 7);
    Status s = Step(a, {{0, 1, 2}}, {{1, 1, 1}}, whole);
    if (s.ok()) s = Step(b, {{0, 1}}, {{1, 1}}, stepped);
    if (s.ok()) s = Step(b, {{2}}, {{1}}, stepped);
    if (s.ok()) s = Step(b, {{3}}, {{1}}, stepped_on);
    if (s.ok()) s = Step(c, {{1, 0, 1, 2}, {0, 1, 2, 0}}, {{0, 1, 1, 1}, {1, 1, 1, 1}}, padded);
    if (s.ok()) s = Step(c, {{3}, {1}}, {{1}, {1}}, padded_on);
    return s;
  };
  Status s = run();
  if (!s.ok()) {  // an export that cannot concatenate an empty past: feed the masked cache from the start
    Status first = s;
    empty_past_ok = false;
    s = run();
    if (!s.ok()) return Status(s.code(), absl::StrCat(s.message(), " (with an empty past: ", first.message(), ")"));
  }
  // Rounding differs between the runs' shapes; 16-bit types round coarsely.
  // What the check looks for changes logits by a large part of their size.
  bool narrow =
      style.cache_dtype != DataType::kFloat32 || options.data_type != DataType::kFloat32 || options.allow_tf32;
  const float tolerance = narrow ? 3e-2f : 1e-4f;
  struct Pair {
    const char* what;
    const std::vector<float>& x;
    const std::vector<float>& y;
  } pairs[] = {{"three tokens at once and two then one", whole[0], stepped[0]},
               {"the same after a padding token in a batch", whole[0], padded[0]},
               {"a fourth token, with and without padding before", stepped_on[0], padded_on[0]}};
  for (const Pair& p : pairs) {
    float d = Distance(p.x, p.y);
    if (!(d <= tolerance))
      return Status(
          StatusCode::kUnimplemented,
          absl::StrCat("the model's logits depend on how its key/value cache is fed (", p.what,
                       ", with unwritten slots masked, differ by ", d,
                       " of their size): it does not honour attention_mask over the past or over padding, "
                       "it counts positions from the past's length, or it gives values that are not "
                       "finite; this runtime, which feeds a masked cache of fixed capacity, cannot drive it"));
  }
  vocab = static_cast<int64_t>(whole[0].size());
  return OkStatus();
}

const std::string& Generator::style() const { return impl_->style.name; }
const char* KvCachePlacementName(KvCachePlacement placement) {
  switch (placement) {
    case KvCachePlacement::kHost:
      return "host";
    case KvCachePlacement::kDevice:
      return "device";
    default:
      return "auto";
  }
}

bool ParseKvCachePlacement(const std::string& text, KvCachePlacement* placement) {
  for (KvCachePlacement p : {KvCachePlacement::kAuto, KvCachePlacement::kHost, KvCachePlacement::kDevice})
    if (text == KvCachePlacementName(p)) {
      *placement = p;
      return true;
    }
  return false;
}

KvCachePlacement Generator::cache_placement() const {
  return impl_->device_cache ? KvCachePlacement::kDevice : KvCachePlacement::kHost;
}
int64_t Generator::layers() const { return static_cast<int64_t>(impl_->style.past.size() / 2); }

StatusOr<std::vector<std::vector<int64_t>>> Generator::Generate(const std::vector<std::vector<int64_t>>& prompts,
                                                                const GenerateOptions& options,
                                                                const TokenCallback& on_token) {
  if (prompts.empty()) return GenerateError("no prompt to generate from");
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) return GenerateError(absl::StrCat("prompt ", i, " is empty"));
    if (prompts[i].size() > static_cast<size_t>(kMaxSlots))
      return GenerateError(absl::StrCat("prompt ", i, " has ", prompts[i].size(), " tokens, more than ", kMaxSlots));
    // An id outside the vocabulary is refused here: a Gather would wrap a
    // negative one round to the end without an error.
    for (int64_t id : prompts[i])
      if (id < 0 || id >= impl_->vocab)
        return GenerateError(
            absl::StrCat("prompt ", i, ": token ", id, " is outside the model's vocabulary of ", impl_->vocab));
  }
  if (options.max_new_tokens < 0 || options.max_new_tokens > kMaxSlots)
    return GenerateError(absl::StrCat("max_new_tokens ", options.max_new_tokens, " must be in [0, ", kMaxSlots, "]"));
  Status ok = CheckSamplingOptions(options.sampling);
  if (!ok.ok()) return ok;
  Impl& m = *impl_;
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const int64_t t = static_cast<int64_t>(longest);
  // The capacity holds the prompt and every new token but the last (whose
  // keys and values are never needed).
  auto whole_steps = [](int64_t slots) { return (slots + kCapacityStep - 1) / kCapacityStep * kCapacityStep; };
  const int64_t full = whole_steps(t + std::max<int64_t>(options.max_new_tokens - 1, 0));
  // The cache starts with room for the prompt and a step of new tokens, and
  // doubles (up to the full capacity) when a token needs more: each step
  // reads the whole cache, and a generation that a stop token ends long
  // before max_new_tokens would otherwise read, every step, a cache sized
  // for all of them.
  const int64_t start = std::min(full, whole_steps(t + kCapacityStep));
  Impl::Run run = m.NewRun(static_cast<int64_t>(prompts.size()), start);
  // The prompts, padded on the left to the longest.
  std::vector<std::vector<int64_t>> tokens(run.batch, std::vector<int64_t>(t, 0));
  std::vector<std::vector<uint8_t>> mask(run.batch, std::vector<uint8_t>(t, 0));
  for (int64_t i = 0; i < run.batch; ++i) {
    size_t pad = longest - prompts[i].size();
    for (size_t j = 0; j < prompts[i].size(); ++j) {
      tokens[i][pad + j] = prompts[i][j];
      mask[i][pad + j] = 1;
    }
  }
  // Each sequence's tokens so far, prompt first (the repetition penalty
  // reads them all; the new ones are returned).
  std::vector<std::vector<int64_t>> history(prompts);
  std::vector<TokenSampler> samplers;
  for (int64_t i = 0; i < run.batch; ++i) {
    SamplingOptions o = options.sampling;
    o.seed += static_cast<uint64_t>(i);  // each sequence draws on its own
    samplers.emplace_back(o);
  }
  std::set<int64_t> stops(options.stop_tokens.begin(), options.stop_tokens.end());
  std::vector<bool> done(run.batch, false);
  std::vector<std::vector<float>> logits;
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    // (Step 0 is the prompt's call, which the start capacity holds.)
    if (const int64_t needed = m.SlotsForNextToken(run); step > 0 && needed > run.capacity) {
      Status grown = m.Grow(run, std::min(full, std::max(whole_steps(needed), 2 * run.capacity)));
      if (!grown.ok()) return grown;
    }
    Status s = m.Step(run, tokens, mask, logits);
    if (!s.ok()) return s;
    bool go_on = false, stopped = false;
    for (int64_t i = 0; i < run.batch; ++i) {
      if (done[i]) continue;
      StatusOr<int64_t> next = samplers[i].Next(logits[i].data(), static_cast<int64_t>(logits[i].size()), history[i]);
      if (!next.ok())
        return Status(next.status().code(),
                      absl::StrCat(m.path, ": sequence ", i, ", new token ", step, ": ", next.status().message()));
      history[i].push_back(*next);
      if (on_token && !on_token(static_cast<size_t>(i), *next)) stopped = true;
      if (stops.count(*next)) done[i] = true;
      go_on = go_on || !done[i];
    }
    if (!go_on || stopped) break;
    // The next call: each sequence's last token (a finished one repeats
    // its own, masked, so that the batch keeps its shape).
    tokens.assign(run.batch, std::vector<int64_t>(1));
    mask.assign(run.batch, std::vector<uint8_t>(1));
    for (int64_t i = 0; i < run.batch; ++i) {
      tokens[i][0] = history[i].back();
      mask[i][0] = done[i] ? 0 : 1;
    }
  }
  std::vector<std::vector<int64_t>> generated(run.batch);
  for (int64_t i = 0; i < run.batch; ++i) generated[i].assign(history[i].begin() + prompts[i].size(), history[i].end());
  return generated;
}

}  // namespace xonnx
