// Checks the structural invariants of a module: every shape matches what
// InferShape derives, operands precede users, names are unique, callees come
// before callers, parameters are numbered 0..n-1.
#ifndef XONNX_HLO_VERIFIER_H_
#define XONNX_HLO_VERIFIER_H_

#include "absl/status/status.h"
#include "hlo/ir.h"

namespace xonnx::hlo {

[[nodiscard]] absl::Status Verify(const Module& module);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_VERIFIER_H_
