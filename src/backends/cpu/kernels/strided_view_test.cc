// Views of slice/transpose/reshape chains against the evaluator: the source
// holds each element's own index, so the chain's result says where every
// element came from, and the view must point at the same place.
#include "backends/cpu/kernels/strided_view.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "evaluator/evaluator.h"
#include "hlo/builder.h"

namespace xonnx::cpu {
namespace {

using hlo::Builder;
using hlo::Instruction;

// Builds chain(iota source) and checks the view the chain's ops give, or
// that some op of it is not a view when `viewable` is false.
void Check(std::vector<int64_t> dims, const std::function<Instruction*(Builder&, Instruction*)>& chain, bool viewable) {
  auto m = std::make_unique<hlo::Module>("view");
  Builder b(m.get(), "main");
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  Instruction* src = b.Reshape(b.Iota(hlo::Shape(hlo::F32, {n}), 0), dims);
  Instruction* out = chain(b, src);
  auto comp = b.Build(out);
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  // The ops from src to out, operands first.
  std::vector<const Instruction*> ops;
  for (const Instruction* i = out; i != src; i = i->operand(0)) ops.insert(ops.begin(), i);
  std::optional<StridedView> v = StridedView::RowMajor(dims);
  for (const Instruction* op : ops) {
    if (!v) break;
    v = Apply(*op, *v);
  }
  if (!viewable) {
    EXPECT_FALSE(v.has_value());
    return;
  }
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->dims, out->shape().dims);
  auto want = eval::EvaluateModule(*m, {});
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<int64_t> idx(v->dims.size(), 0);
  for (int64_t e = 0; e < want->element_count(); ++e) {
    int64_t at = v->offset;
    for (size_t k = 0; k < idx.size(); ++k) at += idx[k] * v->strides[k];
    ASSERT_EQ(at, static_cast<int64_t>(want->data<float>()[e])) << "element " << e;
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < v->dims[k]) break;
      idx[k] = 0;
    }
  }
}

TEST(StridedView, AttentionHeadSplitsAreViews) {
  // A fused QKV projection [seq, 1, 3*256] cut into K, split into 4 heads and
  // laid out as [head, dim, seq]: every step a view.
  Check(
      {8, 1, 48},
      [](Builder& b, Instruction* x) {
        auto* s = b.Slice(x, {0, 0, 16}, {8, 1, 32}, {1, 1, 1});
        return b.Transpose(b.Reshape(s, {8, 4, 4}), {1, 2, 0});
      },
      true);
  // The heads joined back: [head, seq, dim] -> [seq, head, dim] -> [seq, 16].
  // The transpose is a view; merging head and dim is not (they do not nest).
  Check(
      {4, 8, 4},
      [](Builder& b, Instruction* x) {
        return b.Transpose(x, {1, 0, 2});
      },
      true);
  Check(
      {4, 8, 4},
      [](Builder& b, Instruction* x) {
        return b.Reshape(b.Transpose(x, {1, 0, 2}), {8, 16});
      },
      false);
}

TEST(StridedView, ReshapesSplitAndMergeNestedDims) {
  Check(
      {6, 10},
      [](Builder& b, Instruction* x) {
        return b.Reshape(x, {2, 3, 1, 5, 2});
      },
      true);
  Check(
      {2, 3, 5, 2},
      [](Builder& b, Instruction* x) {
        return b.Reshape(x, {6, 1, 10});
      },
      true);
  // A strided slice, then a split of its strided dim and a merge of two
  // dims that still nest.
  Check(
      {12, 5, 3},
      [](Builder& b, Instruction* x) {
        auto* s = b.Slice(x, {1, 0, 0}, {12, 5, 3}, {2, 1, 1});  // 6 rows, every other one
        return b.Reshape(s, {3, 2, 15});
      },
      true);
  // After cutting dim 1 to 4 of 5, its last two dims still merge (12), but
  // merging the first two would step over the cut-off rows.
  Check(
      {12, 5, 3},
      [](Builder& b, Instruction* x) {
        return b.Reshape(b.Slice(x, {0, 0, 0}, {12, 4, 3}, {1, 1, 1}), {12, 12});
      },
      true);
  Check(
      {12, 5, 3},
      [](Builder& b, Instruction* x) {
        return b.Reshape(b.Slice(x, {0, 0, 0}, {12, 4, 3}, {1, 1, 1}), {48, 3});
      },
      false);
}

}  // namespace
}  // namespace xonnx::cpu
