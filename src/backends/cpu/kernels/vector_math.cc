#include "backends/cpu/kernels/vector_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/vector_math_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace xonnx::cpu {

namespace {

// Arguments whose exp is a normal float: 2^k below is then one float.
constexpr float kLowest = -87.0f, kHighest = 88.0f;
// kZeroBelow, kInfAbove, kTanhSeries, kErfSeries, kErfOne: see
// vector_math_avx512.h.
using vector_math_internal::kErfOne;
using vector_math_internal::kErfSeries;
using vector_math_internal::kInfAbove;
using vector_math_internal::kTanhSeries;
using vector_math_internal::kZeroBelow;

// False for NaN too. `&`, not `&&`: no branch, so a loop of it vectorizes.
[[gnu::always_inline]] inline bool InRange(float x) { return (x >= kLowest) & (x <= kHighest); }

// c ? a : b with bit masks: GCC does not if-convert a float `?:` (nor
// std::min/max) in a loop, and a branch stops vectorization.
[[gnu::always_inline]] inline float Select(bool c, float a, float b) {
  uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// exp(x) = 2^k * p: x = k ln2 + r with |r| <= ln2 / 2 and p = exp(r) by its
// Taylor series to r^7 (truncation below 1e-8 relative). Returns p and sets
// k's bits (two's complement). Branch-free, so loops of it vectorize.
[[gnu::always_inline]] inline float ExpSplit(float x, uint32_t* k_bits) {
  constexpr float kLog2e = 1.44269504088896341f;
  // ln2 in two parts: k * kLn2Hi is exact for |k| < 2^9 (kLn2Hi has 15
  // significant bits), so r keeps its precision.
  constexpr float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682030941723e-06f;
  // Adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits,
  // with SSE2 alone (no rounding instruction needed).
  constexpr float kShifter = 12582912.0f;
  float t = x * kLog2e + kShifter;
  float k = t - kShifter;
  // Unsigned arithmetic, so that a NaN's arbitrary bits are not UB.
  *k_bits = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kShifter);
  float r = x - k * kLn2Hi;
  r = r - k * kLn2Lo;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}

// exp(x) for x in [kLowest, kHighest], where 2^k is a normal float; other x
// give garbage without undefined behaviour.
[[gnu::always_inline]] inline float ExpInRange(float x) {
  uint32_t k;
  float p = ExpSplit(x, &k);
  return p * std::bit_cast<float>((k + 127u) << 23);
}

// exp(x) for every float. Outside [-126, 127], 2^k is built as two exact
// factors, so a subnormal or overflowing result is rounded once, by the last
// multiply. Arguments whose result is surely 0 or infinity compute exp(0)
// instead and are replaced: a multiply that underflows takes a microcode
// assist on x86, about 100 cycles, and masked softmax scores (-1e9 or -inf)
// would take it for every masked element.
[[gnu::always_inline]] inline float ExpAny(float x) {
  bool zero = x<kZeroBelow, inf = x> kInfAbove;
  uint32_t k;
  float p = ExpSplit(Select(zero | inf, 0.0f, x), &k);
  // 2^k = 2^(k + s) * 2^-s with s = 32 below the range, -1 above it, else 0.
  int32_t kk = static_cast<int32_t>(k);
  uint32_t s = static_cast<uint32_t>(kk < -126) * 32u - static_cast<uint32_t>(kk > 127);
  float y = p * std::bit_cast<float>((k + s + 127u) << 23) * std::bit_cast<float>((127u - s) << 23);
  y = Select(zero, 0.0f, Select(inf, std::numeric_limits<float>::infinity(), y));
  return Select(x != x, x, y);  // NaN: k was garbage
}

// Whether any of x[0..n) is outside the normal range (or NaN): a branch-free
// scan that vectorizes.
[[gnu::always_inline]] inline bool AnyOutOfRange(const float* x, int64_t n) {
  int out = 0;
  for (int64_t i = 0; i < n; ++i) out |= !InRange(x[i]);
  return out != 0;
}

constexpr int64_t kChunk = 256;

// What a kernel computes.
enum class Fn { kExp, kLogistic, kSwish, kTanh, kErf };

// y = exp(x) for one chunk; `x` and `y` may be the same array. The common
// chunk, all in range, takes the shorter loop (about 1.5x faster); a chunk
// with any extreme value or NaN (masked softmax scores, say) the full one.
[[gnu::always_inline]] inline void ExpChunk(const float* x, float* y, int64_t m) {
  if (!AnyOutOfRange(x, m)) {
    for (int64_t i = 0; i < m; ++i) y[i] = ExpInRange(x[i]);
  } else {
    for (int64_t i = 0; i < m; ++i) y[i] = ExpAny(x[i]);
  }
}

// tanh(x) from e = exp(-2|x|).
[[gnu::always_inline]] inline float TanhFrom(float x, float e) {
  float z = x * x;
  float p = -1382.0f / 155925;
  p = p * z + 62.0f / 2835;
  p = p * z - 17.0f / 315;
  p = p * z + 2.0f / 15;
  p = p * z - 1.0f / 3;
  // x itself at 0: the sum would turn -0 into +0.
  float series = Select(x == 0, x, x + x * (z * p));
  float t = (1.0f - e) / (1.0f + e);
  return Select(std::fabs(x) < kTanhSeries, series, Select(x < 0, -t, t));
}

// erf(x) from e = exp(-x^2).
[[gnu::always_inline]] inline float ErfFrom(float x, float e) {
  float z = x * x;
  float p = 1.0f / 685440;
  p = p * z - 1.0f / 75600;
  p = p * z + 1.0f / 9360;
  p = p * z - 1.0f / 1320;
  p = p * z + 1.0f / 216;
  p = p * z - 1.0f / 42;
  p = p * z + 1.0f / 10;
  p = p * z - 1.0f / 3;
  constexpr float kTwoOverSqrtPi = 1.12837916709551257f;
  float series = Select(x == 0, x, kTwoOverSqrtPi * (x + x * (z * p)));
  float ax = std::fabs(x);
  float t = 1.0f / (1.0f + 0.3275911f * ax);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  float tail = Select(ax >= kErfOne, 1.0f, 1.0f - q * t * e);
  return Select(ax < kErfSeries, series, Select(x < 0, -tail, tail));
}

template <Fn kFn>
[[gnu::always_inline]] inline void Apply(const float* x, float* y, int64_t n) {
  if constexpr (kFn == Fn::kExp) {
    for (int64_t s = 0; s < n; s += kChunk) ExpChunk(x + s, y + s, std::min(kChunk, n - s));
  } else if constexpr (kFn == Fn::kErf) {
    float e[kChunk];
    for (int64_t s = 0; s < n; s += kChunk) {
      int64_t m = std::min(kChunk, n - s);
      for (int64_t i = 0; i < m; ++i) e[i] = -std::fmin(x[s + i] * x[s + i], kErfOne * kErfOne);
      ExpChunk(e, e, m);
      for (int64_t i = 0; i < m; ++i) y[s + i] = ErfFrom(x[s + i], e[i]);
    }
  } else if constexpr (kFn == Fn::kTanh) {
    float e[kChunk];
    for (int64_t s = 0; s < n; s += kChunk) {
      int64_t m = std::min(kChunk, n - s);
      for (int64_t i = 0; i < m; ++i) e[i] = -2.0f * std::fabs(x[s + i]);
      ExpChunk(e, e, m);
      for (int64_t i = 0; i < m; ++i) y[s + i] = TanhFrom(x[s + i], e[i]);
    }
  } else {
    float e[kChunk];
    for (int64_t s = 0; s < n; s += kChunk) {
      int64_t m = std::min(kChunk, n - s);
      for (int64_t i = 0; i < m; ++i) e[i] = -x[s + i];
      ExpChunk(e, e, m);
      if constexpr (kFn == Fn::kLogistic) {
        for (int64_t i = 0; i < m; ++i) y[s + i] = 1.0f / (1.0f + e[i]);
      } else {
        for (int64_t i = 0; i < m; ++i) y[s + i] = x[s + i] / (1.0f + e[i]);
      }
    }
  }
}

using internal::Kernel;

template <Arith kOp>
[[gnu::always_inline]] inline float ArithOp(float a, float b) {
  if constexpr (kOp == Arith::kAdd) return a + b;
  if constexpr (kOp == Arith::kSubtract) return a - b;
  if constexpr (kOp == Arith::kMultiply) return a * b;
  if constexpr (kOp == Arith::kDivide) return a / b;
  // XLA's maximum and minimum propagate NaN, the first operand's first.
  float r = kOp == Arith::kMaximum ? Select(a > b, a, b) : Select(a < b, a, b);
  return Select(a != a, a, Select(b != b, b, r));
}

// B is const float* (one value per element) or float (one for all).
template <Arith kOp, typename B>
[[gnu::always_inline]] inline void ArithLoop(const float* a, B b, float* y, int64_t n) {
  if constexpr (std::is_same_v<B, float>) {
    for (int64_t i = 0; i < n; ++i) y[i] = ArithOp<kOp>(a[i], b);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = ArithOp<kOp>(a[i], b[i]);
  }
}

template <typename B>
[[gnu::always_inline]] inline void ArithAll(Arith op, const float* a, B b, float* y, int64_t n) {
  switch (op) {
    case Arith::kAdd:
      return ArithLoop<Arith::kAdd>(a, b, y, n);
    case Arith::kSubtract:
      return ArithLoop<Arith::kSubtract>(a, b, y, n);
    case Arith::kMultiply:
      return ArithLoop<Arith::kMultiply>(a, b, y, n);
    case Arith::kDivide:
      return ArithLoop<Arith::kDivide>(a, b, y, n);
    case Arith::kMaximum:
      return ArithLoop<Arith::kMaximum>(a, b, y, n);
    case Arith::kMinimum:
      return ArithLoop<Arith::kMinimum>(a, b, y, n);
  }
}

using internal::ArithKernel;

[[gnu::always_inline]] inline float RoundEvenOne(float x) {
  // Adding and subtracting 2^23 leaves |x| rounded to an integer, ties to
  // even, for |x| < 2^23; the sign is put back so that -0.3 gives -0.
  constexpr float kTwo23 = 8388608.0f;
  float ax = std::fabs(x);
  float r = (ax + kTwo23) - kTwo23;
  uint32_t sign = std::bit_cast<uint32_t>(x) & 0x80000000u;
  return Select(ax < kTwo23, std::bit_cast<float>(std::bit_cast<uint32_t>(r) | sign), x);
}

[[gnu::always_inline]] inline void RoundEvenLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = RoundEvenOne(x[i]);
}

template <typename To>
[[gnu::always_inline]] inline To ConvertOne(float x) {
  constexpr float kLo = std::numeric_limits<To>::min(), kHi = std::numeric_limits<To>::max();
  float v = Select(x != x, 0.0f, x);
  v = Select(v < kLo, kLo, Select(v > kHi, kHi, v));
  return static_cast<To>(static_cast<int32_t>(v));
}

template <typename To>
[[gnu::always_inline]] inline void ConvertLoop(const float* x, To* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ConvertOne<To>(x[i]);
}

// The quantizer as the fused loop's nodes compute it, one element at a
// time: the same operations in the same order, so the same results.
// The pointers are copied to locals, and `y` is restrict: an 8-bit store
// may alias anything, and without them the loop reloaded the arguments for
// every element instead of vectorizing.
template <typename To, bool kAcc>
[[gnu::always_inline]] inline void QuantizeLoopOf(const QuantizeArgs& a, To* __restrict y, int64_t n) {
  const float* __restrict x = a.x, * __restrict s = a.scale, * __restrict zp = a.zero_point;
  const float* __restrict lo = a.lo, * __restrict hi = a.hi, * __restrict mul = a.mul, * __restrict add = a.add;
  const int32_t* __restrict acc = a.acc;
  for (int64_t i = 0; i < n; ++i) {
    float v;
    if constexpr (kAcc) {
      v = static_cast<float>(acc[i]);
      if (mul) v = ArithOp<Arith::kMultiply>(v, mul[i]);
      if (add) v = ArithOp<Arith::kAdd>(v, add[i]);
    } else {
      v = x[i];
    }
    float r = RoundEvenOne(ArithOp<Arith::kDivide>(v, s[i]));
    float c = ArithOp<Arith::kMinimum>(ArithOp<Arith::kMaximum>(ArithOp<Arith::kAdd>(r, zp[i]), lo[i]), hi[i]);
    y[i] = ConvertOne<To>(c);
  }
}

template <typename To>
[[gnu::always_inline]] inline void QuantizeLoop(const QuantizeArgs& a, To* __restrict y, int64_t n) {
  if (a.acc)
    QuantizeLoopOf<To, true>(a, y, n);
  else
    QuantizeLoopOf<To, false>(a, y, n);
}

// The quantizer kernels of one build: the loops above, compiled for the
// instructions the attribute allows.
#define XONNX_QUANTIZER_KERNELS(Suffix, Attribute)                                                  \
  Attribute void RoundEven##Suffix(const float* x, float* y, int64_t n) { RoundEvenLoop(x, y, n); } \
  Attribute void ToU8##Suffix(const float* x, uint8_t* y, int64_t n) { ConvertLoop(x, y, n); }      \
  Attribute void ToS8##Suffix(const float* x, int8_t* y, int64_t n) { ConvertLoop(x, y, n); }
#define XONNX_QUANTIZE_LOOPS(Suffix, Attribute)                                                              \
  Attribute void QuantizeU8##Suffix(const QuantizeArgs& a, uint8_t* y, int64_t n) { QuantizeLoop(a, y, n); } \
  Attribute void QuantizeS8##Suffix(const QuantizeArgs& a, int8_t* y, int64_t n) { QuantizeLoop(a, y, n); }

// The default build targets baseline x86-64 (4 lanes, no FMA); on a CPU
// with AVX2 and FMA the same loops compiled for them run about 2.5x faster,
// and with AVX-512 the kernels below (16 lanes, the exponent scaled by one
// instruction) about 2x faster again. Picked by the CPU's features, once.
#if defined(__x86_64__) && defined(__GNUC__)
// Exp16, Abs16, Tanh16 and Erf16 are in vector_math_avx512.h.
using vector_math_internal::Abs16;
using vector_math_internal::Erf16;
using vector_math_internal::Exp16;
using vector_math_internal::Tanh16;

template <Fn kFn>
XONNX_AVX512 inline __m512 Apply16(__m512 x) {
  if constexpr (kFn == Fn::kExp) return Exp16(x);
  if constexpr (kFn == Fn::kErf) return Erf16(x);
  if constexpr (kFn == Fn::kTanh) return Tanh16(x);
  __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), Exp16(_mm512_sub_ps(_mm512_setzero_ps(), x)));
  // A division, not a reciprocal estimate: it rounds once, as the other
  // builds do, and measured as fast here.
  if constexpr (kFn == Fn::kLogistic) return _mm512_div_ps(_mm512_set1_ps(1.0f), d);
  return _mm512_div_ps(x, d);
}

template <Fn kFn>
XONNX_AVX512 void ApplyAvx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Apply16<kFn>(_mm512_loadu_ps(x + i)));
  if (i < n) {  // the tail, masked: no load or store past the arrays
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, Apply16<kFn>(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

template <Fn kFn>
__attribute__((target("avx2,fma"))) void ApplyAvx2(const float* x, float* y, int64_t n) {
  Apply<kFn>(x, y, n);
}
// Without FMA: a contracted a * b + c would round differently from the
// baseline build, and these loops have nothing to contract anyway.
__attribute__((target("avx2"))) void ArithAvx2(Arith op, const float* a, const float* b, float* y, int64_t n) {
  ArithAll(op, a, b, y, n);
}
__attribute__((target("avx2"))) void ArithScalarAvx2(Arith op, const float* a, float b, float* y, int64_t n) {
  ArithAll(op, a, b, y, n);
}

XONNX_QUANTIZER_KERNELS(Avx2, __attribute__((target("avx2"))))
XONNX_QUANTIZE_LOOPS(Avx2, __attribute__((target("avx2"))))
XONNX_QUANTIZER_KERNELS(Avx512, XONNX_AVX512)

// The quantizer on 16 lanes (GCC vectorizes QuantizeLoop 8 lanes wide,
// with a blend per select): the same steps, each one instruction or two.
// vmaxps and vminps return their second operand when either is NaN; the
// masked moves put a NaN first operand back, as ArithOp does. vrndscaleps
// rounds ties to even and keeps the sign of -0.3's -0, as RoundEvenOne.
// The masked (builtin) multiply and add are never contracted into an FMA.
// Scalar operands are read once.
template <typename To>
XONNX_AVX512 void QuantizeWide(const QuantizeArgs& a, To* y, int64_t n) {
  constexpr __mmask16 kAll = 0xffff;
  const __m512 lo_t = _mm512_set1_ps(std::numeric_limits<To>::min());
  const __m512 hi_t = _mm512_set1_ps(std::numeric_limits<To>::max());
  const float* args[6] = {a.scale, a.zero_point, a.lo, a.hi, a.mul, a.add};
  __m512 once[6];
  for (int k = 0; k < 6; ++k)
    once[k] = args[k] && (a.scalar >> k & 1) ? _mm512_set1_ps(args[k][0]) : _mm512_setzero_ps();
  auto operand = [&](int k, __mmask16 m, int64_t i)
                     XONNX_AVX512 { return a.scalar >> k & 1 ? once[k] : _mm512_maskz_loadu_ps(m, args[k] + i); };
  auto step = [&](__mmask16 m, int64_t i) XONNX_AVX512 {
    __m512 v;
    if (a.acc) {
      v = _mm512_maskz_cvtepi32_ps(kAll, _mm512_maskz_loadu_epi32(m, a.acc + i));
      if (a.mul) v = _mm512_maskz_mul_ps(kAll, v, operand(4, m, i));
      if (a.add) v = _mm512_maskz_add_ps(kAll, v, operand(5, m, i));
    } else {
      v = _mm512_maskz_loadu_ps(m, a.x + i);
    }
    __m512 d = _mm512_maskz_div_ps(m, v, operand(0, m, i));
    __m512 r = _mm512_maskz_roundscale_ps(kAll, d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_maskz_add_ps(kAll, r, operand(1, m, i));
    __m512 c = _mm512_maskz_max_ps(kAll, v, operand(2, m, i));
    c = _mm512_mask_mov_ps(c, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
    __m512 e = _mm512_maskz_min_ps(kAll, c, operand(3, m, i));
    e = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q), c);
    // The convert: NaN to 0, saturated, truncated toward zero.
    e = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(e, e, _CMP_ORD_Q), e);
    e = _mm512_maskz_min_ps(kAll, _mm512_maskz_max_ps(kAll, e, lo_t), hi_t);
    _mm512_mask_cvtepi32_storeu_epi8(y + i, m, _mm512_maskz_cvttps_epi32(kAll, e));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) step(kAll, i);
  if (i < n) step(static_cast<__mmask16>((1u << (n - i)) - 1), i);
}

#endif

template <Fn kFn>
Kernel Pick() {
  std::vector<internal::Build> builds = internal::Builds();
  const internal::Build& b = builds.back();
  switch (kFn) {
    case Fn::kExp:
      return b.exp;
    case Fn::kLogistic:
      return b.logistic;
    case Fn::kSwish:
      return b.swish;
    case Fn::kTanh:
      return b.tanh;
    case Fn::kErf:
      return b.erf;
  }
  return b.exp;
}

}  // namespace

namespace internal {
template <Fn kFn>
void Portable(const float* x, float* y, int64_t n) {
  Apply<kFn>(x, y, n);
}
void PortableArith(Arith op, const float* a, const float* b, float* y, int64_t n) { ArithAll(op, a, b, y, n); }
void PortableArithScalar(Arith op, const float* a, float b, float* y, int64_t n) { ArithAll(op, a, b, y, n); }
XONNX_QUANTIZER_KERNELS(Portable, )
XONNX_QUANTIZE_LOOPS(Portable, )

std::vector<Build> Builds() {
  std::vector<Build> builds = {{"Portable", Portable<Fn::kExp>, Portable<Fn::kLogistic>, Portable<Fn::kSwish>,
                                Portable<Fn::kTanh>, Portable<Fn::kErf>, PortableArith, PortableArithScalar,
                                RoundEvenPortable, ToU8Portable, ToS8Portable, QuantizeU8Portable, QuantizeS8Portable}};
#if defined(__x86_64__) && defined(__GNUC__)
  if (CpuHasAvx2Fma())
    builds.push_back({"Avx2", ApplyAvx2<Fn::kExp>, ApplyAvx2<Fn::kLogistic>, ApplyAvx2<Fn::kSwish>,
                      ApplyAvx2<Fn::kTanh>, ApplyAvx2<Fn::kErf>, ArithAvx2, ArithScalarAvx2, RoundEvenAvx2, ToU8Avx2,
                      ToS8Avx2, QuantizeU8Avx2, QuantizeS8Avx2});
  // + - * / are memory-bound: the AVX2 loop keeps up.
  if (CpuHasAvx512() && CpuHasAvx2Fma())
    builds.push_back({"Avx512", ApplyAvx512<Fn::kExp>, ApplyAvx512<Fn::kLogistic>, ApplyAvx512<Fn::kSwish>,
                      ApplyAvx512<Fn::kTanh>, ApplyAvx512<Fn::kErf>, ArithAvx2, ArithScalarAvx2, RoundEvenAvx512,
                      ToU8Avx512, ToS8Avx512, QuantizeWide<uint8_t>, QuantizeWide<int8_t>});
#endif
  return builds;
}
}  // namespace internal

void ExpF32(const float* x, float* y, int64_t n) {
  static const Kernel k = Pick<Fn::kExp>();
  k(x, y, n);
}

void LogisticF32(const float* x, float* y, int64_t n) {
  static const Kernel k = Pick<Fn::kLogistic>();
  k(x, y, n);
}

void SwishF32(const float* x, float* y, int64_t n) {
  static const Kernel k = Pick<Fn::kSwish>();
  k(x, y, n);
}

void TanhF32(const float* x, float* y, int64_t n) {
  static const Kernel k = Pick<Fn::kTanh>();
  k(x, y, n);
}

void ErfF32(const float* x, float* y, int64_t n) {
  static const Kernel k = Pick<Fn::kErf>();
  k(x, y, n);
}

void RoundEvenF32(const float* x, float* y, int64_t n) {
  static const Kernel k = internal::Builds().back().round_even;
  k(x, y, n);
}

void ConvertF32ToU8(const float* x, uint8_t* y, int64_t n) {
  static const auto k = internal::Builds().back().to_u8;
  k(x, y, n);
}

void ConvertF32ToS8(const float* x, int8_t* y, int64_t n) {
  static const auto k = internal::Builds().back().to_s8;
  k(x, y, n);
}

void QuantizeF32(const QuantizeArgs& a, uint8_t* y, int64_t n) {
  static const auto k = internal::Builds().back().quantize_u8;
  k(a, y, n);
}

void QuantizeF32(const QuantizeArgs& a, int8_t* y, int64_t n) {
  static const auto k = internal::Builds().back().quantize_s8;
  k(a, y, n);
}

bool VectorMathIs16Wide() {
  static const bool wide = internal::Builds().back().name == std::string_view("Avx512");
  return wide;
}

void ArithF32(Arith op, const float* a, const float* b, float* y, int64_t n) {
  static const ArithKernel k = internal::Builds().back().arith;
  k(op, a, b, y, n);
}

void ArithScalarF32(Arith op, const float* a, float b, float* y, int64_t n) {
  static const internal::ArithScalarKernel k = internal::Builds().back().arith_scalar;
  k(op, a, b, y, n);
}

}  // namespace xonnx::cpu
