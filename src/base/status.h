// Status helpers shared by every layer: early-return macros in the style of
// XLA's TF_RETURN_IF_ERROR / TF_ASSIGN_OR_RETURN.
#ifndef XONNX_BASE_STATUS_H_
#define XONNX_BASE_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

#define XONNX_CONCAT_IMPL(a, b) a##b
#define XONNX_CONCAT(a, b) XONNX_CONCAT_IMPL(a, b)

// Returns from the current function if `expr` yields a non-OK status.
// Works for abseil's Status and for xonnx's public one alike.
#define RETURN_IF_ERROR(expr)  \
  do {                         \
    auto _st = (expr);         \
    if (!_st.ok()) return _st; \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(var, lhs, expr) \
  auto var = (expr);                          \
  if (!var.ok()) return var.status();         \
  lhs = std::move(var).value()

// `ASSIGN_OR_RETURN(auto x, F());` declares x from a StatusOr or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(XONNX_CONCAT(_statusor_, __LINE__), lhs, expr)

namespace xonnx {

// Shorthands for the error kinds the project uses most.
template <typename... Args>
absl::Status InvalidArgument(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrFormat(fmt, args...));
}
template <typename... Args>
absl::Status Unimplemented(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  return absl::UnimplementedError(absl::StrFormat(fmt, args...));
}
template <typename... Args>
absl::Status Internal(const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  return absl::InternalError(absl::StrFormat(fmt, args...));
}

// Returns `st` with `prefix: ` prepended to its message, keeping the code
// and payloads.
inline absl::Status Annotate(const absl::Status& st, absl::string_view prefix) {
  if (st.ok()) return st;
  absl::Status out(st.code(), absl::StrCat(prefix, ": ", st.message()));
  st.ForEachPayload([&](absl::string_view key, const absl::Cord& value) { out.SetPayload(key, value); });
  return out;
}

}  // namespace xonnx

#endif  // XONNX_BASE_STATUS_H_
