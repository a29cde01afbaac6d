// Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (inference form: the loss value, with weights, ignore_index, reductions).
#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// loss[n, d...] = -input[n, target[n, d...], d...] * w, with w the class
// weight (or 1) and 0 where target == ignore_index; reduced as asked.
absl::StatusOr<Instruction*> Nll(NodeContext& ctx, Instruction* input, Instruction* target, Instruction* weight) {
  hlo::Builder& b = ctx.b();
  if (input->shape().rank() < 2) return ctx.Error("input must be [N, C, ...]");
  hlo::PrimitiveType t = input->shape().element_type;
  const auto& tdims = target->shape().dims;
  Instruction* tgt = b.Convert(target, hlo::S64);
  Instruction* keep = Splat(b, hlo::PRED, 1, tdims);
  if (ctx.has_attr("ignore_index")) {
    keep = b.Compare(tgt, SplatLike(b, tgt, ctx.attr_i("ignore_index", 0)), hlo::ComparisonDirection::kNe);
    // Ignored targets may be out of range: point them at class 0.
    tgt = b.Select(keep, tgt, SplatLike(b, tgt, 0));
  }
  // The others are classes, 0 to C - 1.
  RETURN_IF_ERROR(ctx.CheckIndexRange(tgt, 0, input->shape().dims[1] - 1, "target"));
  // Take input along the class axis: target as [N, 1, d...].
  std::vector<int64_t> t1 = tdims;
  t1.insert(t1.begin() + 1, 1);
  Instruction* picked = b.Reshape(GatherElementsAlongAxis(b, input, b.Reshape(tgt, t1), 1), tdims);
  Instruction* w;
  if (weight) {
    w = TakeAlongAxis(b, weight, tgt, 0);
  } else {
    w = Splat(b, t, 1, tdims);
  }
  w = b.Select(keep, w, SplatLike(b, w, 0));
  Instruction* loss = b.Unary(Opcode::kNegate, b.Binary(Opcode::kMultiply, picked, w));
  std::string reduction = ctx.attr_s("reduction", "mean");
  std::vector<int64_t> all;
  for (size_t k = 0; k < tdims.size(); ++k) all.push_back(k);
  if (reduction == "none") return loss;
  Instruction* sum = ReduceOver(b, loss, Opcode::kAdd, 0, all, false);
  if (reduction == "sum") return sum;
  if (reduction != "mean") return ctx.Error(absl::StrCat("unknown reduction '", reduction, "'"));
  return b.Binary(Opcode::kDivide, sum, ReduceOver(b, w, Opcode::kAdd, 0, all, false));
}

absl::Status NegativeLogLikelihoodLoss(NodeContext& ctx) {
  Instruction* input = ctx.input(0);
  Instruction* target = ctx.input(1);
  if (!input || !target) return ctx.Error("needs input and target");
  ASSIGN_OR_RETURN(Instruction * loss, Nll(ctx, input, target, ctx.input(2)));
  ctx.set_output(0, loss);
  return absl::OkStatus();
}

absl::Status SoftmaxCrossEntropyLoss(NodeContext& ctx) {
  Instruction* scores = ctx.input(0);
  Instruction* labels = ctx.input(1);
  if (!scores || !labels) return ctx.Error("needs scores and labels");
  hlo::Builder& b = ctx.b();
  const auto& dims = scores->shape().dims;
  hlo::PrimitiveType t = scores->shape().element_type;
  // log_softmax over the class axis, computed stably.
  Instruction* m = BroadcastTo(b, ReduceOver(b, scores, Opcode::kMaximum, LowestValue(t), {1}, true), dims);
  Instruction* shifted = b.Binary(Opcode::kSubtract, scores, m);
  Instruction* lse = ReduceOver(b, b.Unary(Opcode::kExp, shifted), Opcode::kAdd, 0, {1}, true);
  Instruction* log_prob = b.Binary(Opcode::kSubtract, shifted, BroadcastTo(b, b.Unary(Opcode::kLog, lse), dims));
  ASSIGN_OR_RETURN(Instruction * loss, Nll(ctx, log_prob, labels, ctx.input(2)));
  ctx.set_output(0, loss);
  ctx.set_output(1, log_prob);
  return absl::OkStatus();
}

}  // namespace

void RegisterLossOps(Registry& r) {
  r.Add("NegativeLogLikelihoodLoss", NegativeLogLikelihoodLoss, 12);
  r.Add("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLoss, 12);
}

}  // namespace xonnx::onnx_import
