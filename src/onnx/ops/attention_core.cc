#include "onnx/ops/attention_core.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "onnx/context.h"

namespace xonnx::onnx_import {

using hlo::ComparisonDirection;
using hlo::Instruction;
using hlo::Opcode;

std::string Dims(const Instruction* x) { return absl::StrCat("[", absl::StrJoin(x->shape().dims, ","), "]"); }

// (B, S, N*H) -> (B, N, S, H).
Instruction* SplitHeads(hlo::Builder& b, Instruction* x, int64_t heads) {
  const auto& d = x->shape().dims;
  return b.Transpose(b.Reshape(x, {d[0], d[1], heads, d[2] / heads}), {0, 2, 1, 3});
}

Instruction* MergeHeads(hlo::Builder& b, Instruction* x) {
  const auto& d = x->shape().dims;
  return b.Reshape(b.Transpose(x, {0, 2, 1, 3}), {d[0], d[2], d[1] * d[3]});
}

Instruction* RepeatHeads(hlo::Builder& b, Instruction* x, int64_t groups) {
  if (groups == 1) return x;
  const auto& d = x->shape().dims;
  return b.Reshape(b.Broadcast(x, {d[0], d[1], groups, d[2], d[3]}, {0, 1, 3, 4}), {d[0], d[1] * groups, d[2], d[3]});
}

Instruction* Attend(hlo::Builder& b, Instruction* q, Instruction* k, Instruction* v, const AttentionMasks& m) {
  const auto& qd = q->shape().dims;
  int64_t batch = qd[0], heads = qd[1], s = qd[2], h = qd[3], t = k->shape().dims[2];
  hlo::PrimitiveType type = q->shape().element_type;
  hlo::DotDimensionNumbers qk;
  qk.lhs_batch_dimensions = qk.rhs_batch_dimensions = {0, 1};
  qk.lhs_contracting_dimensions = qk.rhs_contracting_dimensions = {3};
  Instruction* scores = b.Dot(q, k, qk);  // (B, N, S, T)
  std::vector<int64_t> sd = {batch, heads, s, t};
  double scale = m.scale != 0 ? m.scale : 1.0 / std::sqrt(static_cast<double>(h));
  scores = b.Binary(Opcode::kMultiply, scores, SplatLike(b, scores, scale));
  if (m.bias) scores = b.Binary(Opcode::kAdd, scores, BroadcastTo(b, b.Convert(m.bias, type), sd));
  Instruction* keep = m.keep ? BroadcastTo(b, m.keep, sd) : nullptr;
  if (m.causal) {
    Instruction* row = b.Iota(hlo::Shape(hlo::S64, sd), 2);
    Instruction* col = b.Iota(hlo::Shape(hlo::S64, sd), 3);
    int64_t shift = m.causal_bottom_right ? t - s : 0;
    Instruction* seen = b.Compare(col, b.Binary(Opcode::kAdd, row, SplatLike(b, row, shift)), ComparisonDirection::kLe);
    keep = keep ? b.Binary(Opcode::kAnd, keep, seen) : seen;
  }
  if (keep)
    scores = b.Binary(Opcode::kAdd, scores, b.Select(keep, SplatLike(b, scores, 0), SplatLike(b, scores, m.filter)));
  hlo::PrimitiveType st = m.softmax_type == hlo::PRIMITIVE_TYPE_INVALID ? type : m.softmax_type;
  scores = b.Convert(scores, st);
  Instruction* mx = BroadcastTo(b, ReduceOver(b, scores, Opcode::kMaximum, LowestValue(st), {3}, true), sd);
  Instruction* e = b.Unary(Opcode::kExp, b.Binary(Opcode::kSubtract, scores, mx));
  Instruction* p =
      b.Convert(b.Binary(Opcode::kDivide, e, BroadcastTo(b, ReduceOver(b, e, Opcode::kAdd, 0, {3}, true), sd)), type);
  hlo::DotDimensionNumbers pv;
  pv.lhs_batch_dimensions = pv.rhs_batch_dimensions = {0, 1};
  pv.lhs_contracting_dimensions = {3};
  pv.rhs_contracting_dimensions = {2};
  return b.Dot(p, v, pv);  // (B, N, S, Hv)
}

}  // namespace xonnx::onnx_import
