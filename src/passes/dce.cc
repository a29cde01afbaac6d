#include "passes/dce.h"

namespace xonnx::passes {

absl::StatusOr<bool> Dce::Run(hlo::Module* module) {
  int64_t before = module->computations().size();
  module->RemoveUnreachableComputations();
  bool changed = static_cast<int64_t>(module->computations().size()) != before;
  for (const auto& c : module->computations()) changed |= c->Canonicalize() > 0;
  return changed;
}

}  // namespace xonnx::passes
