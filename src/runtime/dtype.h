// Conversions between the public DataType and Tensor and the internal HLO
// element types, literals and ONNX TensorProtos (internal).
#ifndef XONNX_RUNTIME_DTYPE_H_
#define XONNX_RUNTIME_DTYPE_H_

#include "hlo/literal.h"
#include "hlo/types.h"
#include "onnx/onnx_pb.h"
#include "pjrt/c_api.h"
#include "xonnx/tensor.h"

namespace xonnx {

hlo::PrimitiveType ToHlo(DataType t);
absl::StatusOr<DataType> FromHlo(hlo::PrimitiveType t);
// The PjRT buffer type of a numeric DataType (strings have none).
absl::StatusOr<PJRT_Buffer_Type> ToPjrt(DataType t);

// A numeric tensor's values as a literal, and back (copies).
hlo::Literal LiteralOf(const Tensor& t);
absl::StatusOr<Tensor> TensorOf(const hlo::Literal& lit);
// A TensorProto's values (string tensors included).
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& p);
onnx::TensorProto TensorToProto(const Tensor& t, const std::string& name);
// A file's bytes, and writing them (errors name the file).
absl::StatusOr<std::string> ReadAll(const std::string& path);
absl::Status WriteFileBytes(const std::string& path, const std::string& bytes);

}  // namespace xonnx

#endif  // XONNX_RUNTIME_DTYPE_H_
