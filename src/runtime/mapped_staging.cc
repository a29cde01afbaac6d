#include "runtime/mapped_staging.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <utility>

namespace xonnx {

namespace {

constexpr size_t kPage = 4096;
// A free block serves a request up to this factor smaller than itself.
constexpr size_t kMaxSlack = 2;

}  // namespace

struct MappedStaging::State {
  std::shared_ptr<pjrt::Client> client;
  size_t max_bytes = 0;
  std::mutex mu;
  std::multimap<size_t, void*> free;  // by size
  std::map<void*, size_t> leased;
  Stats stats;
  bool closed = false;  // the pool is gone: returned blocks are dropped

  // Unmaps and frees one block; the caller holds `mu`.
  void Drop(void* p, size_t size) {
    (void)client->DmaUnmap(p);  // a failure leaves nothing to do but free
    std::free(p);
    stats.mapped_bytes -= size;
  }
};

MappedStaging::MappedStaging(std::shared_ptr<pjrt::Client> client, size_t max_bytes)
    : state_(std::make_shared<State>()) {
  state_->client = std::move(client);
  state_->max_bytes = max_bytes;
}

MappedStaging::~MappedStaging() {
  std::lock_guard<std::mutex> l(state_->mu);
  for (auto& [size, p] : state_->free) state_->Drop(p, size);
  state_->free.clear();
  state_->closed = true;
}

MappedStaging::Lease MappedStaging::Acquire(size_t size) {
  State& s = *state_;
  size_t rounded = (std::max<size_t>(size, 1) + kPage - 1) / kPage * kPage;
  std::lock_guard<std::mutex> l(s.mu);
  if (s.stats.disabled) return {};
  auto it = s.free.lower_bound(rounded);
  if (it != s.free.end() && it->first <= rounded * kMaxSlack) {
    auto [block, p] = *it;
    s.free.erase(it);
    s.leased[p] = block;
    s.stats.reuses++;
    return Lease(state_, p, block);
  }
  // Room is made by dropping free blocks, the largest first.
  while (s.stats.mapped_bytes + rounded > s.max_bytes && !s.free.empty()) {
    auto last = std::prev(s.free.end());
    s.Drop(last->second, last->first);
    s.free.erase(last);
  }
  if (s.stats.mapped_bytes + rounded > s.max_bytes) return {};
  void* p = std::aligned_alloc(kPage, rounded);
  if (!p) return {};
  absl::Status st = s.client->DmaMap(p, rounded);
  if (!st.ok()) {
    std::free(p);
    if (absl::IsUnimplemented(st)) s.stats.disabled = true;
    return {};
  }
  s.stats.mapped_bytes += rounded;
  s.stats.maps++;
  s.leased[p] = rounded;
  return Lease(state_, p, rounded);
}

MappedStaging::Stats MappedStaging::stats() const {
  std::lock_guard<std::mutex> l(state_->mu);
  Stats st = state_->stats;
  st.free_blocks = state_->free.size();
  st.leased_blocks = state_->leased.size();
  return st;
}

MappedStaging::Lease::Lease(Lease&& other) noexcept
    : state_(std::move(other.state_)), data_(std::exchange(other.data_, nullptr)), size_(other.size_) {}

MappedStaging::Lease& MappedStaging::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    state_ = std::move(other.state_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = other.size_;
  }
  return *this;
}

MappedStaging::Lease::~Lease() { Release(); }

void MappedStaging::Lease::Release() {
  if (!data_) return;
  // The last lease of a closed pool ends its state: it goes after the lock.
  std::shared_ptr<State> keep = std::move(state_);
  std::lock_guard<std::mutex> l(keep->mu);
  keep->leased.erase(data_);
  if (keep->closed) {
    keep->Drop(data_, size_);
  } else {
    keep->free.emplace(size_, data_);
  }
  data_ = nullptr;
}

}  // namespace xonnx
