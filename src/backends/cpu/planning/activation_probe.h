// Recognizes an activation written as any arrangement of elementwise ops
// by evaluating it (internal header; see activation_probe.cc).
#ifndef XONNX_BACKENDS_CPU_PLANNING_ACTIVATION_PROBE_H_
#define XONNX_BACKENDS_CPU_PLANNING_ACTIVATION_PROBE_H_

#include <functional>
#include <optional>
#include <vector>

#include "backends/cpu/planning/plan.h"
#include "backends/cpu/runtime/thunks.h"

namespace xonnx::cpu {

struct ProbedActivation {
  Epilogue::Activation activation;
  std::vector<hlo::Instruction*> region;  // the ops that compute it, in program order; the last is the result
};

// The activation (tanh, or GELU in its erf or tanh form) that the
// elementwise f32 ops after `x` compute from x and scalar constants alone,
// where every user of x and every op but the last is inside them: the
// region, evaluated at probe points over [-60, 60], agrees with the
// activation within 1e-5 relative. Ops `taken` says another plan owns are
// left out. nullopt where none matches.
std::optional<ProbedActivation> ProbeActivation(const Plan& plan, hlo::Instruction* x,
                                                const std::function<bool(const hlo::Instruction*)>& taken);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_PLANNING_ACTIVATION_PROBE_H_
