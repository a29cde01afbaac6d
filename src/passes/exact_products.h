// Marks float32 dots and convolutions as needing exact float32 inputs (HLO
// precision HIGHEST). XLA's default precision lets a backend round them:
// its GPU plugin multiplies float32 matrices in TF32 (10-bit mantissas) on
// NVIDIA tensor cores, so results drift by ~1e-3 relative from what ONNX
// specifies. Sessions run this pass unless SessionOptions::allow_tf32.
#ifndef XONNX_PASSES_EXACT_PRODUCTS_H_
#define XONNX_PASSES_EXACT_PRODUCTS_H_

#include "passes/pass.h"

namespace xonnx::passes {

class ExactProducts : public Pass {
 public:
  absl::string_view name() const override { return "exact-products"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_EXACT_PRODUCTS_H_
