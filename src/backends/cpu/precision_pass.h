// Half-precision arithmetic on the CPU. The CPU has no fast f16/bf16
// arithmetic here (oneDNN's fast convolutions and matrix products are f32;
// the generic kernels convert every element in software), so programs
// compiled for f16 or bf16 (`data_type`) would run orders of magnitude slower
// than in f32. Like XLA's CPU backend with its default
// xla_allow_excess_precision, this pass computes them in f32: every
// half-precision op it knows is rebuilt in f32, reading its widened
// operands' f32 results directly, and the round trips f32 -> half -> f32 the
// program already had are removed. Values
// leave the program (and enter ops left in half precision) rounded to the
// half type; in between they carry more precision than per-op rounding
// would give, never less.
#ifndef XONNX_BACKENDS_CPU_PRECISION_PASS_H_
#define XONNX_BACKENDS_CPU_PRECISION_PASS_H_

#include "passes/pass.h"

namespace xonnx::cpu {

// op(half operands) -> convert(op'(convert(operands, f32)), half) for
// elementwise ops, data movement, convolution, dot, and reductions whose
// reducer is a plain add / max / min; constant operands (bound weights) are
// converted now, once; each half value gets one f32 version. Then
// convert(convert(x: f32, half), f32) -> x.
class UpcastHalfPrecision : public passes::Pass {
 public:
  absl::string_view name() const override { return "upcast-half-precision"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_PRECISION_PASS_H_
