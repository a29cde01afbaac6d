// Constant folding through the reference evaluator: an instruction whose
// operands are all constants becomes a constant, unless its result would be
// larger than the cap (folding a broadcast would only inflate the program);
// transposes, reverses, reshapes and copies fold at any size.
#ifndef XONNX_PASSES_CONSTANT_FOLDING_H_
#define XONNX_PASSES_CONSTANT_FOLDING_H_

#include <optional>

#include "passes/pass.h"

namespace xonnx::passes {

class ConstantFolding : public Pass {
 public:
  explicit ConstantFolding(int64_t max_elements = 1 << 22) : max_elements_(max_elements) {}
  absl::string_view name() const override { return "constant-folding"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;

 private:
  int64_t max_elements_;
};

// Folds one instruction whose operands are constants, if folding is allowed
// for it and its result fits the cap; the importer uses it while building.
std::optional<hlo::Literal> FoldInstruction(const hlo::Instruction& instr, int64_t max_elements);

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_CONSTANT_FOLDING_H_
