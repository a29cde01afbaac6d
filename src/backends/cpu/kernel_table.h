// The CPU backend's kernel table (internal header): for every opcode, the
// kernels that can run one instruction of it, in order of preference (the
// model is XLA's and MLX's per-op dispatch). The emitter takes the first
// maker that accepts the instruction's form, so what runs an instruction is
// visible in one place. Fusions, row fusions and epilogues are planned
// before and never reach the table.
#ifndef XONNX_BACKENDS_CPU_KERNEL_TABLE_H_
#define XONNX_BACKENDS_CPU_KERNEL_TABLE_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cpu/thunk_emitter.h"
#include "hlo/opcode.h"

namespace xonnx::cpu {

// Makes a thunk for `instr` reading and writing `io`: nullopt when the
// kernel does not take this form (the next maker is tried), an error when
// the plan relied on it and it refused.
using KernelMakerFn = absl::StatusOr<std::optional<Thunk>> (*)(const EmitContext& ctx, const hlo::Instruction& instr,
                                                               const ThunkIo& io);

struct KernelMaker {
  const char* kind;  // the thunk's kind unless the thunk names its own
  KernelMakerFn make;
};

// The makers for `op`, most preferred first. Every row ends in a maker that
// takes any form (today the reference evaluator's kernel where no native
// one exists; its kind is "kernel:<opcode>").
absl::Span<const KernelMaker> KernelMakersFor(hlo::Opcode op);

// Control flow and the reference kernels (control_flow_thunks.cc).
// while: the condition and body compiled as programs of their own.
absl::StatusOr<std::optional<Thunk>> MakeNativeWhileThunk(const EmitContext& ctx, const hlo::Instruction& instr,
                                                          const ThunkIo& io);
// conditional: every branch compiled as a program of its own.
absl::StatusOr<std::optional<Thunk>> MakeNativeConditionalThunk(const EmitContext& ctx, const hlo::Instruction& instr,
                                                                const ThunkIo& io);
// Any instruction with called computations, run on the reference evaluator.
absl::StatusOr<std::optional<Thunk>> MakeEvaluatorThunk(const EmitContext& ctx, const hlo::Instruction& instr,
                                                        const ThunkIo& io);
// Any instruction, run on the reference evaluator's kernel for its opcode.
absl::StatusOr<std::optional<Thunk>> MakeReferenceKernelThunk(const EmitContext& ctx, const hlo::Instruction& instr,
                                                              const ThunkIo& io);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_KERNEL_TABLE_H_
