#include "backends/cpu/runtime/executable.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "absl/strings/str_format.h"
#include "backends/cpu/runtime/arena_pool.h"
#include "base/monotonic_clock.h"
#include "base/status.h"

namespace xonnx::cpu {

ArenaPoolStats ArenaPoolCount() { return SharedArenaPool().Stats(); }

// XONNX_PROFILE=1 prints, when an executable is destroyed, the time its
// thunks took, summed per kind; XONNX_PROFILE=2 also the slowest thunks one
// by one, to find the instruction behind a kind's time; XONNX_PROFILE=3
// every thunk in program order, to set beside another engine's per-layer
// profile.
int ProfilingLevel() {
  static const int level = [] {
    const char* v = std::getenv("XONNX_PROFILE");
    if (!v || !*v) return 0;
    std::string level(v);
    return level == "0" ? 0 : level == "2" ? 2 : level == "3" ? 3 : 1;
  }();
  return level;
}
bool ProfilingEnabled() { return ProfilingLevel() > 0; }

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
  std::fprintf(stderr, "xonnx profile (%lld calls, %.3f ms per call in kernels, %.3f ms per call in all):\n",
               static_cast<long long>(profile_->calls), total / 1e6 / profile_->calls,
               profile_->call_ns / 1e6 / profile_->calls);
  for (const auto& [ns, k] : rows)
    std::fprintf(stderr, "  %-28s %9.3f ms  %5.1f%%\n", k.c_str(), ns / 1e6 / profile_->calls, 100 * ns / total);
  if (ProfilingLevel() < 2) return;
  std::vector<std::pair<double, size_t>> slowest;
  for (size_t i = 0; i < thunks_.size(); ++i) slowest.push_back({profile_->ns[i], i});
  if (ProfilingLevel() == 3) {
    std::fprintf(stderr, "  every thunk, in program order:\n");
  } else {
    std::sort(slowest.rbegin(), slowest.rend());
    if (slowest.size() > 20) slowest.resize(20);
    std::fprintf(stderr, "  slowest thunks:\n");
  }
  for (const auto& [ns, i] : slowest)
    std::fprintf(stderr, "    %9.3f ms  %5.1f%%  %s (%s)\n", ns / 1e6 / profile_->calls, 100 * ns / total,
                 thunks_[i].name.c_str(), thunk_kinds_[i].c_str());
}

absl::Status RunControl::Check() const {
  for (const std::atomic<int32_t>* flag : cancelled)
    if (flag && flag->load(std::memory_order_relaxed)) return absl::CancelledError("the call was cancelled");
  if (deadline_ns && MonotonicNs() > deadline_ns) return absl::DeadlineExceededError("the call passed its deadline");
  return absl::OkStatus();
}

absl::Status Executable::Execute(absl::Span<const void* const> args, absl::Span<void* const> outputs,
                                 const RunControl* control) const {
  if (args.size() != parameter_shapes_.size())
    return InvalidArgument("the program takes %d arguments, got %d", parameter_shapes_.size(), args.size());
  if (outputs.size() != output_shapes_.size())
    return InvalidArgument("the program has %d outputs, got %d buffers", output_shapes_.size(), outputs.size());
  if (parts_ == 1) return ExecutePart(args, outputs, control);
  std::vector<const void*> part_args(args.size());
  std::vector<void*> part_outputs(outputs.size());
  for (int64_t part = 0; part < parts_; ++part) {
    for (size_t k = 0; k < args.size(); ++k)
      part_args[k] = static_cast<const char*>(args[k]) + part * param_part_bytes_[k];
    for (size_t k = 0; k < outputs.size(); ++k)
      part_outputs[k] = static_cast<char*>(outputs[k]) + part * output_part_bytes_[k];
    RETURN_IF_ERROR(ExecutePart(part_args, part_outputs, control));
  }
  return absl::OkStatus();
}

absl::Status Executable::ExecutePart(absl::Span<const void* const> args, absl::Span<void* const> outputs,
                                     const RunControl* control) const {
  const int64_t call_begin = ProfilingEnabled() ? MonotonicNs() : 0;
  Arena arena = SharedArenaPool().Take(arena_bytes_);
  if (!arena.data)
    return absl::ResourceExhaustedError(absl::StrFormat("cannot allocate %d bytes of working memory", arena_bytes_));
  Frame frame(args, arena.data.get(), scratch_offset_, &constants_, control);
  absl::Status st;
  if (ProfilingEnabled() && !profile_) {
    std::lock_guard<std::mutex> l(profile_mu_);
    if (!profile_) {
      profile_ = std::make_unique<Profile>();
      profile_->ns.assign(thunks_.size(), 0);
    }
  }
  Frame second(args, arena.data.get(), second_scratch_offset_, &constants_, control);
  size_t next_run = 0;
  for (size_t i = 0; i < thunks_.size();) {
    if (next_run < concurrent_.size() && concurrent_[next_run].begin == i) {
      const ConcurrentRun& run = concurrent_[next_run++];
      st = RunConcurrently(run, frame, second, control);
      i = run.end;
    } else {
      st = RunThunk(i++, frame, control);
    }
    if (!st.ok()) break;
  }
  if (profile_) ++profile_->calls;
  if (st.ok())
    for (size_t k = 0; k < outputs.size(); ++k)
      if (size_t n = output_shapes_[k].ByteSize() / parts_; n > 0)  // empty outputs may have null pointers
        std::memcpy(outputs[k], frame.Ptr(output_refs_[k]), n);
  SharedArenaPool().Give(std::move(arena));
  if (profile_ && call_begin) profile_->call_ns += static_cast<double>(MonotonicNs() - call_begin);
  return st;
}

absl::Status Executable::RunThunk(size_t i, Frame& frame, const RunControl* control) const {
  const Thunk& t = thunks_[i];
  // One clock times the kernel for the profile and for the caller's trace.
  const bool traced = control && control->on_kernel;
  const int64_t begin = profile_ || traced ? MonotonicNs() : 0;
  absl::Status st = control ? control->Check() : absl::OkStatus();
  const bool ran = st.ok();
  if (ran) st = t.run(frame);
  if (profile_ || traced) {
    const int64_t end = MonotonicNs();
    if (profile_) profile_->ns[i] += static_cast<double>(end - begin);
    if (traced && ran) control->on_kernel(control->trace_context, t, thunk_kinds_[i], begin, end);
  }
  return st.ok() ? st : Annotate(st, t.name);
}

absl::Status Executable::RunConcurrently(const ConcurrentRun& run, Frame& frame, Frame& second,
                                         const RunControl* control) const {
  absl::Status st[2];
  // Not from inside a parallel region of the caller's, where a team of two
  // would be one thread (or two more).
  const bool team = omp_get_max_threads() > 1 && !omp_in_parallel();
#pragma omp parallel num_threads(2) if (team)
  {
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    // Each step on its thread alone: the kernels' own parallel loops and
    // oneDNN's see one thread.
    if (threads > 1) omp_set_num_threads(1);
    for (size_t i = run.begin; i < run.end; ++i) {
      const int part = run.part[i - run.begin];
      if (threads > 1 && part != t) continue;
      absl::Status& s = st[threads > 1 ? part : 0];
      if (s.ok()) s = RunThunk(i, part == 0 ? frame : second, control);
    }
  }
  return st[0].ok() ? st[1] : st[0];
}

std::vector<std::pair<std::string, int64_t>> Executable::ThunkSummary() const {
  std::map<std::string, int64_t> counts;
  for (const auto& k : thunk_kinds_) ++counts[k];
  return {counts.begin(), counts.end()};
}

std::string Executable::KernelListing() const {
  std::string out;
  size_t r = 0;
  for (size_t i = 0; i < thunks_.size(); ++i) {
    while (r < concurrent_.size() && concurrent_[r].end <= i) ++r;
    std::string part;
    if (r < concurrent_.size() && concurrent_[r].begin <= i)
      part = absl::StrFormat("  [concurrent run %d, part %d]", r, concurrent_[r].part[i - concurrent_[r].begin]);
    std::string writes = i < thunk_writes_.size() && !thunk_writes_[i].empty() ? "  -> " + thunk_writes_[i] : "";
    absl::StrAppendFormat(&out, "%5d  %-14s %s%s%s\n", i, thunk_kinds_[i], thunks_[i].name, part, writes);
  }
  return out;
}

}  // namespace xonnx::cpu
