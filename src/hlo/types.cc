#include "hlo/types.h"

#include "base/status.h"

namespace xonnx::hlo {

namespace {
struct TypeInfo {
  PrimitiveType type;
  absl::string_view name;
  int width;
};
// One row per type: the single table of names and widths.
constexpr TypeInfo kTypes[] = {
    {PRED, "pred", 1}, {S8, "s8", 1},   {S16, "s16", 2}, {S32, "s32", 4},     {S64, "s64", 8},
    {U8, "u8", 1},     {U16, "u16", 2}, {U32, "u32", 4}, {U64, "u64", 8},     {F16, "f16", 2},
    {BF16, "bf16", 2}, {F32, "f32", 4}, {F64, "f64", 8}, {TUPLE, "tuple", 0}, {TOKEN, "token", 0},
};
const TypeInfo* Find(PrimitiveType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return &i;
  return nullptr;
}
}  // namespace

int ByteWidth(PrimitiveType t) {
  const TypeInfo* i = Find(t);
  return i ? i->width : 0;
}

absl::string_view PrimitiveTypeName(PrimitiveType t) {
  const TypeInfo* i = Find(t);
  return i ? i->name : "invalid";
}

absl::StatusOr<PrimitiveType> PrimitiveTypeFromName(absl::string_view name) {
  for (const auto& i : kTypes)
    if (i.name == name) return i.type;
  return InvalidArgument("unknown element type '%s'", name);
}

bool IsArrayType(PrimitiveType t) { return ByteWidth(t) > 0; }
bool IsFloatingPoint(PrimitiveType t) { return t == F16 || t == BF16 || t == F32 || t == F64; }
bool IsSignedInteger(PrimitiveType t) { return t == S8 || t == S16 || t == S32 || t == S64; }
bool IsUnsignedInteger(PrimitiveType t) { return t == U8 || t == U16 || t == U32 || t == U64; }

}  // namespace xonnx::hlo
