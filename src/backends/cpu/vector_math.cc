#include "backends/cpu/vector_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace xonnx::cpu {

namespace {

// Arguments whose exp is a normal float with an exponent the bit trick below
// can build: outside it (and for NaN) the result comes from std::exp.
constexpr float kLowest = -87.0f, kHighest = 88.0f;
// False for NaN too. `&`, not `&&`: no branch, so a loop of it vectorizes.
[[gnu::always_inline]] inline bool InRange(float x) { return (x >= kLowest) & (x <= kHighest); }

// exp(x) for x in [kLowest, kHighest]: x = k ln2 + r with |r| <= ln2 / 2,
// exp(r) by its Taylor series to r^7 (truncation below 1e-8 relative), times
// 2^k made from k's bits. Other x give garbage, without undefined behaviour,
// that ExpChunk replaces: no branch or clamp here, so the loops vectorize.
[[gnu::always_inline]] inline float ExpInRange(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  // ln2 in two parts: k * kLn2Hi is exact for |k| < 2^9 (kLn2Hi has 15
  // significant bits), so r keeps its precision.
  constexpr float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682030941723e-06f;
  // Adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits,
  // with SSE2 alone (no rounding instruction needed).
  constexpr float kShifter = 12582912.0f;
  float t = x * kLog2e + kShifter;
  float k = t - kShifter;
  // k's bits (two's complement) are t's low mantissa bits; unsigned
  // arithmetic, so that a NaN's arbitrary bits (fixed up later) are not UB.
  uint32_t ki = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kShifter);
  float r = x - k * kLn2Hi;
  r = r - k * kLn2Lo;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((ki + 127u) << 23);
}

// Whether any of x[0..n) is outside the fast range (or NaN): a branch-free
// scan that vectorizes, so the common case never takes the slow path.
[[gnu::always_inline]] inline bool AnyOutOfRange(const float* x, int64_t n) {
  int out = 0;
  for (int64_t i = 0; i < n; ++i) out |= !InRange(x[i]);
  return out != 0;
}

constexpr int64_t kChunk = 256;

// y = exp(x) for one chunk; `x` and `y` may be the same array.
[[gnu::always_inline]] inline void ExpChunk(const float* x, float* y, int64_t m) {
  if (!AnyOutOfRange(x, m)) {
    for (int64_t i = 0; i < m; ++i) y[i] = ExpInRange(x[i]);
    return;
  }
  float xs[kChunk];  // kept: y may overwrite x
  std::memcpy(xs, x, m * sizeof(float));
  for (int64_t i = 0; i < m; ++i) y[i] = ExpInRange(xs[i]);
  for (int64_t i = 0; i < m; ++i)
    if (!InRange(xs[i])) y[i] = std::exp(xs[i]);
}

template <bool kLogistic>
[[gnu::always_inline]] inline void Apply(const float* x, float* y, int64_t n) {
  if constexpr (!kLogistic) {
    for (int64_t s = 0; s < n; s += kChunk) ExpChunk(x + s, y + s, std::min(kChunk, n - s));
  } else {
    float e[kChunk];
    for (int64_t s = 0; s < n; s += kChunk) {
      int64_t m = std::min(kChunk, n - s);
      for (int64_t i = 0; i < m; ++i) e[i] = -x[s + i];
      ExpChunk(e, e, m);
      for (int64_t i = 0; i < m; ++i) y[s + i] = 1.0f / (1.0f + e[i]);
    }
  }
}

using Kernel = void (*)(const float*, float*, int64_t);

// The default build targets baseline x86-64 (4 lanes, no FMA); on a CPU
// with AVX2 and FMA the same loops compiled for them run about 2.5x faster.
// Picked by the CPU's features, once.
#if defined(__x86_64__) && defined(__GNUC__)
template <bool kLogistic>
__attribute__((target("avx2,fma"))) void ApplyAvx2(const float* x, float* y, int64_t n) {
  Apply<kLogistic>(x, y, n);
}
template <bool kLogistic>
Kernel Pick() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ApplyAvx2<kLogistic>;
  return internal::Portable<kLogistic>;
}
#else
template <bool kLogistic>
Kernel Pick() {
  return internal::Portable<kLogistic>;
}
#endif

}  // namespace

namespace internal {
template <bool kLogistic>
void Portable(const float* x, float* y, int64_t n) {
  Apply<kLogistic>(x, y, n);
}
template void Portable<false>(const float*, float*, int64_t);
template void Portable<true>(const float*, float*, int64_t);
}  // namespace internal

void ExpF32(const float* x, float* y, int64_t n) {
  static const Kernel k = Pick<false>();
  k(x, y, n);
}

void LogisticF32(const float* x, float* y, int64_t n) {
  static const Kernel k = Pick<true>();
  k(x, y, n);
}

}  // namespace xonnx::cpu
