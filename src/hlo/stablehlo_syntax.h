// The pieces of MLIR syntax that StableHLO's emitter writes and its parser
// reads alike: types and string literals.
#ifndef XONNX_HLO_STABLEHLO_SYNTAX_H_
#define XONNX_HLO_STABLEHLO_SYNTAX_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hlo/shape.h"

namespace xonnx::hlo {

// MLIR's name of an element type: i1 for pred, ui8 for u8, f32, bf16, ...
absl::string_view MlirElementType(PrimitiveType t);
// The element type of an MLIR name; an error for names xonnx has no type for.
absl::StatusOr<PrimitiveType> PrimitiveTypeFromMlir(absl::string_view name);
// tensor<2x3xf32>, tensor<f32> for a scalar, tuple<...>, !stablehlo.token.
std::string MlirType(const Shape& s);
// `s` as an MLIR string literal: quoted, with '"', '\' and every byte
// outside printable ASCII written as \XX (hex).
std::string QuoteMlirString(absl::string_view s);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_STABLEHLO_SYNTAX_H_
