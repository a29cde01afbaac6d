// DequantizedProducts: HLO text in; out, the products that must become
// integer products do, the others stay as they were, and the rewritten
// program computes what the original does (to f32 rounding) on random
// 8-bit data.
#include "passes/dequantized_products.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "passes/dce.h"

namespace xonnx::passes {
namespace {

using hlo::Literal;

Literal Random(const hlo::Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ints(-128, 255);
  std::uniform_real_distribution<float> floats(0.01f, 0.1f);
  hlo::TypeSwitch(s.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < l.element_count(); ++i)
      l.data<T>()[i] = std::is_integral_v<T> ? static_cast<T>(ints(rng)) : static_cast<T>(floats(rng));
  });
  return l;
}

// Runs the pass (then DCE); expects `rewrites` products rewritten, then
// compares the two programs' results on random arguments.
void Check(const std::string& text, int rewrites) {
  auto before = hlo::ParseText(text);
  ASSERT_TRUE(before.ok()) << before.status() << "\n" << text;
  auto after = hlo::ParseText(text);
  ASSERT_TRUE(after.ok());
  DequantizedProducts pass;
  auto changed = pass.Run(after->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(*changed, rewrites > 0);
  Dce dce;
  ASSERT_TRUE(dce.Run(after->get()).ok());
  ASSERT_TRUE(hlo::Verify(**after).ok()) << hlo::ToText(**after);
  int s32_products = 0, f32_products = 0;
  for (const auto& i : (*after)->entry()->instructions()) {
    if (i->opcode() != hlo::Opcode::kConvolution && i->opcode() != hlo::Opcode::kDot) continue;
    (i->shape().element_type == hlo::S32 ? s32_products : f32_products)++;
  }
  EXPECT_EQ(s32_products, rewrites) << hlo::ToText(**after);
  std::vector<Literal> args;
  const hlo::Computation& entry = *(*before)->entry();
  for (int64_t k = 0; k < entry.num_parameters(); ++k) args.push_back(Random(entry.parameter(k)->shape(), 11 + k));
  auto want = eval::EvaluateModule(**before, args);
  auto got = eval::EvaluateModule(**after, args);
  ASSERT_TRUE(want.ok() && got.ok());
  double norm = 0, err = 0;
  for (int64_t k = 0; k < want->element_count(); ++k) {
    norm += std::pow(want->data<float>()[k], 2);
    err += std::pow(want->data<float>()[k] - got->data<float>()[k], 2);
  }
  EXPECT_LT(std::sqrt(err), 1e-5 * std::sqrt(norm) + 1e-30) << hlo::ToText(**after);
}

// An activation dequantized as the importer writes it: one scale, one
// zero point from a u8 scalar.
constexpr char kActivation[] = R"(
  x = u8[2,4,6,6] parameter(0)
  zx8 = u8[] parameter(1)
  sx = f32[] parameter(2)
  xf = f32[2,4,6,6] convert(x)
  zx = f32[] convert(zx8)
  zxb = f32[2,4,6,6] broadcast(zx), dimensions={}
  xc = f32[2,4,6,6] subtract(xf, zxb)
  sxb = f32[2,4,6,6] broadcast(sx), dimensions={}
  xd = f32[2,4,6,6] multiply(xc, sxb)
)";

TEST(DequantizedProducts, ConvolutionOfPerChannelWeightsBecomesAnIntegerProduct) {
  Check(absl::StrCat("HloModule m\nENTRY e {", kActivation, R"(
  w = s8[3,4,3,3] parameter(3)
  sw = f32[3] parameter(4)
  wf = f32[3,4,3,3] convert(w)
  swb = f32[3,4,3,3] broadcast(sw), dimensions={0}
  wd = f32[3,4,3,3] multiply(wf, swb)
  ROOT y = f32[2,3,6,6] convolution(xd, wd), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
})"),
        1);
}

TEST(DequantizedProducts, DotOfPerColumnWeightsAfterAReshape) {
  Check(absl::StrCat("HloModule m\nENTRY e {", kActivation, R"(
  x2 = f32[8,36] reshape(xd)
  w = u8[36,5] parameter(3)
  zw = u8[] parameter(4)
  sw = f32[5] parameter(5)
  wf = f32[36,5] convert(w)
  zwf = f32[] convert(zw)
  zwb = f32[36,5] broadcast(zwf), dimensions={}
  wc = f32[36,5] subtract(wf, zwb)
  swb = f32[36,5] broadcast(sw), dimensions={1}
  wd = f32[36,5] multiply(wc, swb)
  ROOT y = f32[8,5] dot(x2, wd), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})"),
        1);
}

// Weights whose dequantization constant folding already did: values that
// are exactly int8 multiples of one power-of-two scale per output feature,
// and splat constants for the activation's scale and zero point.
TEST(DequantizedProducts, FoldedWeightsAndSplatsAreRecognized) {
  std::vector<std::string> rows;
  for (int o = 0; o < 3; ++o) {
    std::vector<std::string> row;
    for (int k = 0; k < 4; ++k) {
      int q = o == 0 && k == 0 ? 127 : ((o * 7 + k * 13) % 255) - 127;  // feature 0 spans the whole range
      if (o > 0 && k == 1) q = -127;
      row.push_back(absl::StrFormat("%.9g", std::ldexp(static_cast<double>(q), -(5 + o))));
    }
    rows.push_back(absl::StrCat("{", absl::StrJoin(row, ", "), "}"));
  }
  Check(absl::StrCat(R"(HloModule m
ENTRY e {
  x = s8[7,4] parameter(0)
  xf = f32[7,4] convert(x)
  zx = f32[7,4] constant({{3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}, {3, 3, 3, 3}})
  xc = f32[7,4] subtract(xf, zx)
  sx = f32[7,4] constant({{0.05, 0.05, 0.05, 0.05}, {0.05, 0.05, 0.05, 0.05}, {0.05, 0.05, 0.05, 0.05}, {0.05, 0.05, 0.05, 0.05}, {0.05, 0.05, 0.05, 0.05}, {0.05, 0.05, 0.05, 0.05}, {0.05, 0.05, 0.05, 0.05}})
  xd = f32[7,4] multiply(xc, sx)
  w = f32[3,4] constant({)",
                     absl::StrJoin(rows, ", "), R"(})
  ROOT y = f32[7,3] dot(xd, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})"),
        1);
}

TEST(DequantizedProducts, LeavesFormsWithoutAnExactIntegerEquivalent) {
  // A per-channel activation scale (the 8-bit kernels take one scale).
  Check(R"(HloModule m
ENTRY e {
  x = u8[4,6] parameter(0)
  sx = f32[6] parameter(1)
  xf = f32[4,6] convert(x)
  sxb = f32[4,6] broadcast(sx), dimensions={1}
  xd = f32[4,6] multiply(xf, sxb)
  w = s8[6,2] parameter(2)
  wf = f32[6,2] convert(w)
  sw = f32[] parameter(3)
  swb = f32[6,2] broadcast(sw), dimensions={}
  wd = f32[6,2] multiply(wf, swb)
  ROOT y = f32[4,2] dot(xd, wd), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
        0);
  // A zero point that is not an integer; float weights that are not a
  // multiple of one scale per feature.
  Check(R"(HloModule m
ENTRY e {
  x = u8[4,3] parameter(0)
  xf = f32[4,3] convert(x)
  zx = f32[] constant(2.5)
  zxb = f32[4,3] broadcast(zx), dimensions={}
  xc = f32[4,3] subtract(xf, zxb)
  sx = f32[] parameter(1)
  sxb = f32[4,3] broadcast(sx), dimensions={}
  xd = f32[4,3] multiply(xc, sxb)
  w = f32[3,2] constant({{0.1, 0.7}, {0.3, -0.2}, {0.33, 1}})
  ROOT y = f32[4,2] dot(xd, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
        0);
}

}  // namespace
}  // namespace xonnx::passes
