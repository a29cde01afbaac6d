// The last line of defence at the library's boundaries: the public API and
// the plugin's C entry points return errors, never exceptions. Code below
// them returns Status and parses without throwing; what still throws
// (allocation failure, a standard container's bounds check) is caught here
// and reported with the file or call it concerns.
#ifndef XONNX_BASE_EXCEPTIONS_H_
#define XONNX_BASE_EXCEPTIONS_H_

#include <exception>
#include <new>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace xonnx {

// The status an exception stands for: RESOURCE_EXHAUSTED for allocation
// failures, INTERNAL (a bug: something below failed to return a Status)
// for the rest. Call only inside a catch block.
inline absl::Status StatusOfCurrentException(absl::string_view where) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(where, ": out of memory"));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(where, ": unexpected error (", e.what(), ")"));
  } catch (...) {
    return absl::InternalError(absl::StrCat(where, ": unexpected error of unknown type"));
  }
}

// Returns fn()'s Status or StatusOr, or the status of an exception that
// escaped it.
template <typename F>
auto CatchExceptions(absl::string_view where, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (...) {
    return StatusOfCurrentException(where);
  }
}

}  // namespace xonnx

#endif  // XONNX_BASE_EXCEPTIONS_H_
