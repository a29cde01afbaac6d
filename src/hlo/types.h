// Element types of the HLO IR. Values equal xla.PrimitiveType so the proto
// codec copies them as they are.
#ifndef XONNX_HLO_TYPES_H_
#define XONNX_HLO_TYPES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xonnx/float16.h"

namespace xonnx::hlo {

enum PrimitiveType : int {
  PRIMITIVE_TYPE_INVALID = 0,
  PRED = 1,
  S8 = 2,
  S16 = 3,
  S32 = 4,
  S64 = 5,
  U8 = 6,
  U16 = 7,
  U32 = 8,
  U64 = 9,
  F16 = 10,
  F32 = 11,
  F64 = 12,
  TUPLE = 13,
  BF16 = 16,
  TOKEN = 17,
};

// Size in bytes of one element of an array type (0 for TUPLE/TOKEN).
int ByteWidth(PrimitiveType t);
// HLO text name ("f32", "pred", ...).
absl::string_view PrimitiveTypeName(PrimitiveType t);
// Parses an HLO text name; error for unknown names.
absl::StatusOr<PrimitiveType> PrimitiveTypeFromName(absl::string_view name);
// True for array element types we support (everything but TUPLE/TOKEN/INVALID).
bool IsArrayType(PrimitiveType t);
bool IsFloatingPoint(PrimitiveType t);
bool IsSignedInteger(PrimitiveType t);
bool IsUnsignedInteger(PrimitiveType t);
inline bool IsInteger(PrimitiveType t) { return IsSignedInteger(t) || IsUnsignedInteger(t); }

// Tag carrying a native type through generic lambdas.
template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<NativeType>{}) for the native type of array type `t`.
// The caller must have checked IsArrayType(t).
template <typename F>
decltype(auto) TypeSwitch(PrimitiveType t, F&& f) {
  switch (t) {
    case PRED:
      return f(TypeTag<bool>{});
    case S8:
      return f(TypeTag<int8_t>{});
    case S16:
      return f(TypeTag<int16_t>{});
    case S32:
      return f(TypeTag<int32_t>{});
    case S64:
      return f(TypeTag<int64_t>{});
    case U8:
      return f(TypeTag<uint8_t>{});
    case U16:
      return f(TypeTag<uint16_t>{});
    case U32:
      return f(TypeTag<uint32_t>{});
    case U64:
      return f(TypeTag<uint64_t>{});
    case F16:
      return f(TypeTag<Half>{});
    case BF16:
      return f(TypeTag<BFloat16>{});
    case F32:
      return f(TypeTag<float>{});
    case F64:
    default:
      return f(TypeTag<double>{});
  }
}

// The PrimitiveType of a native type.
template <typename T>
constexpr PrimitiveType NativeToPrimitive();
template <>
constexpr PrimitiveType NativeToPrimitive<bool>() {
  return PRED;
}
template <>
constexpr PrimitiveType NativeToPrimitive<int8_t>() {
  return S8;
}
template <>
constexpr PrimitiveType NativeToPrimitive<int16_t>() {
  return S16;
}
template <>
constexpr PrimitiveType NativeToPrimitive<int32_t>() {
  return S32;
}
template <>
constexpr PrimitiveType NativeToPrimitive<int64_t>() {
  return S64;
}
template <>
constexpr PrimitiveType NativeToPrimitive<uint8_t>() {
  return U8;
}
template <>
constexpr PrimitiveType NativeToPrimitive<uint16_t>() {
  return U16;
}
template <>
constexpr PrimitiveType NativeToPrimitive<uint32_t>() {
  return U32;
}
template <>
constexpr PrimitiveType NativeToPrimitive<uint64_t>() {
  return U64;
}
template <>
constexpr PrimitiveType NativeToPrimitive<Half>() {
  return F16;
}
template <>
constexpr PrimitiveType NativeToPrimitive<BFloat16>() {
  return BF16;
}
template <>
constexpr PrimitiveType NativeToPrimitive<float>() {
  return F32;
}
template <>
constexpr PrimitiveType NativeToPrimitive<double>() {
  return F64;
}

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_TYPES_H_
