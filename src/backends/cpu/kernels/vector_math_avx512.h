// The vector math's range constants and its 16-lane (AVX-512) exp, tanh
// and erf, shared by vector_math.cc and the kernels that fuse them with
// the arithmetic around them (gelu_kernel.cc), so that both compute the
// same values. Internal to the CPU backend.
#ifndef XONNX_BACKENDS_CPU_KERNELS_VECTOR_MATH_AVX512_H_
#define XONNX_BACKENDS_CPU_KERNELS_VECTOR_MATH_AVX512_H_

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace xonnx::cpu::vector_math_internal {

// Below kZeroBelow exp rounds to 0 (exp(-104) < 2^-150, half the least
// subnormal); above kInfAbove it overflows.
inline constexpr float kZeroBelow = -104.0f, kInfAbove = 89.0f;

// Below this magnitude tanh is its odd Taylor polynomial (to x^11, whose
// next term is under 1e-8 of x here); above it, (1 - e) / (1 + e) with
// e = exp(-2|x|) >= exp(-0.5), which has no cancellation to fear.
inline constexpr float kTanhSeries = 0.25f;

// Below this magnitude erf is its odd Taylor polynomial (to x^17, whose
// next term is under 1e-9 of the result); from it to kErfOne, 1 - t-poly *
// exp(-x^2) (Abramowitz and Stegun 7.1.26, absolute error under 1.5e-7);
// from kErfOne on the float nearest to erf(x) is 1.
inline constexpr float kErfSeries = 0.75f, kErfOne = 4.0f;

#if defined(__x86_64__) && defined(__GNUC__)
#define XONNX_AVX512 __attribute__((target("avx512f")))

// exp(x) on 16 lanes: x = n ln2 + r with ExpSplit's reduction and
// polynomial, then p * 2^n by vscalefps, which rounds once, so subnormal
// results, 0 and infinity come out as ExpAny's do without its two-factor
// scaling. The clamp keeps n small; it changes no result (below -104 the
// result rounds to 0, above 89 it overflows). vminps and vmaxps return
// their second operand when one is NaN, which passes x's NaN through.
//
// The zero-masked forms with every lane selected are the same instructions;
// GCC 12 warns of an uninitialized variable inside the plain ones.
XONNX_AVX512 inline __m512 Exp16(__m512 x) {
  constexpr __mmask16 kAll = 0xffff;
  x = _mm512_maskz_max_ps(kAll, _mm512_set1_ps(kZeroBelow), _mm512_maskz_min_ps(kAll, _mm512_set1_ps(kInfAbove), x));
  __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

// |x| by clearing the sign bit (GCC 12 warns of an uninitialized variable
// inside _mm512_abs_ps).
XONNX_AVX512 inline __m512 Abs16(__m512 x) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

// tanh on 16 lanes, as TanhFrom computes it: the series below
// kTanhSeries, else (1 - e) / (1 + e) with x's sign.
XONNX_AVX512 inline __m512 Tanh16(__m512 x) {
  __m512 ax = Abs16(x);
  __m512 e = Exp16(_mm512_mul_ps(ax, _mm512_set1_ps(-2.0f)));
  __m512 t = _mm512_div_ps(_mm512_sub_ps(_mm512_set1_ps(1.0f), e), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
  __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  t = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
  __m512 z = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-1382.0f / 155925);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(62.0f / 2835));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-17.0f / 315));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.0f / 15));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-1.0f / 3));
  __m512 series = _mm512_fmadd_ps(x, _mm512_mul_ps(z, p), x);
  series = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), series, x);  // keeps -0
  __mmask16 small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(kTanhSeries), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(small, t, series);
}

// erf on 16 lanes, as ErfFrom computes it.
XONNX_AVX512 inline __m512 Erf16(__m512 x) {
  __m512 ax = Abs16(x);
  __m512 z = _mm512_mul_ps(x, x);
  __m512 e =
      Exp16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_maskz_min_ps(0xffff, z, _mm512_set1_ps(kErfOne * kErfOne))));
  __m512 p = _mm512_set1_ps(1.0f / 685440);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-1.0f / 75600));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.0f / 9360));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-1.0f / 1320));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.0f / 216));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-1.0f / 42));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.0f / 10));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-1.0f / 3));
  __m512 series = _mm512_mul_ps(_mm512_set1_ps(1.12837916709551257f), _mm512_fmadd_ps(x, _mm512_mul_ps(z, p), x));
  series = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), series, x);  // keeps -0
  __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), ax, _mm512_set1_ps(1.0f)));
  __m512 q = _mm512_set1_ps(1.061405429f);
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-1.453152027f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.421413741f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-0.284496736f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(0.254829592f));
  __m512 tail = _mm512_fnmadd_ps(_mm512_mul_ps(q, t), e, _mm512_set1_ps(1.0f));
  tail = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(kErfOne), _CMP_GE_OQ), tail, _mm512_set1_ps(1.0f));
  __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  tail = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(tail), sign));
  __mmask16 small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(kErfSeries), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(small, tail, series);
}
#endif

}  // namespace xonnx::cpu::vector_math_internal

#endif  // XONNX_BACKENDS_CPU_KERNELS_VECTOR_MATH_AVX512_H_
