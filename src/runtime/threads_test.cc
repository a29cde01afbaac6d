#include "runtime/threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace xonnx {
namespace {

TEST(ThreadPoolTest, ParallelForRunsEveryItemOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> seen(100);
  pool.ParallelFor(100, 4, [&](int k) {
    ++seen[k];
    return true;
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(ThreadPoolTest, ParallelForStopsWhenAnItemSaysSo) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  pool.ParallelFor(1000, 1, [&](int k) {
    ++ran;
    return k < 9;
  });
  EXPECT_EQ(ran.load(), 10);
}

// Every worker busy in a ParallelFor of its own: each finishes, since the
// caller takes the items no worker is free for.
TEST(ThreadPoolTest, NestedParallelForsOnAFullPoolFinish) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  std::vector<std::promise<void>> done(6);
  for (int t = 0; t < 6; ++t)
    pool.Submit([&, t] {
      pool.ParallelFor(8, 8, [&](int) {
        ++inner;
        return true;
      });
      done[t].set_value();
    });
  for (auto& d : done) ASSERT_EQ(d.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(inner.load(), 48);
}

TEST(ThreadPoolTest, LimitedQueueRunsAtMostItsLimitAndEverything) {
  std::atomic<int> running{0}, most{0}, ran{0};
  auto pool = std::make_unique<ThreadPool>(8);
  LimitedQueue q(pool.get(), 2);
  {
    for (int i = 0; i < 20; ++i)
      q.Submit([&] {
        int now = ++running;
        for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        --running;
        ++ran;
      });
    pool.reset();  // drains: every task has run
  }
  EXPECT_EQ(ran.load(), 20);
  EXPECT_LE(most.load(), 2);
  EXPECT_GE(most.load(), 1);
}

}  // namespace
}  // namespace xonnx
