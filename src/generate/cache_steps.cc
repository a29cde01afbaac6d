// The calls that feed a decoder its key/value cache, one per cache policy
// (generator_impl.h), and the reading of their logits.
#include <algorithm>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generate/generator_impl.h"
#include "generate/new_slots.h"
#include "runtime/dtype.h"
#include "runtime/public_status.h"
#include "runtime/session_impl.h"

namespace xonnx {

// An index input (ids, mask, positions) in the model's type, int64 or
// int32, from int64 values (viewed when they already are the type).
Tensor IndexTensor(DataType dtype, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  if (dtype == DataType::kInt64) return Tensor::View(dtype, std::move(dims), values.data());
  std::vector<int32_t> narrow(values.begin(), values.end());
  return Tensor::FromVector(DataType::kInt32, std::move(dims), narrow);
}

Status Generator::Impl::Step(Run& run, const std::vector<std::vector<int64_t>>& tokens,
                             const std::vector<std::vector<uint8_t>>& mask,
                             std::vector<std::vector<float>>& last_logits) {
  return policy == CachePolicy::kWrittenAtLength ? StepAtLength(run, tokens, mask, last_logits)
                                                 : StepConcatenated(run, tokens, mask, last_logits);
}

StatusOr<std::vector<Tensor>> Generator::Impl::Call(Run& run, const std::map<std::string, Tensor>& in, bool keep) {
  if (!device_cache) return session->Run(in);
  ModelRunner::DeviceIo io;
  for (size_t k = 0; k < style.past.size(); ++k) {
    if (k < run.resident.size() && run.resident[k]) io.inputs[style.past[k].name] = std::move(run.resident[k]);
    if (keep) io.keep.insert(style.present[k]);
  }
  run.resident.clear();
  // As Session::Run would: the session's deadline and closing bound the
  // call, and an exception comes out as a status.
  Session::Impl& m = *session->impl_;
  const CallBounds bounds(RunOptions{}, m.options, m.closing);
  StatusOr<std::vector<Tensor>> out =
      PublicCall(path, [&] { return runner->RunExact(in, 0, nullptr, nullptr, &bounds, &io); });
  if (!out.ok()) return out.status();
  if (!keep) return out;
  // Each present becomes the next call's past: the whole cache, as fed.
  const std::vector<int64_t> want = {run.batch, style.heads, run.capacity, style.head_dim};
  absl::StatusOr<PJRT_Buffer_Type> cache_type = ToPjrt(style.cache_dtype);
  for (size_t k = 0; k < style.past.size(); ++k) {
    std::unique_ptr<pjrt::Buffer>& b = io.kept[style.present[k]];
    absl::StatusOr<std::vector<int64_t>> dims = b ? b->Dimensions() : absl::InternalError("no buffer");
    absl::StatusOr<PJRT_Buffer_Type> type = b ? b->ElementType() : absl::InternalError("no buffer");
    if (!dims.ok() || *dims != want || !type.ok() || !cache_type.ok() || *type != *cache_type)
      return Status(
          StatusCode::kInternal,
          absl::StrCat(path, ": output ", style.present[k], " is not the whole cache [", absl::StrJoin(want, ","),
                       "] of ", DataTypeName(style.cache_dtype), " that the next call takes as its past"));
    run.resident.push_back(std::move(b));
  }
  return *std::move(out);
}

int64_t Generator::Impl::SlotsForNextToken(const Run& run) const {
  if (policy == CachePolicy::kConcatenated) return run.length + 1;
  int64_t most = 0;  // kWrittenAtLength: each sequence's token at its own length
  for (int64_t p : run.positions) most = std::max(most, p);
  return most + 1;
}

Status Generator::Impl::Grow(Run& run, int64_t capacity) const {
  for (size_t k = 0; k < run.resident.size(); ++k) {
    if (!run.resident[k]) continue;
    absl::Status copied = run.resident[k]->ToHost(run.cache[k].data(), run.cache[k].byte_size());
    if (!copied.ok())
      return Status(StatusCode::kInternal,
                    absl::StrCat(path, ": bringing the key/value cache back to widen it: ", copied.message()));
  }
  run.resident.clear();
  const size_t row = static_cast<size_t>(style.head_dim * DataTypeSize(style.cache_dtype));
  const size_t had = static_cast<size_t>(run.capacity) * row, has = static_cast<size_t>(capacity) * row;
  for (Tensor& t : run.cache) {
    // Zeros past the old slots: unwritten slots are masked, and must never
    // bring a NaN of uninitialized memory into a product.
    Tensor wider(style.cache_dtype, {run.batch, style.heads, capacity, style.head_dim});
    const char* from = t.data_as<char>();
    char* to = wider.data_as<char>();
    for (int64_t i = 0; i < run.batch * style.heads; ++i) std::memcpy(to + i * has, from + i * had, had);
    t = std::move(wider);
  }
  for (std::vector<uint8_t>& v : run.valid) v.resize(capacity, 0);
  run.capacity = capacity;
  return OkStatus();
}

Status Generator::Impl::CheckPresent(const Tensor& present, size_t k, int64_t length, int64_t batch) const {
  std::vector<int64_t> want = {batch, style.heads, length, style.head_dim};
  if (present.dims() == want && present.dtype() == style.cache_dtype) return OkStatus();
  return Status(StatusCode::kInternal, absl::StrCat(path, ": output ", style.present[k], " is ", present.ShapeString(),
                                                    ", the cache needs [", absl::StrJoin(want, ","), "]"));
}

Status Generator::Impl::LastLogits(const Tensor& logits, int64_t b, int64_t s, const std::vector<int64_t>& row,
                                   std::vector<std::vector<float>>& last_logits) const {
  if (logits.dims().size() != 3 || logits.dims()[0] != b || logits.dims()[1] != s)
    return Status(StatusCode::kInternal,
                  absl::StrCat(path, ": logits are ", logits.ShapeString(), ", expected [", b, ",", s, ",vocab]"));
  const int64_t vocab = logits.dims()[2];
  // Called once a step: the rows keep their memory from the step before.
  last_logits.resize(b);
  for (int64_t i = 0; i < b; ++i) {
    std::vector<float>& out = last_logits[i];
    out.resize(vocab);
    const int64_t from = (i * s + row[i]) * vocab;
    if (logits.dtype() == DataType::kFloat32) {
      std::memcpy(out.data(), logits.data_as<float>() + from, vocab * sizeof(float));
      continue;
    }
    for (int64_t v = 0; v < vocab; ++v) out[v] = static_cast<float>(logits.GetAsDouble(from + v));
  }
  return OkStatus();
}

// kConcatenated: `tokens` go to the next s slots of every sequence. The
// cache's slots so far are fed as the past, masked by `valid`; the call's
// new keys and values are written to the next s slots.
Status Generator::Impl::StepConcatenated(Run& run, const std::vector<std::vector<int64_t>>& tokens,
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
    in[style.past[k].name] =
        Tensor::View(style.cache_dtype, {b, style.heads, f, style.head_dim}, run.cache[k].data_as<char>());
  if (device_cache) {  // the model writes the new slots at the cache's length itself
    in[kWriteIndexInput] = Tensor::FromVector(DataType::kInt64, {b}, std::vector<int64_t>(b, run.length));
    std::vector<uint8_t> fresh(b * s);
    for (int64_t i = 0; i < b; ++i)
      for (int64_t j = 0; j < s; ++j) fresh[i * s + j] = mask[i][j];
    in[kNewSlotsInput] = Tensor::FromVector(DataType::kBool, {b, 1, s, 1}, fresh);
  }
  StatusOr<std::vector<Tensor>> out = Call(run, in, device_cache);
  if (!out.ok()) return out.status();
  // The new keys and values are the last s of the present's f + s slots,
  // or the whole present when the model returns only them.
  const size_t element = static_cast<size_t>(DataTypeSize(style.cache_dtype));
  const size_t row = static_cast<size_t>(style.head_dim) * element;
  const int64_t skip = new_slots_only ? 0 : f;
  for (size_t k = 0; k < style.past.size() && !device_cache; ++k) {
    const Tensor& present = (*out)[style.present_index[k]];
    Status shaped = CheckPresent(present, k, skip + s, b);
    if (!shaped.ok()) return shaped;
    const char* src = static_cast<const char*>(present.data());
    char* dst = run.cache[k].data_as<char>();
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
  return LastLogits((*out)[style.logits_index], b, s, std::vector<int64_t>(b, s - 1), last_logits);
}

// kWrittenAtLength: each sequence's real tokens go right after its own
// tokens so far (sequences of a batch have their own lengths, and no gaps).
// A prompt (an empty cache) is fed with an empty past, its tokens moved to
// the left of the call and padded on the right; the present holds them at
// [0, s). A token is fed with the whole cache as the past and a mask of the
// capacity's width, ones over the sequence's tokens and the new one: the
// model puts the new keys and values at the sequence's length.
Status Generator::Impl::StepAtLength(Run& run, const std::vector<std::vector<int64_t>>& tokens,
                                     const std::vector<std::vector<uint8_t>>& mask,
                                     std::vector<std::vector<float>>& last_logits) {
  const int64_t b = run.batch, c = run.capacity;
  const bool prompt = run.length == 0;
  // Each sequence's real tokens, in order.
  std::vector<std::vector<int64_t>> real(b);
  for (int64_t i = 0; i < b; ++i)
    for (size_t j = 0; j < tokens[i].size(); ++j)
      if (mask[i][j] || !prompt) real[i].push_back(tokens[i][j]);
  const int64_t s = prompt ? static_cast<int64_t>(tokens[0].size()) : 1;
  for (int64_t i = 0; i < b; ++i)
    if ((!prompt && real[i].size() != 1) || run.positions[i] + static_cast<int64_t>(real[i].size()) > c)
      return Status(StatusCode::kInternal, "the cache is full, or a later call has more than one token");
  const int64_t width = prompt ? s : c;  // the mask's, and so the present's, length
  std::vector<int64_t> ids(b * s, 0), attention(b * width, 0), positions(b * s, 0);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t had = run.positions[i], n = static_cast<int64_t>(real[i].size());
    for (int64_t j = 0; j < n; ++j) {
      ids[i * s + j] = real[i][j];
      positions[i * s + j] = had + j;
    }
    for (int64_t j = 0; j < had + n; ++j) attention[i * width + j] = 1;
  }
  std::map<std::string, Tensor> in;
  in[style.input_ids] = IndexTensor(style.ids_dtype, {b, s}, ids);
  in[style.attention_mask] = IndexTensor(style.mask_dtype, {b, width}, attention);
  if (!style.position_ids.empty()) in[style.position_ids] = IndexTensor(style.positions_dtype, {b, s}, positions);
  const int64_t f = prompt ? 0 : c;
  for (size_t k = 0; k < style.past.size(); ++k)
    in[style.past[k].name] =
        Tensor::View(style.cache_dtype, {b, style.heads, f, style.head_dim}, run.cache[k].data_as<char>());
  // A token's call returns the whole cache, which stays on the device as
  // it is; a prompt's returns its own slots, written into the host cache
  // (uploaded with the first token).
  const bool keep = device_cache && !prompt;
  StatusOr<std::vector<Tensor>> out = Call(run, in, keep);
  if (!out.ok()) return out.status();
  const size_t row = static_cast<size_t>(style.head_dim) * DataTypeSize(style.cache_dtype);
  for (size_t k = 0; k < style.past.size() && !keep; ++k) {
    const Tensor& present = (*out)[style.present_index[k]];
    Status shaped = CheckPresent(present, k, width, b);
    if (!shaped.ok()) return shaped;
    const char* src = static_cast<const char*>(present.data());
    char* dst = run.cache[k].data_as<char>();
    for (int64_t i = 0; i < b; ++i)
      for (int64_t h = 0; h < style.heads; ++h)
        for (int64_t j = run.positions[i]; j < run.positions[i] + static_cast<int64_t>(real[i].size()); ++j)
          std::memcpy(dst + ((i * style.heads + h) * c + j) * row, src + ((i * style.heads + h) * width + j) * row,
                      row);
  }
  std::vector<int64_t> last(b);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t n = static_cast<int64_t>(real[i].size());
    last[i] = prompt ? std::max<int64_t>(n - 1, 0) : 0;
    for (int64_t j = 0; j < n; ++j) run.valid[i][run.positions[i] + j] = 1;
    run.positions[i] += n;
    run.length = std::max(run.length, run.positions[i]);
  }
  return LastLogits((*out)[style.logits_index], b, s, last, last_logits);
}

}  // namespace xonnx
