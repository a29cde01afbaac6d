#include "passes/exact_products.h"

namespace xonnx::passes {

absl::StatusOr<bool> ExactProducts::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations())
    for (const auto& i : c->instructions()) {
      if (i->opcode() != hlo::Opcode::kDot && i->opcode() != hlo::Opcode::kConvolution) continue;
      // Only float32 operands have a cheaper rounding to avoid; 16-bit ones
      // already are what tensor cores take.
      if (i->operand(0)->shape().element_type != hlo::F32 && i->operand(1)->shape().element_type != hlo::F32) continue;
      if (i->precision == hlo::Precision::kHighest) continue;
      i->precision = hlo::Precision::kHighest;
      changed = true;
    }
  return changed;
}

}  // namespace xonnx::passes
