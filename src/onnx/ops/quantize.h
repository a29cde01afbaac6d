// Quantization arithmetic shared by ONNX's quantized ops (quant.cc) and ONNX
// Runtime's (microsoft_quant.cc): every one rounds half to even and
// saturates as QuantizeLinear does.
#ifndef XONNX_ONNX_OPS_QUANTIZE_H_
#define XONNX_ONNX_OPS_QUANTIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "hlo/builder.h"
#include "onnx/context.h"

namespace xonnx::onnx_import {

// A per-tensor (one value) or per-axis (1-D) parameter broadcast against x.
absl::StatusOr<hlo::Instruction*> AlongAxis(NodeContext& ctx, hlo::Instruction* p, hlo::Instruction* x,
                                            int64_t axis_attr);
// round-half-even(v), saturated to `t` and converted.
hlo::Instruction* Saturate(hlo::Builder& b, hlo::Instruction* v, hlo::PrimitiveType t);
// x - the node's input `zp_input` (absent: 0) in int32, the zero point per
// tensor or along `axis`.
absl::StatusOr<hlo::Instruction*> Centered(NodeContext& ctx, hlo::Instruction* x, int zp_input, int64_t axis);

// DynamicQuantizeLinear of float x: uint8 values, the f32 scale and the
// uint8 zero point (scalars).
struct DynamicQuantized {
  hlo::Instruction* q;
  hlo::Instruction* scale;
  hlo::Instruction* zp;
};
DynamicQuantized DynamicQuantize(hlo::Builder& b, hlo::Instruction* x);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_OPS_QUANTIZE_H_
