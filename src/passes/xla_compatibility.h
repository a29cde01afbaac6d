// Rewrites what XLA's own plugins reject or compute differently from ONNX,
// in HLO that stays valid for every plugin. xonnx's CPU plugin needs none
// of it (it has integer convolutions and exact division), so sessions run
// this pass only for other plugins:
//  - clamp with scalar bounds around a non-scalar operand gets broadcast
//    bounds: HLO allows scalar bounds, but XLA's ReshapeMover (run by its
//    GPU compiler) aborts the process on them.
//  - integer convolutions run in float64: XLA's GPU compiler accepts only
//    cuDNN's int8 idioms. Exact while the sums stay below 2^53, as those
//    of ONNX's ConvInteger and QLinearConv (8-bit operands) always do.
//  - float32 division runs in float64, rounded once to float32 with integer
//    operations on its bits: XLA's GPU compiler multiplies by the
//    reciprocal of a constant divisor, folds constant factors and drops
//    rounding converts, so a quotient meant to sit just below .5 can round
//    up, and QuantizeLinear or DynamicQuantizeLinear then give a different
//    integer than ONNX's reference (see CorrectlyRoundedDivide).
#ifndef XONNX_PASSES_XLA_COMPATIBILITY_H_
#define XONNX_PASSES_XLA_COMPATIBILITY_H_

#include "passes/pass.h"

namespace xonnx::passes {

class XlaCompatibility : public Pass {
 public:
  absl::string_view name() const override { return "xla-compatibility"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_XLA_COMPATIBILITY_H_
