#include "xonnx/sampling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"

namespace xonnx {
namespace {

using ::testing::HasSubstr;

std::vector<float> RandomLogits(int64_t vocab, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> n(0, 3);
  std::vector<float> v(vocab);
  for (float& x : v) x = n(g);
  return v;
}

int64_t Argmax(const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

std::vector<int64_t> Draws(SamplingOptions o, const std::vector<float>& logits, int n) {
  TokenSampler s(o);
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(*s.Next(logits.data(), logits.size(), {}));
  return out;
}

TEST(Sampling, GreedyAndTopKOneAreTheArgmaxWhateverTheTemperature) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<float> logits = RandomLogits(1000, seed);
    SamplingOptions greedy;
    EXPECT_EQ(*TokenSampler(greedy).Next(logits.data(), 1000, {}), Argmax(logits));
    SamplingOptions k1;
    k1.greedy = false;
    k1.top_k = 1;
    k1.temperature = 0.1f + seed;
    k1.seed = seed;
    EXPECT_EQ(*TokenSampler(k1).Next(logits.data(), 1000, {}), Argmax(logits)) << seed;
    // A nucleus too small for more than one token is greedy too.
    SamplingOptions p;
    p.greedy = false;
    p.top_p = 1e-6f;
    p.seed = seed;
    EXPECT_EQ(*TokenSampler(p).Next(logits.data(), 1000, {}), Argmax(logits)) << seed;
  }
  // A temperature so small that logits / T overflow a float is still the argmax.
  SamplingOptions cold;
  cold.greedy = false;
  cold.temperature = 1e-38f;
  std::vector<float> logits = RandomLogits(100, 9);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(*TokenSampler(cold).Next(logits.data(), 100, {}), Argmax(logits));
  // Equal logits: the lowest id.
  std::vector<float> flat(10, 2.0f);
  EXPECT_EQ(*TokenSampler(SamplingOptions{}).Next(flat.data(), 10, {}), 0);
}

TEST(Sampling, ASeedAlwaysGivesTheSameTokens) {
  std::vector<float> logits = RandomLogits(500, 7);
  SamplingOptions o;
  o.greedy = false;
  o.temperature = 1.5f;
  o.top_k = 40;
  o.top_p = 0.9f;
  o.seed = 1234;
  std::vector<int64_t> a = Draws(o, logits, 200), b = Draws(o, logits, 200);
  EXPECT_EQ(a, b);
  o.seed = 1235;
  EXPECT_NE(Draws(o, logits, 200), a);
  // Every draw is one of the 40 most likely.
  std::vector<int64_t> order(500);
  for (int64_t i = 0; i < 500; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return logits[x] > logits[y]; });
  std::set<int64_t> top40(order.begin(), order.begin() + 40);
  for (int64_t t : a) EXPECT_TRUE(top40.count(t)) << t;
}

// The draws follow the softmax of logits / temperature, restricted to the
// nucleus: checked on 40,000 draws against the exact probabilities.
TEST(Sampling, DrawsFollowTheDistribution) {
  std::vector<float> logits = {2.0f, 1.0f, 0.5f, -1.0f, -3.0f};
  for (float temperature : {0.7f, 1.0f, 2.0f})
    for (float top_p : {1.0f, 0.8f}) {
      SamplingOptions o;
      o.greedy = false;
      o.temperature = temperature;
      o.top_p = top_p;
      o.seed = 99;
      std::vector<double> p(5);
      double total = 0;
      for (int i = 0; i < 5; ++i) total += p[i] = std::exp(logits[i] / temperature);
      for (double& x : p) x /= total;
      // The nucleus: the fewest most likely tokens reaching top_p.
      double cumulative = 0;
      int kept = 0;
      while (kept < 5 && cumulative < top_p) cumulative += p[kept++];
      for (int i = kept; i < 5; ++i) p[i] = 0;
      for (double& x : p) x /= cumulative;
      const int n = 40000;
      std::map<int64_t, int> count;
      for (int64_t t : Draws(o, logits, n)) ++count[t];
      for (int i = 0; i < 5; ++i) {
        double sd = std::sqrt(n * p[i] * (1 - p[i]));
        EXPECT_NEAR(count[i], n * p[i], 5 * sd + 1) << "token " << i << " T " << temperature << " p " << top_p;
      }
    }
}

TEST(Sampling, RepetitionPenaltyCountsEachTokenOnce) {
  std::vector<float> logits = {3.0f, 2.9f, -1.0f, -1.2f};
  SamplingOptions o;
  o.repetition_penalty = 1.5f;
  // Token 0 seen: 3.0 / 1.5 = 2.0 < 2.9, so token 1 wins.
  EXPECT_EQ(*TokenSampler(o).Next(logits.data(), 4, {0}), 1);
  // Seen three times, still divided once: 2.0 beats a penalized token 1 (1.93).
  EXPECT_EQ(*TokenSampler(o).Next(logits.data(), 4, {0, 0, 0, 1}), 0);
  // Negative logits are multiplied: -1.0 * 1.5 = -1.5 < -1.2.
  std::vector<float> negative = {-1.0f, -1.2f};
  EXPECT_EQ(*TokenSampler(o).Next(negative.data(), 2, {0}), 1);
  EXPECT_THAT(TokenSampler(o).Next(logits.data(), 4, {7}).status().message(), HasSubstr("outside the vocabulary"));
}

TEST(Sampling, RefusesWhatNoTokenChoiceCouldAnswer) {
  std::vector<float> nan = {1.0f, std::nanf(""), 0.0f};
  EXPECT_THAT(TokenSampler(SamplingOptions{}).Next(nan.data(), 3, {}).status().message(),
              HasSubstr("NaN logit for token 1"));
  // Wherever the NaN is (first, where the argmax starts; last), in each
  // path: greedy alone, greedy with a penalty, and a draw.
  SamplingOptions penalized;
  penalized.repetition_penalty = 1.5f;
  SamplingOptions drawn;
  drawn.greedy = false;
  for (int64_t at : {0, 2})
    for (const SamplingOptions& o : {SamplingOptions{}, penalized, drawn}) {
      std::vector<float> l = {3.0f, 1.0f, 2.0f};
      l[at] = std::nanf("");
      EXPECT_THAT(TokenSampler(o).Next(l.data(), 3, {1}).status().message(),
                  HasSubstr(absl::StrCat("NaN logit for token ", at)));
    }
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> none = {-inf, -inf};
  SamplingOptions draw;
  draw.greedy = false;
  EXPECT_THAT(TokenSampler(SamplingOptions{}).Next(none.data(), 2, {}).status().message(), HasSubstr("-infinity"));
  EXPECT_THAT(TokenSampler(draw).Next(none.data(), 2, {}).status().message(), HasSubstr("-infinity"));
  // +infinity tokens are the only candidates.
  std::vector<float> certain = {0.0f, inf, 5.0f, inf};
  for (int64_t t : Draws(draw, certain, 100)) EXPECT_TRUE(t == 1 || t == 3) << t;
  // Options out of range say which.
  SamplingOptions bad;
  bad.greedy = false;
  bad.temperature = 0;
  EXPECT_THAT(CheckSamplingOptions(bad).message(), HasSubstr("temperature"));
  bad = SamplingOptions{};
  bad.greedy = false;
  bad.top_p = 1.5f;
  EXPECT_THAT(CheckSamplingOptions(bad).message(), HasSubstr("top-p"));
  bad = SamplingOptions{};
  bad.greedy = false;
  bad.top_k = -1;
  EXPECT_THAT(CheckSamplingOptions(bad).message(), HasSubstr("top-k"));
  bad = SamplingOptions{};
  bad.repetition_penalty = 0.5f;
  EXPECT_THAT(CheckSamplingOptions(bad).message(), HasSubstr("repetition penalty"));
  EXPECT_TRUE(CheckSamplingOptions(SamplingOptions{}).ok());
  // Greedy choices use none of the sampling options: out of range, they do not matter.
  SamplingOptions greedy;
  greedy.temperature = 0;
  greedy.top_p = 0;
  EXPECT_TRUE(CheckSamplingOptions(greedy).ok());
}

}  // namespace
}  // namespace xonnx
