// ScaleFolding: per-feature constant scales after products with constant
// weights move into the weights and biases (no multiply is left), the
// program computes what it did to f32 rounding, and scales it must not
// fold stay.
#include "passes/scale_folding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "passes/dce.h"

namespace xonnx::passes {
namespace {

using hlo::Literal;

Literal RandomF32(const hlo::Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = d(rng);
  return l;
}

// Runs the pass and DCE on `text`; checks the result against the original
// on random inputs; returns the text after.
std::string FoldAndCompare(const std::string& text) {
  auto before = hlo::ParseText(text);
  auto after = hlo::ParseText(text);
  if (!before.ok() || !after.ok()) return std::string(before.status().message());
  ScaleFolding pass;
  auto changed = pass.Run(after->get());
  if (!changed.ok()) return std::string(changed.status().message());
  Dce dce;
  (void)dce.Run(after->get());
  if (auto v = hlo::Verify(**after); !v.ok()) return std::string(v.message());
  std::vector<Literal> args;
  for (const hlo::Instruction* p : (*before)->entry()->parameters())
    args.push_back(RandomF32(p->shape(), 7 + args.size()));
  auto want = eval::EvaluateModule(**before, args);
  auto got = eval::EvaluateModule(**after, args);
  if (!want.ok() || !got.ok()) return std::string("evaluation failed");
  std::vector<const Literal*> wants = {&*want}, gots = {&*got};
  if (want->shape().IsTuple()) {
    wants.clear();
    gots.clear();
    for (size_t k = 0; k < want->tuple_elements().size(); ++k) {
      wants.push_back(&want->tuple_elements()[k]);
      gots.push_back(&got->tuple_elements()[k]);
    }
  }
  for (size_t k = 0; k < wants.size(); ++k)
    for (int64_t i = 0; i < wants[k]->element_count(); ++i)
      EXPECT_NEAR(gots[k]->data<float>()[i], wants[k]->data<float>()[i],
                  1e-5 * (1 + std::abs(wants[k]->data<float>()[i])))
          << "output " << k << " element " << i;
  return hlo::ToText(**after);
}

TEST(ScaleFolding, LayerScaleAfterALinearLayerFoldsIntoItsWeightsAndBias) {
  // ConvNeXt's block end as imported: the product reshaped back, the bias,
  // then the layer scale.
  std::string out = FoldAndCompare(R"(HloModule m

ENTRY main {
  x = f32[2,3,4]{2,1,0} parameter(0)
  w = f32[4,5]{1,0} constant({{1, 2, 3, 4, 5}, {-1, 0.5, 2, 0, 1}, {0.25, -2, 1, 3, -1}, {2, 2, -3, 1, 0.5}})
  r = f32[6,4]{1,0} reshape(x)
  d = f32[6,5]{1,0} dot(r, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dr = f32[2,3,5]{2,1,0} reshape(d)
  b = f32[5]{0} constant({0.1, 0.2, 0.3, 0.4, 0.5})
  bb = f32[2,3,5]{2,1,0} broadcast(b), dimensions={2}
  a = f32[2,3,5]{2,1,0} add(dr, bb)
  g = f32[5]{0} constant({1, 2, -0.5, 3, 0.25})
  gb = f32[2,3,5]{2,1,0} broadcast(g), dimensions={2}
  ROOT m = f32[2,3,5]{2,1,0} multiply(gb, a)
}
)");
  EXPECT_FALSE(absl::StrContains(out, "multiply")) << out;
}

TEST(ScaleFolding, ChannelScaleAfterAConvolutionFolds) {
  // Channels-first: the features are dim 1 of the result and dim 0 of the
  // weights; no bias.
  std::string out = FoldAndCompare(R"(HloModule m

ENTRY main {
  x = f32[1,2,5,5]{3,2,1,0} parameter(0)
  w = f32[3,2,1,1]{3,2,1,0} constant({{{{1}}, {{2}}}, {{{-1}}, {{0.5}}}, {{{3}}, {{-2}}}})
  c = f32[1,3,5,5]{3,2,1,0} convolution(x, w), window={size=1x1}, dim_labels=bf01_oi01->bf01
  g = f32[3]{0} constant({0.5, -2, 4})
  gb = f32[1,3,5,5]{3,2,1,0} broadcast(g), dimensions={1}
  ROOT m = f32[1,3,5,5]{3,2,1,0} multiply(c, gb)
}
)");
  EXPECT_FALSE(absl::StrContains(out, "multiply")) << out;
}

TEST(ScaleFolding, LeavesScalesItCannotFold) {
  // A scale that is not a constant, a scale along a dim that is not the
  // features, and a product whose result is read elsewhere too all stay.
  const char* text = R"(HloModule m

ENTRY main {
  x = f32[6,4]{1,0} parameter(0)
  s = f32[5]{0} parameter(1)
  w = f32[4,5]{1,0} constant({{1, 2, 3, 4, 5}, {-1, 0.5, 2, 0, 1}, {0.25, -2, 1, 3, -1}, {2, 2, -3, 1, 0.5}})
  d1 = f32[6,5]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  sb = f32[6,5]{1,0} broadcast(s), dimensions={1}
  m1 = f32[6,5]{1,0} multiply(d1, sb)
  d2 = f32[6,5]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[6]{0} constant({1, 2, 3, 4, 5, 6})
  rb = f32[6,5]{1,0} broadcast(r), dimensions={0}
  m2 = f32[6,5]{1,0} multiply(d2, rb)
  d3 = f32[6,5]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  g = f32[5]{0} constant({1, 2, -0.5, 3, 0.25})
  gb = f32[6,5]{1,0} broadcast(g), dimensions={1}
  m3 = f32[6,5]{1,0} multiply(d3, gb)
  ROOT t = (f32[6,5]{1,0}, f32[6,5]{1,0}, f32[6,5]{1,0}, f32[6,5]{1,0}) tuple(m1, m2, m3, d3)
}
)";
  auto m = hlo::ParseText(text);
  ASSERT_TRUE(m.ok()) << m.status();
  ScaleFolding pass;
  auto changed = pass.Run(m->get());
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(ScaleFolding, TwoScalesOfOneProductReadByTwoPathsStayApart) {
  // A product read by two multiplies (after transposes sank below them):
  // folding the first makes the product's value read by both paths, so
  // the second must stay a multiply. Folding both put both scales into the
  // one product's weights (a wrong answer found by differential testing).
  std::string out = FoldAndCompare(R"(HloModule m

ENTRY main {
  x = f32[6,4]{1,0} parameter(0)
  w = f32[4,5]{1,0} constant({{1, 2, 3, 4, 5}, {-1, 0.5, 2, 0, 1}, {0.25, -2, 1, 3, -1}, {2, 2, -3, 1, 0.5}})
  d = f32[6,5]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  g1 = f32[5]{0} constant({1, 2, -0.5, 3, 0.25})
  g1b = f32[6,5]{1,0} broadcast(g1), dimensions={1}
  m1 = f32[6,5]{1,0} multiply(d, g1b)
  g2 = f32[5]{0} constant({4, -1, 0.5, 2, 8})
  g2b = f32[6,5]{1,0} broadcast(g2), dimensions={1}
  m2 = f32[6,5]{1,0} multiply(m1, g2b)
  ROOT t = (f32[6,5]{1,0}, f32[6,5]{1,0}) tuple(m1, m2)
}
)");
  EXPECT_TRUE(absl::StrContains(out, "multiply")) << out;
}

}  // namespace
}  // namespace xonnx::passes
