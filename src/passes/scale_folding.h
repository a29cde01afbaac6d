// Scale folding: a per-output-channel constant scale after a product with
// constant weights (ConvNeXt's and CaiT's layer scale, a batch norm after a
// linear layer) moves into the weights and the bias, so the product's
// result needs no further pass.
#ifndef XONNX_PASSES_SCALE_FOLDING_H_
#define XONNX_PASSES_SCALE_FOLDING_H_

#include "passes/pass.h"

namespace xonnx::passes {

// (x (*) W + b) * g -> x (*) (W g) + b g, for a dot or convolution with
// constant f32 weights, g a constant vector over the output features, b an
// optional constant per-feature bias; reshapes that keep the feature dim
// last may sit between the product and the bias. Every intermediate value
// must have the next op as its only user. Results differ by rounding only
// (the scale multiplies the weights instead of the sums).
class ScaleFolding : public Pass {
 public:
  absl::string_view name() const override { return "scale-folding"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_SCALE_FOLDING_H_
