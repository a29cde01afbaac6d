// Integer products whose constant weights do not fit in s8, made two that
// do. A dynamic quantizer's uint8 weights about their own zero point
// (ONNX Runtime's ConvInteger weights) centre to [-zp, 255 - zp]: 255
// consecutive integers per output feature, not always within [-128, 127].
// With c a per-feature shift that brings them there,
//   conv(x, w) = conv(x, w - c) + c * conv(x, ones)
// where conv(x, ones) (one output feature) sums each window of x. Both
// products then run on oneDNN's 8-bit kernels (PlanIntegerProducts), and
// the sums stay exact in s32.
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_WIDE_INTEGER_WEIGHTS_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_WIDE_INTEGER_WEIGHTS_H_

#include "passes/pass.h"

namespace xonnx::cpu {

class SplitWideIntegerWeights : public passes::Pass {
 public:
  absl::string_view name() const override { return "split-wide-integer-weights"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_WIDE_INTEGER_WEIGHTS_H_
