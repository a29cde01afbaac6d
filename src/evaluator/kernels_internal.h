// The reference kernels' pieces, shared by their files (internal header):
// index arithmetic, and the kernels RunKernel dispatches to.
#ifndef XONNX_EVALUATOR_KERNELS_INTERNAL_H_
#define XONNX_EVALUATOR_KERNELS_INTERNAL_H_

#include <cstring>
#include <vector>

#include "evaluator/kernels.h"

namespace xonnx::eval::internal {

using hlo::Computation;
using hlo::Instruction;
using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;

// Advances a row-major multi-index; returns false after the last one.
inline bool Next(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

inline int64_t Dot(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t s = 0;
  for (size_t i = 0; i < idx.size(); ++i) s += idx[i] * strides[i];
  return s;
}

inline void CopyElem(void* dst, int64_t di, const void* src, int64_t si, int w) {
  std::memcpy(static_cast<char*>(dst) + di * w, static_cast<const char*>(src) + si * w, w);
}

using eval::ReadIndex;

// Data movement (kernels_data.cc).
void Broadcast(const Instruction& in, const void* x, void* out);
void Transpose(const Instruction& in, const void* x, void* out);
void Slice(const Instruction& in, const void* x, void* out);
void Pad(const Instruction& in, const void* x, const void* value, void* out);
void Concatenate(const Instruction& in, absl::Span<const void* const> ops, void* out);
void Reverse(const Instruction& in, const void* x, void* out);
void Iota(const Instruction& in, void* out);
void DynamicSlice(const Instruction& in, absl::Span<const void* const> ops, void* out);
void DynamicUpdateSlice(const Instruction& in, absl::Span<const void* const> ops, void* out);
void Gather(const Instruction& in, const void* x, const void* indices, void* out);
absl::Status Scatter(const Instruction& in, absl::Span<const void* const> ops, void* out, const CallComputation& call);

// Arithmetic over many elements (kernels_compute.cc).
void DotKernel(const Instruction& in, const void* a, const void* b, void* out);
void ConvKernel(const Instruction& in, const void* x, const void* k, void* out);
absl::Status Reduce(const Instruction& in, absl::Span<const void* const> ops, absl::Span<void* const> outs,
                    const CallComputation& call);
absl::Status ReduceWindow(const Instruction& in, absl::Span<const void* const> ops, void* out,
                          const CallComputation& call);
absl::Status Sort(const Instruction& in, absl::Span<const void* const> ops, absl::Span<void* const> outs,
                  const CallComputation& call);

}  // namespace xonnx::eval::internal

#endif  // XONNX_EVALUATOR_KERNELS_INTERNAL_H_
