// What If, Loop and Scan share (internal header): binding subgraph
// inputs, reading subgraph outputs, and lowering a loop to an HLO while.
#ifndef XONNX_ONNX_OPS_CONTROL_FLOW_H_
#define XONNX_ONNX_OPS_CONTROL_FLOW_H_

#include <vector>

#include "onnx/context.h"

namespace xonnx::onnx_import {

// Loops of at most this many iterations may be unrolled when their body
// cannot be converted once for every iteration.
inline constexpr int64_t kMaxUnrolledIterations = 4096;

// Binds a subgraph input to `v`, reshaped to the rank the subgraph declares.
void Bind(hlo::Builder& b, GraphValues& scope, const onnx::ValueInfoProto& decl, hlo::Instruction* v);
// The subgraph's outputs from `scope`, in order.
absl::StatusOr<std::vector<hlo::Instruction*>> Outputs(NodeContext& ctx, const onnx::GraphProto& g,
                                                       const GraphValues& scope);

// A Loop or Scan lowered to an HLO while. The loop state is the tuple
//   (i, condition, trip count, carried..., scan inputs..., scan output
//    accumulators..., captured...)
// where the captured values are the non-constant outer values the body reads
// (outer constants are copied into the body, so that shape-like values stay
// known there). A scan input is read with a dynamic-slice at the step's
// position and a scan output written into its accumulator with a
// dynamic-update-slice, so the program does not grow with the iteration
// count.
struct WhileLoop {
  bool is_scan = false;  // Scan body (carried..., slices...) vs Loop body (i, cond, carried...)
  const onnx::GraphProto* body = nullptr;
  hlo::Instruction* trips = nullptr;  // scalar integer; null: no limit (Loop only)
  hlo::Instruction* cond = nullptr;   // scalar pred; null: true
  std::vector<hlo::Instruction*> carried;
  // Scan inputs, their (normalized) axes and whether they run backwards.
  std::vector<hlo::Instruction*> xs;
  std::vector<int64_t> x_axes, x_reverse;
  // Per scan output: the axis it is stacked along (negative counts from the
  // end of the stacked result) and whether it is written backwards.
  std::vector<int64_t> y_axes, y_reverse;
  // Iterations, when known at compile time (needed for scan outputs).
  int64_t length = -1;
};

// The body's outputs for one step.
struct Step {
  hlo::Instruction* cond = nullptr;  // Loop only
  std::vector<hlo::Instruction*> carried, ys;
  // The body's run-time index checks (in the body's computation).
  std::vector<RuntimeCheck> checks;
};

// Emits `w` as an HLO while; returns the final carried values and the
// stacked scan outputs.
absl::StatusOr<Step> EmitWhile(NodeContext& ctx, const WhileLoop& w);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_OPS_CONTROL_FLOW_H_
