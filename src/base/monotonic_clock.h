// The monotonic clock as nanoseconds (CLOCK_MONOTONIC): the clock of run
// deadlines and traces, shared by the library and xonnx's CPU plugin, which
// may be built apart and meet only through the PjRT C API. And the
// milliseconds since a steady-clock reading, for the timings reported.
#ifndef XONNX_BASE_MONOTONIC_CLOCK_H_
#define XONNX_BASE_MONOTONIC_CLOCK_H_

#include <time.h>

#include <chrono>
#include <cstdint>

namespace xonnx {

inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

inline double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace xonnx

#endif  // XONNX_BASE_MONOTONIC_CLOCK_H_
