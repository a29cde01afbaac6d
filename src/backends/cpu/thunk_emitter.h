// Thunk emission for the CPU compiler (internal header): walks the program
// in order and turns each planned step (a fusion, a row fusion, a oneDNN
// primitive with its epilogue, or an instruction of its own) into a thunk,
// picking an instruction's kernel from the kernel table.
#ifndef XONNX_BACKENDS_CPU_THUNK_EMITTER_H_
#define XONNX_BACKENDS_CPU_THUNK_EMITTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/planning/buffer_assignment.h"
#include "backends/cpu/planning/plan.h"
#include "backends/cpu/runtime/executable.h"
#include "backends/cpu/runtime/thunks.h"

namespace xonnx::cpu {

// What kernel makers read: the plan, the buffers, the options, the module
// (control flow compiles its computations from it) and where thunks keep
// the state they own.
struct EmitContext {
  const Plan& plan;
  const BufferAssignment& buffers;
  const CompileOptions& options;
  const hlo::Module& module;
  std::vector<std::shared_ptr<void>>* keep_alive;

  // The buffers i reads, one per operand leaf; a dot reads a viewed operand
  // from its view's source. An integer product reads, for each operand not
  // a constant, its 8-bit source and then its zero point, if it has one.
  std::vector<BufferRef> InputsOf(const hlo::Instruction* i) const;
  // The buffers of i's leaves.
  const std::vector<BufferRef>& LeavesOf(const hlo::Instruction* i) const { return buffers.leaves.at(i); }
};

// The program's thunks in run order, the kind each counts as in profiles
// and summaries, and the position of the step each runs.
struct EmittedThunks {
  std::vector<Thunk> thunks;
  std::vector<std::string> kinds;
  std::vector<int64_t> positions;  // where in the program each thunk's step runs
  // The arena bytes each thunk's step writes its value to ("[offset,
  // end)" per leaf; empty when not in the arena), for listings.
  std::vector<std::string> writes;
};

[[nodiscard]] absl::StatusOr<EmittedThunks> EmitThunks(const EmitContext& ctx);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_THUNK_EMITTER_H_
