// IEEE binary16 and bfloat16 storage types. Arithmetic happens in float:
// every operation converts in, computes, and rounds back to nearest-even.
#ifndef XONNX_FLOAT16_H_
#define XONNX_FLOAT16_H_

#include <cstdint>
#include <type_traits>

#include "xonnx/export.h"

namespace xonnx {

// Converts between float and the 16-bit encodings (round to nearest even;
// NaN stays NaN, overflow goes to infinity).
XONNX_API uint16_t FloatToHalfBits(float f);
XONNX_API float HalfBitsToFloat(uint16_t h);
XONNX_API uint16_t FloatToBF16Bits(float f);
inline float BF16BitsToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

// IEEE half precision value.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(FloatToHalfBits(f)) {}
  explicit Half(double d) : bits(FloatToHalfBits(static_cast<float>(d))) {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  explicit Half(I i) : bits(FloatToHalfBits(static_cast<float>(i))) {}
  static Half FromBits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  operator float() const { return HalfBitsToFloat(bits); }
};

// Brain float: the upper 16 bits of an IEEE float.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(FloatToBF16Bits(f)) {}
  explicit BFloat16(double d) : bits(FloatToBF16Bits(static_cast<float>(d))) {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  explicit BFloat16(I i) : bits(FloatToBF16Bits(static_cast<float>(i))) {}
  static BFloat16 FromBits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  operator float() const { return BF16BitsToFloat(bits); }
};

}  // namespace xonnx

#endif  // XONNX_FLOAT16_H_
