// Pass tests: HLO text in, HLO text out.
#include <gtest/gtest.h>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "passes/algebraic_simplifier.h"
#include "passes/constant_folding.h"
#include "passes/convert_precision.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/pipeline.h"

namespace xonnx::passes {
namespace {

// Runs `pass` (then DCE) on `in`; returns the text after, or the error.
std::string Apply(Pass& pass, const std::string& in, bool* changed = nullptr) {
  auto m = hlo::ParseText(in);
  if (!m.ok()) return std::string(m.status().message());
  auto c = pass.Run(m->get());
  if (!c.ok()) return std::string(c.status().message());
  if (changed) *changed = *c;
  Dce dce;
  (void)dce.Run(m->get());
  return hlo::ToText(**m);
}

TEST(Dce, RemovesUnusedInstructions) {
  Dce dce;
  bool changed = false;
  EXPECT_EQ(Apply(dce, R"(HloModule m

ENTRY main {
  x = f32[2]{0} parameter(0)
  dead = f32[2]{0} exponential(x)
  ROOT n = f32[2]{0} negate(x)
}
)",
                  &changed),
            R"(HloModule m

ENTRY main {
  x = f32[2]{0} parameter(0)
  ROOT n = f32[2]{0} negate(x)
}
)");
  EXPECT_TRUE(changed);
}

TEST(Cse, MergesIdenticalInstructions) {
  Cse cse;
  EXPECT_EQ(Apply(cse, R"(HloModule m

ENTRY main {
  x = f32[2]{0} parameter(0)
  e1 = f32[2]{0} exponential(x)
  e2 = f32[2]{0} exponential(x)
  ROOT s = f32[2]{0} add(e1, e2)
}
)"),
            R"(HloModule m

ENTRY main {
  x = f32[2]{0} parameter(0)
  e1 = f32[2]{0} exponential(x)
  ROOT s = f32[2]{0} add(e1, e1)
}
)");
}

TEST(ConstantFolding, FoldsThroughTheEvaluator) {
  ConstantFolding cf;
  EXPECT_EQ(Apply(cf, R"(HloModule m

ENTRY main {
  x = s64[3]{0} parameter(0)
  k = s64[3]{0} constant({1, 2, 3})
  k2 = s64[3]{0} multiply(k, k)
  ROOT y = s64[3]{0} add(x, k2)
}
)"),
            R"(HloModule m

ENTRY main {
  x = s64[3]{0} parameter(0)
  constant = s64[3]{0} constant({1, 4, 9})
  ROOT y = s64[3]{0} add(x, constant)
}
)");
}

TEST(ConstantFolding, FoldsMovesOfConstantsPastTheCap) {
  // A transposed convolution's weights, reversed and transposed: folded
  // whatever their size, so that no call moves them again.
  ConstantFolding small(/*max_elements=*/2);
  EXPECT_EQ(Apply(small, R"(HloModule m

ENTRY main {
  k = f32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})
  r = f32[2,3]{1,0} reverse(k), dimensions={1}
  ROOT t = f32[3,2]{1,0} transpose(r), dimensions={1,0}
}
)"),
            R"(HloModule m

ENTRY main {
  ROOT constant.1 = f32[3,2]{1,0} constant({{3, 6}, {2, 5}, {1, 4}})
}
)");
}

TEST(ConstantFolding, RespectsSizeCapAndLeavesBroadcastsAlone) {
  ConstantFolding small(/*max_elements=*/2);
  bool changed = true;
  const char* text = R"(HloModule m

ENTRY main {
  k = f32[3]{0} constant({1, 2, 3})
  ROOT e = f32[3]{0} exponential(k)
}
)";
  EXPECT_EQ(Apply(small, text, &changed), text);
  EXPECT_FALSE(changed);
  ConstantFolding cf;
  const char* splat = R"(HloModule m

ENTRY main {
  z = f32[] constant(0)
  ROOT b = f32[64,64]{1,0} broadcast(z), dimensions={}
}
)";
  EXPECT_EQ(Apply(cf, splat), splat);
}

TEST(AlgebraicSimplifier, RemovesIdentities) {
  const char* in = R"(HloModule m

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  one = f32[] constant(1)
  ones = f32[2,3]{1,0} broadcast(one), dimensions={}
  mul = f32[2,3]{1,0} multiply(x, ones)
  t1 = f32[3,2]{1,0} transpose(mul), dimensions={1,0}
  t2 = f32[2,3]{1,0} transpose(t1), dimensions={1,0}
  r1 = f32[3,2]{1,0} reshape(t2)
  r2 = f32[6]{0} reshape(r1)
  n1 = f32[6]{0} negate(r2)
  ROOT n2 = f32[6]{0} negate(n1)
}
)";
  auto m = hlo::ParseText(in);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(RunStandardPipeline(m->get(), /*verify_each=*/true).ok());
  // x * 1 -> x, transpose pair -> x, reshape chain -> one reshape, -(-x) -> x.
  EXPECT_EQ(hlo::ToText(**m), R"(HloModule m

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  ROOT r2 = f32[6]{0} reshape(x)
}
)");
}

TEST(AlgebraicSimplifier, TransposeMovingOnlyUnitDimsIsAReshape) {
  AlgebraicSimplifier s;
  // [64,1,256] -> [1,64,256] moves only the 1 (a view); [4,64,1] -> [64,4,1]
  // swaps two real dims (a copy).
  EXPECT_EQ(Apply(s, R"(HloModule m

ENTRY main {
  x = f32[64,1,256]{2,1,0} parameter(0)
  y = f32[4,64,1]{2,1,0} parameter(1)
  a = f32[1,64,256]{2,1,0} transpose(x), dimensions={1,0,2}
  b = f32[64,4,1]{2,1,0} transpose(y), dimensions={1,0,2}
  ROOT t = (f32[1,64,256]{2,1,0}, f32[64,4,1]{2,1,0}) tuple(a, b)
}
)"),
            R"(HloModule m

ENTRY main {
  x = f32[64,1,256]{2,1,0} parameter(0)
  y = f32[4,64,1]{2,1,0} parameter(1)
  reshape = f32[1,64,256]{2,1,0} reshape(x)
  b = f32[64,4,1]{2,1,0} transpose(y), dimensions={1,0,2}
  ROOT t = (f32[1,64,256]{2,1,0}, f32[64,4,1]{2,1,0}) tuple(reshape, b)
}
)");
}

TEST(AlgebraicSimplifier, SquareIsAProductAndFirstPowerTheValue) {
  // pow(x, 2) -> x * x, pow(x, 1) -> x, pow(x, 3) -> x * x * x; pow(x, 4)
  // and pow(x, y) stay.
  AlgebraicSimplifier s;
  EXPECT_EQ(Apply(s, R"(HloModule m

ENTRY main {
  x = f32[4]{0} parameter(0)
  y = f32[4]{0} parameter(1)
  two = f32[] constant(2)
  twos = f32[4]{0} broadcast(two), dimensions={}
  one = f32[] constant(1)
  ones = f32[4]{0} broadcast(one), dimensions={}
  three = f32[] constant(3)
  threes = f32[4]{0} broadcast(three), dimensions={}
  four = f32[] constant(4)
  fours = f32[4]{0} broadcast(four), dimensions={}
  a = f32[4]{0} power(x, twos)
  b = f32[4]{0} power(x, ones)
  c = f32[4]{0} power(x, threes)
  d = f32[4]{0} power(x, y)
  e = f32[4]{0} power(x, fours)
  ROOT t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(a, b, c, d, e)
}
)"),
            R"(HloModule m

ENTRY main {
  x = f32[4]{0} parameter(0)
  y = f32[4]{0} parameter(1)
  multiply = f32[4]{0} multiply(x, x)
  multiply.1 = f32[4]{0} multiply(x, x)
  multiply.2 = f32[4]{0} multiply(multiply.1, x)
  d = f32[4]{0} power(x, y)
  four = f32[] constant(4)
  fours = f32[4]{0} broadcast(four), dimensions={}
  e = f32[4]{0} power(x, fours)
  ROOT t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(multiply, x, multiply.2, d, e)
}
)");
}

TEST(AlgebraicSimplifier, RoundingAnIntegerIsANoOp) {
  // A quantizer's second rounding goes: round(x / s) + zp is an integer.
  // The first stays, and so does a rounding of x + 0.5.
  AlgebraicSimplifier s;
  EXPECT_EQ(Apply(s, R"(HloModule m

ENTRY main {
  x = f32[4]{0} parameter(0)
  s = f32[] constant(0.25)
  sb = f32[4]{0} broadcast(s), dimensions={}
  q = f32[4]{0} divide(x, sb)
  r = f32[4]{0} round-nearest-even(q)
  zp = f32[] constant(128)
  zb = f32[4]{0} broadcast(zp), dimensions={}
  a = f32[4]{0} add(r, zb)
  r2 = f32[4]{0} round-nearest-even(a)
  h = f32[] constant(0.5)
  hb = f32[4]{0} broadcast(h), dimensions={}
  b = f32[4]{0} add(x, hb)
  r3 = f32[4]{0} floor(b)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(r2, r3)
}
)"),
            R"(HloModule m

ENTRY main {
  x = f32[4]{0} parameter(0)
  s = f32[] constant(0.25)
  sb = f32[4]{0} broadcast(s), dimensions={}
  q = f32[4]{0} divide(x, sb)
  r = f32[4]{0} round-nearest-even(q)
  zp = f32[] constant(128)
  zb = f32[4]{0} broadcast(zp), dimensions={}
  a = f32[4]{0} add(r, zb)
  h = f32[] constant(0.5)
  hb = f32[4]{0} broadcast(h), dimensions={}
  b = f32[4]{0} add(x, hb)
  r3 = f32[4]{0} floor(b)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(a, r3)
}
)");
}

TEST(AlgebraicSimplifier, ZeroPadOfSpatialDimsFoldsIntoConvolution) {
  // A causal pad (zeros before the time axis) becomes the window's padding;
  // a pad of the feature dim, a pad by a non-zero value and a pad before a
  // base-dilated (transposed) window stay.
  AlgebraicSimplifier s;
  EXPECT_EQ(Apply(s, R"(HloModule m

ENTRY main {
  x = f32[2,8,3]{2,1,0} parameter(0)
  w = f32[4,3,3]{2,1,0} parameter(1)
  z = f32[] constant(0)
  one = f32[] constant(1)
  p = f32[2,12,3]{2,1,0} pad(x, z), padding=0_0x4_0x0_0
  a = f32[2,9,4]{2,1,0} convolution(p, w), window={size=3 pad=0_1 rhs_dilate=2}, dim_labels=b0f_oi0->b0f
  pf = f32[2,8,4]{2,1,0} pad(x, z), padding=0_0x0_0x0_1
  w4 = f32[4,4,3]{2,1,0} parameter(2)
  b = f32[2,6,4]{2,1,0} convolution(pf, w4), window={size=3}, dim_labels=b0f_oi0->b0f
  p1 = f32[2,12,3]{2,1,0} pad(x, one), padding=0_0x4_0x0_0
  c = f32[2,10,4]{2,1,0} convolution(p1, w), window={size=3}, dim_labels=b0f_oi0->b0f
  d = f32[2,21,4]{2,1,0} convolution(p, w), window={size=3 lhs_dilate=2}, dim_labels=b0f_oi0->b0f
  ROOT t = (f32[2,9,4]{2,1,0}, f32[2,6,4]{2,1,0}, f32[2,10,4]{2,1,0}, f32[2,21,4]{2,1,0}) tuple(a, b, c, d)
}
)"),
            R"(HloModule m

ENTRY main {
  x = f32[2,8,3]{2,1,0} parameter(0)
  w = f32[4,3,3]{2,1,0} parameter(1)
  w4 = f32[4,4,3]{2,1,0} parameter(2)
  a = f32[2,9,4]{2,1,0} convolution(x, w), window={size=3 pad=4_1 rhs_dilate=2}, dim_labels=b0f_oi0->b0f
  z = f32[] constant(0)
  pf = f32[2,8,4]{2,1,0} pad(x, z), padding=0_0x0_0x0_1
  b = f32[2,6,4]{2,1,0} convolution(pf, w4), window={size=3}, dim_labels=b0f_oi0->b0f
  one = f32[] constant(1)
  p1 = f32[2,12,3]{2,1,0} pad(x, one), padding=0_0x4_0x0_0
  c = f32[2,10,4]{2,1,0} convolution(p1, w), window={size=3}, dim_labels=b0f_oi0->b0f
  p = f32[2,12,3]{2,1,0} pad(x, z), padding=0_0x4_0x0_0
  d = f32[2,21,4]{2,1,0} convolution(p, w), window={size=3 lhs_dilate=2}, dim_labels=b0f_oi0->b0f
  ROOT t = (f32[2,9,4]{2,1,0}, f32[2,6,4]{2,1,0}, f32[2,10,4]{2,1,0}, f32[2,21,4]{2,1,0}) tuple(a, b, c, d)
}
)");
}

TEST(AlgebraicSimplifier, KeepsFloatAddOfZero) {
  // x + 0 is not x for x = -0.0, so floats keep the add.
  AlgebraicSimplifier s;
  const char* text = R"(HloModule m

ENTRY main {
  x = f32[2]{0} parameter(0)
  z = f32[] constant(0)
  zs = f32[2]{0} broadcast(z), dimensions={}
  ROOT y = f32[2]{0} add(x, zs)
}
)";
  EXPECT_EQ(Apply(s, text), text);
}

}  // namespace
}  // namespace xonnx::passes

namespace xonnx::passes {
namespace {

constexpr char kSoftmaxModule[] = R"(HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  c = f32[] constant(0.5)
  cb = f32[2,3]{1,0} broadcast(c), dimensions={}
  e = f32[2,3]{1,0} exponential(x)
  m = f32[2,3]{1,0} multiply(e, cb)
  zero = f32[] constant(0)
  sum = f32[2]{0} reduce(m, zero), dimensions={1}, to_apply=add
  sb = f32[2,3]{1,0} broadcast(sum), dimensions={0}
  ROOT d = f32[2,3]{1,0} divide(m, sb)
}
)";

TEST(ConvertPrecision, ComputesIn16BitsAndAccumulatesInF32) {
  ConvertPrecision pass(hlo::F16, hlo::F32);
  std::string out = Apply(pass, kSoftmaxModule);
  auto m = hlo::ParseText(out);
  ASSERT_TRUE(m.ok()) << out;
  ASSERT_TRUE(hlo::Verify(**m).ok()) << out;
  // The input arrives in f32 and is converted down; the elementwise work is
  // f16; the reduction takes f32 operands and keeps its f32 computation; the
  // result leaves in f32.
  EXPECT_NE(out.find("x = f32[2,3]{1,0} parameter(0)"), std::string::npos) << out;
  EXPECT_NE(out.find("f16[2,3]{1,0} exponential("), std::string::npos) << out;
  EXPECT_NE(out.find("c = f16[] constant(0.5)"), std::string::npos) << out;
  EXPECT_NE(out.find("f32[2]{0} reduce("), std::string::npos) << out;
  EXPECT_NE(out.find("s = f32[] add(a, b)"), std::string::npos) << out;
  EXPECT_NE(out.find("f16[2]{0} convert(sum)"), std::string::npos) << out;
  EXPECT_NE(out.find("f16[2,3]{1,0} divide("), std::string::npos) << out;
  EXPECT_NE(out.find("ROOT"), std::string::npos);
  EXPECT_NE(out.find("= f32[2,3]{1,0} convert(d)"), std::string::npos) << out;
}

TEST(ConvertPrecision, IntegerSumsAreScaledInF32) {
  // A quantized product's s32 sums exceed f16's range before their scale
  // brings them back: the convert and the scaling multiply stay f32, the
  // bias add after them is f16. An s8 value widened for a multiply fits f16
  // and is converted as usual.
  ConvertPrecision pass(hlo::F16, hlo::F32);
  std::string out = Apply(pass, R"(HloModule m

ENTRY main {
  a = s32[4,8]{1,0} parameter(0)
  w = s32[8,3]{1,0} parameter(1)
  acc = s32[4,3]{1,0} dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  f = f32[4,3]{1,0} convert(acc)
  s = f32[] parameter(2)
  sb = f32[4,3]{1,0} broadcast(s), dimensions={}
  y = f32[4,3]{1,0} multiply(f, sb)
  b = f32[4,3]{1,0} parameter(3)
  z = f32[4,3]{1,0} add(y, b)
  q = s8[4,3]{1,0} parameter(4)
  qf = f32[4,3]{1,0} convert(q)
  ROOT r = f32[4,3]{1,0} multiply(z, qf)
}
)");
  auto m = hlo::ParseText(out);
  ASSERT_TRUE(m.ok()) << out;
  ASSERT_TRUE(hlo::Verify(**m).ok()) << out;
  EXPECT_NE(out.find("f = f32[4,3]{1,0} convert(acc)"), std::string::npos) << out;
  EXPECT_NE(out.find("y = f32[4,3]{1,0} multiply(f, "), std::string::npos) << out;
  EXPECT_NE(out.find("f16[4,3]{1,0} convert(y)"), std::string::npos) << out;
  EXPECT_NE(out.find("z = f16[4,3]{1,0} add("), std::string::npos) << out;
  EXPECT_NE(out.find("qf = f16[4,3]{1,0} convert(q)"), std::string::npos) << out;
}

TEST(ConvertPrecision, IoTypeOnlyChangesTheBoundary) {
  ConvertPrecision pass(hlo::F32, hlo::BF16);
  std::string out = Apply(pass, kSoftmaxModule);
  auto m = hlo::ParseText(out);
  ASSERT_TRUE(m.ok()) << out;
  ASSERT_TRUE(hlo::Verify(**m).ok()) << out;
  EXPECT_NE(out.find("x = bf16[2,3]{1,0} parameter(0)"), std::string::npos) << out;
  EXPECT_NE(out.find("f32[2,3]{1,0} exponential("), std::string::npos) << out;
  EXPECT_NE(out.find("= bf16[2,3]{1,0} convert(d)"), std::string::npos) << out;
}

TEST(ConvertPrecision, F32EverywhereIsANoOp) {
  ConvertPrecision pass(hlo::F32, hlo::F32);
  bool changed = true;
  std::string out = Apply(pass, kSoftmaxModule, &changed);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace xonnx::passes

namespace xonnx::passes {
namespace {

TEST(ConvertPrecision, RefusesBitcastsOfF32Values) {
  ConvertPrecision pass(hlo::F16, hlo::F32);
  EXPECT_EQ(Apply(pass, R"(HloModule m

ENTRY main {
  x = f32[2]{0} parameter(0)
  ROOT b = s32[2]{0} bitcast-convert(x)
}
)"),
            "'b': bitcast-convert of f32 values cannot be computed in f16");
}

}  // namespace
}  // namespace xonnx::passes
