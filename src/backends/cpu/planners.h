// The CPU compiler's planners (internal header). Each reads the plan so far
// and writes its own part of it; the compiler runs them in this order, since
// later planners read earlier decisions (fusions stay out of epilogues, dot
// views start at materialized values).
#ifndef XONNX_BACKENDS_CPU_PLANNERS_H_
#define XONNX_BACKENDS_CPU_PLANNERS_H_

#include "backends/cpu/executable.h"
#include "backends/cpu/plan.h"

namespace xonnx::cpu {

// oneDNN planning (dnnl_planning.cc).
// Folds a convolution's or dot's bias, residual add and activation into
// its primitive (Plan::epilogues).
void PlanEpilogues(Plan* plan);
// Keeps the values between convolutions that run faster on blocked
// activations in oneDNN's blocked layout (Plan::blocked).
void PlanBlockedLayouts(const CompileOptions& options, Plan* plan);
// Runs s32 convolutions and dots of widened 8-bit values on oneDNN's
// 8-bit primitives (Plan::integer_products; integer_planning.cc).
void PlanIntegerProducts(Plan* plan);
// Reads dot operands made by slices, transposes and reshapes through
// strided views of the value they start from (Plan::dot_views).
void PlanDotViews(Plan* plan);

// Fusion planning (fusion_planning.cc).
// Groups a last-dim reduction with the elementwise work around it into one
// row-by-row kernel (Plan::row_fusions).
void PlanRowFusions(Plan* plan);
// Groups elementwise chains into fused loops (Plan::fusions).
void PlanFusions(Plan* plan);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_PLANNERS_H_
