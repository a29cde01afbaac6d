// Row fusions as planned around quantizers: a layer norm whose result is
// quantized keeps only the work that needs its rows; gamma, beta and the
// quantizer's steps run in the loop after it, the quantizer in one pass.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"

namespace xonnx::cpu {
namespace {

using hlo::Literal;

// A layer norm over rows of 96 (gamma, beta), then QuantizeLinear to u8
// as the importer writes it: divide, round, add the zero point, clamp,
// convert.
constexpr char kLayerNormThenQuantize[] = R"(
HloModule ln_quantize
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  a = f32[300,96]{1,0} parameter(0)
  gamma = f32[96]{0} parameter(1)
  beta = f32[96]{0} parameter(2)
  zero = f32[] constant(0)
  sum = f32[300]{0} reduce(a, zero), dimensions={1}, to_apply=add_f32
  n = f32[] constant(96)
  n_rows = f32[300]{0} broadcast(n), dimensions={}
  mean = f32[300]{0} divide(sum, n_rows)
  mean_full = f32[300,96]{1,0} broadcast(mean), dimensions={0}
  centered = f32[300,96]{1,0} subtract(a, mean_full)
  squares = f32[300,96]{1,0} multiply(centered, centered)
  sq_sum = f32[300]{0} reduce(squares, zero), dimensions={1}, to_apply=add_f32
  var = f32[300]{0} divide(sq_sum, n_rows)
  eps = f32[] constant(1e-06)
  eps_rows = f32[300]{0} broadcast(eps), dimensions={}
  var_eps = f32[300]{0} add(var, eps_rows)
  rstd = f32[300]{0} rsqrt(var_eps)
  rstd_full = f32[300,96]{1,0} broadcast(rstd), dimensions={0}
  normed = f32[300,96]{1,0} multiply(centered, rstd_full)
  gamma_full = f32[300,96]{1,0} broadcast(gamma), dimensions={1}
  scaled = f32[300,96]{1,0} multiply(normed, gamma_full)
  beta_full = f32[300,96]{1,0} broadcast(beta), dimensions={1}
  shifted = f32[300,96]{1,0} add(scaled, beta_full)
  scale = f32[] constant(0.0391)
  scale_full = f32[300,96]{1,0} broadcast(scale), dimensions={}
  q = f32[300,96]{1,0} divide(shifted, scale_full)
  r = f32[300,96]{1,0} round-nearest-even(q)
  zp = f32[] constant(125)
  zp_full = f32[300,96]{1,0} broadcast(zp), dimensions={}
  z = f32[300,96]{1,0} add(r, zp_full)
  lo = f32[] constant(0)
  hi = f32[] constant(255)
  c = f32[300,96]{1,0} clamp(lo, z, hi)
  ROOT out = u8[300,96]{1,0} convert(c)
}
)";

TEST(RowFusions, AQuantizedLayerNormLeavesTheQuantizerToTheLoop) {
  auto m = hlo::ParseText(kLayerNormThenQuantize);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<Literal> args;
  std::mt19937 rng(3);
  for (auto* p : (*m)->entry()->parameters()) {
    Literal l(p->shape());
    for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = std::normal_distribution<float>(0.5f, 2)(rng);
    args.push_back(std::move(l));
  }
  auto want = eval::EvaluateModule(**m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto exe = Executable::Compile(std::move(*m), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  // The row fusion ends at the multiply by the rows' reciprocal deviation,
  // the last op that reads row values; one loop does the rest (gamma,
  // beta, the quantizer).
  const std::string listing = (*exe)->KernelListing();
  EXPECT_NE(listing.find("row-fusion     normed"), std::string::npos) << listing;
  EXPECT_THAT((*exe)->ThunkSummary(),
              ::testing::ElementsAre(::testing::Pair("fusion", 1), ::testing::Pair("row-fusion", 1)));
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  Literal got((*exe)->output_shapes().at(0));
  std::vector<void*> outs = {got.untyped_data()};
  ASSERT_TRUE((*exe)->Execute(in, outs).ok());
  // The row sums add in another order than the evaluator's: a value on a
  // rounding boundary may land one step away.
  int64_t off = 0;
  for (int64_t i = 0; i < got.element_count(); ++i) {
    int d = std::abs(int{got.data<uint8_t>()[i]} - int{want->data<uint8_t>()[i]});
    ASSERT_LE(d, 1) << "element " << i;
    off += d;
  }
  EXPECT_LT(off, got.element_count() / 100);
}

// A decoder step's softmax: scores scaled, plus a mask of one row of
// slots spread over the heads ([1, 1, slots] to [1, heads, 1, slots], as
// the Hugging Face exports write it),
// then softmax along the slots, all one row fusion reading the mask as
// its columns' values. A mask with a value per head is not a vector of the
// columns, and the loops stay as they were.
constexpr char kMaskedSoftmax[] = R"(
HloModule masked_softmax
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
max_f32 {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT m = f32[] maximum(u, v)
}
ENTRY main {
  scores = f32[1,8,1,193]{3,2,1,0} parameter(0)
  mask = f32[1,1,1,MASK_HEADS]{3,2,1,0} parameter(1)
  k = f32[] constant(0.125)
  k_full = f32[1,8,1,193]{3,2,1,0} broadcast(k), dimensions={}
  scaled = f32[1,8,1,193]{3,2,1,0} multiply(scores, k_full)
  m3 = f32[1,MASK_DIMS]{MASK_LAYOUT} reshape(mask)
  m_full = f32[1,8,1,193]{3,2,1,0} broadcast(m3), dimensions={MASK_MAP}
  masked = f32[1,8,1,193]{3,2,1,0} add(scaled, m_full)
  ninf = f32[] constant(-inf)
  mx = f32[1,8,1]{2,1,0} reduce(masked, ninf), dimensions={3}, to_apply=max_f32
  mx_full = f32[1,8,1,193]{3,2,1,0} broadcast(mx), dimensions={0,1,2}
  centered = f32[1,8,1,193]{3,2,1,0} subtract(masked, mx_full)
  e = f32[1,8,1,193]{3,2,1,0} exponential(centered)
  zero = f32[] constant(0)
  sum = f32[1,8,1]{2,1,0} reduce(e, zero), dimensions={3}, to_apply=add_f32
  sum_full = f32[1,8,1,193]{3,2,1,0} broadcast(sum), dimensions={0,1,2}
  ROOT p = f32[1,8,1,193]{3,2,1,0} divide(e, sum_full)
}
)";

TEST(RowFusions, ASoftmaxWithAMaskOfOneRowOfSlotsIsOneRowFusion) {
  for (bool per_head : {false, true}) {
    std::string text = kMaskedSoftmax;
    auto set = [&](const std::string& key, const std::string& value) {
      for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), value);
    };
    // [1, 1, 193] spread along heads; or [1, 8, 193], one row per head.
    set("MASK_HEADS", per_head ? "1544" : "193");
    set("MASK_DIMS", per_head ? "8,193" : "1,193");
    set("MASK_LAYOUT", "2,1,0");
    set("MASK_MAP", per_head ? "0,1,3" : "0,2,3");
    auto m = hlo::ParseText(text);
    ASSERT_TRUE(m.ok()) << m.status();
    std::vector<Literal> args;
    std::mt19937 rng(5);
    for (auto* p : (*m)->entry()->parameters()) {
      Literal l(p->shape());
      for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = std::normal_distribution<float>(0, 3)(rng);
      args.push_back(std::move(l));
    }
    args[1].data<float>()[7] = -3.4e38f;  // a masked slot
    auto want = eval::EvaluateModule(**m, args);
    ASSERT_TRUE(want.ok()) << want.status();
    auto exe = Executable::Compile(std::move(*m), CompileOptions{});
    ASSERT_TRUE(exe.ok()) << exe.status();
    if (per_head)
      EXPECT_THAT((*exe)->ThunkSummary(), ::testing::Not(::testing::ElementsAre(::testing::Pair("row-fusion", 1))));
    else
      EXPECT_THAT((*exe)->ThunkSummary(), ::testing::ElementsAre(::testing::Pair("row-fusion", 1)));
    std::vector<const void*> in;
    for (const Literal& a : args) in.push_back(a.untyped_data());
    Literal got((*exe)->output_shapes().at(0));
    std::vector<void*> outs = {got.untyped_data()};
    ASSERT_TRUE((*exe)->Execute(in, outs).ok());
    for (int64_t i = 0; i < got.element_count(); ++i)
      EXPECT_NEAR(got.data<float>()[i], want->data<float>()[i], 1e-6) << "element " << i << " per_head " << per_head;
  }
}

}  // namespace
}  // namespace xonnx::cpu
