// Host memory registered for a device's direct memory access, reused by
// calls to stage their inputs and outputs.
//
// A GPU plugin copies pageable host memory through its own pinned staging
// buffer (XLA's: a copy on its threads, then the DMA). Memory registered
// with PJRT_Client_DmaMap is transferred directly. Registering costs about
// as much as the transfer itself, so blocks are mapped once and kept: a
// call copies its inputs into leased blocks, the device reads them, and the
// outputs come back into leased blocks the call copies out of.
#ifndef XONNX_RUNTIME_MAPPED_STAGING_H_
#define XONNX_RUNTIME_MAPPED_STAGING_H_

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "pjrt/client.h"

namespace xonnx {

class MappedStaging {
  struct State;

 public:
  // Blocks mapped at most, in bytes, leased or free; beyond it a lease is
  // refused and the call transfers from its own memory.
  static constexpr size_t kDefaultMaxBytes = size_t{1} << 30;

  explicit MappedStaging(std::shared_ptr<pjrt::Client> client, size_t max_bytes = kDefaultMaxBytes);
  // Unmaps and frees the free blocks; a block still leased goes when its
  // lease ends.
  ~MappedStaging();
  MappedStaging(const MappedStaging&) = delete;
  MappedStaging& operator=(const MappedStaging&) = delete;

  // A mapped block of at least `size` bytes for one call, given back when
  // the lease ends. Empty (false) when the plugin cannot map memory (it is
  // not asked again), when mapping failed, or when the cap is reached.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    explicit operator bool() const { return data_ != nullptr; }
    void* data() const { return data_; }
    size_t size() const { return size_; }

   private:
    friend class MappedStaging;
    Lease(std::shared_ptr<State> state, void* data, size_t size) : state_(std::move(state)), data_(data), size_(size) {}
    void Release();
    std::shared_ptr<State> state_;
    void* data_ = nullptr;
    size_t size_ = 0;
  };
  Lease Acquire(size_t size);

  // What the pool holds, for tests and reports.
  struct Stats {
    size_t mapped_bytes = 0, free_blocks = 0, leased_blocks = 0, maps = 0, reuses = 0;
    bool disabled = false;
  };
  Stats stats() const;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_MAPPED_STAGING_H_
