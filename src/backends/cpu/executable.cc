#include "backends/cpu/executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "base/status.h"

namespace xonnx::cpu {

namespace {

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using ArenaPtr = std::unique_ptr<uint8_t, FreeDeleter>;

// Arenas are reused across calls (one per concurrent call) so a run does not
// pay for fresh pages.
class ArenaPool {
 public:
  ArenaPtr Take(int64_t bytes) {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        ArenaPtr p = std::move(it->second.back());
        it->second.pop_back();
        return p;
      }
    }
    size_t size = (std::max<int64_t>(bytes, 64) + 63) / 64 * 64;
    return ArenaPtr(static_cast<uint8_t*>(std::aligned_alloc(64, size)));
  }
  void Give(int64_t bytes, ArenaPtr p) {
    std::lock_guard<std::mutex> l(mu_);
    auto& v = free_[bytes];
    if (v.size() < 8) v.push_back(std::move(p));
  }

 private:
  std::mutex mu_;
  std::map<int64_t, std::vector<ArenaPtr>> free_;
};

ArenaPool& Pool() {
  static ArenaPool* p = new ArenaPool;
  return *p;
}

}  // namespace

// XONNX_PROFILE=1 prints, when an executable is destroyed, the time its
// thunks took, summed per kind.
bool ProfilingEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("XONNX_PROFILE");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

Executable::~Executable() {
  if (!profile_ || profile_->calls == 0) return;
  std::map<std::string, double> by_kind;
  for (size_t i = 0; i < thunks_.size(); ++i) by_kind[thunk_kinds_[i]] += profile_->ns[i];
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto& [k, ns] : by_kind) {
    rows.push_back({ns, k});
    total += ns;
  }
  std::sort(rows.rbegin(), rows.rend());
  std::fprintf(stderr, "xonnx profile (%lld calls, %.3f ms per call):\n", static_cast<long long>(profile_->calls),
               total / 1e6 / profile_->calls);
  for (const auto& [ns, k] : rows)
    std::fprintf(stderr, "  %-28s %9.3f ms  %5.1f%%\n", k.c_str(), ns / 1e6 / profile_->calls, 100 * ns / total);
}

absl::Status Executable::Execute(absl::Span<const void* const> args, absl::Span<void* const> outputs) const {
  if (args.size() != parameter_shapes_.size())
    return InvalidArgument("the program takes %d arguments, got %d", parameter_shapes_.size(), args.size());
  if (outputs.size() != output_shapes_.size())
    return InvalidArgument("the program has %d outputs, got %d buffers", output_shapes_.size(), outputs.size());
  ArenaPtr arena = Pool().Take(arena_bytes_);
  if (!arena) return absl::ResourceExhaustedError(absl::StrFormat("cannot allocate %d bytes of working memory", arena_bytes_));
  Frame frame(args, arena.get(), &constants_);
  absl::Status st;
  if (ProfilingEnabled() && !profile_) {
    std::lock_guard<std::mutex> l(profile_mu_);
    if (!profile_) {
      profile_ = std::make_unique<Profile>();
      profile_->ns.assign(thunks_.size(), 0);
    }
  }
  for (size_t i = 0; i < thunks_.size(); ++i) {
    const Thunk& t = thunks_[i];
    auto start = profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    st = t.run(frame);
    if (profile_) profile_->ns[i] += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    if (!st.ok()) {
      st = Annotate(st, t.name);
      break;
    }
  }
  if (profile_) ++profile_->calls;
  if (st.ok())
    for (size_t k = 0; k < outputs.size(); ++k)
      std::memcpy(outputs[k], frame.Ptr(output_refs_[k]), output_shapes_[k].ByteSize());
  Pool().Give(arena_bytes_, std::move(arena));
  return st;
}

std::vector<std::pair<std::string, int64_t>> Executable::ThunkSummary() const {
  std::map<std::string, int64_t> counts;
  for (const auto& k : thunk_kinds_) ++counts[k];
  return {counts.begin(), counts.end()};
}

}  // namespace xonnx::cpu
