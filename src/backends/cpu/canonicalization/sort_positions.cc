#include "backends/cpu/canonicalization/sort_positions.h"

#include <vector>

#include "evaluator/evaluator.h"
#include "hlo/rewrite.h"

namespace xonnx::cpu {

namespace {

// Positions past this many elements stay an iota: a constant of them would
// take more memory than the per-call write saves.
constexpr int64_t kMaxConstantPositions = int64_t{1} << 22;

}  // namespace

absl::StatusOr<bool> SortPositions::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    bool here = false;
    // The sorts first: adding constants grows the instruction list.
    std::vector<hlo::Instruction*> sorts;
    for (const auto& i : c->instructions())
      if (i->opcode() == hlo::Opcode::kSort) sorts.push_back(i.get());
    for (hlo::Instruction* i : sorts) {
      for (int64_t k = 1; k < i->operand_count(); ++k) {
        hlo::Instruction* iota = i->operand(k);
        if (iota->opcode() != hlo::Opcode::kIota || iota->dimensions != i->dimensions ||
            iota->shape().ElementCount() > kMaxConstantPositions)
          continue;
        absl::StatusOr<hlo::Literal> positions = eval::EvaluateInstruction(*iota, {});
        if (!positions.ok()) continue;
        hlo::Instruction* constant = hlo::AddConstant(c.get(), *std::move(positions));
        constant->metadata = iota->metadata;
        i->ReplaceOperand(k, constant);
        here = true;
      }
    }
    if (here) c->Canonicalize();
    changed |= here;
  }
  return changed;
}

}  // namespace xonnx::cpu
