// Normalization over chosen axes, shared by the ONNX normalization ops
// (normalization.cc) and ONNX Runtime's fused ones (microsoft.cc).
#ifndef XONNX_ONNX_OPS_NORMALIZE_H_
#define XONNX_ONNX_OPS_NORMALIZE_H_

#include <cstdint>
#include <vector>

#include "hlo/builder.h"

namespace xonnx::onnx_import {

struct Normalized {
  hlo::Instruction* y;
  hlo::Instruction* mean;     // keepdims; null where there is none
  hlo::Instruction* inv_std;  // keepdims
};
// (x - mean) / sqrt(var + eps) over `axes` (population variance), with the
// statistics.
Normalized Normalize(hlo::Builder& b, hlo::Instruction* x, const std::vector<int64_t>& axes, double eps);
// x / sqrt(mean(x^2) + eps) over `axes` (RMS normalization, no centering);
// inv_std is 1 / sqrt(mean(x^2) + eps), mean is null.
Normalized RmsNormalize(hlo::Builder& b, hlo::Instruction* x, const std::vector<int64_t>& axes, double eps);

// Layer (or, with `rms`, RMS) normalization of x over the axes from `axis`
// on, the statistics in f32 when `stash_f32` and x is 16-bit; y back in x's
// type, the statistics in the compute type.
struct NormalizedFrom {
  hlo::Instruction* y;
  Normalized stats;
};
NormalizedFrom NormalizeFrom(hlo::Builder& b, hlo::Instruction* x, int64_t axis, double eps, bool rms, bool stash_f32);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_OPS_NORMALIZE_H_
