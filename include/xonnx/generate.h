// Text generation with a decoder language model: the prompt in one call
// (prefill), then one call per new token (decode), each feeding the model
// its key/value cache, with the next token chosen by xonnx/sampling.h.
//
// The model's style is read from its inputs and ops. Supported: Hugging
// Face / Optimum exports (input_ids, attention_mask, optional position_ids,
// past_key_values.N.key / .value in; logits and present.N.key / .value
// out), with plain attention ops or ONNX's Attention (opset 23), and
// onnxruntime-genai's (com.microsoft GroupQueryAttention); weights in
// float or MatMulNBits. The cache starts with room for the prompt and 64
// new tokens and doubles, up to what max_new_tokens needs, when a token
// needs more; between two widenings the decode steps have the same shapes
// and compile once. Slots not yet written are masked out by the attention
// mask. Sequences of different lengths share a batch.
#ifndef XONNX_GENERATE_H_
#define XONNX_GENERATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xonnx/export.h"
#include "xonnx/options.h"
#include "xonnx/sampling.h"
#include "xonnx/status.h"

namespace xonnx {

class Session;

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  SamplingOptions sampling;
  // A sequence ends with the first of these it generates (kept in its
  // output); generation ends when every sequence has.
  std::vector<int64_t> stop_tokens;
};

// Called with each new token as it is chosen: the sequence's index in the
// batch and the token. Returning false stops the generation after this
// step (the tokens so far are returned).
using TokenCallback = std::function<bool(size_t sequence, int64_t token)>;

// Where a generation keeps the key/value cache between its calls.
enum class KvCachePlacement {
  // On the device, unless the plugin is xonnx's CPU plugin and the model's
  // presents are Concat(past, new): that plugin reads host memory in
  // place, so the host cache is already where it computes, and only the
  // new slots come back to be written into it. (GroupQueryAttention
  // returns the whole cache, which stays in the plugin's memory.)
  kAuto,
  // In host memory: each call's new keys and values are copied back and
  // written into it, and the whole cache goes with the next call (read in
  // place by xonnx's CPU plugin, uploaded by others).
  kHost,
  // On the device, allocated once for the prompt and the new tokens and
  // updated in place by the program itself (its buffers donated to the
  // next call's results): only tokens go up and logits come back. For
  // plain attention with present = Concat(past, new), and for
  // GroupQueryAttention; a session split into graph stages, with batch
  // buckets or over several devices cannot.
  kDevice,
};

// "auto", "host" or "device", as the command line, the C API and Python
// name the placements; ParseKvCachePlacement is false for other text.
XONNX_API const char* KvCachePlacementName(KvCachePlacement placement);
XONNX_API bool ParseKvCachePlacement(const std::string& text, KvCachePlacement* placement);

class XONNX_API Generator {
 public:
  // Opens a decoder model; fails at once, naming what it lacks, when its
  // inputs and outputs are not a style this runtime knows (or, with
  // kDevice, when its cache cannot stay on the device).
  static StatusOr<std::unique_ptr<Generator>> Open(const std::string& model_path, const SessionOptions& options = {},
                                                   KvCachePlacement cache = KvCachePlacement::kAuto);
  ~Generator();

  // "hf": the model's style, as detected.
  const std::string& style() const;
  int64_t layers() const;
  // Where the cache is kept: kHost or kDevice (kAuto resolved).
  KvCachePlacement cache_placement() const;

  // The new tokens of each prompt (each non-empty; ids in the vocabulary).
  StatusOr<std::vector<std::vector<int64_t>>> Generate(const std::vector<std::vector<int64_t>>& prompts,
                                                       const GenerateOptions& options,
                                                       const TokenCallback& on_token = nullptr);

 private:
  struct Impl;
  explicit Generator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xonnx

#endif  // XONNX_GENERATE_H_
