#include "passes/constant_folding.h"

#include <algorithm>

#include "evaluator/evaluator.h"

namespace xonnx::passes {

std::optional<hlo::Literal> FoldInstruction(const hlo::Instruction& instr, int64_t max_elements) {
  using hlo::Opcode;
  switch (instr.opcode()) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kRngBitGenerator:
    case Opcode::kTuple:
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
      return std::nullopt;
    default:
      break;
  }
  // Multi-output sorts and reduces fold to tuple constants, which their
  // get-tuple-element users then fold away.
  bool tuple_ok = instr.opcode() == Opcode::kSort || instr.opcode() == Opcode::kReduce;
  if (!instr.shape().IsArray() && !tuple_ok) return std::nullopt;
  int64_t n = 0;
  if (instr.shape().IsTuple()) {
    for (const hlo::Shape& s : instr.shape().tuple_shapes) {
      if (!s.IsArray()) return std::nullopt;
      n += s.ElementCount();
    }
  } else {
    n = instr.shape().ElementCount();
  }
  // Broadcasts and iotas are cheap to compute and expensive to store.
  bool expands =
      instr.opcode() == Opcode::kBroadcast || instr.opcode() == Opcode::kIota || instr.opcode() == Opcode::kPad;
  // A move of a constant (the transpose and reverse a transposed
  // convolution puts on its weights) stores no more than its operand and
  // would otherwise run on every call: folded at any size.
  bool moves = instr.opcode() == Opcode::kTranspose || instr.opcode() == Opcode::kReverse ||
               instr.opcode() == Opcode::kReshape || instr.opcode() == Opcode::kCopy;
  if ((n > max_elements && !moves) || (expands && n > 1024)) return std::nullopt;
  std::vector<const hlo::Literal*> ops;
  for (hlo::Instruction* op : instr.operands()) {
    if (op->opcode() != Opcode::kConstant) return std::nullopt;
    ops.push_back(&*op->literal);
  }
  auto r = eval::EvaluateInstruction(instr, ops);
  if (!r.ok()) return std::nullopt;  // leave it for the backend to report
  return *std::move(r);
}

absl::StatusOr<bool> ConstantFolding::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    std::vector<hlo::Instruction*> order;
    for (const auto& i : c->instructions()) order.push_back(i.get());
    for (hlo::Instruction* instr : order) {
      if (instr->operand_count() == 0) continue;
      std::optional<hlo::Literal> folded = FoldInstruction(*instr, max_elements_);
      if (!folded) continue;
      auto k = std::make_unique<hlo::Instruction>(hlo::Opcode::kConstant, folded->shape());
      k->literal = *std::move(folded);
      k->metadata = instr->metadata;
      k->set_name("constant");
      hlo::Instruction* added = c->AddInstruction(std::move(k));
      c->ReplaceAllUsesWith(instr, added);
      changed = true;
    }
    if (changed) c->Canonicalize();
  }
  return changed;
}

}  // namespace xonnx::passes
