// Errors are values: every fallible xonnx call returns a Status or StatusOr.
//
// These are xonnx's own small types, not abseil's, so that a program using
// xonnx depends on no particular abseil build. The codes and their numbers
// are the canonical ones of gRPC and abseil (xonnx's internals use abseil and
// convert at the API's boundary, codes and messages unchanged).
#ifndef XONNX_STATUS_H_
#define XONNX_STATUS_H_

#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

namespace xonnx {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "INVALID_ARGUMENT", ... ("UNKNOWN" for a number outside the list).
inline const char* StatusCodeName(StatusCode code) {
  static const char* const kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : "UNKNOWN";
}

// An error code and message, or success (code kOk, no message).
class Status {
 public:
  Status() = default;
  // A status of `code` with `message` (the message is dropped for kOk).
  Status(StatusCode code, std::string message)
      : code_(code), message_(code == StatusCode::kOk ? std::string() : std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "OK", or "INVALID_ARGUMENT: message".
  std::string ToString() const {
    return ok() ? std::string("OK") : std::string(StatusCodeName(code_)) + ": " + message_;
  }
  bool operator==(const Status& o) const { return code_ == o.code_ && message_ == o.message_; }
  bool operator!=(const Status& o) const { return !(*this == o); }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

// A value of type T, or the Status saying why there is none.
template <typename T>
class StatusOr {
 public:
  // An error. An OK status here is a caller's bug and becomes kInternal,
  // so that a StatusOr is never "ok without a value".
  StatusOr(Status status)  // NOLINT: implicit, as errors are returned
      : status_(status.ok() ? Status(StatusCode::kInternal, "StatusOr made from an OK status") : std::move(status)) {}
  StatusOr(const T& value) : value_(value) {}        // NOLINT: implicit, as values are returned
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT
  // Anything a T can be made from (a unique_ptr<Derived>, an initializer).
  template <typename U, typename = std::enable_if_t<
                            std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, T> &&
                            !std::is_same_v<std::decay_t<U>, Status> && !std::is_same_v<std::decay_t<U>, StatusOr>>>
  StatusOr(U&& value) : value_(T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // The value; calling these on an error is a bug (std::bad_optional_access).
  T& value() & { return value_.value(); }
  const T& value() const& { return value_.value(); }
  T&& value() && { return std::move(value_.value()); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // The value, or `fallback` on an error.
  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace xonnx

#endif  // XONNX_STATUS_H_
