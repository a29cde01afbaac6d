// Products along one axis by a sparse constant matrix (Resize's
// interpolation), in the form that keeps the axis in place.
//
// The importer writes an interpolation along axis k as dot(x, W) -- whose
// result has the new axis last -- and a transpose that puts it back at k.
// That transpose is a full copy, and it stops the layout pass: a channels-
// last activation went back to channels-first for each resize and forward
// again after it (three transposes of the largest tensors of a decoder).
// The in-place form dot(broadcast(W [out, in]) to [A..., out, in],
// x [A..., in, B...]) -> [A..., out, B...] (batched over the dims before
// the axis) has no transpose; a transpose of x sinks through it by moving
// the axis, and the sparse-dot kernel runs it reading and writing whole
// rows of B.
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_AXIS_MAPS_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_AXIS_MAPS_H_

#include "passes/pass.h"

namespace xonnx::cpu {

// dot(x, W contracting axis k), for the sparse-dot kernel's weights ->
// transpose(in-place product along k) to the dot's order (no transpose
// when k is last; the importer's own transpose back then cancels it).
// Only where the kernel takes the dot, or where the transpose back is the
// dot's one user (see Converts in the .cc).
class AxisMaps : public passes::Pass {
 public:
  absl::string_view name() const override { return "axis-maps"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

// The in-place product of `x` along `axis` by `weights`, a value whose
// elements are the [out, in] matrix in row-major order (a constant or a
// reshape of one); null when `weights` has another element count.
hlo::Instruction* AddAxisMap(hlo::Computation* c, hlo::Instruction* weights, int64_t out, hlo::Instruction* x,
                             int64_t axis, const hlo::Instruction* like);

// The [out, in] weights of an in-place product (SparseDotInPlaceMatrix):
// its first operand, or the broadcast's; null for another dot.
hlo::Instruction* AxisMapWeights(const hlo::Instruction& dot);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_AXIS_MAPS_H_
