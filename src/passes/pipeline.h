// Runs passes in order, optionally verifying the module after each, and the
// passes xonnx runs on every imported model.
#ifndef XONNX_PASSES_PIPELINE_H_
#define XONNX_PASSES_PIPELINE_H_

#include <memory>
#include <string>
#include <vector>

#include "passes/dump.h"
#include "passes/pass.h"

namespace xonnx::passes {

class Pipeline : public Pass {
 public:
  explicit Pipeline(std::string name, bool verify_each = false) : name_(std::move(name)), verify_(verify_each) {}
  template <typename P, typename... Args>
  P* AddPass(Args&&... args) {
    passes_.push_back(std::make_unique<P>(std::forward<Args>(args)...));
    return static_cast<P*>(passes_.back().get());
  }
  absl::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
  // Writes the module after each pass the dumper's settings name.
  void set_dumper(Dumper* dumper) { dumper_ = dumper; }

 private:
  std::string name_;
  bool verify_;
  Dumper* dumper_ = nullptr;
  std::vector<std::unique_ptr<Pass>> passes_;
};

// Repeats a pass until it reports no change (at most `max_iterations`).
template <typename P>
class FixedPoint : public Pass {
 public:
  template <typename... Args>
  explicit FixedPoint(Args&&... args) : pass_(std::forward<Args>(args)...) {}
  P& pass() { return pass_; }
  absl::string_view name() const override { return pass_.name(); }
  absl::StatusOr<bool> Run(hlo::Module* module) override {
    bool changed = false;
    for (int i = 0; i < 16; ++i) {
      auto c = pass_.Run(module);
      if (!c.ok()) return c.status();
      if (!*c) break;
      changed = true;
    }
    return changed;
  }

 private:
  P pass_;
};

// The standard optimization pipeline: simplify, fold constants, CSE, DCE,
// repeated to a fixed point. Verifies between passes when `verify_each`.
// `integer_products` first rewrites products of dequantized values as
// integer products (DequantizedProducts): for a backend with 8-bit
// kernels (the CPU plugin), not for HLO sent to any plugin, since XLA's GPU
// plugin compiles f32 convolutions but not s32 ones.
// `dumper` (may be null) writes the module after the passes it names.
[[nodiscard]] absl::Status RunStandardPipeline(hlo::Module* module, bool verify_each = false,
                                               bool integer_products = false, Dumper* dumper = nullptr);

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_PIPELINE_H_
