// The plugin's element types both ways: the ABI's PJRT_Buffer_Type and the
// backend's hlo::PrimitiveType (internal header).
#ifndef XONNX_PLUGINS_CPU_ELEMENT_TYPES_H_
#define XONNX_PLUGINS_CPU_ELEMENT_TYPES_H_

#include "absl/status/statusor.h"
#include "hlo/types.h"
#include "pjrt/c_api.h"

namespace xonnx::pjrt_cpu {

absl::StatusOr<PJRT_Buffer_Type> ToPjrtType(hlo::PrimitiveType t);
absl::StatusOr<hlo::PrimitiveType> FromPjrtType(PJRT_Buffer_Type t);

}  // namespace xonnx::pjrt_cpu

#endif  // XONNX_PLUGINS_CPU_ELEMENT_TYPES_H_
