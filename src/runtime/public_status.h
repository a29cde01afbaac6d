// The public API's boundary: xonnx's internals return abseil's Status, the
// public API its own (xonnx/status.h, so that users need no abseil). Each
// public function runs its body through PublicCall, which also turns an
// escaped exception into an error (base/exceptions.h).
#ifndef XONNX_RUNTIME_PUBLIC_STATUS_H_
#define XONNX_RUNTIME_PUBLIC_STATUS_H_

#include <string>
#include <utility>

#include "base/exceptions.h"
#include "base/status.h"
#include "xonnx/status.h"

namespace xonnx {

// The codes are the same numbers in both (the canonical gRPC codes).
inline Status ToPublic(const absl::Status& s) {
  return Status(static_cast<StatusCode>(s.code()), std::string(s.message()));
}
template <typename T>
StatusOr<T> ToPublic(absl::StatusOr<T>&& s) {
  if (!s.ok()) return ToPublic(s.status());
  return StatusOr<T>(std::move(*s));
}
inline absl::Status FromPublic(const Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.code()), s.message());
}
template <typename T>
absl::StatusOr<T> FromPublic(StatusOr<T>&& s) {
  if (!s.ok()) return FromPublic(s.status());
  return std::move(*s);
}

// fn()'s abseil Status or StatusOr, or the status of an exception that
// escaped it, as the public type.
template <typename F>
auto PublicCall(absl::string_view where, F&& fn) {
  return ToPublic(CatchExceptions(where, std::forward<F>(fn)));
}

}  // namespace xonnx

#endif  // XONNX_RUNTIME_PUBLIC_STATUS_H_
