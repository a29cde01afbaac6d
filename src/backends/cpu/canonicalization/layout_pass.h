// Layout passes of the CPU backend. oneDNN's fastest f32 convolutions
// (brgconv) want channels-last activations, so convolutions are rewritten to
// NHWC between transposes, and the transposes are sunk through elementwise
// ops, pooling, padding, concatenation, reductions, broadcasts and reshapes
// that merge adjacent dims (nearest upsampling) and products along one axis
// (linear and cubic resizes, axis_maps.h) until they meet and cancel.
// What is left is one transpose at each boundary of a conv chain.
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_LAYOUT_PASS_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_LAYOUT_PASS_H_

#include "passes/pass.h"

namespace xonnx::cpu {

// convolution(x: NCHW) -> transpose(convolution(transpose(x): NHWC): NHWC) to NCHW.
class ChannelsLastConvolutions : public passes::Pass {
 public:
  absl::string_view name() const override { return "channels-last-convolutions"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

// op(transpose(a, P), ...) -> transpose(op'(a, ...), P) for ops that commute
// with a transpose; run to a fixed point with the algebraic simplifier so
// transpose pairs compose and vanish.
class TransposeSinking : public passes::Pass {
 public:
  absl::string_view name() const override { return "transpose-sinking"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

// transpose(f(x)) -> f'(transpose(x)) where f is a chain of elementwise ops
// that only the transpose reads, whose other operands are scalars, and x is
// the narrowest value along it (quantized activations before they are
// widened to s32): the transpose then moves bytes instead of words, and an
// integer product reads the 8-bit value in an order it can view. Sinking
// leaves such transposes below quantization when they cannot cancel.
class TransposeNarrowing : public passes::Pass {
 public:
  absl::string_view name() const override { return "transpose-narrowing"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

// reshape(f(x)) -> f'(reshape(x)) where f is a chain of elementwise ops
// that only the reshape reads, starting at a convert of an integer value
// (an integer product's rescaling, which DequantizedProducts puts between
// a 2-D product and the reshape back to the activation's shape), whose
// other operands are scalars or vectors along the last dim, which the
// reshape keeps. The reshape of x is then a view of the product's result,
// and the rescaling joins the loop of its readers, a quantizer first,
// which runs it in one pass from the sums.
class ReshapeHoisting : public passes::Pass {
 public:
  absl::string_view name() const override { return "reshape-hoisting"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

// The passes above followed by cleanup, as the CPU compiler runs them.
[[nodiscard]] absl::Status RunLayoutPasses(hlo::Module* module);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_LAYOUT_PASS_H_
