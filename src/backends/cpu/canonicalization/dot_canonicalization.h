// The CPU backend's dot canonicalization (XLA's DotDecomposer, for oneDNN):
// rewrites an f32 dot that oneDNN's matmul does not take as it stands (more
// than one contracting dim, batch dims that do not lead, operands of other
// ranks than [batch..., rows, cols]) into transposes and reshapes of its
// operands to [batch, rows, cols], one such dot, and a reshape of its
// [batch, m, n] result back. The reshapes cost nothing (they alias); a
// transpose is added only where an operand's dims are not already grouped
// in order, and either orientation of each operand is accepted.
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_DOT_CANONICALIZATION_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_DOT_CANONICALIZATION_H_

#include "passes/pass.h"

namespace xonnx::cpu {

class DotCanonicalization : public passes::Pass {
 public:
  absl::string_view name() const override { return "dot-canonicalization"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_DOT_CANONICALIZATION_H_
