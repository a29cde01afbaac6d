// StableHLO, the MLIR form of XLA programs, as the second program format
// next to HloModuleProto: some PjRT plugins take only MLIR programs, and
// XLA's own take both (PJRT_Program format "mlir").
//
// ToStableHlo writes a module as MLIR text: a `module` holding `func.func
// public @main` (the entry; a tuple root becomes several results) and a
// private function per computation that a call names. Every other
// computation (reduction bodies, comparators, loop conditions and bodies,
// branches) is written inline as the region of the op that uses it. Ops are
// in MLIR's generic form, `%3 = "stablehlo.add"(%1, %2) : (tensor<2xf32>,
// tensor<2xf32>) -> tensor<2xf32>`, which any MLIR parser reads with the
// StableHLO dialect registered; attributes use StableHLO's own syntax
// (`array<i64: ...>`, `#stablehlo.dot<...>`, `#stablehlo.conv<raw ...>`).
// An instruction's ONNX origin becomes its location, `loc("Conv:conv1")`
// (op type, a colon, op name).
//
// ParseStableHlo reads that text back into a module: the generic op form of
// the ops in the opcode table and the func and module forms ToStableHlo
// writes, which is what xonnx's CPU plugin accepts as format "mlir". It is
// not a parser of all MLIR (no pretty op forms, no other dialects); what it
// does not know is an error naming the line.
#ifndef XONNX_HLO_STABLEHLO_H_
#define XONNX_HLO_STABLEHLO_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hlo/ir.h"

namespace xonnx::hlo {

// `m` as StableHLO MLIR text; an error for what StableHLO cannot express
// (a tuple-shaped constant).
absl::StatusOr<std::string> ToStableHlo(const Module& m);

// The module that ToStableHlo wrote as `text`.
absl::StatusOr<std::unique_ptr<Module>> ParseStableHlo(absl::string_view text);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_STABLEHLO_H_
