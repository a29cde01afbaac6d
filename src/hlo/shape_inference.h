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

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_SHAPE_INFERENCE_H_
