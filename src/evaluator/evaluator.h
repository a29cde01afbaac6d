// The reference interpreter of hlo::Module: the oracle for tests and the
// engine of constant folding. Correct, not fast.
#ifndef XONNX_EVALUATOR_EVALUATOR_H_
#define XONNX_EVALUATOR_EVALUATOR_H_

#include <vector>

#include "absl/status/statusor.h"
#include "hlo/ir.h"

namespace xonnx::eval {

// Runs a computation on arguments (one literal per parameter) and returns
// its root value (a tuple literal for tuple roots).
[[nodiscard]] absl::StatusOr<hlo::Literal> Evaluate(const hlo::Computation& computation,
                                                    std::vector<hlo::Literal> args);
// Runs the module's entry computation.
[[nodiscard]] absl::StatusOr<hlo::Literal> EvaluateModule(const hlo::Module& module, std::vector<hlo::Literal> args);
// Evaluates one instruction on literal operand values (constant folding).
[[nodiscard]] absl::StatusOr<hlo::Literal> EvaluateInstruction(const hlo::Instruction& instr,
                                                               const std::vector<const hlo::Literal*>& operands);

}  // namespace xonnx::eval

#endif  // XONNX_EVALUATOR_EVALUATOR_H_
