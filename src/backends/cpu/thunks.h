// Thunk factories shared by the CPU compiler's files (internal header).
#ifndef XONNX_BACKENDS_CPU_THUNKS_H_
#define XONNX_BACKENDS_CPU_THUNKS_H_

#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/executable.h"

namespace xonnx::cpu {

// Buffers an instruction reads (one per operand leaf) and writes.
struct ThunkIo {
  std::vector<BufferRef> inputs;
  std::vector<BufferRef> outputs;
};

// A fused elementwise loop: `members` in operand-first order, the last one
// being the fusion's result; `inputs` the values it reads from outside.
struct FusionSpec {
  std::vector<const hlo::Instruction*> members;
  std::vector<const hlo::Instruction*> inputs;
};

// Builds the fused loop thunk; input i of the spec reads buffer io.inputs[i].
absl::StatusOr<Thunk> MakeFusionThunk(const FusionSpec& spec, const ThunkIo& io);

// oneDNN thunks: return nullopt when the instruction's form is not one oneDNN
// handles (the caller then uses the reference kernel). `keep_alive` receives
// the primitives and any reordered constant weights.
std::optional<Thunk> MakeDnnlConvThunk(const hlo::Instruction& instr, const ThunkIo& io,
                                       const void* constant_weights,
                                       std::vector<std::shared_ptr<void>>* keep_alive);
std::optional<Thunk> MakeDnnlDotThunk(const hlo::Instruction& instr, const ThunkIo& io,
                                      std::vector<std::shared_ptr<void>>* keep_alive);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_THUNKS_H_
