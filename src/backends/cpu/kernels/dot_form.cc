// The matrix form of a dot, shared by oneDNN's matmul and the small-dot
// kernel: which dims are the batch, the rows, the contraction and the
// columns, and which operand is stored transposed.
#include "backends/cpu/runtime/thunks.h"

namespace xonnx::cpu {

std::optional<DotForm> DotFormOf(const hlo::Instruction& in, hlo::PrimitiveType type) {
  if (in.opcode() != hlo::Opcode::kDot || in.shape().element_type != type) return std::nullopt;
  const auto& d = in.dot_dnums;
  const hlo::Shape& as = in.operand(0)->shape();
  const hlo::Shape& bs = in.operand(1)->shape();
  int64_t nb = d.lhs_batch_dimensions.size();
  if (d.lhs_contracting_dimensions.size() != 1 || as.rank() != nb + 2 || bs.rank() != nb + 2) return std::nullopt;
  for (int64_t i = 0; i < nb; ++i)
    if (d.lhs_batch_dimensions[i] != i || d.rhs_batch_dimensions[i] != i) return std::nullopt;
  int64_t lc = d.lhs_contracting_dimensions[0], rc = d.rhs_contracting_dimensions[0];
  if (lc < nb || rc < nb) return std::nullopt;
  DotForm f;
  for (int64_t i = 0; i < nb; ++i) f.batch *= as.dims[i];
  f.ta = lc == nb;
  f.tb = rc == nb + 1;
  f.m = as.dims[f.ta ? nb + 1 : nb];
  f.k = as.dims[lc];
  f.n = bs.dims[f.tb ? nb : nb + 1];
  if (in.shape().ElementCount() == 0 || f.k == 0) return std::nullopt;
  return f;
}

}  // namespace xonnx::cpu
