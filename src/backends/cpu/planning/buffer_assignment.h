// Buffer assignment for the CPU compiler (internal header): every value the
// plan materializes gets a slot in one arena by liveness, and every
// instruction the buffers of its leaves (parameters, constants, arena
// offsets; aliases such as reshapes share their operand's).
#ifndef XONNX_BACKENDS_CPU_PLANNING_BUFFER_ASSIGNMENT_H_
#define XONNX_BACKENDS_CPU_PLANNING_BUFFER_ASSIGNMENT_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "backends/cpu/planning/plan.h"
#include "backends/cpu/runtime/executable.h"

namespace xonnx::cpu {

// Arena slots start at multiples of this many bytes.
constexpr int64_t kArenaAlign = 64;
inline int64_t AlignUp(int64_t x) { return (x + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

struct BufferAssignment {
  // instruction -> the buffer of each leaf of its value
  absl::flat_hash_map<const hlo::Instruction*, std::vector<BufferRef>> leaves;
  // The constants' bytes, indexed by BufferRef::kConstant refs.
  std::vector<const void*> constants;
  // Bytes of the values' slots (the thunks' scratch comes after them).
  int64_t arena_bytes = 0;
};

// Assigns the plan's values to buffers. A value shares its slot with one it
// overwrites in place: a residual an epilogue reads last, an input a fused
// loop reads last. With `distinct`, every value has bytes of its own
// (CompileOptions::distinct_buffers).
[[nodiscard]] absl::StatusOr<BufferAssignment> AssignBuffers(const Plan& plan, bool distinct = false);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_PLANNING_BUFFER_ASSIGNMENT_H_
