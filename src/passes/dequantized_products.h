// Products of dequantized operands become integer products: the
// DequantizeLinear -> Conv / MatMul / Gemm chains of statically quantized
// (QDQ) models,
//   conv((convert<f32>(x) - zx) * sx, (convert<f32>(w) - zw) * sw)
// with x and w 8-bit values, become
//   convert<f32>(conv<s32>(convert<s32>(x) - zx, convert<s32>(w) - zw)) * sx * sw
// (sw one scale per output feature or one for all). A convolution's padding
// stays what it was: ONNX pads the dequantized value with 0, which the
// centered integer value also is there. The sums are exact in
// s32 where ONNX's definition rounds each product and partial sum to f32,
// so results agree to f32 rounding; a backend with 8-bit kernels runs the
// integer form on them (the CPU backend's PlanIntegerProducts).
#ifndef XONNX_PASSES_DEQUANTIZED_PRODUCTS_H_
#define XONNX_PASSES_DEQUANTIZED_PRODUCTS_H_

#include "passes/pass.h"

namespace xonnx::passes {

class DequantizedProducts : public Pass {
 public:
  absl::string_view name() const override { return "dequantized-products"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_DEQUANTIZED_PRODUCTS_H_
