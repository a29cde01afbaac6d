#include "backends/cpu/fusion/table_lookup.h"

#include <algorithm>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/strided_loops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace xonnx::cpu {

namespace {

template <typename U>
void LookupLoop(const uint8_t* table, const uint8_t* index, uint8_t* y, int64_t n) {
  const U* t = reinterpret_cast<const U*>(table);
  U* d = reinterpret_cast<U*>(y);
  for (int64_t k = 0; k < n; ++k) d[k] = t[index[k]];
}

template <typename U>
void PeriodicLoop(const uint8_t* table, int64_t period, int64_t phase, const uint8_t* index, uint8_t* y, int64_t n) {
  const U* t = reinterpret_cast<const U*>(table);
  U* d = reinterpret_cast<U*>(y);
  for (int64_t i = 0; i < n;) {  // runs of rows up to the period's end
    const int64_t run = std::min(n - i, period - phase);
    const U* row = t + phase * 256;
    for (int64_t k = 0; k < run; ++k, row += 256) d[i + k] = row[index[i + k]];
    i += run;
    phase = 0;
  }
}

using ByteKernel = void (*)(const uint8_t* table, const uint8_t* index, uint8_t* y, int64_t n);

#if defined(__x86_64__) && defined(__GNUC__)
// 64 indices at a time: vpermi2b picks from 128 bytes by an index's low
// seven bits; two of them cover the table's halves, and the index's top
// bit chooses between them. Four instructions per 64 elements instead of
// the scalar loop's three per element.
#define XONNX_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))
XONNX_VBMI inline __m512i Look64(const __m512i t[4], __m512i i) {
  __m512i lo = _mm512_permutex2var_epi8(t[0], i, t[1]), hi = _mm512_permutex2var_epi8(t[2], i, t[3]);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(i), lo, hi);
}

XONNX_VBMI void LookupBytesVbmi(const uint8_t* table, const uint8_t* index, uint8_t* y, int64_t n) {
  const __m512i t[4] = {_mm512_loadu_si512(table), _mm512_loadu_si512(table + 64), _mm512_loadu_si512(table + 128),
                        _mm512_loadu_si512(table + 192)};
  int64_t k = 0;
  for (; k + 64 <= n; k += 64) _mm512_storeu_si512(y + k, Look64(t, _mm512_loadu_si512(index + k)));
  if (k < n) {  // the tail, masked: no load or store past the arrays
    __mmask64 m = (~0ull) >> (64 - (n - k));
    _mm512_mask_storeu_epi8(y + k, m, Look64(t, _mm512_maskz_loadu_epi8(m, index + k)));
  }
}

ByteKernel PickBytes() { return CpuHasAvx512Vbmi() ? LookupBytesVbmi : internal::LookupBytesPortable; }
#else
ByteKernel PickBytes() { return internal::LookupBytesPortable; }
#endif

ByteKernel Bytes() {
  static const ByteKernel k = PickBytes();
  return k;
}

}  // namespace

namespace internal {
void LookupBytesPortable(const uint8_t* table, const uint8_t* index, uint8_t* y, int64_t n) {
  LookupLoop<uint8_t>(table, index, y, n);
}
bool LookupBytesIsVector() { return Bytes() != LookupBytesPortable; }
}  // namespace internal

void LookupTable(const uint8_t* table, int width, const uint8_t* index, uint8_t* y, int64_t n) {
  if (width == 1) return Bytes()(table, index, y, n);
  DispatchWidth(width, [&](auto tag) { LookupLoop<typename decltype(tag)::type>(table, index, y, n); });
}

void LookupPeriodic(const uint8_t* table, int width, int64_t period, int64_t phase, const uint8_t* index, uint8_t* y,
                    int64_t n) {
  // One element at a time: AVX-512 gathers measured no faster here (about
  // two cycles an element either way, the table being in L2 at P = 384).
  DispatchWidth(width,
                [&](auto tag) { PeriodicLoop<typename decltype(tag)::type>(table, period, phase, index, y, n); });
}

}  // namespace xonnx::cpu
