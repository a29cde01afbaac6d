// What both sides of the PjRT ABI share besides c_api.h: the compile options
// xonnx sends (and its CPU plugin reads).
#ifndef XONNX_PJRT_COMPILE_OPTIONS_H_
#define XONNX_PJRT_COMPILE_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pjrt/c_api.h"

namespace xonnx::pjrt {

// A serialized CompileOptionsProto for one replica and one partition on the
// device with id `device_id`. The id goes in the device assignment, which is
// what selects the device (device_ordinal alone does not on every plugin).
std::string EncodeCompileOptions(int device_id, int device_ordinal);
// The device id a CompileOptionsProto assigns (its device_ordinal when it has
// no assignment, 0 when neither), or an error for options asking for several
// replicas, partitions or devices.
absl::StatusOr<int> DeviceIdFromCompileOptions(absl::string_view bytes);

}  // namespace xonnx::pjrt

#endif  // XONNX_PJRT_COMPILE_OPTIONS_H_
