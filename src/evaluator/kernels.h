// Reference kernels for every HLO opcode that is not structural (parameter,
// tuple, call, while, conditional), working on raw row-major buffers. The
// evaluator runs them on literals; the CPU backend runs them on its arena for
// the instructions it has no faster kernel for.
#ifndef XONNX_EVALUATOR_KERNELS_H_
#define XONNX_EVALUATOR_KERNELS_H_

#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hlo/ir.h"

namespace xonnx::eval {

// Evaluates a called computation on literal arguments: the slow path for
// reducers, comparators and scatter combiners that are not a single opcode.
using CallComputation = std::function<absl::StatusOr<hlo::Literal>(const hlo::Computation&, std::vector<hlo::Literal>)>;

// Runs `instr` reading its operands' buffers and writing its result buffers
// (one per tuple element for tuple-shaped results, else one).
[[nodiscard]] absl::Status RunKernel(const hlo::Instruction& instr, absl::Span<const void* const> operands,
                                     absl::Span<void* const> outputs, const CallComputation& call);

// Element i of an integer array of type t (an index of a gather, a scatter
// or a dynamic slice), as int64; 0 for other types.
inline int64_t ReadIndex(const void* data, hlo::PrimitiveType t, int64_t i) {
  return hlo::TypeSwitch(t, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      return static_cast<int64_t>(static_cast<const T*>(data)[i]);
    else
      return 0;
  });
}

// A dot's loops over row-major operands: for each output dim (batch dims,
// then lhs free dims, then rhs free dims), its stride in lhs and in rhs;
// for each contracting dim, in order, its size and its strides.
struct DotLoops {
  std::vector<int64_t> out_lhs, out_rhs;
  std::vector<int64_t> contract_dims, contract_lhs, contract_rhs;
  int64_t ContractCount() const {
    int64_t n = 1;
    for (int64_t c : contract_dims) n *= c;
    return n;
  }
};
DotLoops DotLoopsOf(const hlo::Instruction& dot);

// The opcode of a computation `(x, y) -> op(x, y)` (either parameter order
// for commutative ops), if that is all it does.
std::optional<hlo::Opcode> MatchScalarBinary(const hlo::Computation& c);

// For a sort comparator `compare(p0, p1, LT|GT)` on the first operand (the
// form importers emit): true for ascending, false for descending.
std::optional<bool> MatchSortDirection(const hlo::Computation& c);

}  // namespace xonnx::eval

#endif  // XONNX_EVALUATOR_KERNELS_H_
