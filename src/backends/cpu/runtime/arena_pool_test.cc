// ArenaPool on its own: reuse, the limit on what it keeps after a burst of
// concurrent calls, and its memory going with the last executable.
#include "backends/cpu/runtime/arena_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace xonnx::cpu {
namespace {

TEST(ArenaPool, ASmallerCallReusesALargerFreeArena) {
  ArenaPool pool;
  pool.Attach();
  pool.Give(pool.Take(4096));
  Arena a = pool.Take(1000);
  EXPECT_EQ(a.capacity, 4096);
  EXPECT_EQ(pool.Stats().allocations, 1);
  EXPECT_EQ(pool.Stats().in_use_bytes, 4096);
  pool.Give(std::move(a));
  EXPECT_EQ(pool.Stats().in_use_bytes, 0);
  pool.Detach();
}

// Four calls at once leave four arenas; two windows of single calls later
// the pool keeps one, the largest. A burst within the window keeps them.
TEST(ArenaPool, ABurstOfConcurrentCallsIsGivenBackTwoWindowsLater) {
  const int64_t window = 16;
  ArenaPool pool(window);
  pool.Attach();
  std::vector<Arena> burst;
  for (int64_t bytes : {1024, 2048, 4096, 8192}) burst.push_back(pool.Take(bytes));
  for (Arena& a : burst) pool.Give(std::move(a));
  EXPECT_EQ(pool.Stats().free_bytes, 1024 + 2048 + 4096 + 8192);
  for (int i = 0; i < window; ++i) pool.Give(pool.Take(4096));
  EXPECT_EQ(pool.Stats().free_bytes, 1024 + 2048 + 4096 + 8192) << "trimmed within a window of the burst";
  for (int i = 0; i < 2 * window; ++i) pool.Give(pool.Take(4096));
  ArenaPoolStats st = pool.Stats();
  EXPECT_EQ(st.free_bytes, 8192);
  EXPECT_EQ(st.allocations, 4);
  EXPECT_EQ(st.peak_in_use_bytes, 1024 + 2048 + 4096 + 8192);
  pool.Detach();
}

TEST(ArenaPool, TheLastUserLeavingFreesTheMemory) {
  ArenaPool pool;
  pool.Attach();
  pool.Attach();
  pool.Give(pool.Take(1 << 20));
  pool.Detach();
  EXPECT_EQ(pool.Stats().free_bytes, 1 << 20) << "one executable is still there";
  pool.Detach();
  EXPECT_EQ(pool.Stats().free_bytes, 0);
  // A later executable starts afresh.
  pool.Attach();
  pool.Give(pool.Take(64));
  EXPECT_EQ(pool.Stats().allocations, 2);
  pool.Detach();
}

}  // namespace
}  // namespace xonnx::cpu
