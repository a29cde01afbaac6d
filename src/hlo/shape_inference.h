// Shape inference for HLO instructions: the result shape an instruction's
// operands and attributes determine, with an error that says what is
// inconsistent. The builder, the verifier, the text parser and the proto
// reader all share it, so they agree on what a valid instruction is.
#ifndef XONNX_HLO_SHAPE_INFERENCE_H_
#define XONNX_HLO_SHAPE_INFERENCE_H_

#include "absl/status/statusor.h"
#include "hlo/ir.h"

namespace xonnx::hlo {

// Infers the result shape of an instruction from its operands and attributes.
absl::StatusOr<Shape> InferShape(const Instruction& instr);

// The dims of a rank-`rank` dot operand that are neither `batch` nor
// `contracted` (its free dims), in order: a dot's result has the batch
// dims, then the lhs's free dims, then the rhs's.
std::vector<int64_t> DotFreeDims(int64_t rank, const std::vector<int64_t>& batch,
                                 const std::vector<int64_t>& contracted);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_SHAPE_INFERENCE_H_
