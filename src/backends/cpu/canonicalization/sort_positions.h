// The CPU backend's sort canonicalization: the positions a sort carries
// along with its keys (TopK and ArgSort import as a sort of the values and
// an iota along the sorted dim) become a constant, made once at compile
// time. A TopK then reads k positions of it per row instead of writing a
// whole iota on every call (an 8x50257 sampler's TopK spent half its time
// writing its iota).
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_SORT_POSITIONS_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_SORT_POSITIONS_H_

#include "passes/pass.h"

namespace xonnx::cpu {

class SortPositions : public passes::Pass {
 public:
  absl::string_view name() const override { return "sort-positions"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_SORT_POSITIONS_H_
