#include "runtime/call_bounds.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace xonnx {

CallBounds::CallBounds(const RunOptions& run, const SessionOptions& session, const CancelToken& closing) {
  deadline_ms_ = run.deadline_ms >= 0 ? run.deadline_ms : session.deadline_ms;
  if (deadline_ms_ > 0) {
    // Saturated: a deadline past what the clock's int64 nanoseconds hold
    // (about 292 years) is no deadline at all, not one passed already.
    const int64_t now = MonotonicNs(), max = std::numeric_limits<int64_t>::max();
    deadline_ns_ = deadline_ms_ > (max - now) / 1000000 ? max : now + deadline_ms_ * 1000000;
  }
  flags_[0] = closing.flag();
  if (run.cancel) flags_[1] = run.cancel->flag();
}

absl::Status CallBounds::Check(const std::string& file) const {
  for (const std::atomic<int32_t>* f : flags_)
    if (f && f->load(std::memory_order_relaxed))
      return absl::CancelledError(absl::StrCat(file, ": the call was cancelled"));
  if (deadline_ns_ && MonotonicNs() > deadline_ns_)
    return absl::DeadlineExceededError(absl::StrCat(file, ": the call passed its deadline of ", deadline_ms_, " ms"));
  return absl::OkStatus();
}

PJRT_XonnxRunBounds_Extension CallBounds::Extension() const {
  PJRT_XonnxRunBounds_Extension e;
  std::memset(&e, 0, sizeof(e));
  e.base.struct_size = sizeof(e);
  e.base.type = PJRT_Extension_Type_XonnxRunBounds;
  for (int k = 0; k < 2; ++k) e.cancel_flags[k] = flags_[k];
  e.deadline_ns = deadline_ns_;
  return e;
}

}  // namespace xonnx
