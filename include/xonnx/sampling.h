// Choosing a decoder's next token from its logits: greedy, or sampled with
// temperature, top-k and top-p (nucleus), after a repetition penalty, from
// a seeded generator so that a seed always gives the same tokens. The
// order of the steps is Hugging Face's: penalty, temperature, top-k,
// top-p, then a draw from what is left.
#ifndef XONNX_SAMPLING_H_
#define XONNX_SAMPLING_H_

#include <cstdint>
#include <random>
#include <vector>

#include "xonnx/export.h"
#include "xonnx/status.h"

namespace xonnx {

struct SamplingOptions {
  // The most likely token (the lowest id among equals); the other options
  // but the repetition penalty are then ignored.
  bool greedy = true;
  float temperature = 1.0f;  // > 0: logits are divided by it
  int64_t top_k = 0;         // keep the k most likely tokens; 0: all
  float top_p = 1.0f;        // keep the fewest most likely tokens whose probabilities reach p, in (0, 1]
  // CTRL's penalty (>= 1; 1: none): a token already in the sequence has its
  // logit divided by it when positive and multiplied by it when negative.
  float repetition_penalty = 1.0f;
  uint64_t seed = 0;
};

// OK, or which option is out of its range and why (greedy choices check
// only the repetition penalty: the rest is not used).
XONNX_API Status CheckSamplingOptions(const SamplingOptions& options);

// One sequence's choices: its own generator, seeded once, so that batched
// sequences draw independently of each other and of the batch's order.
class XONNX_API TokenSampler {
 public:
  // `options` must pass CheckSamplingOptions.
  explicit TokenSampler(const SamplingOptions& options);
  // The next token from `vocab` logits, given the tokens of the sequence so
  // far (prompt and generated, for the penalty). Fails on a NaN logit, or
  // when every token has probability zero: a model that gives those has
  // gone wrong, and no token choice would be an answer.
  StatusOr<int64_t> Next(const float* logits, int64_t vocab, const std::vector<int64_t>& history);

 private:
  // A uniform draw in [0, 1), the same on every platform for a seed.
  double Uniform();

  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<float> work_;          // the adjusted logits
  std::vector<int64_t> candidates_;  // token ids, most likely first
  std::vector<double> weights_;      // their unnormalized probabilities
};

}  // namespace xonnx

#endif  // XONNX_SAMPLING_H_
