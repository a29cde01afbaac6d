// The CPU backend's convolution canonicalization, for oneDNN: rewrites an
// f32 convolution that oneDNN's convolution does not take as it stands
// into one it takes, [N, C, spatial...] activations and [O, I, spatial...]
// weights, with transposes, a reversal and a pad around it:
//  - operands and result in other dimension orders (the weight gradient
//    of a convolution, fb01_io01->fb01, swaps batch and features);
//  - reversed windows: the weights reversed;
//  - base (input) dilation, the input gradient of a strided convolution,
//    when its weights are not constants (oneDNN's deconvolution takes
//    constant weights, rearranged once): the input dilated and padded by
//    a pad, then an undilated convolution;
//  - negative padding: cropped by the same pad.
// And a convolution over at most 4 images of 1x1 with a 1x1 window (a
// squeeze-excitation block's layers at batch 1) becomes the dot it is,
// which runs on the gemv kernel.
// Without it each of these ran on the native reference-order kernel, one
// thread, 10-40x slower than oneDNN (a small CNN's training step).
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_CONV_CANONICALIZATION_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_CONV_CANONICALIZATION_H_

#include "passes/pass.h"

namespace xonnx::cpu {

class ConvCanonicalization : public passes::Pass {
 public:
  absl::string_view name() const override { return "conv-canonicalization"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_CONV_CANONICALIZATION_H_
