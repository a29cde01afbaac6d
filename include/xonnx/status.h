// Errors are values: every fallible xonnx call returns a Status or StatusOr.
#ifndef XONNX_STATUS_H_
#define XONNX_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace xonnx {

using Status = absl::Status;
template <typename T>
using StatusOr = absl::StatusOr<T>;

}  // namespace xonnx

#endif  // XONNX_STATUS_H_
