// Common subexpression elimination: instructions with the same opcode,
// operands and attributes are merged into the first one.
#ifndef XONNX_PASSES_CSE_H_
#define XONNX_PASSES_CSE_H_

#include "passes/pass.h"

namespace xonnx::passes {

class Cse : public Pass {
 public:
  absl::string_view name() const override { return "cse"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_CSE_H_
