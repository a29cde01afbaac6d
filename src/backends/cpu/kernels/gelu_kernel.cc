// GeluErfF32: GELU's exact form in one pass. On a 16-lane build it keeps
// each vector in registers through the five steps (erf as ErfF32 computes
// it there, Erf16); elsewhere it runs the same kernels the fused loop's
// nodes would, over chunks that stay in the L1 cache.
#include <algorithm>

#include "backends/cpu/kernels/vector_math.h"
#include "backends/cpu/kernels/vector_math_avx512.h"

namespace xonnx::cpu {

namespace {

void GeluChunked(const GeluErfForm& f, const float* x, float* y, int64_t n) {
  constexpr int64_t kChunk = 256;
  float u[kChunk], v[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    ArithScalarF32(f.divide ? Arith::kDivide : Arith::kMultiply, x + i, f.c, u, m);
    ErfF32(u, u, m);
    ArithScalarF32(Arith::kAdd, u, 1.0f, u, m);
    if (f.half_first) {
      ArithScalarF32(Arith::kMultiply, x + i, f.h, v, m);
      ArithF32(Arith::kMultiply, v, u, y + i, m);
    } else {
      ArithF32(Arith::kMultiply, x + i, u, v, m);
      ArithScalarF32(Arith::kMultiply, v, f.h, y + i, m);
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
using vector_math_internal::Erf16;

// The masked (builtin) forms with every lane selected are never contracted
// into an FMA, as ArithF32's separate steps are not.
XONNX_AVX512 inline __m512 Gelu16(__m512 x, const GeluErfForm& f) {
  constexpr __mmask16 kAll = 0xffff;
  const __m512 c = _mm512_set1_ps(f.c), h = _mm512_set1_ps(f.h);
  __m512 s = f.divide ? _mm512_maskz_div_ps(kAll, x, c) : _mm512_maskz_mul_ps(kAll, x, c);
  __m512 u = _mm512_maskz_add_ps(kAll, Erf16(s), _mm512_set1_ps(1.0f));
  if (f.half_first) return _mm512_maskz_mul_ps(kAll, _mm512_maskz_mul_ps(kAll, x, h), u);
  return _mm512_maskz_mul_ps(kAll, _mm512_maskz_mul_ps(kAll, x, u), h);
}

XONNX_AVX512 void GeluAvx512(const GeluErfForm& f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Gelu16(_mm512_loadu_ps(x + i), f));
  if (i < n) {  // the tail, masked: no load or store past the arrays
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, Gelu16(_mm512_maskz_loadu_ps(m, x + i), f));
  }
}
#endif

}  // namespace

void GeluErfF32(const GeluErfForm& f, const float* x, float* y, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  // ErfF32 runs Erf16 exactly when the builds are 16 lanes wide.
  static const bool wide = VectorMathIs16Wide();
  if (wide) return GeluAvx512(f, x, y, n);
#endif
  GeluChunked(f, x, y, n);
}

}  // namespace xonnx::cpu
