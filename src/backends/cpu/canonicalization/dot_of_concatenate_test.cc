// Products by concatenations split into products by the parts: a decoder
// step's attention (keys concatenated along the sequence and read through
// a transpose, values contracted along it) at random sizes, past lengths
// of 0 included; concatenations along a free or contracted dim of either
// operand, of three parts. Each is checked twice: the pass leaves no
// concatenation of 64 KiB or more and no transpose of one, and the
// compiled program gives the evaluator's values for the program as
// written. Forms that are not split (a batch dim, a transpose that
// reorders the result, a small concatenation) keep their concatenation.
#include "backends/cpu/canonicalization/dot_of_concatenate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"

namespace xonnx::cpu {
namespace {

using hlo::Builder;
using hlo::Instruction;
using hlo::Literal;
using hlo::Shape;

Literal RandomFloats(const Shape& s, std::mt19937& rng) {
  Literal l(s);
  std::uniform_real_distribution<float> v(-1, 1);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = v(rng);
  return l;
}

struct Case {
  std::string name;
  std::unique_ptr<hlo::Module> module;
  std::vector<Literal> args;
};

// Builds a module whose parameters are `shapes` (random values) and whose
// root `body` makes of them.
template <typename Body>
Case Make(const std::string& name, const std::vector<Shape>& shapes, std::mt19937& rng, Body body) {
  Case c{name, std::make_unique<hlo::Module>(name), {}};
  Builder b(c.module.get(), "main");
  std::vector<Instruction*> ps;
  for (size_t k = 0; k < shapes.size(); ++k) {
    ps.push_back(b.Parameter(static_cast<int64_t>(k), shapes[k], absl::StrCat("p", k)));
    c.args.push_back(RandomFloats(shapes[k], rng));
  }
  auto comp = b.Build(body(b, ps));
  EXPECT_TRUE(comp.ok()) << name << ": " << comp.status();
  c.module->set_entry(*comp);
  return c;
}

hlo::DotDimensionNumbers Dims(std::vector<int64_t> lb, std::vector<int64_t> lc, std::vector<int64_t> rb,
                              std::vector<int64_t> rc) {
  hlo::DotDimensionNumbers d;
  d.lhs_batch_dimensions = std::move(lb);
  d.lhs_contracting_dimensions = std::move(lc);
  d.rhs_batch_dimensions = std::move(rb);
  d.rhs_contracting_dimensions = std::move(rc);
  return d;
}

// The largest concatenation left, in bytes, and whether a transpose reads one.
std::pair<int64_t, bool> Concatenations(const hlo::Module& m) {
  int64_t largest = 0;
  bool transposed = false;
  for (const auto& i : m.entry()->instructions()) {
    if (i->opcode() == hlo::Opcode::kConcatenate) largest = std::max(largest, i->shape().ByteSize());
    if (i->opcode() == hlo::Opcode::kTranspose && i->operand(0)->opcode() == hlo::Opcode::kConcatenate)
      transposed = true;
  }
  return {largest, transposed};
}

// The pass's effect (split or not), then the compiled values against the
// evaluator's.
void Check(Case c, bool split) {
  auto want = eval::EvaluateModule(*c.module, c.args);
  ASSERT_TRUE(want.ok()) << c.name << ": " << want.status();
  std::unique_ptr<hlo::Module> copy = c.module->Clone();
  auto changed = DotOfConcatenate().Run(copy.get());
  ASSERT_TRUE(changed.ok()) << c.name << ": " << changed.status();
  EXPECT_EQ(*changed, split) << c.name;
  EXPECT_TRUE(hlo::Verify(*copy).ok()) << c.name;
  auto [largest, transposed] = Concatenations(*copy);
  if (split) {
    EXPECT_LT(largest, 64 << 10) << c.name;
    EXPECT_FALSE(transposed) << c.name;
  }
  auto exe = Executable::Compile(std::move(c.module), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << c.name << ": " << exe.status();
  std::vector<const void*> in;
  for (const Literal& a : c.args) in.push_back(a.untyped_data());
  Literal got((*exe)->output_shapes()[0]);
  std::vector<void*> outs = {got.untyped_data()};
  ASSERT_TRUE((*exe)->Execute(in, outs).ok()) << c.name;
  ASSERT_EQ(got.element_count(), want->element_count());
  int wrong = 0;
  for (int64_t i = 0; i < got.element_count(); ++i) {
    const float g = got.data<float>()[i], w = want->data<float>()[i];
    if (!(std::fabs(g - w) <= 1e-4f * (1 + std::fabs(w))) && ++wrong <= 3)
      ADD_FAILURE() << c.name << " element " << i << ": " << g << " vs " << w;
  }
}

// Scores q . K^T with K = concat(past, new) along the sequence, and the
// output P . V with V likewise, at random sizes and past lengths (0 too).
TEST(DotOfConcatenate, AttentionStepsAtRandomSizes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    // Every fourth a prompt with no past; else a step of 1 token or a few.
    const int64_t b = 1 + rng() % 2, h = 4 + rng() % 5, past = trial % 4 == 0 ? 0 : 128 + rng() % 200;
    const int64_t s = trial % 4 == 0 ? 128 : 1 + (trial % 3 == 2 ? rng() % 9 : 0), d = 32 + rng() % 40;
    ASSERT_GE(b * h * (past + s) * d * 4, 64 << 10);  // large enough to split
    const std::string size = absl::StrCat("b", b, "_h", h, "_past", past, "_s", s, "_d", d);
    Shape q(hlo::F32, {b, h, s, d}), kv_past(hlo::F32, {b, h, past, d}), kv_new(hlo::F32, {b, h, s, d});
    Check(Make(absl::StrCat("scores_", size), {q, kv_past, kv_new}, rng,
               [&](Builder& bl, const std::vector<Instruction*>& p) {
                 Instruction* keys = bl.Transpose(bl.Concatenate({p[1], p[2]}, 2), {0, 1, 3, 2});
                 return bl.Dot(p[0], keys, Dims({0, 1}, {3}, {0, 1}, {2}));
               }),
          true);
    Shape probs(hlo::F32, {b, h, s, past + s});
    Check(Make(absl::StrCat("output_", size), {probs, kv_past, kv_new}, rng,
               [&](Builder& bl, const std::vector<Instruction*>& p) {
                 return bl.Dot(p[0], bl.Concatenate({p[1], p[2]}, 2), Dims({0, 1}, {3}, {0, 1}, {2}));
               }),
          true);
  }
}

// Either operand, a free or a contracted dim, three parts.
TEST(DotOfConcatenate, EitherOperandAnyDimThreeParts) {
  std::mt19937 rng(11);
  const Shape a(hlo::F32, {40, 96}), b(hlo::F32, {100, 96}), c(hlo::F32, {60, 96}), w(hlo::F32, {96, 24});
  // lhs rows: concat(a, b, c) [200, 96] . w
  Check(Make("lhs_free", {a, b, c, w}, rng,
             [&](Builder& bl, const std::vector<Instruction*>& p) {
               return bl.Dot(bl.Concatenate({p[0], p[1], p[2]}, 0), p[3], Dims({}, {1}, {}, {0}));
             }),
        true);
  // x [3, 200] . concat(a, b, c) [200, 96]: contracted.
  const Shape x(hlo::F32, {3, 200});
  Check(Make("rhs_contracted", {x, a, b, c}, rng,
             [&](Builder& bl, const std::vector<Instruction*>& p) {
               return bl.Dot(p[0], bl.Concatenate({p[1], p[2], p[3]}, 0), Dims({}, {1}, {}, {0}));
             }),
        true);
  // concat(a, b, c) [200, 96] contracted along its rows by y [200, 5] as lhs.
  const Shape y(hlo::F32, {200, 5});
  Check(Make("lhs_contracted", {a, b, c, y}, rng,
             [&](Builder& bl, const std::vector<Instruction*>& p) {
               return bl.Dot(bl.Concatenate({p[0], p[1], p[2]}, 0), p[3], Dims({}, {0}, {}, {0}));
             }),
        true);
}

// A batch dim, a transpose that would reorder the result's dims, and a
// concatenation under 64 KiB are left as written.
TEST(DotOfConcatenate, OtherFormsKeepTheirConcatenation) {
  std::mt19937 rng(13);
  const Shape part(hlo::F32, {4, 64, 40}), q(hlo::F32, {8, 3, 40});
  Check(Make("batch", {q, part, part}, rng,
             [&](Builder& bl, const std::vector<Instruction*>& p) {
               return bl.Dot(p[0], bl.Concatenate({p[1], p[2]}, 0), Dims({0}, {2}, {0}, {2}));
             }),
        false);
  // rhs [2, 70, 80] transposed to [80, 2, 70]: its free dims 80 and 70
  // would come out in the other order.
  const Shape r(hlo::F32, {2, 70, 80}), l(hlo::F32, {5, 2});
  Check(Make("reordering_transpose", {l, r, r}, rng,
             [&](Builder& bl, const std::vector<Instruction*>& p) {
               Instruction* t = bl.Transpose(bl.Concatenate({p[1], p[2]}, 1), {2, 0, 1});
               return bl.Dot(p[0], t, Dims({}, {1}, {}, {1}));
             }),
        false);
  const Shape small(hlo::F32, {16, 32}), v(hlo::F32, {2, 32});
  Check(Make("small", {v, small, small}, rng,
             [&](Builder& bl, const std::vector<Instruction*>& p) {
               return bl.Dot(p[0], bl.Concatenate({p[1], p[2]}, 0), Dims({}, {1}, {}, {1}));
             }),
        false);
}

}  // namespace
}  // namespace xonnx::cpu
