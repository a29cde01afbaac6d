// Products by a concatenation, split into products by its parts (as XLA's
// algebraic simplifier splits a dot whose contracted dims are
// concatenated). A decoder step's attention reads its keys and values as
// Concat(past, new) along the sequence: the scores' product reads the keys
// through a transpose, the output's contracts the values' sequence. Run as
// written, every step copies the whole cache into the concatenation (and
// transposes the keys) before the products read it once. Split, each
// product reads the past where it lies:
//   dot(x, concat(a, b)) along a free dim = concat(dot(x, a), dot(x, b))
//   (the scores: a row of a few values per part, concatenated),
//   along a contracted dim = dot(slice(x), a) + dot(slice(x), b).
// A transpose between the concatenation and the dot is folded into the
// dot's dims where the result's dims keep their order. Concatenations
// under 64 KiB stay: copying them costs less than more products.
#ifndef XONNX_BACKENDS_CPU_CANONICALIZATION_DOT_OF_CONCATENATE_H_
#define XONNX_BACKENDS_CPU_CANONICALIZATION_DOT_OF_CONCATENATE_H_

#include "passes/pass.h"

namespace xonnx::cpu {

class DotOfConcatenate : public passes::Pass {
 public:
  absl::string_view name() const override { return "dot-of-concatenate"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_CANONICALIZATION_DOT_OF_CONCATENATE_H_
