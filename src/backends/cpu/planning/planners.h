// The CPU compiler's planners (internal header). Each reads the plan so far
// and writes its own part of it; the compiler runs them in this order, since
// later planners read earlier decisions (fusions stay out of epilogues, dot
// views start at materialized values).
#ifndef XONNX_BACKENDS_CPU_PLANNING_PLANNERS_H_
#define XONNX_BACKENDS_CPU_PLANNING_PLANNERS_H_

#include <optional>
#include <utility>

#include "backends/cpu/planning/plan.h"
#include "backends/cpu/runtime/executable.h"

namespace xonnx::cpu {

// oneDNN planning (dnnl_planning.cc).
// The value of a constant of one element or of a broadcast of one, or
// nullopt (the constants of an activation's pattern).
std::optional<double> ScalarValue(const hlo::Instruction* i);
// Folds a convolution's or dot's bias, residual add and activation into
// its primitive (Plan::epilogues).
void PlanEpilogues(const CompileOptions& options, Plan* plan);
// Keeps the values between convolutions that run faster on blocked
// activations, and the concatenations and max pools between them, in
// oneDNN's blocked layout (Plan::blocked; blocked_layout_planning.cc).
void PlanBlockedLayouts(const CompileOptions& options, Plan* plan);
// Extends the blocked values through elementwise fusions and global pools
// between such convolutions (Plan::blocked; after PlanFusions).
void PlanBlockedLoops(const CompileOptions& options, Plan* plan);
// Runs s32 convolutions and dots of widened 8-bit values on oneDNN's
// 8-bit primitives (Plan::integer_products; integer_planning.cc).
void PlanIntegerProducts(Plan* plan);
// The values of a small expression of constants (the importer's
// `weights - zero_point`), or nullopt.
std::optional<hlo::Literal> ConstantValue(const hlo::Instruction* i, int depth = 0);
// The weight values the 8-bit kernels take exactly on this CPU: [-128, 127]
// with VNNI, [-64, 63] without (oneDNN then sums pairs of u8 x s8
// products in s16 with saturation).
std::pair<int, int> ExactWeightRange();
// Runs f32 dots by the importer's dequantized MatMulNBits weights on the
// packed bytes (Plan::packed_products; packed_planning.cc). First of the
// planners: the other ones leave its products alone.
void PlanPackedProducts(Plan* plan);
// Groups the packed products of a decode step that read one activation
// and prepare it the same way (the interleaved layout's f32 scan, or the
// rounding to int8), such as a decoder layer's query, key and value
// projections or its gate and up projections, into one step, the members
// moved next to the first in program order (Plan::packed_products.groups).
// Right after PlanPackedProducts, before any planner records positions.
void PlanSiblingProducts(Plan* plan);
// Reads dot operands made by slices, transposes and reshapes through
// strided views of the value they start from (Plan::dot_views).
void PlanDotViews(Plan* plan);

// Fusion planning (fusion_planning.cc).
// Groups a last-dim reduction with the elementwise work around it into one
// row-by-row kernel (Plan::row_fusions).
void PlanRowFusions(Plan* plan);
// Groups elementwise chains into fused loops (Plan::fusions).
void PlanFusions(Plan* plan);

// Concurrency planning (concurrency_planning.cc).
// Finds runs of independent small steps (a bidirectional recurrent
// layer's two directions) that run at once, one part per thread
// (Plan::concurrent).
void PlanConcurrentBranches(Plan* plan);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_PLANNING_PLANNERS_H_
