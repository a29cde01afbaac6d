// Algebraic simplification: local rewrites that remove work, each written
// with a one-line rule comment.
#ifndef XONNX_PASSES_ALGEBRAIC_SIMPLIFIER_H_
#define XONNX_PASSES_ALGEBRAIC_SIMPLIFIER_H_

#include "passes/pass.h"

namespace xonnx::passes {

class AlgebraicSimplifier : public Pass {
 public:
  absl::string_view name() const override { return "algsimp"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_ALGEBRAIC_SIMPLIFIER_H_
