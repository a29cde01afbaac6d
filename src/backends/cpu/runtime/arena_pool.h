// The working memory (arenas) of CPU program runs, reused across calls and
// across executables: a model's batch buckets are separate executables, and
// a fresh arena per call would pay for fresh pages every time.
#ifndef XONNX_BACKENDS_CPU_RUNTIME_ARENA_POOL_H_
#define XONNX_BACKENDS_CPU_RUNTIME_ARENA_POOL_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace xonnx::cpu {

// What a pool holds, for tests and profiles.
struct ArenaPoolStats {
  int64_t free_bytes = 0;         // kept for later calls
  int64_t in_use_bytes = 0;       // held by running calls
  int64_t peak_in_use_bytes = 0;  // the most ever held at once
  int64_t allocations = 0;        // arenas allocated so far (not reused)
};

// One call's working memory, 64-byte aligned.
struct Arena {
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, FreeDeleter> data;
  int64_t capacity = 0;
};

// A call takes the smallest free arena that is large enough, or allocates
// one. Free arenas are kept up to the most memory calls held at once in the
// recent past (this window of `window` calls and the one before), the
// smallest freed first: calls that run one after another on buckets of
// growing size end up sharing the largest arena, and the extra arenas of a
// burst of concurrent calls are given back two windows after the burst.
// When the last executable that uses the pool goes, so does its memory.
// Thread-safe.
class ArenaPool {
 public:
  explicit ArenaPool(int64_t window = 256) : window_(window) {}

  // An empty arena (null data) when the memory cannot be allocated.
  Arena Take(int64_t bytes);
  void Give(Arena arena);
  // Executables register while they exist; the last one to leave frees the
  // free arenas.
  void Attach();
  void Detach();
  ArenaPoolStats Stats();

 private:
  void Trim();  // with mu_ held

  const int64_t window_;
  std::mutex mu_;
  std::vector<Arena> free_;  // ascending capacity
  int64_t free_bytes_ = 0, in_use_ = 0, peak_in_use_ = 0, allocations_ = 0;
  int64_t calls_ = 0, window_peak_ = 0, previous_window_peak_ = 0;
  int64_t users_ = 0;
};

// The pool all executables of the process share.
ArenaPool& SharedArenaPool();

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_RUNTIME_ARENA_POOL_H_
