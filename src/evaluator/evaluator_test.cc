#include "evaluator/evaluator.h"

#include <gtest/gtest.h>

#include "hlo/builder.h"

namespace xonnx::eval {
namespace {

using namespace hlo;  // NOLINT: test brevity

Literal Iota2x3() { return Literal::Vector<float>({1, -2, 3, 4, 5, -6}).Reshape({2, 3}); }

// Builds `f(params)` into a module and evaluates it.
template <typename F>
Literal BuildAndRun(std::vector<Literal> args, F f) {
  Module m("t");
  Builder b(&m, "main");
  std::vector<Instruction*> params;
  for (size_t i = 0; i < args.size(); ++i) params.push_back(b.Parameter(i, args[i].shape(), "p"));
  Instruction* root = f(b, params);
  auto c = b.Build(root);
  EXPECT_TRUE(c.ok()) << c.status();
  m.set_entry(*c);
  auto r = EvaluateModule(m, std::move(args));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : Literal();
}

TEST(Evaluator, ElementwiseAndCompare) {
  Literal r = BuildAndRun({Iota2x3(), Iota2x3()}, [](Builder& b, auto p) {
    auto* sum = b.Binary(Opcode::kAdd, p[0], p[1]);
    auto* gt = b.Compare(sum, b.Broadcast(b.ScalarConstant(F32, 0), {2, 3}, {}), ComparisonDirection::kGt);
    return b.Select(gt, sum, b.Unary(Opcode::kNegate, sum));
  });
  EXPECT_EQ(r.ValuesToString(), "{{2, 4, 6}, {8, 10, 12}}");
}

TEST(Evaluator, IntegerDivisionFollowsXla) {
  Literal r = BuildAndRun({Literal::Vector<int32_t>({7, -7, 5, INT32_MIN}), Literal::Vector<int32_t>({2, 2, 0, -1})},
                          [](Builder& b, auto p) { return b.Binary(Opcode::kDivide, p[0], p[1]); });
  EXPECT_EQ(r.ToInt64Vector(), (std::vector<int64_t>{3, -3, -1, INT32_MIN}));
}

TEST(Evaluator, ReduceTransposeDot) {
  Literal r = BuildAndRun({Iota2x3()}, [](Builder& b, auto p) {
    auto* t = b.Transpose(p[0], {1, 0});  // 3x2
    DotDimensionNumbers d;
    d.lhs_contracting_dimensions = {1};
    d.rhs_contracting_dimensions = {0};
    auto* mm = b.Dot(p[0], t, d);  // 2x2
    return b.Reduce({mm}, {b.ScalarConstant(F32, 0)}, {1}, b.ScalarReducer(Opcode::kAdd, F32));
  });
  // rows r0=(1,-2,3), r1=(4,5,-6): r0.r0=14, r0.r1=-24, r1.r1=77
  EXPECT_EQ(r.ValuesToString(), "{-10, 53}");
}

TEST(Evaluator, ConvolutionWithPaddingAndStride) {
  Literal x = Literal::Vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}).Reshape({1, 1, 4, 4});
  Literal w = Literal::Vector<float>({1, 0, 0, -1}).Reshape({1, 1, 2, 2});
  Literal r = BuildAndRun({x, w}, [](Builder& b, auto p) {
    Window win;
    win.dimensions.resize(2, WindowDimension{2, 2, 1, 0, 1, 1, false});
    ConvolutionDimensionNumbers dn;
    dn.input_spatial_dimensions = dn.kernel_spatial_dimensions = dn.output_spatial_dimensions = {2, 3};
    return b.Convolution(p[0], p[1], win, dn, 1);
  });
  EXPECT_EQ(r.shape().dims, (std::vector<int64_t>{1, 1, 2, 2}));
  // out[i][j] = x[2i-1][2j-1] - x[2i][2j], with zeros in the low padding
  EXPECT_EQ(r.ValuesToString(), "{{{{-1, -3}, {-9, -5}}}}");
}

TEST(Evaluator, GatherRowsAndSortDescending) {
  Literal r = BuildAndRun({Iota2x3(), Literal::Vector<int64_t>({1, 0, 1})}, [](Builder& b, auto p) {
    GatherDimensionNumbers d;
    d.offset_dims = {1};
    d.collapsed_slice_dims = {0};
    d.start_index_map = {0};
    d.index_vector_dim = 1;
    auto* g = b.Gather(p[0], p[1], d, {1, 3});  // 3x3
    Module* m = b.module();
    Builder cb(m, "gt");
    auto* cmp = cb.Compare(cb.Parameter(0, Shape::Scalar(F32), "a"), cb.Parameter(1, Shape::Scalar(F32), "b"),
                           ComparisonDirection::kGt);
    return b.Sort({g}, 1, *cb.Build(cmp), true);
  });
  EXPECT_EQ(r.ValuesToString(), "{{5, 4, -6}, {3, 1, -2}, {5, 4, -6}}");
}

TEST(Evaluator, PadSliceConcatAndReduceWindow) {
  Literal r = BuildAndRun({Iota2x3()}, [](Builder& b, auto p) {
    auto* pad = b.Pad(p[0], b.ScalarConstant(F32, 0), {{1, 0, 0}, {0, 1, 1}});  // 3x6
    auto* sl = b.Slice(pad, {1, 0}, {3, 6}, {1, 2});                            // 2x3: original
    auto* cat = b.Concatenate({sl, p[0]}, 0);                                   // 4x3
    Window w;
    w.dimensions = {{2, 2, 0, 0, 1, 1, false}, {3, 1, 1, 1, 1, 1, false}};
    return b.ReduceWindow(cat, b.ScalarConstant(F32, 1e30), w, b.ScalarReducer(Opcode::kMinimum, F32));
  });
  EXPECT_EQ(r.ValuesToString(), "{{-2, -6, -6}, {-2, -6, -6}}");
}

TEST(Evaluator, WhileLoopCounts) {
  Literal r = BuildAndRun({Literal::Scalar<int32_t>(3)}, [](Builder& b, auto p) {
    Module* m = b.module();
    Builder cond(m, "cond");
    auto* c = cond.Compare(cond.Parameter(0, Shape::Scalar(S32), "i"), cond.ScalarConstant(S32, 10),
                           ComparisonDirection::kLt);
    Builder body(m, "body");
    auto* next =
        body.Binary(Opcode::kMultiply, body.Parameter(0, Shape::Scalar(S32), "i"), body.ScalarConstant(S32, 2));
    return b.While(*cond.Build(c), *body.Build(next), p[0]);
  });
  EXPECT_EQ(r.GetAsInt64(0), 12);
}

}  // namespace
}  // namespace xonnx::eval
