#include "backends/cpu/executable.h"

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

Executable::~Executable() = default;

absl::Status Executable::Execute(absl::Span<const void* const> args, absl::Span<void* const> outputs) const {
  if (args.size() != parameter_shapes_.size())
    return InvalidArgument("the program takes %d arguments, got %d", parameter_shapes_.size(), args.size());
  if (outputs.size() != output_shapes_.size())
    return InvalidArgument("the program has %d outputs, got %d buffers", output_shapes_.size(), outputs.size());
  ArenaPtr arena = Pool().Take(arena_bytes_);
  if (!arena) return absl::ResourceExhaustedError(absl::StrFormat("cannot allocate %d bytes of working memory", arena_bytes_));
  Frame frame(args, arena.get(), &constants_);
  absl::Status st;
  for (const Thunk& t : thunks_) {
    st = t.run(frame);
    if (!st.ok()) {
      st = Annotate(st, t.name);
      break;
    }
  }
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
