#include "xonnx/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace xonnx {
namespace {

Status SamplingError(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

// The error for logits holding a NaN, naming the first.
Status NanLogit(const float* logits, int64_t vocab) {
  const int64_t i = std::find_if(logits, logits + vocab, [](float l) { return std::isnan(l); }) - logits;
  return SamplingError(absl::StrCat("the model gave a NaN logit for token ", i));
}

}  // namespace

Status CheckSamplingOptions(const SamplingOptions& o) {
  if (!(o.repetition_penalty >= 1) || !std::isfinite(o.repetition_penalty))
    return SamplingError(
        absl::StrCat("repetition penalty ", o.repetition_penalty, " must be a finite number, 1 or more"));
  if (o.greedy) return OkStatus();  // the rest is not used
  if (!(o.temperature > 0) || !std::isfinite(o.temperature))
    return SamplingError(absl::StrCat("temperature ", o.temperature, " must be a finite number above 0"));
  if (o.top_k < 0) return SamplingError(absl::StrCat("top-k ", o.top_k, " must be 0 (all tokens) or more"));
  if (!(o.top_p > 0 && o.top_p <= 1)) return SamplingError(absl::StrCat("top-p ", o.top_p, " must be in (0, 1]"));
  return OkStatus();
}

TokenSampler::TokenSampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {}

double TokenSampler::Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

StatusOr<int64_t> TokenSampler::Next(const float* logits, int64_t vocab, const std::vector<int64_t>& history) {
  if (vocab <= 0) return SamplingError(absl::StrCat("a vocabulary of ", vocab, " tokens"));
  const float kNone = -std::numeric_limits<float>::infinity();
  if (options_.greedy && options_.repetition_penalty == 1) {
    // A decoder's every step: one pass over the logits, in place.
    // The largest value kept in a register, not reloaded through its
    // index: each comparison then waits on no load.
    int64_t best = 0;
    float top = logits[0];
    bool nan = false;
    for (int64_t i = 0; i < vocab; ++i) {
      const float l = logits[i];
      nan |= l != l;
      if (l > top) {
        top = l;
        best = i;
      }
    }
    if (nan) return NanLogit(logits, vocab);
    if (top == kNone) return SamplingError("the model gave every token a logit of -infinity");
    return best;
  }
  work_.assign(logits, logits + vocab);
  if (std::any_of(work_.begin(), work_.end(), [](float l) { return std::isnan(l); })) return NanLogit(logits, vocab);
  if (options_.repetition_penalty != 1) {
    // Each token once, however often it occurs: a second pass over a
    // repeated token would penalize it twice.
    std::vector<int64_t> seen(history);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int64_t t : seen) {
      if (t < 0 || t >= vocab)
        return SamplingError(absl::StrCat("token ", t, " of the sequence is outside the vocabulary of ", vocab));
      float& l = work_[t];
      l = l > 0 ? l / options_.repetition_penalty : l * options_.repetition_penalty;
    }
  }
  // Most likely first; among equals the lowest id, so that the order (and
  // with it every draw) depends on the logits alone.
  auto before = [&](int64_t a, int64_t b) { return work_[a] > work_[b] || (work_[a] == work_[b] && a < b); };
  if (options_.greedy) {
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (work_[i] > work_[best]) best = i;
    if (work_[best] == kNone) return SamplingError("the model gave every token a logit of -infinity");
    return best;
  }
  candidates_.clear();
  bool any_infinite = std::any_of(work_.begin(), work_.end(), [](float l) { return std::isinf(l) && l > 0; });
  for (int64_t i = 0; i < vocab; ++i)
    if (any_infinite ? (std::isinf(work_[i]) && work_[i] > 0) : work_[i] != kNone) candidates_.push_back(i);
  if (candidates_.empty()) return SamplingError("the model gave every token a logit of -infinity");
  if (any_infinite) {  // the +infinity tokens, equally likely
    return candidates_[std::min<size_t>(static_cast<size_t>(Uniform() * candidates_.size()), candidates_.size() - 1)];
  }
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < candidates_.size()) {
    std::nth_element(candidates_.begin(), candidates_.begin() + options_.top_k, candidates_.end(), before);
    candidates_.resize(static_cast<size_t>(options_.top_k));
  }
  // Sorting costs O(V log V) a token; without top-p the draw needs no
  // order beyond a fixed one, and ids ascending is one.
  if (options_.top_p < 1 || options_.top_k > 0) std::sort(candidates_.begin(), candidates_.end(), before);
  // Dividing by the temperature keeps the order; it is done here, in
  // double and after subtracting the largest logit, so that a tiny
  // temperature cannot overflow a float to infinity.
  float top = kNone;
  for (int64_t i : candidates_) top = std::max(top, work_[i]);
  weights_.resize(candidates_.size());
  double total = 0;
  for (size_t j = 0; j < candidates_.size(); ++j)
    total += weights_[j] = std::exp((double{work_[candidates_[j]]} - top) / options_.temperature);
  size_t kept = candidates_.size();
  if (options_.top_p < 1) {
    // The nucleus, and its total: the sum up to the cut, in the same order.
    double cumulative = 0;
    for (size_t j = 0; j < candidates_.size(); ++j) {
      cumulative += weights_[j];
      if (cumulative >= options_.top_p * total) {
        kept = j + 1;
        break;
      }
    }
    total = cumulative;
  }
  double u = Uniform() * total, cumulative = 0;
  for (size_t j = 0; j < kept; ++j) {
    cumulative += weights_[j];
    if (u < cumulative) return candidates_[j];
  }
  return candidates_[kept - 1];  // rounding left u at the very top
}

}  // namespace xonnx
