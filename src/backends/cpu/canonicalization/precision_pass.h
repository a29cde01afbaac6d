// Half-precision arithmetic on the CPU. The CPU has no fast f16/bf16
// arithmetic here (oneDNN's fast convolutions and matrix products are f32;
// the generic kernels convert every element in software), so programs
// compiled for f16 or bf16 (`data_type`, or a model stored in float16)
// would run orders of magnitude slower than in f32. This pass computes them
// in f32: every half-precision op it knows is rebuilt in f32 on its
// operands' f32 values. By default each op's result is still rounded to the
// half type, as the program says (and ONNX Runtime does), so results are
// the half-precision program's, bit for bit where the f32 arithmetic is
// exact; ops that only move or select values need no rounding. With
// `excess_precision` (XLA's xla_allow_excess_precision) widened ops read
// their operands' unrounded f32 results and the round trips f32 -> half ->
// f32 the program already had are removed: values leave the program
// rounded, but in between carry more precision than per-op rounding would
// give, which differs from other engines by about the half type's epsilon.
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_PRECISION_PASS_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_PRECISION_PASS_H_

#include "passes/pass.h"

namespace xonnx::cpu {

// op(half operands) -> convert(op'(convert(operands, f32)), half) for
// elementwise ops, data movement, convolution, dot, and reductions whose
// reducer is a plain add / max / min; constant operands (bound weights) are
// converted now, once; each half value gets one f32 version. Then
// convert(convert(x: f32, half), f32) -> x.
class UpcastHalfPrecision : public passes::Pass {
 public:
  explicit UpcastHalfPrecision(bool excess_precision = false) : excess_precision_(excess_precision) {}
  absl::string_view name() const override { return "upcast-half-precision"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;

 private:
  bool excess_precision_;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_PRECISION_PASS_H_
