// The CPU backend: compiles an optimized hlo::Module into a flat list of
// thunks over one arena, then runs it with no further decisions (XLA's CPU
// thunk runtime is the model). Kept behind this narrow interface so the PjRT
// plugin can wrap it.
#ifndef XONNX_BACKENDS_CPU_RUNTIME_EXECUTABLE_H_
#define XONNX_BACKENDS_CPU_RUNTIME_EXECUTABLE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cpu/runtime/arena_pool.h"
#include "hlo/ir.h"

namespace xonnx::passes {
class Dumper;
}  // namespace xonnx::passes

namespace xonnx::cpu {

struct CompileOptions {
  // Use oneDNN for f32 convolutions and matrix products.
  bool use_dnnl = true;
  // Group elementwise chains into single loops.
  bool fuse_elementwise = true;
  // Run 3x3 convolutions with Winograd's algorithm where it is faster (with
  // use_dnnl). Results differ from the direct algorithm's in the last bits
  // (about 1e-6 of the output's magnitude).
  bool winograd = true;
  // Keep the activations between convolutions that run faster on oneDNN's
  // blocked layout in it (with use_dnnl; see DnnlConvRunsBlocked).
  bool blocked_layouts = true;
  // Run independent parts of the program made of small steps (a
  // bidirectional recurrent layer's two directions) at once, one part per
  // thread, each step on one thread (PlanConcurrentBranches). Results are
  // the same.
  bool concurrent_branches = true;
  // Rows of the batch per call for a program that treats the rows of its
  // batch independently (batch_split.h): 0 never splits; n > 0 runs n rows
  // at a time where n divides the batch and the program is separable (else
  // the whole batch at once).
  int64_t batch_rows = 0;
  // The reference device (XLA's interpreter platform): every instruction
  // runs on the reference evaluator's kernel for its opcode, with none of
  // the backend's rewrites (no half-precision upcast, layouts, fusions,
  // oneDNN, batch splitting), so results are the oracle's. Slow; for
  // checking results through the same client path.
  bool reference = false;
  // Every value in bytes of its own: no arena slot reused, no result
  // written over an input, no concurrent branches. Results must be the
  // same as without; a difference (`xonnx run --compare buffers`) is a
  // buffer-lifetime bug, not rounding.
  bool distinct_buffers = false;
  // Half-precision (f16, bf16) ops run in f32 (UpcastHalfPrecision); each
  // result is rounded to its half type as the program says, unless this
  // lets values carry f32 precision from op to op (faster; differs from
  // per-op rounding by about the half type's epsilon).
  bool excess_precision = false;
};

// Where a buffer lives while the program runs.
struct BufferRef {
  enum Kind { kArena, kParameter, kConstant } kind = kArena;
  int64_t index = 0;  // arena offset, parameter number or constant index
};

class Frame;
struct Thunk;

// Bounds on one Execute call, checked between kernels and at every loop
// iteration: a flag another thread may raise to stop the call, and a
// deadline on the monotonic clock.
struct RunControl {
  const std::atomic<int32_t>* cancelled[2] = {nullptr, nullptr};  // nonzero: stop
  int64_t deadline_ns = 0;                                        // MonotonicNs(); 0: none
  // Called after each kernel with its start and end (MonotonicNs()), from
  // the thread that ran it; null: no trace.
  void (*on_kernel)(void* context, const Thunk& thunk, const std::string& kind, int64_t start_ns,
                    int64_t end_ns) = nullptr;
  void* trace_context = nullptr;
  // CANCELLED or DEADLINE_EXCEEDED once the call must stop, else OK.
  absl::Status Check() const;
};

// One step of the program.
struct Thunk {
  std::string name;  // the instruction it came from, for errors and profiles
  std::string kind;  // set by a factory that picks among algorithms; else the compiler names it
  // The ONNX node it computes (its instruction's metadata), for traces.
  std::string op_type, op_name;
  std::function<absl::Status(Frame&)> run;
  // Working memory it needs while it runs (Frame::Scratch): one region at
  // the end of the call's arena serves every thunk, since they run in turn
  // (a second one the thunks of a concurrent run's second part).
  int64_t scratch_bytes = 0;
};

class Executable {
 public:
  // Compiles `module` (already optimized by the standard pipeline).
  // `dumper`, when given, writes the module after each of the backend's
  // own passes that its settings name.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Executable>> Compile(std::unique_ptr<hlo::Module> module,
                                                                           const CompileOptions& options = {},
                                                                           passes::Dumper* dumper = nullptr);
  ~Executable();

  // Runs the program. `args` holds one row-major buffer per entry parameter;
  // `outputs` one per leaf of the result (tuple elements, or the single
  // array). Safe to call from several threads at once.
  // `control`, when given, bounds the call (it stops with CANCELLED or
  // DEADLINE_EXCEEDED between kernels).
  [[nodiscard]] absl::Status Execute(absl::Span<const void* const> args, absl::Span<void* const> outputs,
                                     const RunControl* control = nullptr) const;

  const std::vector<hlo::Shape>& parameter_shapes() const { return parameter_shapes_; }
  const std::vector<hlo::Shape>& output_shapes() const { return output_shapes_; }
  const hlo::Module& module() const { return *module_; }
  // Working memory of one call: the values' slots, then the thunks' scratch.
  int64_t arena_bytes() const { return arena_bytes_; }
  int64_t scratch_bytes() const { return arena_bytes_ - scratch_offset_; }
  // Calls of the compiled program per Execute: more than 1 when the batch
  // runs in parts (CompileOptions::batch_rows).
  int64_t batch_parts() const { return parts_; }
  // Counts of thunk kinds, e.g. {"dnnl-conv": 20, "fusion": 31, "kernel": 12}.
  std::vector<std::pair<std::string, int64_t>> ThunkSummary() const;
  // The kernels in run order, one line each: index, kind, the name of the
  // instruction it computes (a fusion's last one), and for a kernel of a
  // concurrent run, the run and the part (the thread) it belongs to.
  std::string KernelListing() const;

 private:
  friend class Compiler;
  Executable() = default;

  // Registers with the shared arena pool for the executable's lifetime, so
  // the pool frees its memory when the last executable goes. First member:
  // destroyed last.
  struct PoolUse {
    PoolUse() { SharedArenaPool().Attach(); }
    ~PoolUse() { SharedArenaPool().Detach(); }
    PoolUse(const PoolUse&) = delete;
    PoolUse& operator=(const PoolUse&) = delete;
  } pool_use_;

  // One call of the compiled program on part of the batch, or on all of it.
  absl::Status ExecutePart(absl::Span<const void* const> args, absl::Span<void* const> outputs,
                           const RunControl* control) const;
  // Thunks [begin, end) whose two parts run at once, one per thread
  // (Plan::concurrent): part[k - begin] says which part thunk k is in.
  struct ConcurrentRun {
    size_t begin = 0, end = 0;
    std::vector<uint8_t> part;
  };
  // Runs thunk i, timed for the profile and the caller's trace.
  absl::Status RunThunk(size_t i, Frame& frame, const RunControl* control) const;
  // Runs `run`'s parts on two threads, the second with `second`'s scratch
  // (or both in order on this thread when no second one is free).
  absl::Status RunConcurrently(const ConcurrentRun& run, Frame& frame, Frame& second, const RunControl* control) const;

  std::unique_ptr<hlo::Module> module_;
  std::vector<hlo::Shape> parameter_shapes_, output_shapes_;
  // A batch run in parts: each part's bytes of each parameter (0: the
  // parameter is passed whole to every part) and of each output.
  int64_t parts_ = 1;
  std::vector<int64_t> param_part_bytes_, output_part_bytes_;
  std::vector<BufferRef> output_refs_;
  std::vector<const void*> constants_;
  std::vector<Thunk> thunks_;
  std::vector<std::string> thunk_kinds_;
  std::vector<std::string> thunk_writes_;  // arena bytes each writes, for KernelListing
  int64_t arena_bytes_ = 0;
  int64_t scratch_offset_ = 0;  // where the thunks' scratch region starts in the arena
  std::vector<ConcurrentRun> concurrent_;
  // Where the scratch of a concurrent run's second part starts (after the
  // first's), when there are any.
  int64_t second_scratch_offset_ = 0;
  // State owned by thunks (oneDNN primitives, reordered weights).
  std::vector<std::shared_ptr<void>> keep_alive_;
  // Per-thunk time when XONNX_PROFILE is set (approximate under concurrency).
  struct Profile {
    std::vector<double> ns;
    double call_ns = 0;  // whole calls: the thunks and what runs between them
    int64_t calls = 0;
  };
  mutable std::unique_ptr<Profile> profile_;
  mutable std::mutex profile_mu_;
};

// The shared pool of working memory (arena_pool.h) that Execute calls take
// from and give back: for tests and profiles.
ArenaPoolStats ArenaPoolCount();

// The run-time state of one Execute call.
class Frame {
 public:
  Frame(absl::Span<const void* const> args, uint8_t* arena, int64_t scratch_offset,
        const std::vector<const void*>* constants, const RunControl* control = nullptr)
      : args_(args), arena_(arena), scratch_offset_(scratch_offset), constants_(constants), control_(control) {}
  // The call's bounds (null: none), for thunks that run programs of their own.
  const RunControl* control() const { return control_; }
  // The running thunk's scratch memory (Thunk::scratch_bytes), 64-byte aligned.
  uint8_t* Scratch() const { return arena_ + scratch_offset_; }
  void* Ptr(const BufferRef& r) const {
    switch (r.kind) {
      case BufferRef::kArena:
        return arena_ + r.index;
      case BufferRef::kParameter:
        return const_cast<void*>(args_[r.index]);
      case BufferRef::kConstant:
        return const_cast<void*>((*constants_)[r.index]);
    }
    return nullptr;
  }

 private:
  absl::Span<const void* const> args_;
  uint8_t* arena_;
  int64_t scratch_offset_;
  const std::vector<const void*>* constants_;
  const RunControl* control_;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_RUNTIME_EXECUTABLE_H_
