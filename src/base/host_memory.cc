#include "xonnx/host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

namespace xonnx {

namespace {

// Blocks below this size are malloc's business: it keeps them itself.
constexpr size_t kMinCached = 256 << 10;
// Free blocks kept at most, in bytes: beyond it the oldest go back.
constexpr size_t kMaxCachedBytes = size_t{1} << 30;
// A request takes a free block up to this factor larger than it needs.
constexpr double kMaxSlack = 1.25;

size_t Rounded(size_t n) { return (n + 4095) / 4096 * 4096; }

class BlockCache {
 public:
  void* Take(size_t n) {
    size_t size = Rounded(n);
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = free_.lower_bound(size);
      if (it != free_.end() && it->first <= size * kMaxSlack) {
        void* p = it->second.p;
        sizes_[p] = it->first;
        cached_ -= it->first;
        free_.erase(it);
        ++reuses_;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, size);
    if (!p) return nullptr;
    std::lock_guard<std::mutex> l(mu_);
    sizes_[p] = size;
    return p;
  }

  void Give(void* p) {
    std::lock_guard<std::mutex> l(mu_);
    auto s = sizes_.find(p);
    size_t size = s->second;
    sizes_.erase(s);
    free_.insert({size, {p, ++clock_}});
    cached_ += size;
    while (cached_ > kMaxCachedBytes) {  // the least recently freed go first
      auto oldest = std::min_element(free_.begin(), free_.end(),
                                     [](const auto& a, const auto& b) { return a.second.freed < b.second.freed; });
      cached_ -= oldest->first;
      std::free(oldest->second.p);
      free_.erase(oldest);
    }
  }

  HostMemoryStats Stats() {
    std::lock_guard<std::mutex> l(mu_);
    return {static_cast<int64_t>(cached_), reuses_};
  }

 private:
  struct Free {
    void* p;
    uint64_t freed;
  };
  std::mutex mu_;
  std::multimap<size_t, Free> free_;  // by size
  std::map<void*, size_t> sizes_;     // blocks handed out, by address
  size_t cached_ = 0;
  uint64_t clock_ = 0;
  int64_t reuses_ = 0;
};

BlockCache& Cache() {
  static BlockCache* c = new BlockCache;  // never destroyed: buffers may outlive statics
  return *c;
}

}  // namespace

void* AllocateHostBytes(size_t n) {
  if (n == 0) return nullptr;
  if (n < kMinCached) return std::aligned_alloc(64, (n + 63) / 64 * 64);
  return Cache().Take(n);
}

void FreeHostBytes(void* p, size_t n) {
  if (!p) return;
  if (n < kMinCached) {
    std::free(p);
    return;
  }
  Cache().Give(p);
}

HostMemoryStats HostMemoryCount() { return Cache().Stats(); }

}  // namespace xonnx
