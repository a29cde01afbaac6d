// XlaCompatibility and ExactProducts: what they rewrite, and that the
// rewritten programs compute the same values on the reference evaluator.
#include "passes/xla_compatibility.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "evaluator/evaluator.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/rewrite.h"
#include "hlo/verifier.h"
#include "passes/dce.h"
#include "passes/exact_products.h"

namespace xonnx::passes {
namespace {

using hlo::Literal;

struct Rewritten {
  std::unique_ptr<hlo::Module> before, after;
};

Rewritten Apply(Pass& pass, const std::string& text, bool expect_change) {
  Rewritten r;
  auto before = hlo::ParseText(text);
  auto after = hlo::ParseText(text);
  EXPECT_TRUE(before.ok() && after.ok()) << text;
  if (!before.ok() || !after.ok()) return r;
  auto changed = pass.Run(after->get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed.value_or(!expect_change), expect_change);
  EXPECT_TRUE(Dce().Run(after->get()).ok());
  EXPECT_TRUE(hlo::Verify(**after).ok()) << hlo::ToText(**after);
  r.before = std::move(*before);
  r.after = std::move(*after);
  return r;
}

int Count(const hlo::Module& m, hlo::Opcode op, hlo::PrimitiveType type) {
  int n = 0;
  for (const auto& i : m.entry()->instructions()) n += i->opcode() == op && i->shape().element_type == type;
  return n;
}

// Both programs' results on the same arguments, element by element.
void ExpectSameResults(const Rewritten& r, const std::vector<Literal>& args) {
  auto want = eval::EvaluateModule(*r.before, args);
  auto got = eval::EvaluateModule(*r.after, args);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(want->shape(), got->shape());
  for (int64_t k = 0; k < want->element_count(); ++k)
    EXPECT_EQ(want->GetAsDouble(k), got->GetAsDouble(k)) << "element " << k;
}

TEST(XlaCompatibility, IntegerConvolutionRunsInFloat64Exactly) {
  XlaCompatibility pass;
  Rewritten r = Apply(pass, R"(HloModule m
ENTRY main {
  x = u8[1,3,6,6] parameter(0)
  w = s8[4,3,3,3] parameter(1)
  xs = s32[1,3,6,6] convert(x)
  z = s32[] constant(-128)
  zb = s32[1,3,6,6] broadcast(z), dimensions={}
  xc = s32[1,3,6,6] add(xs, zb)
  ws = s32[4,3,3,3] convert(w)
  ROOT c = s32[1,4,6,6] convolution(xc, ws), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}
)",
                      true);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(Count(*r.after, hlo::Opcode::kConvolution, hlo::S32), 0) << hlo::ToText(*r.after);
  EXPECT_EQ(Count(*r.after, hlo::Opcode::kConvolution, hlo::F64), 1);
  Literal x(hlo::Shape(hlo::U8, {1, 3, 6, 6})), w(hlo::Shape(hlo::S8, {4, 3, 3, 3}));
  // Extremes of both ranges, so that the sums reach what 8 bits allow.
  for (int64_t k = 0; k < x.element_count(); ++k) x.data<uint8_t>()[k] = k % 3 == 0 ? 255 : (k * 37) % 256;
  for (int64_t k = 0; k < w.element_count(); ++k) w.data<int8_t>()[k] = k % 2 ? -128 : (k * 29) % 128;
  std::vector<Literal> args;
  args.push_back(std::move(x));
  args.push_back(std::move(w));
  ExpectSameResults(r, args);
}

TEST(XlaCompatibility, ClampGetsBroadcastBoundsAndDivisionRunsInFloat64) {
  XlaCompatibility pass;
  Rewritten r = Apply(pass, R"(HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  s = f32[2,3] parameter(1)
  q = f32[2,3] divide(x, s)
  lo = f32[] constant(0)
  hi = f32[] constant(255)
  ROOT c = f32[2,3] clamp(lo, q, hi)
}
)",
                      true);
  ASSERT_TRUE(r.after);
  std::string text = hlo::ToText(*r.after);
  EXPECT_EQ(Count(*r.after, hlo::Opcode::kDivide, hlo::F64), 1) << text;
  EXPECT_EQ(Count(*r.after, hlo::Opcode::kBroadcast, hlo::F32), 2) << text;
  for (const auto& i : r.after->entry()->instructions()) {
    if (i->opcode() != hlo::Opcode::kClamp) continue;
    for (const hlo::Instruction* b : i->operands()) {
      EXPECT_EQ(b->shape().rank(), 2) << text;
    }
  }
  // -2.5 / (5 / 255) is -127.49999..., not -127.5: DynamicQuantizeLinear's
  // case where an approximate quotient rounds the other way.
  Literal x(hlo::Shape(hlo::F32, {2, 3})), s(hlo::Shape(hlo::F32, {2, 3}));
  const float xs[] = {-2.5f, 2.f, -3.f, 1.34f, 0.5f, 1e30f};
  for (int k = 0; k < 6; ++k) {
    x.data<float>()[k] = xs[k];
    s.data<float>()[k] = 5.f / 255.f;
  }
  std::vector<Literal> args;
  args.push_back(std::move(x));
  args.push_back(std::move(s));
  ExpectSameResults(r, args);
}

// What XLA's GPU compiler does when it allows excess precision: a convert
// to f32 followed by one back to f64 (through a broadcast, which it moves
// the convert across) becomes the f64 value itself.
void DropRoundTrips(hlo::Module* m) {
  hlo::Computation* c = m->entry();
  std::vector<hlo::Instruction*> converts;
  for (const auto& i : c->instructions())
    if (i->opcode() == hlo::Opcode::kConvert && i->shape().element_type == hlo::F64) converts.push_back(i.get());
  for (hlo::Instruction* i : converts) {
    hlo::Instruction* narrow = i->operand(0);
    hlo::Instruction* broadcast = nullptr;
    if (narrow->opcode() == hlo::Opcode::kBroadcast) {
      broadcast = narrow;
      narrow = narrow->operand(0);
    }
    if (narrow->opcode() != hlo::Opcode::kConvert || narrow->shape().element_type != hlo::F32 ||
        narrow->operand(0)->shape().element_type != hlo::F64)
      continue;
    hlo::Instruction* wide = narrow->operand(0);
    if (broadcast) wide = hlo::AddBroadcast(c, wide, i->shape().dims, broadcast->dimensions, i);
    c->ReplaceAllUsesWith(i, wide);
  }
  c->Canonicalize();
}

TEST(XlaCompatibility, QuotientsStayRoundedWhenXlaDropsConvertPairs) {
  XlaCompatibility pass;
  // DynamicQuantizeLinear's chain: a scale divided out of a range, then
  // values divided by that scale and rounded to integers.
  Rewritten r = Apply(pass, R"(HloModule m
ENTRY main {
  x = f32[6] parameter(0)
  range = f32[] parameter(1)
  n = f32[] constant(255)
  scale = f32[] divide(range, n)
  sb = f32[6] broadcast(scale), dimensions={}
  q = f32[6] divide(x, sb)
  ROOT r = f32[6] round-nearest-even(q)
}
)",
                      true);
  ASSERT_TRUE(r.after);
  DropRoundTrips(r.after.get());
  ASSERT_TRUE(hlo::Verify(*r.after).ok()) << hlo::ToText(*r.after);
  Literal x(hlo::Shape(hlo::F32, {6}));
  const float xs[] = {-2.5f, 2.f, -3.f, 1.34f, 0.5f, 7.5f};
  for (int k = 0; k < 6; ++k) x.data<float>()[k] = xs[k];
  std::vector<Literal> args;
  args.push_back(std::move(x));
  args.push_back(Literal::Scalar<float>(5.f));
  ExpectSameResults(r, args);
  // -2.5 / (5 / 255 rounded to f32) is -127.49999..., which rounds to -127.
  auto got = eval::EvaluateModule(*r.after, args);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data<float>()[0], -127.f);
}

// What XLA's algebraic simplifier does to a division by a constant: a
// product with the constant's reciprocal.
void DivideByReciprocal(hlo::Module* m) {
  hlo::Computation* c = m->entry();
  std::vector<hlo::Instruction*> divides;
  for (const auto& i : c->instructions())
    if (i->opcode() == hlo::Opcode::kDivide && i->shape().element_type == hlo::F64) divides.push_back(i.get());
  for (hlo::Instruction* d : divides) {
    hlo::Instruction* divisor = d->operand(1);
    while (divisor->opcode() == hlo::Opcode::kBroadcast || divisor->opcode() == hlo::Opcode::kConvert)
      divisor = divisor->operand(0);
    if (divisor->opcode() != hlo::Opcode::kConstant) continue;
    double inv = 1.0 / divisor->literal->GetAsDouble(0);
    hlo::Instruction* k =
        hlo::AddBroadcast(c, hlo::AddConstant(c, Literal::Scalar<double>(inv)), d->shape().dims, {}, d);
    c->ReplaceAllUsesWith(d, hlo::AddBinary(c, hlo::Opcode::kMultiply, d->operand(0), k, d));
  }
  c->Canonicalize();
  // And what it does to a product of products with constant factors: one
  // product with the folded factor, (x * c1) * c2 => x * (c1 * c2).
  auto factor = [](hlo::Instruction* i) -> std::optional<double> {
    if (i->opcode() == hlo::Opcode::kBroadcast) i = i->operand(0);
    if (i->opcode() != hlo::Opcode::kConstant || i->shape().element_type != hlo::F64) return std::nullopt;
    return i->literal->GetAsDouble(0);
  };
  std::vector<hlo::Instruction*> products;
  for (const auto& i : c->instructions())
    if (i->opcode() == hlo::Opcode::kMultiply && i->shape().element_type == hlo::F64) products.push_back(i.get());
  for (hlo::Instruction* p : products) {
    hlo::Instruction* inner = p->operand(0);
    std::optional<double> c2 = factor(p->operand(1));
    if (!c2 || inner->opcode() != hlo::Opcode::kMultiply) continue;
    std::optional<double> c1 = factor(inner->operand(1));
    if (!c1) continue;
    hlo::Instruction* k =
        hlo::AddBroadcast(c, hlo::AddConstant(c, Literal::Scalar<double>(*c1 * *c2)), p->shape().dims, {}, p);
    c->ReplaceAllUsesWith(p, hlo::AddBinary(c, hlo::Opcode::kMultiply, inner->operand(0), k, p));
  }
  c->Canonicalize();
}

TEST(XlaCompatibility, QuotientsStayRoundedWhenXlaMultipliesByTheReciprocal) {
  XlaCompatibility pass;
  // QLinearLeakyRelu's requantization: values on a grid of the scale, times
  // alpha, divided by the scale again, land on or next to halves.
  Rewritten r = Apply(pass, R"(HloModule m
ENTRY main {
  x = f32[601] parameter(0)
  s = f32[] constant(0.04)
  sb = f32[601] broadcast(s), dimensions={}
  q = f32[601] divide(x, sb)
  ROOT r = f32[601] round-nearest-even(q)
}
)",
                      true);
  ASSERT_TRUE(r.after);
  DivideByReciprocal(r.after.get());
  DropRoundTrips(r.after.get());
  ASSERT_TRUE(hlo::Verify(*r.after).ok()) << hlo::ToText(*r.after);
  EXPECT_EQ(Count(*r.after, hlo::Opcode::kDivide, hlo::F64), 0) << hlo::ToText(*r.after);
  Literal x(hlo::Shape(hlo::F32, {601}));
  int halves = 0;
  for (int k = 0; k < 601; ++k) {
    float v = static_cast<float>(k - 300) * 0.04f * 0.1f;
    x.data<float>()[k] = v;
    float q = v / 0.04f;
    halves += q - std::floor(q) == 0.5f;
  }
  EXPECT_GT(halves, 10);  // the grid does reach exact halves
  std::vector<Literal> args;
  args.push_back(std::move(x));
  ExpectSameResults(r, args);
}

TEST(XlaCompatibility, DivisionByZeroStaysInfinite) {
  XlaCompatibility pass;
  Rewritten r = Apply(pass, R"(HloModule m
ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT q = f32[4] divide(a, b)
}
)",
                      true);
  ASSERT_TRUE(r.after);
  Literal a(hlo::Shape(hlo::F32, {4})), b(hlo::Shape(hlo::F32, {4}));
  const float as[] = {1.f, -1.f, 0.f, 3e38f}, bs[] = {0.f, 0.f, 0.f, 1e-38f};
  for (int k = 0; k < 4; ++k) {
    a.data<float>()[k] = as[k];
    b.data<float>()[k] = bs[k];
  }
  std::vector<Literal> args;
  args.push_back(std::move(a));
  args.push_back(std::move(b));
  auto want = eval::EvaluateModule(*r.before, args);
  auto got = eval::EvaluateModule(*r.after, args);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(got->data<float>()[0], INFINITY);
  EXPECT_EQ(got->data<float>()[1], -INFINITY);
  EXPECT_TRUE(std::isnan(got->data<float>()[2]));
  EXPECT_EQ(got->data<float>()[3], INFINITY);  // overflows f32, as the f32 quotient does
  EXPECT_EQ(want->data<float>()[3], INFINITY);
}

TEST(XlaCompatibility, LeavesWhatXlaAccepts) {
  XlaCompatibility pass;
  Apply(pass, R"(HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  lo = f32[2,3] parameter(1)
  hi = f32[2,3] parameter(2)
  c = f32[2,3] clamp(lo, x, hi)
  h = f16[2,3] convert(c)
  ROOT d = f16[2,3] divide(h, h)
}
)",
        false);
}

TEST(ExactProducts, MarksFloat32ProductsOnly) {
  ExactProducts pass;
  Rewritten r = Apply(pass, R"(HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[3,4] parameter(1)
  d = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = f16[2,3] convert(a)
  g = f16[3,4] convert(b)
  e = f16[2,4] dot(h, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ef = f32[2,4] convert(e)
  ROOT s = f32[2,4] add(d, ef)
}
)",
                      true);
  ASSERT_TRUE(r.after);
  for (const auto& i : r.after->entry()->instructions()) {
    if (i->opcode() != hlo::Opcode::kDot) continue;
    EXPECT_EQ(i->precision, i->shape().element_type == hlo::F32 ? hlo::Precision::kHighest : hlo::Precision::kDefault);
  }
  std::string text = hlo::ToText(*r.after);
  EXPECT_NE(text.find("operand_precision={highest,highest}"), std::string::npos) << text;
  // The text reads back with the same precision, and running again changes nothing.
  auto back = hlo::ParseText(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(hlo::ToText(**back), text);
  EXPECT_FALSE(*pass.Run(back->get()));
}

}  // namespace
}  // namespace xonnx::passes
