#include "hlo/stablehlo_syntax.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"

namespace xonnx::hlo {

namespace {
struct ElementName {
  PrimitiveType type;
  absl::string_view mlir;
};
constexpr ElementName kElementNames[] = {
    {PRED, "i1"},  {S8, "i8"},    {S16, "i16"}, {S32, "i32"},   {S64, "i64"}, {U8, "ui8"},  {U16, "ui16"},
    {U32, "ui32"}, {U64, "ui64"}, {F16, "f16"}, {BF16, "bf16"}, {F32, "f32"}, {F64, "f64"},
};
}  // namespace

absl::string_view MlirElementType(PrimitiveType t) {
  for (const ElementName& e : kElementNames)
    if (e.type == t) return e.mlir;
  return "?";
}

absl::StatusOr<PrimitiveType> PrimitiveTypeFromMlir(absl::string_view name) {
  for (const ElementName& e : kElementNames)
    if (e.mlir == name) return e.type;
  return Unimplemented("element type '%s' is not one xonnx computes with", name);
}

std::string MlirType(const Shape& s) {
  if (s.IsTuple()) {
    std::vector<std::string> parts;
    for (const Shape& t : s.tuple_shapes) parts.push_back(MlirType(t));
    return absl::StrCat("tuple<", absl::StrJoin(parts, ", "), ">");
  }
  if (s.element_type == TOKEN) return "!stablehlo.token";
  std::string out = "tensor<";
  for (int64_t d : s.dims) absl::StrAppend(&out, d, "x");
  return absl::StrCat(out, MlirElementType(s.element_type), ">");
}

std::string QuoteMlirString(absl::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
      out += '\\';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace xonnx::hlo
