// The pass interface (XLA HloPassInterface style): a pass rewrites a module
// in place and says whether it changed anything.
#ifndef XONNX_PASSES_PASS_H_
#define XONNX_PASSES_PASS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hlo/ir.h"

namespace xonnx::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  // A short stable name, used in logs and dumps.
  virtual absl::string_view name() const = 0;
  // Rewrites `module`; true when it changed.
  [[nodiscard]] virtual absl::StatusOr<bool> Run(hlo::Module* module) = 0;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_PASS_H_
