// The pool of DMA-mapped staging blocks, on xonnx's CPU plugin (which
// keeps a record of what is mapped, so unmapping is observable).
#include "runtime/mapped_staging.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/clients.h"

namespace xonnx {
namespace {

std::shared_ptr<pjrt::Client> CpuClient() {
  auto c = GetClient(SessionOptions{});
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : nullptr;
}

TEST(MappedStaging, BlocksAreMappedOnceAndReused) {
  auto client = CpuClient();
  ASSERT_TRUE(client);
  MappedStaging pool(client);
  void* first = nullptr;
  {
    auto a = pool.Acquire(10000);
    ASSERT_TRUE(a);
    EXPECT_GE(a.size(), 10000u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 4096, 0u);
    std::memset(a.data(), 7, 10000);  // the whole request is writable
    first = a.data();
    // A second lease while the first is held is another block.
    auto b = pool.Acquire(10000);
    ASSERT_TRUE(b);
    EXPECT_NE(b.data(), a.data());
  }
  auto again = pool.Acquire(9000);  // fits a block given back
  ASSERT_TRUE(again);
  (void)first;
  MappedStaging::Stats st = pool.stats();
  EXPECT_EQ(st.maps, 2u);
  EXPECT_EQ(st.reuses, 1u);
  EXPECT_EQ(st.leased_blocks, 1u);
  EXPECT_EQ(st.free_blocks, 1u);
  // A block far larger than the request is not taken for it.
  auto small = pool.Acquire(100);
  ASSERT_TRUE(small);
  EXPECT_EQ(pool.stats().maps, 3u);
}

TEST(MappedStaging, TheCapRefusesAndFreesIdleBlocks) {
  auto client = CpuClient();
  ASSERT_TRUE(client);
  MappedStaging pool(client, /*max_bytes=*/3 * 4096);
  auto a = pool.Acquire(8192);
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.Acquire(8192));  // 16 KiB would pass the cap: the call goes unstaged
  a = MappedStaging::Lease();        // given back, idle
  auto b = pool.Acquire(12288);      // the idle block is dropped to make room
  ASSERT_TRUE(b);
  EXPECT_EQ(pool.stats().mapped_bytes, 12288u);
  EXPECT_EQ(pool.stats().free_blocks, 0u);
}

TEST(MappedStaging, BlocksAreUnmappedWhenThePoolAndTheirLeasesAreGone) {
  auto client = CpuClient();
  ASSERT_TRUE(client);
  void* idle = nullptr;
  void* held_ptr = nullptr;
  MappedStaging::Lease held;
  {
    MappedStaging pool(client);
    idle = pool.Acquire(4096).data();  // given back at once
    held = pool.Acquire(4096 * 3);
    held_ptr = held.data();
    ASSERT_TRUE(idle && held_ptr);
    // Still mapped: mapping it again is refused by the plugin.
    EXPECT_FALSE(client->DmaMap(held_ptr, 4096).ok());
  }
  EXPECT_TRUE(held);  // outlives its pool
  std::memset(held.data(), 1, held.size());
  held = MappedStaging::Lease();
  // Both were unmapped (and freed): the plugin knows neither any more.
  EXPECT_TRUE(absl::IsNotFound(client->DmaUnmap(idle)));
  EXPECT_TRUE(absl::IsNotFound(client->DmaUnmap(held_ptr)));
}

TEST(MappedStaging, ConcurrentLeasesNeverShareABlock) {
  auto client = CpuClient();
  ASSERT_TRUE(client);
  MappedStaging pool(client);
  std::vector<std::thread> threads;
  std::atomic<int> clobbered{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto l = pool.Acquire(5000 + 1000 * (i % 3));
        if (!l) continue;
        std::memset(l.data(), t, 5000);
        std::this_thread::yield();
        for (int k = 0; k < 5000; k += 499)
          if (static_cast<unsigned char*>(l.data())[k] != t) ++clobbered;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(clobbered, 0);
  EXPECT_EQ(pool.stats().leased_blocks, 0u);
}

}  // namespace
}  // namespace xonnx
