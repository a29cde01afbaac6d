// Dead code elimination: drops instructions the root does not reach and
// computations the entry does not call.
#ifndef XONNX_PASSES_DCE_H_
#define XONNX_PASSES_DCE_H_

#include "passes/pass.h"

namespace xonnx::passes {

class Dce : public Pass {
 public:
  absl::string_view name() const override { return "dce"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_DCE_H_
