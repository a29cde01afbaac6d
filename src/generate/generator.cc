#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generate/decoder_style.h"
#include "generate/new_slots.h"
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

// An index input (ids, mask, positions) in the model's type, int64 or
// int32, from int64 values (viewed when they already are the type).
Tensor IndexTensor(DataType dtype, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  if (dtype == DataType::kInt64) return Tensor::View(dtype, std::move(dims), values.data());
  std::vector<int32_t> narrow(values.begin(), values.end());
  return Tensor::FromVector(DataType::kInt32, std::move(dims), narrow);
}

// Cache slots are allocated in steps of this many, so that nearby lengths
// share compiled programs.
constexpr int64_t kCapacityStep = 64;
// The most slots a cache may have (prompt and new tokens).
constexpr int64_t kMaxSlots = int64_t{1} << 22;

}  // namespace

struct Generator::Impl {
  std::string path;
  std::unique_ptr<Session> session;
  DecoderStyle style;
  SessionOptions options;
  // Whether the model takes an empty past (a prompt's first call then feeds
  // none); Probe() finds out, and the vocabulary's size.
  bool empty_past_ok = true;
  int64_t vocab = 0;
  // The model returns each call's new keys and values under the present
  // names, not the whole cache (ReturnNewSlotsOnly).
  bool new_slots_only = false;

  // One generation's state: the batch's cache in host memory, one buffer
  // per past input, [batch, heads, capacity, head_dim] each.
  struct Run {
    int64_t batch = 0, capacity = 0, length = 0;  // slots written so far
    std::vector<std::vector<char>> cache;         // per past input, in style.past order
    std::vector<std::vector<uint8_t>> valid;      // [batch][capacity]: the slot holds a real token
    std::vector<int64_t> positions;               // per sequence: real tokens so far
  };

  Run NewRun(int64_t batch, int64_t capacity) const;
  Status Probe();
  Status Step(Run& run, const std::vector<std::vector<int64_t>>& tokens, const std::vector<std::vector<uint8_t>>& mask,
              std::vector<std::vector<float>>& last_logits);
};

Generator::Generator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generator::~Generator() = default;

StatusOr<std::unique_ptr<Generator>> Generator::Open(const std::string& model_path, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = model_path;
  impl->options = options;
  StatusOr<std::unique_ptr<Session>> session = Session::Open(model_path, options);
  if (!session.ok()) return session.status();
  impl->session = std::move(*session);
  StatusOr<DecoderStyle> style = DetectDecoderStyle(impl->session->inputs(), impl->session->outputs());
  if (!style.ok()) return Status(style.status().code(), absl::StrCat(model_path, ": ", style.status().message()));
  impl->style = std::move(*style);
  std::vector<std::string> past_names;
  for (const TensorSpec& t : impl->style.past) past_names.push_back(t.name);
  if (std::optional<std::string> bytes = ReturnNewSlotsOnly(model_path, past_names, impl->style.present)) {
    std::string dir = model_path.find('/') == std::string::npos ? "." : model_path.substr(0, model_path.rfind('/'));
    StatusOr<std::unique_ptr<Session>> rewritten =
        Session::OpenFromMemory(bytes->data(), bytes->size(), model_path, options, dir);
    if (rewritten.ok()) {
      impl->session = std::move(*rewritten);
      impl->new_slots_only = true;
    }
  }
  // Fused attention ops of other domains keep their caches their own way
  // (com.microsoft's GroupQueryAttention writes a token at its sequence's
  // length, not after the past): fed this runtime's masked cache they would
  // give wrong tokens, so they are refused. ONNX's own Attention (opset 23)
  // concatenates its past and new keys as the plain ops do, and the probe
  // below checks it like them.
  for (const auto& [op, count] : impl->session->Info().op_counts)
    if (op.find('.') != std::string::npos && op.find("Attention") != std::string::npos)
      return Status(StatusCode::kUnimplemented,
                    absl::StrCat(model_path, ": the model uses ", op, " (", count,
                                 " nodes), whose key/value cache "
                                 "this runtime does not drive yet; models whose attention is plain ops (MatMul, "
                                 "Softmax) or ONNX's Attention, with a concatenated cache, are supported"));
  Status probed = impl->Probe();
  if (!probed.ok()) return Status(probed.code(), absl::StrCat(model_path, ": ", probed.message()));
  return std::unique_ptr<Generator>(new Generator(std::move(impl)));
}

Generator::Impl::Run Generator::Impl::NewRun(int64_t batch, int64_t capacity) const {
  Run run;
  run.batch = batch;
  run.capacity = capacity;
  const size_t slot_bytes = static_cast<size_t>(style.head_dim) * DataTypeSize(style.cache_dtype);
  for (size_t k = 0; k < style.past.size(); ++k)
    run.cache.emplace_back(static_cast<size_t>(batch * style.heads * capacity) * slot_bytes, 0);
  run.valid.assign(batch, std::vector<uint8_t>(capacity, 0));
  run.positions.assign(batch, 0);
  return run;
}

// The runtime feeds the whole cache, its unwritten slots masked, adds one
// token at a time, and pads a batch's prompts on the left. A model that
// does not honour the mask over its past or over padding, or that counts
// positions from the past's length (its rotary or learned positions would
// then be wrong after the prompt), would compute something else than it was
// trained to, and give wrong tokens without an error. So, with masked slots
// between them, these must give the same last logits, or the model is
// refused: three tokens in one call; two and then one; and the same three
// after a padding token in a batch of two, then one more token.
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
int64_t Generator::layers() const { return static_cast<int64_t>(impl_->style.past.size() / 2); }

// One call: `tokens` [batch][s] at the next s slots, `mask` [batch][s] (0:
// padding). The cache's slots so far are fed as the past, masked by
// `valid`; the call's new keys and values are written to the next s slots.
Status Generator::Impl::Step(Run& run, const std::vector<std::vector<int64_t>>& tokens,
                             const std::vector<std::vector<uint8_t>>& mask,
                             std::vector<std::vector<float>>& last_logits) {
  const int64_t b = run.batch, s = static_cast<int64_t>(tokens[0].size()), c = run.capacity;
  if (run.length + s > c) return Status(StatusCode::kInternal, "the cache is full");
  // The past fed: the whole cache, or nothing while it is empty (a prompt
  // then attends to itself alone).
  const int64_t f = run.length == 0 && empty_past_ok ? 0 : c;
  std::vector<int64_t> ids(b * s), positions(b * s), attention(b * (f + s));
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < f; ++j) attention[i * (f + s) + j] = j < run.length ? run.valid[i][j] : 0;
    int64_t p = run.positions[i];
    for (int64_t j = 0; j < s; ++j) {
      ids[i * s + j] = tokens[i][j];
      attention[i * (f + s) + f + j] = mask[i][j];
      // Padding takes position 0, as Hugging Face's cumsum(mask) - 1 gives.
      positions[i * s + j] = mask[i][j] ? p++ : 0;
    }
  }
  std::map<std::string, Tensor> in;
  in[style.input_ids] = IndexTensor(style.ids_dtype, {b, s}, ids);
  in[style.attention_mask] = IndexTensor(style.mask_dtype, {b, f + s}, attention);
  if (!style.position_ids.empty()) in[style.position_ids] = IndexTensor(style.positions_dtype, {b, s}, positions);
  for (size_t k = 0; k < style.past.size(); ++k)
    in[style.past[k].name] = Tensor::View(style.cache_dtype, {b, style.heads, f, style.head_dim}, run.cache[k].data());
  StatusOr<std::vector<Tensor>> out = session->Run(in);
  if (!out.ok()) return out.status();
  // The new keys and values are the last s of the present's f + s slots,
  // or the whole present when the model returns only them.
  const size_t element = static_cast<size_t>(DataTypeSize(style.cache_dtype));
  const size_t row = static_cast<size_t>(style.head_dim) * element;
  const int64_t skip = new_slots_only ? 0 : f;
  for (size_t k = 0; k < style.past.size(); ++k) {
    const Tensor& present = (*out)[style.present_index[k]];
    std::vector<int64_t> want = {b, style.heads, skip + s, style.head_dim};
    if (present.dims() != want || present.dtype() != style.cache_dtype)
      return Status(StatusCode::kInternal,
                    absl::StrCat(path, ": output ", style.present[k], " is ", present.ShapeString(),
                                 ", the cache needs [", absl::StrJoin(want, ","), "]"));
    const char* src = static_cast<const char*>(present.data());
    char* dst = run.cache[k].data();
    for (int64_t i = 0; i < b; ++i)
      for (int64_t h = 0; h < style.heads; ++h)
        for (int64_t j = 0; j < s; ++j) {
          size_t from = ((static_cast<size_t>(i * style.heads + h) * (skip + s)) + skip + j) * row;
          size_t to = ((static_cast<size_t>(i * style.heads + h) * c) + run.length + j) * row;
          // A padding slot stays zero: it is masked, and whatever the model
          // computed there (even a NaN) must never reach a product.
          if (mask[i][j])
            std::memcpy(dst + to, src + from, row);
          else
            std::memset(dst + to, 0, row);
        }
  }
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < s; ++j) run.valid[i][run.length + j] = mask[i][j];
    for (int64_t j = 0; j < s; ++j) run.positions[i] += mask[i][j] ? 1 : 0;
  }
  run.length += s;
  const Tensor& logits = (*out)[style.logits_index];
  if (logits.dims().size() != 3 || logits.dims()[0] != b || logits.dims()[1] != s)
    return Status(StatusCode::kInternal,
                  absl::StrCat(path, ": logits are ", logits.ShapeString(), ", expected [", b, ",", s, ",vocab]"));
  const int64_t vocab = logits.dims()[2];
  last_logits.assign(b, std::vector<float>(vocab));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t v = 0; v < vocab; ++v)
      last_logits[i][v] = logits.dtype() == DataType::kFloat32
                              ? logits.data_as<float>()[(i * s + s - 1) * vocab + v]
                              : static_cast<float>(logits.GetAsDouble((i * s + s - 1) * vocab + v));
  return OkStatus();
}

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
  int64_t need = t + std::max<int64_t>(options.max_new_tokens - 1, 0);
  Impl::Run run =
      m.NewRun(static_cast<int64_t>(prompts.size()), (need + kCapacityStep - 1) / kCapacityStep * kCapacityStep);
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
