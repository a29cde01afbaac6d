#include "backends/cpu/runtime/arena_pool.h"

#include <algorithm>

namespace xonnx::cpu {

Arena ArenaPool::Take(int64_t bytes) {
  bytes = (std::max<int64_t>(bytes, 64) + 63) / 64 * 64;
  std::lock_guard<std::mutex> l(mu_);
  Arena a;
  auto it = std::find_if(free_.begin(), free_.end(), [&](const Arena& f) { return f.capacity >= bytes; });
  if (it != free_.end()) {
    a = std::move(*it);
    free_.erase(it);
    free_bytes_ -= a.capacity;
  } else {
    a.data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
    if (!a.data) return a;
    a.capacity = bytes;
    ++allocations_;
  }
  in_use_ += a.capacity;
  peak_in_use_ = std::max(peak_in_use_, in_use_);
  window_peak_ = std::max(window_peak_, in_use_);
  if (++calls_ == window_) {
    calls_ = 0;
    previous_window_peak_ = window_peak_;
    window_peak_ = in_use_;
  }
  return a;
}

void ArenaPool::Give(Arena a) {
  std::lock_guard<std::mutex> l(mu_);
  in_use_ -= a.capacity;
  free_bytes_ += a.capacity;
  // Sorted by capacity, so Take finds the best fit first.
  auto pos = std::lower_bound(free_.begin(), free_.end(), a.capacity,
                              [](const Arena& f, int64_t c) { return f.capacity < c; });
  free_.insert(pos, std::move(a));
  Trim();
}

void ArenaPool::Trim() {
  int64_t keep = std::max(window_peak_, previous_window_peak_);
  while (free_.size() > 1 && free_bytes_ > keep) {
    free_bytes_ -= free_.front().capacity;
    free_.erase(free_.begin());
  }
}

void ArenaPool::Attach() {
  std::lock_guard<std::mutex> l(mu_);
  ++users_;
}

void ArenaPool::Detach() {
  std::lock_guard<std::mutex> l(mu_);
  if (--users_ > 0) return;
  free_.clear();
  free_bytes_ = 0;
  window_peak_ = previous_window_peak_ = in_use_;
  calls_ = 0;
}

ArenaPoolStats ArenaPool::Stats() {
  std::lock_guard<std::mutex> l(mu_);
  return {free_bytes_, in_use_, peak_in_use_, allocations_};
}

ArenaPool& SharedArenaPool() {
  static ArenaPool* p = new ArenaPool;  // never destroyed: executables may outlive statics
  return *p;
}

}  // namespace xonnx::cpu
