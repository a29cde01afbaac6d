// The small-dot kernel against the reference evaluator over a table of
// forms: a decoder step's attention (Q . K^T with the keys read along
// their rows, P . V along their columns) at slot counts that leave partial
// groups of 16 and 64 columns, 1 to 4 rows, contractions of 1 to 300 with
// partial vectors, A stored transposed (its rows gathered), operands read
// through the views of a head split, several batch dims, products large
// enough to split between the threads, and NaN and infinity in either
// operand. Forms it must not take (5 rows, constant weights) run where
// they did.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"

namespace xonnx::cpu {
namespace {

using hlo::Builder;
using hlo::F32;
using hlo::Instruction;
using hlo::Literal;
using hlo::Shape;

Literal RandomValues(const Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = dist(rng);
  return l;
}

struct Form {
  std::string name;
  std::vector<Shape> params;
  std::function<Instruction*(Builder&, const std::vector<Instruction*>&)> body;
  int64_t small_dots;  // how many of the program's dots the kernel must run
  // Values written into the arguments: {parameter, element, value}.
  std::vector<std::tuple<int, int64_t, float>> specials = {};
  // The operands are read through views: no slice, transpose or copy runs.
  bool views = false;
};

// Q . K^T then P . V for `heads` heads of `dim` over `slots` cached slots
// and `rows` new tokens, Q and K stored [heads, rows or slots, dim].
Form Attention(int64_t heads, int64_t rows, int64_t slots, int64_t dim) {
  return {absl::StrCat("attention_h", heads, "_rows", rows, "_slots", slots, "_dim", dim),
          {Shape(F32, {heads, rows, dim}), Shape(F32, {heads, slots, dim}), Shape(F32, {heads, slots, dim})},
          [](Builder& b, const std::vector<Instruction*>& p) {
            Instruction* scores = b.Dot(p[0], p[1], hlo::BatchedDotDims(2, 2, 1));  // [heads, rows, slots]
            return b.Dot(scores, p[2], hlo::BatchedDotDims(2, 1, 1));               // [heads, rows, dim]
          },
          2};
}

std::vector<Form> Forms() {
  std::vector<Form> forms;
  for (int64_t slots : {1, 15, 16, 17, 63, 64, 65, 100, 300})
    for (int64_t rows : {1, 4}) forms.push_back(Attention(4, rows, slots, 64));
  for (int64_t dim : {1, 5, 16, 37, 100}) forms.push_back(Attention(2, 3, 33, dim));
  // Large enough that both threads share it.
  forms.push_back(Attention(16, 1, 512, 64));
  forms.push_back(Attention(16, 2, 700, 128));
  // Rows 2 and 3 with every contraction length from 1 to 40 in one
  // program, both orientations of B.
  forms.push_back({"contractions_1_to_40",
                   {Shape(F32, {3, 2, 40}), Shape(F32, {3, 40, 70}), Shape(F32, {3, 70, 40})},
                   [](Builder& b, const std::vector<Instruction*>& p) {
                     std::vector<Instruction*> outs;
                     for (int64_t k = 1; k <= 40; ++k) {
                       Instruction* a = b.Slice(p[0], {0, 0, 0}, {3, 2, k}, {1, 1, 1});
                       Instruction* kn = b.Slice(p[1], {0, 0, 0}, {3, k, 70}, {1, 1, 1});
                       Instruction* nk = b.Slice(p[2], {0, 0, 0}, {3, 70, k}, {1, 1, 1});
                       outs.push_back(b.Dot(a, kn, hlo::BatchedDotDims(2, 1, 1)));
                       outs.push_back(b.Dot(a, nk, hlo::BatchedDotDims(2, 2, 1)));
                     }
                     return b.Tuple(outs);
                   },
                   80});
  // A stored [k, m]: its rows are gathered.
  forms.push_back({"lhs_transposed",
                   {Shape(F32, {5, 90, 3}), Shape(F32, {5, 200, 90}), Shape(F32, {5, 90, 33})},
                   [](Builder& b, const std::vector<Instruction*>& p) {
                     return b.Tuple({b.Dot(p[0], p[1], hlo::BatchedDotDims(1, 2, 1)),
                                     b.Dot(p[0], p[2], hlo::BatchedDotDims(1, 1, 1))});
                   },
                   2});
  // A decoder step's head split: Q, K and V cut from one projection
  // [1, 3 * heads * dim], reshaped and transposed, read through views.
  forms.push_back({"head_split_views",
                   {Shape(F32, {2, 1, 3 * 4 * 32}), Shape(F32, {2, 4, 50, 32}), Shape(F32, {2, 4, 50, 32})},
                   [](Builder& b, const std::vector<Instruction*>& p) {
                     auto head = [&](int64_t at) {
                       Instruction* s = b.Slice(p[0], {0, 0, at}, {2, 1, at + 128}, {1, 1, 1});
                       return b.Transpose(b.Reshape(s, {2, 1, 4, 32}), {0, 2, 1, 3});  // [2, 4, 1, 32]
                     };
                     Instruction* q = head(0);
                     Instruction* k = b.Concatenate({p[1], head(128)}, 2);  // [2, 4, 51, 32]
                     Instruction* v = b.Concatenate({p[2], head(256)}, 2);
                     Instruction* scores = b.Dot(q, k, hlo::BatchedDotDims(3, 3, 2));  // [2, 4, 1, 51]
                     return b.Dot(scores, v, hlo::BatchedDotDims(3, 2, 2));            // [2, 4, 1, 32]
                   },
                   2});
  // A decoder step's probabilities over the cached and the new slot,
  // sliced for the products by the cached values and by the new one (as
  // DotOfConcatenate splits P . Concat(past, new)), with the new keys and
  // values cut from a projection: every operand read in place.
  forms.push_back({"probabilities_sliced_in_place",
                   {Shape(F32, {1, 4, 1, 61}), Shape(F32, {1, 4, 60, 32}), Shape(F32, {1, 1, 3 * 4 * 32})},
                   [](Builder& b, const std::vector<Instruction*>& p) {
                     Instruction* past = b.Slice(p[0], {0, 0, 0, 0}, {1, 4, 1, 60}, {1, 1, 1, 1});
                     Instruction* now = b.Slice(p[0], {0, 0, 0, 60}, {1, 4, 1, 61}, {1, 1, 1, 1});
                     Instruction* cut = b.Slice(p[2], {0, 0, 256}, {1, 1, 384}, {1, 1, 1});
                     Instruction* v_new = b.Transpose(b.Reshape(cut, {1, 1, 4, 32}), {0, 2, 1, 3});
                     return b.Tuple({b.Dot(past, p[1], hlo::BatchedDotDims(3, 2, 2)),
                                     b.Dot(now, v_new, hlo::BatchedDotDims(3, 2, 2))});
                   },
                   2,
                   {},
                   true});
  // Not finite values reach the result as the evaluator's do.
  Form special = Attention(2, 2, 40, 20);
  special.name = "not_finite_values";
  special.specials = {{0, 3, NAN}, {1, 100, INFINITY}, {2, 7, -INFINITY}, {1, 400, 0.0f}};
  forms.push_back(special);
  // Not for this kernel: 5 rows, and constant weights.
  forms.push_back(
      {"five_rows_and_constant_weights",
       {Shape(F32, {2, 5, 16}), Shape(F32, {2, 30, 16})},
       [](Builder& b, const std::vector<Instruction*>& p) {
         Instruction* w = b.Constant(RandomValues(Shape(F32, {2, 16, 8}), 5));
         Instruction* one = b.Slice(p[0], {0, 0, 0}, {2, 1, 16}, {1, 1, 1});
         return b.Tuple({b.Dot(p[0], p[1], hlo::BatchedDotDims(2, 2, 1)), b.Dot(one, w, hlo::BatchedDotDims(2, 1, 1))});
       },
       0});
  return forms;
}

// Equal as values (NaN where the evaluator has NaN) within float
// rounding of sums in another order.
void ExpectClose(const Literal& got, const Literal& want, const std::string& what) {
  ASSERT_EQ(got.element_count(), want.element_count()) << what;
  for (int64_t i = 0; i < got.element_count(); ++i) {
    float g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << what << " element " << i << ": " << g << " vs " << w;
      continue;
    }
    EXPECT_NEAR(g, w, 1e-4 * (1 + std::abs(w))) << what << " element " << i;
  }
}

class SmallDots : public ::testing::TestWithParam<int> {};

TEST_P(SmallDots, MatchTheEvaluator) {
  Form form = Forms()[GetParam()];
  auto m = std::make_unique<hlo::Module>(form.name);
  Builder b(m.get(), "main");
  std::vector<Instruction*> params;
  std::vector<Literal> args;
  for (size_t i = 0; i < form.params.size(); ++i) {
    params.push_back(b.Parameter(i, form.params[i], absl::StrCat("p", i)));
    args.push_back(RandomValues(form.params[i], 31 + i));
  }
  for (const auto& [param, at, value] : form.specials) args[param].data<float>()[at] = value;
  auto comp = b.Build(form.body(b, params));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  auto expected = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto exe = Executable::Compile(std::move(m), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  int64_t small = 0;
  for (const auto& [kind, n] : (*exe)->ThunkSummary())
    if (kind == "small-dot") small = n;
  EXPECT_EQ(small, form.small_dots) << form.name;
  if (form.views) {
    for (const auto& [kind, n] : (*exe)->ThunkSummary())
      EXPECT_TRUE(kind != "slice" && kind != "transpose" && kind != "copy") << form.name << ": " << kind;
  }

  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  std::vector<Literal> outs;
  for (const Shape& s : (*exe)->output_shapes()) outs.emplace_back(s);
  std::vector<void*> out_ptrs;
  for (Literal& o : outs) out_ptrs.push_back(o.untyped_data());
  ASSERT_TRUE((*exe)->Execute(in, out_ptrs).ok());
  std::vector<const Literal*> want;
  if (expected->shape().IsTuple())
    for (const Literal& e : expected->tuple_elements()) want.push_back(&e);
  else
    want.push_back(&*expected);
  ASSERT_EQ(want.size(), outs.size());
  for (size_t k = 0; k < outs.size(); ++k) ExpectClose(outs[k], *want[k], absl::StrCat(form.name, " output ", k));
}

INSTANTIATE_TEST_SUITE_P(Forms, SmallDots, ::testing::Range(0, static_cast<int>(Forms().size())),
                         [](const ::testing::TestParamInfo<int>& info) { return Forms()[info.param].name; });

}  // namespace
}  // namespace xonnx::cpu
