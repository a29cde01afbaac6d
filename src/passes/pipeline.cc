#include "passes/pipeline.h"

#include "base/status.h"
#include "hlo/verifier.h"
#include "passes/algebraic_simplifier.h"
#include "passes/constant_folding.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/dequantized_products.h"

namespace xonnx::passes {

absl::StatusOr<bool> Pipeline::Run(hlo::Module* module) {
  bool changed = false;
  for (auto& p : passes_) {
    auto c = p->Run(module);
    if (!c.ok()) return Annotate(c.status(), absl::StrCat("pass ", p->name()));
    changed |= *c;
    if (dumper_) dumper_->Dump(*module, p->name());
    if (verify_) RETURN_IF_ERROR(Annotate(hlo::Verify(*module), absl::StrCat("after pass ", p->name())));
  }
  return changed;
}

namespace {
class StandardRound : public Pipeline {
 public:
  StandardRound(bool verify, bool integer_products) : Pipeline("standard", verify) {
    // Before constant folding turns the weights' dequantization into f32
    // constants.
    if (integer_products) AddPass<DequantizedProducts>();
    AddPass<AlgebraicSimplifier>();
    AddPass<ConstantFolding>();
    AddPass<Cse>();
    AddPass<Dce>();
  }
};
}  // namespace

absl::Status RunStandardPipeline(hlo::Module* module, bool verify_each, bool integer_products, Dumper* dumper) {
  FixedPoint<StandardRound> p(verify_each, integer_products);
  p.pass().set_dumper(dumper);
  return p.Run(module).status();
}

}  // namespace xonnx::passes
