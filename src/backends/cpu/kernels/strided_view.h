// Strided views: an array's elements located in another array's buffer by an
// offset and one stride per dim. Slices, transposes and most reshapes of a
// view are views again, so an operation that takes strided operands (a oneDNN
// matmul) can read them in place instead of reading a copy made by each.
#ifndef XONNX_BACKENDS_CPU_KERNELS_STRIDED_VIEW_H_
#define XONNX_BACKENDS_CPU_KERNELS_STRIDED_VIEW_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "hlo/ir.h"

namespace xonnx::cpu {

// Element (i0, i1, ...) is at offset + sum(i_k * strides[k]) elements from
// the start of the buffer.
struct StridedView {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  // The row-major array of `dims` itself.
  static StridedView RowMajor(std::vector<int64_t> dims);
};

// The view after a reshape to `dims`, or nullopt when the reshape would
// have to gather elements: dims merged by it must be laid out one inside
// the other (as in row-major order), while splitting a dim always works.
std::optional<StridedView> Reshape(const StridedView& v, const std::vector<int64_t>& dims);

// The view of `instr` (a slice, transpose, reshape or broadcast: stride 0
// along the dims it adds) given the view of its
// operand, or nullopt when it is not one (another opcode, a reshape that
// gathers).
std::optional<StridedView> Apply(const hlo::Instruction& instr, const StridedView& operand);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_KERNELS_STRIDED_VIEW_H_
