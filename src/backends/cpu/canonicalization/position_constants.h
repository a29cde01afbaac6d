// The CPU backend's position constants: iotas made once at compile time
// instead of written on every call.
//  - The positions a sort carries along with its keys (TopK and ArgSort
//    import as a sort of the values and an iota along the sorted dim)
//    become a constant: a TopK then reads k positions of it per row (an
//    8x50257 sampler's TopK spent half its time writing its iota).
//  - Any other iota that repeats one row of positions across other dims
//    (ArgMax's and ArgMin's positions, a mask's column numbers) becomes a
//    broadcast of a constant row, which fuses into the loop that reads it
//    where an iota is a pass of its own (ArgMax over 8x50257: 0.28 ms of
//    0.57 writing its iota).
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_POSITION_CONSTANTS_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_POSITION_CONSTANTS_H_

#include "passes/pass.h"

namespace xonnx::cpu {

class PositionConstants : public passes::Pass {
 public:
  absl::string_view name() const override { return "position-constants"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_POSITION_CONSTANTS_H_
