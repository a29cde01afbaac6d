// Host memory of tensors and device buffers on the CPU. Blocks of 256 KiB
// and more are kept when freed and handed out again (a bounded cache), not
// returned to the operating system: a model with a large output otherwise
// maps fresh pages on every call, and a fault per 4 KiB page cost more than
// the model's own work on virtual machines (a 320x320 segmentation net: 18
// ms of kernels, 48 ms of page faults). Smaller blocks are plain malloc.
#ifndef XONNX_HOST_MEMORY_H_
#define XONNX_HOST_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <new>

#include "xonnx/export.h"

namespace xonnx {

// n bytes, 64-byte aligned (null when out of memory, or for n = 0); give
// them back with FreeHostBytes(p, n), with the same n.
XONNX_API void* AllocateHostBytes(size_t n);
XONNX_API void FreeHostBytes(void* p, size_t n);

// What the cache holds: for tests and profiles.
struct HostMemoryStats {
  int64_t cached_bytes = 0;  // free blocks kept for reuse
  int64_t reuses = 0;        // allocations served from the cache
};
XONNX_API HostMemoryStats HostMemoryCount();

// A standard allocator over AllocateHostBytes, for containers of tensor data.
template <typename T>
struct HostAllocator {
  using value_type = T;
  HostAllocator() = default;
  template <typename U>
  HostAllocator(const HostAllocator<U>&) {}  // NOLINT: allocators convert implicitly
  T* allocate(size_t n) {
    void* p = AllocateHostBytes(n * sizeof(T));
    if (!p && n) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { FreeHostBytes(p, n * sizeof(T)); }
  // Elements made without a value are default-initialized: a resize of
  // bytes leaves them as they are, to be overwritten (Tensor::ForOverwrite);
  // an explicit value (assign(n, 0)) still writes it.
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(static_cast<Args&&>(args)...);
  }
  template <typename U>
  bool operator==(const HostAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const HostAllocator<U>&) const {  // C++17 does not derive it from ==
    return false;
  }
};

}  // namespace xonnx

#endif  // XONNX_HOST_MEMORY_H_
