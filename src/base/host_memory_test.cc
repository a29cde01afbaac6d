#include "xonnx/host_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace xonnx {
namespace {

// A large block freed is handed out again for a request of about its size,
// aligned, with its pages already mapped; not for one much smaller.
TEST(HostMemory, LargeBlocksAreReusedForRequestsOfTheirSize) {
  const size_t n = 3 << 20;
  void* a = AllocateHostBytes(n);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, n);
  FreeHostBytes(a, n);
  HostMemoryStats before = HostMemoryCount();
  EXPECT_GE(before.cached_bytes, static_cast<int64_t>(n));
  void* small = AllocateHostBytes(n / 2);  // too small to take the 3 MiB block
  EXPECT_NE(small, a);
  void* b = AllocateHostBytes(n - 1000);
  EXPECT_EQ(b, a);
  EXPECT_EQ(HostMemoryCount().reuses, before.reuses + 1);
  FreeHostBytes(b, n - 1000);
  FreeHostBytes(small, n / 2);
}

// Small blocks are malloc's: never cached.
TEST(HostMemory, SmallBlocksAreNotCached) {
  int64_t cached = HostMemoryCount().cached_bytes;
  void* p = AllocateHostBytes(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  FreeHostBytes(p, 1000);
  EXPECT_EQ(HostMemoryCount().cached_bytes, cached);
  EXPECT_EQ(AllocateHostBytes(0), nullptr);
}

// Containers with HostAllocator hold their values like any other.
TEST(HostMemory, AllocatorBacksVectors) {
  std::vector<float, HostAllocator<float>> v(1 << 20, 2.5f);
  v.push_back(1.0f);
  EXPECT_EQ(v.front(), 2.5f);
  EXPECT_EQ(v.back(), 1.0f);
  std::vector<float, HostAllocator<float>> w = v;
  EXPECT_EQ(w, v);
  w = v;  // copy-assignment compares allocators with != (C++17 does not derive it)
  EXPECT_EQ(w.size(), v.size());
}

// Elements made without a value are left as the memory holds them (a
// tensor about to be overwritten); an explicit value is still written, also
// over a recycled block that held other bytes.
TEST(HostMemory, ValueInitializationOnlyWhenAsked) {
  constexpr size_t kBytes = 1 << 20;
  {
    std::vector<uint8_t, HostAllocator<uint8_t>> dirty;
    dirty.resize(kBytes);
    std::memset(dirty.data(), 0xab, kBytes);
  }
  std::vector<uint8_t, HostAllocator<uint8_t>> zeros;
  zeros.assign(kBytes, 0);
  for (size_t i = 0; i < kBytes; i += 4093) ASSERT_EQ(zeros[i], 0) << i;
  std::vector<int, HostAllocator<int>> ints(5);
  ints.emplace_back(7);
  EXPECT_EQ(ints.back(), 7);
}

}  // namespace
}  // namespace xonnx
