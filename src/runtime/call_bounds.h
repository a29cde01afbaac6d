// The bounds of one call (RunOptions), resolved against the session's
// options when the call starts: checked by the runtime before each program
// starts and between a split model's parts, and handed to xonnx's CPU
// plugin, which checks them between kernels and at every loop iteration.
#ifndef XONNX_RUNTIME_CALL_BOUNDS_H_
#define XONNX_RUNTIME_CALL_BOUNDS_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "base/monotonic_clock.h"
#include "base/status.h"
#include "pjrt/c_api.h"
#include "xonnx/options.h"

namespace xonnx {

class CallBounds {
 public:
  CallBounds() = default;
  // The call's own deadline, else the session's; the call's token and the
  // session's own (raised when the session closes).
  CallBounds(const RunOptions& run, const SessionOptions& session, const CancelToken& closing);

  bool bounded() const { return deadline_ns_ || flags_[0] || flags_[1]; }
  // CANCELLED or DEADLINE_EXCEEDED, naming `file`, once the call must stop.
  absl::Status Check(const std::string& file) const;
  // The same bounds for xonnx's CPU plugin.
  PJRT_XonnxRunBounds_Extension Extension() const;

 private:
  const std::atomic<int32_t>* flags_[2] = {nullptr, nullptr};
  int64_t deadline_ns_ = 0;  // MonotonicNs(); 0: none
  int64_t deadline_ms_ = 0;  // as given, for messages
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_CALL_BOUNDS_H_
