// The generator's internals, shared by its loop (generator.cc) and the
// calls that feed each cache policy (cache_steps.cc).
#ifndef XONNX_GENERATE_GENERATOR_IMPL_H_
#define XONNX_GENERATE_GENERATOR_IMPL_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "generate/decoder_style.h"
#include "runtime/model_runner.h"
#include "xonnx/generate.h"
#include "xonnx/session.h"

namespace xonnx {

// How the model keeps its key/value cache, and so how the runtime feeds it.
enum class CachePolicy {
  // Plain attention ops (or ONNX's Attention): present = Concat(past, new).
  // The whole cache of fixed capacity is fed, unwritten slots masked; a
  // batch's prompts are padded on the left.
  kConcatenated,
  // com.microsoft's GroupQueryAttention: a sequence's new keys go at its
  // length (seqlens_k, from the mask's sum) in a present as long as the
  // mask (total_sequence_length). A prompt is fed with an empty past and
  // padded on the right; a token is fed with the whole cache and a mask of
  // the capacity's width whose first length + 1 entries are ones.
  kWrittenAtLength,
};

// An index input (ids, mask, positions) in the model's type, int64 or
// int32, from int64 values (viewed when they already are the type).
Tensor IndexTensor(DataType dtype, std::vector<int64_t> dims, const std::vector<int64_t>& values);

struct Generator::Impl {
  std::string path;
  std::unique_ptr<Session> session;
  DecoderStyle style;
  SessionOptions options;
  CachePolicy policy = CachePolicy::kConcatenated;
  // Whether the model takes an empty past (a prompt's first call then feeds
  // none); Probe() finds out, and the vocabulary's size.
  bool empty_past_ok = true;
  int64_t vocab = 0;
  // The model returns each call's new keys and values under the present
  // names, not the whole cache (PresentForm::kNewSlots).
  bool new_slots_only = false;
  // The cache stays on the device between calls (KvCachePlacement::kDevice):
  // calls go to the session's runner, presents are kept there and fed
  // back as the next call's past. With kConcatenated the model writes its
  // new slots into the past itself (PresentForm::kWrittenInPlace).
  bool device_cache = false;
  ModelRunner* runner = nullptr;

  // One generation's state: the batch's cache in host memory, one buffer
  // per past input, [batch, heads, capacity, head_dim] each.
  struct Run {
    int64_t batch = 0, capacity = 0, length = 0;  // slots written so far (the longest sequence's, at length)
    // Per past input, in style.past order. Tensors' own bytes are 64-byte
    // aligned, which xonnx's CPU plugin needs to read them in place (it
    // copied a std::vector's whole cache into fresh pages every step).
    std::vector<Tensor> cache;
    std::vector<std::vector<uint8_t>> valid;  // [batch][capacity]: the slot holds a real token
    std::vector<int64_t> positions;           // per sequence: real tokens so far
    // With the cache on the device: per past input, its buffer there once
    // a call has left it (until then the host cache, zeros or the prompt's,
    // is uploaded).
    std::vector<std::unique_ptr<pjrt::Buffer>> resident;
  };

  Run NewRun(int64_t batch, int64_t capacity) const;
  // The slots the cache must have for the next one-token call.
  int64_t SlotsForNextToken(const Run& run) const;
  // Moves the cache to `capacity` slots, more than it has: each
  // sequence's and head's slots at the start of its own, as they were,
  // the new ones zeros and not valid. A cache on the device is brought
  // back to the host first; the next call uploads the wider one.
  Status Grow(Run& run, int64_t capacity) const;
  Status Probe();
  // Keeps the cache on the device (device_cache, the runner's aliases), or
  // says why it cannot; `rewritten` when the presents write in place.
  Status PlaceCacheOnDevice(bool rewritten);
  // Runs the model on `in`. With the cache on the device, the past inputs
  // are the run's resident buffers where it has them, and with `keep` the
  // presents (each the whole cache) stay there as the next call's past.
  StatusOr<std::vector<Tensor>> Call(Run& run, const std::map<std::string, Tensor>& in, bool keep);
  // One call: `tokens` [batch][s], `mask` [batch][s] (0: padding, on the
  // left), added after each sequence's tokens so far; `last_logits`
  // receives each sequence's logits after its last real token.
  Status Step(Run& run, const std::vector<std::vector<int64_t>>& tokens, const std::vector<std::vector<uint8_t>>& mask,
              std::vector<std::vector<float>>& last_logits);
  Status StepConcatenated(Run& run, const std::vector<std::vector<int64_t>>& tokens,
                          const std::vector<std::vector<uint8_t>>& mask, std::vector<std::vector<float>>& last_logits);
  Status StepAtLength(Run& run, const std::vector<std::vector<int64_t>>& tokens,
                      const std::vector<std::vector<uint8_t>>& mask, std::vector<std::vector<float>>& last_logits);
  // OK when present output k is [batch, heads, length, head_dim] of the
  // cache's type.
  Status CheckPresent(const Tensor& present, size_t k, int64_t length, int64_t batch) const;
  // The logits of row `row` of a [batch, s, vocab] output, as floats.
  Status LastLogits(const Tensor& logits, int64_t batch, int64_t s, const std::vector<int64_t>& row,
                    std::vector<std::vector<float>>& last_logits) const;
};

}  // namespace xonnx

#endif  // XONNX_GENERATE_GENERATOR_IMPL_H_
