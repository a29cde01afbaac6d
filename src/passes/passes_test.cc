#include <gtest/gtest.h>

#include "hlo/builder.h"
#include "hlo/printer.h"
#include "passes/algebraic_simplifier.h"
#include "passes/constant_folding.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/pipeline.h"

namespace xonnx::passes {
namespace {

using namespace hlo;  // NOLINT

// Entry text without metadata, the form the expectations below use.
std::string Text(const Module& m) {
  PrintOptions o;
  o.print_metadata = false;
  return ToText(m, o);
}

TEST(Dce, RemovesUnusedInstructions) {
  Module m("m");
  Builder b(&m, "main");
  auto* x = b.Parameter(0, Shape(F32, {2}), "x");
  b.Unary(Opcode::kExp, x);  // dead
  m.set_entry(*b.Build(b.Unary(Opcode::kNegate, x)));
  // Build() already canonicalizes; add a dead instruction after the fact.
  auto dead = std::make_unique<Instruction>(Opcode::kAbs, Shape(F32, {2}));
  dead->AppendOperand(x);
  m.entry()->AddInstruction(std::move(dead));
  Dce dce;
  EXPECT_TRUE(*dce.Run(&m));
  EXPECT_EQ(Text(m), "HloModule m\n\nENTRY main {\n  x = f32[2]{0} parameter(0)\n  ROOT negate = f32[2]{0} negate(x)\n}\n");
  EXPECT_FALSE(*dce.Run(&m));
}

TEST(Cse, MergesIdenticalInstructions) {
  Module m("m");
  Builder b(&m, "main");
  auto* x = b.Parameter(0, Shape(F32, {2}), "x");
  auto* e1 = b.Unary(Opcode::kExp, x);
  auto* e2 = b.Unary(Opcode::kExp, x);
  m.set_entry(*b.Build(b.Binary(Opcode::kAdd, e1, e2)));
  Cse cse;
  EXPECT_TRUE(*cse.Run(&m));
  EXPECT_EQ(Text(m),
            "HloModule m\n\nENTRY main {\n  x = f32[2]{0} parameter(0)\n  exponential = f32[2]{0} exponential(x)\n"
            "  ROOT add = f32[2]{0} add(exponential, exponential)\n}\n");
}

TEST(ConstantFolding, FoldsThroughTheEvaluator) {
  Module m("m");
  Builder b(&m, "main");
  auto* x = b.Parameter(0, Shape(S64, {3}), "x");
  auto* k = b.Constant(Literal::Vector<int64_t>({1, 2, 3}));
  auto* k2 = b.Binary(Opcode::kMultiply, k, k);
  m.set_entry(*b.Build(b.Binary(Opcode::kAdd, x, k2)));
  ConstantFolding cf;
  EXPECT_TRUE(*cf.Run(&m));
  Dce dce;
  ASSERT_TRUE(dce.Run(&m).ok());
  EXPECT_EQ(Text(m),
            "HloModule m\n\nENTRY main {\n  x = s64[3]{0} parameter(0)\n  constant.1 = s64[3]{0} constant({1, 4, 9})\n"
            "  ROOT add = s64[3]{0} add(x, constant.1)\n}\n");
}

TEST(ConstantFolding, RespectsSizeCap) {
  Module m("m");
  Builder b(&m, "main");
  auto* k = b.Constant(Literal(Shape(F32, {64})));
  m.set_entry(*b.Build(b.Unary(Opcode::kExp, k)));
  ConstantFolding cf(/*max_elements=*/16);
  EXPECT_FALSE(*cf.Run(&m));
}

TEST(AlgebraicSimplifier, RemovesIdentities) {
  Module m("m");
  Builder b(&m, "main");
  auto* x = b.Parameter(0, Shape(F32, {2, 3}), "x");
  auto* one = b.Broadcast(b.ScalarConstant(F32, 1), {2, 3}, {});
  auto* mul = b.Binary(Opcode::kMultiply, x, one);                 // x * 1 -> x
  auto* t = b.Transpose(b.Transpose(mul, {1, 0}), {1, 0});          // transpose pair -> x
  auto* r = b.Reshape(b.Reshape(t, {3, 2}), {6});                  // reshape chain -> one reshape
  m.set_entry(*b.Build(b.Unary(Opcode::kNegate, b.Unary(Opcode::kNegate, r))));  // -(-x) -> x
  ASSERT_TRUE(RunStandardPipeline(&m, /*verify_each=*/true).ok());
  EXPECT_EQ(Text(m), "HloModule m\n\nENTRY main {\n  x = f32[2,3]{1,0} parameter(0)\n"
                     "  ROOT reshape.1 = f32[6]{0} reshape(x)\n}\n");
}

}  // namespace
}  // namespace xonnx::passes
