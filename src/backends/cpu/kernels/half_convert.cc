#include "backends/cpu/kernels/half_convert.h"

#include <cstring>

#include "backends/cpu/kernels/cpu_features.h"
#include "xonnx/float16.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define XONNX_HALF_X86 1
#endif

namespace xonnx::cpu {
namespace {

// bf16 rounding as FloatToBF16Bits does it, written without a branch so the
// loop vectorizes: NaN keeps its top bits and is made quiet; anything else
// rounds to nearest, ties to even (a carry into the exponent gives inf).
inline uint16_t RoundToBF16(uint32_t x) {
  uint32_t nan = (x & 0x7fffffffu) > 0x7f800000u;
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  uint32_t quiet = (x >> 16) | 0x40u;
  return static_cast<uint16_t>(nan ? quiet : rounded);
}

inline void F32ToBF16Loop(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, 4);
    y[i] = RoundToBF16(u);
  }
}

inline void BF16ToF32Loop(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &u, 4);
  }
}

void F32ToF16Portable(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = FloatToHalfBits(x[i]);
}
void F16ToF32Portable(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = HalfBitsToFloat(x[i]);
}
void F32ToBF16Portable(const float* x, uint16_t* y, int64_t n) { F32ToBF16Loop(x, y, n); }
void BF16ToF32Portable(const uint16_t* x, float* y, int64_t n) { BF16ToF32Loop(x, y, n); }

#ifdef XONNX_HALF_X86
// F16C's conversions round to nearest even and keep subnormals whatever
// MXCSR says, which is FloatToHalfBits' rounding; the tail goes through the
// portable code.
__attribute__((target("avx2,f16c"))) void F32ToF16Avx2(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  F32ToF16Portable(x + i, y + i, n - i);
}
__attribute__((target("avx2,f16c"))) void F16ToF32Avx2(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  F16ToF32Portable(x + i, y + i, n - i);
}
__attribute__((target("avx2"))) void F32ToBF16Avx2(const float* x, uint16_t* y, int64_t n) { F32ToBF16Loop(x, y, n); }
__attribute__((target("avx2"))) void BF16ToF32Avx2(const uint16_t* x, float* y, int64_t n) { BF16ToF32Loop(x, y, n); }
#endif

const internal::HalfConvertBuild& Best() {
  static const internal::HalfConvertBuild best = internal::HalfConvertBuilds().back();
  return best;
}

}  // namespace

void ConvertF32ToF16(const float* x, uint16_t* y, int64_t n) { Best().f32_to_f16(x, y, n); }
void ConvertF16ToF32(const uint16_t* x, float* y, int64_t n) { Best().f16_to_f32(x, y, n); }
void ConvertF32ToBF16(const float* x, uint16_t* y, int64_t n) { Best().f32_to_bf16(x, y, n); }
void ConvertBF16ToF32(const uint16_t* x, float* y, int64_t n) { Best().bf16_to_f32(x, y, n); }

namespace internal {
std::vector<HalfConvertBuild> HalfConvertBuilds() {
  std::vector<HalfConvertBuild> builds = {
      {"Portable", F32ToF16Portable, F16ToF32Portable, F32ToBF16Portable, BF16ToF32Portable}};
#ifdef XONNX_HALF_X86
  if (CpuHasAvx2F16c()) builds.push_back({"Avx2F16c", F32ToF16Avx2, F16ToF32Avx2, F32ToBF16Avx2, BF16ToF32Avx2});
#endif
  return builds;
}
}  // namespace internal

}  // namespace xonnx::cpu
