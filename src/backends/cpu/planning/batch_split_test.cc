// Batch splitting: which programs treat their batch rows independently,
// and that a program run in parts gives the evaluator's results for the
// whole batch.
#include "backends/cpu/planning/batch_split.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"

namespace xonnx::cpu {
namespace {

using hlo::Builder;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;
using hlo::Shape;

Literal RandomF32(const Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = dist(rng);
  return l;
}

// A literal whose rows along dim 0 are all equal (or, with `vary`, differ).
Literal Rows(const Shape& s, bool vary) {
  Literal l(s);
  int64_t row = s.ElementCount() / s.dims[0];
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = 0.25f * (i % row) + (vary ? i / row : 0);
  return l;
}

std::unique_ptr<hlo::Module> Build(const std::vector<Shape>& params,
                                   const std::function<Instruction*(Builder&, std::vector<Instruction*>)>& body) {
  auto m = std::make_unique<hlo::Module>("split");
  Builder b(m.get(), "main");
  std::vector<Instruction*> p;
  for (size_t k = 0; k < params.size(); ++k) p.push_back(b.Parameter(k, params[k], "p" + std::to_string(k)));
  auto c = b.Build(body(b, p));
  EXPECT_TRUE(c.ok()) << c.status();
  m->set_entry(*c);
  return m;
}

hlo::DotDimensionNumbers Contract(int64_t l, int64_t r) {
  hlo::DotDimensionNumbers d;
  d.lhs_contracting_dimensions = {l};
  d.rhs_contracting_dimensions = {r};
  return d;
}

// A small convolutional net over a batch of 4: a convolution, a bias and
// ReLU whose broadcasts are the same for every row, a global pool, a
// product with weights, a constant with equal rows added, and a second
// output read through a reshape and a slice.
std::unique_ptr<hlo::Module> SeparableNet() {
  return Build({Shape(hlo::F32, {4, 3, 6, 6})}, [](Builder& b, std::vector<Instruction*> p) {
    hlo::Window w;
    w.dimensions.resize(2, hlo::WindowDimension{3, 1, 1, 1, 1, 1, false});
    hlo::ConvolutionDimensionNumbers d;
    d.input_spatial_dimensions = d.kernel_spatial_dimensions = d.output_spatial_dimensions = {2, 3};
    Instruction* y = b.Convolution(p[0], b.Constant(RandomF32(Shape(hlo::F32, {8, 3, 3, 3}), 5)), w, d, 1);
    y = b.Binary(Opcode::kAdd, y, b.Broadcast(b.Constant(RandomF32(Shape(hlo::F32, {8}), 6)), {4, 8, 6, 6}, {1}));
    y = b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(hlo::F32, 0), {4, 8, 6, 6}, {}));
    Instruction* pooled =
        b.Reduce({y}, {b.ScalarConstant(hlo::F32, 0)}, {2, 3}, b.ScalarReducer(Opcode::kAdd, hlo::F32));
    Instruction* z = b.Dot(pooled, b.Constant(RandomF32(Shape(hlo::F32, {8, 5}), 7)), Contract(1, 0));
    z = b.Binary(Opcode::kAdd, z, b.Constant(Rows(Shape(hlo::F32, {4, 5}), false)));
    Instruction* flat = b.Slice(b.Reshape(p[0], {4, 108}), {0, 10}, {4, 30}, {1, 1});
    return b.Tuple({z, flat});
  });
}

TEST(BatchSplit, FindsTheRowsOfASeparableNet) {
  std::unique_ptr<hlo::Module> m = SeparableNet();
  std::optional<BatchRows> rows = FindBatchRows(*m->entry());
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->batch, 4);
  std::optional<BatchSplit> split = SplitBatch(*m, 1);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->parts, 4);
  EXPECT_EQ(split->split_param, std::vector<bool>{true});
  EXPECT_EQ(split->part->entry()->parameters()[0]->shape().dims, (std::vector<int64_t>{1, 3, 6, 6}));
  const hlo::Shape& out = split->part->entry()->root()->shape();
  ASSERT_TRUE(out.IsTuple());
  EXPECT_EQ(out.tuple_shapes[0].dims, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(out.tuple_shapes[1].dims, (std::vector<int64_t>{1, 20}));
  EXPECT_FALSE(SplitBatch(*m, 3).has_value());  // 3 does not divide 4
  EXPECT_FALSE(SplitBatch(*m, 4).has_value());  // nothing to split
}

TEST(BatchSplit, RunInPartsEqualsTheEvaluator) {
  Literal x = RandomF32(Shape(hlo::F32, {4, 3, 6, 6}), 3);
  std::unique_ptr<hlo::Module> m = SeparableNet();
  std::vector<Literal> args;
  args.push_back(x);
  auto want = eval::EvaluateModule(*m, std::move(args));
  ASSERT_TRUE(want.ok()) << want.status();
  for (int64_t rows : {1, 2, 3}) {
    CompileOptions o;
    o.batch_rows = rows;
    auto exe = Executable::Compile(SeparableNet(), o);
    ASSERT_TRUE(exe.ok()) << exe.status();
    EXPECT_EQ((*exe)->batch_parts(), rows == 3 ? 1 : 4 / rows) << rows;  // 3 rows: the whole batch at once
    ASSERT_EQ((*exe)->parameter_shapes()[0].dims, (std::vector<int64_t>{4, 3, 6, 6}));
    std::vector<Literal> got;
    std::vector<void*> outs;
    for (const hlo::Shape& s : (*exe)->output_shapes()) {
      got.emplace_back(s);
      outs.push_back(got.back().untyped_data());
    }
    const void* in[] = {x.untyped_data()};
    ASSERT_TRUE((*exe)->Execute(in, outs).ok());
    for (size_t k = 0; k < got.size(); ++k) {
      const Literal& w = want->tuple_elements().at(k);
      ASSERT_EQ(got[k].element_count(), w.element_count());
      for (int64_t i = 0; i < w.element_count(); ++i)
        EXPECT_NEAR(got[k].data<float>()[i], w.data<float>()[i], 1e-4 * (1 + std::abs(w.data<float>()[i])))
            << "rows " << rows << " output " << k << " element " << i;
    }
  }
}

// Programs that mix the rows of their batch, or whose results do not
// have it first: none is split.
TEST(BatchSplit, ProgramsThatMixRowsAreNotSplit) {
  const Shape x(hlo::F32, {4, 3});
  std::vector<std::pair<std::string, std::unique_ptr<hlo::Module>>> cases;
  cases.emplace_back("a sum over the batch", Build({x}, [](Builder& b, auto p) {
                       return b.Reduce({p[0]}, {b.ScalarConstant(hlo::F32, 0)}, {0},
                                       b.ScalarReducer(Opcode::kAdd, hlo::F32));
                     }));
  cases.emplace_back("a reshape merging the batch with features",
                     Build({x}, [](Builder& b, auto p) { return b.Reshape(p[0], {12}); }));
  cases.emplace_back("a product contracting the batch", Build({x}, [](Builder& b, auto p) {
                       return b.Dot(p[0], b.Constant(RandomF32(Shape(hlo::F32, {4, 2}), 1)), Contract(0, 0));
                     }));
  cases.emplace_back("a result with the batch second", Build({x}, [](Builder& b, auto p) {
                       return b.Transpose(p[0], {1, 0});
                     }));
  cases.emplace_back("an iota along the batch", Build({x}, [](Builder& b, auto p) {
                       return b.Binary(Opcode::kAdd, p[0], b.Iota(Shape(hlo::F32, {4, 3}), 0));
                     }));
  cases.emplace_back("a constant with different rows", Build({x}, [](Builder& b, auto p) {
                       return b.Binary(Opcode::kAdd, p[0], b.Constant(Rows(Shape(hlo::F32, {4, 3}), true)));
                     }));
  cases.emplace_back(
      "a slice of some rows", Build({x}, [](Builder& b, auto p) {
        return b.Binary(Opcode::kAdd, b.Slice(p[0], {0, 0}, {2, 3}, {1, 1}), b.Slice(p[0], {2, 0}, {4, 3}, {1, 1}));
      }));
  cases.emplace_back("a batch of one",
                     Build({Shape(hlo::F32, {1, 3})}, [](Builder& b, auto p) { return b.Unary(Opcode::kExp, p[0]); }));
  for (const auto& [name, m] : cases) {
    EXPECT_FALSE(FindBatchRows(*m->entry()).has_value()) << name;
    EXPECT_FALSE(SplitBatch(*m, 1).has_value()) << name;
    CompileOptions o;
    o.batch_rows = 1;
    auto exe = Executable::Compile(m->Clone(), o);
    ASSERT_TRUE(exe.ok()) << name << ": " << exe.status();
    EXPECT_EQ((*exe)->batch_parts(), 1) << name;
  }
}

}  // namespace
}  // namespace xonnx::cpu
