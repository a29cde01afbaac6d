// Mapping between the public DataType and HLO element types (internal).
#ifndef XONNX_RUNTIME_DTYPE_H_
#define XONNX_RUNTIME_DTYPE_H_

#include "hlo/types.h"
#include "xonnx/tensor.h"

namespace xonnx {

hlo::PrimitiveType ToHlo(DataType t);
StatusOr<DataType> FromHlo(hlo::PrimitiveType t);

}  // namespace xonnx

#endif  // XONNX_RUNTIME_DTYPE_H_
