// ONNX TensorProto <-> hlo::Literal, and ONNX element types <-> HLO types.
#ifndef XONNX_ONNX_TENSOR_PROTO_H_
#define XONNX_ONNX_TENSOR_PROTO_H_

#include <memory>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "onnx/onnx_pb.h"

namespace xonnx::onnx_import {

// HLO type of an ONNX TensorProto::DataType; error for string/complex.
absl::StatusOr<hlo::PrimitiveType> HloType(int32_t onnx_type);
int32_t OnnxType(hlo::PrimitiveType t);
// Name of an ONNX element type ("float", "int64", ...).
std::string OnnxTypeName(int32_t onnx_type);

// The tensor's value. With `owner` (non-null, and keeping `t` alive), raw
// data is borrowed rather than copied (see hlo::Literal::Borrow).
absl::StatusOr<hlo::Literal> LiteralFromTensorProto(const onnx::TensorProto& t,
                                                    std::shared_ptr<const void> owner = nullptr);
// The initializer of `g` named `name`, or null.
const onnx::TensorProto* FindInitializer(const onnx::GraphProto& g, const std::string& name);
onnx::TensorProto TensorProtoFromLiteral(const hlo::Literal& l, const std::string& name);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_TENSOR_PROTO_H_
