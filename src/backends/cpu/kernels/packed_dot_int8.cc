// Products by 4- and 8-bit block-quantized weights with the activation
// rounded to 8 bits, where the product allows it (MatMulNBits at
// accuracy_level 4, as ONNX Runtime computes it on the CPU). The f32
// kernel (packed_dot.cc) spends about three vector instructions per 16
// weights turning nibbles into floats, which a decode step cannot hide
// behind its memory reads. Here the weights stay integers: one 64-byte
// load holds 128 4-bit weights; a mask and a shift split the nibbles, and
// VPDPBUSD multiplies them by the activation's int8 values, 4 products
// summed per 32-bit lane: 2 instructions per 128 weights. Each lane's 8
// (4-bit) or 4 (8-bit) weights lie in one block, so a lane's sum is scaled
// once by its block's weight scale times the activation block's scale,
// after its zero point's share (zero * the sum of the lane's activation
// integers, prepared with them) is taken off.
#include <cmath>
#include <vector>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/packed_dot.h"

namespace xonnx::cpu::packed_dot {
// A namespace of its own: the unity build compiles the kernels together.
namespace int8 {
namespace {

// Packed weight bytes per step of the kernel: one vector.
constexpr int64_t kStepBytes = 64;
// Weights per step: 128 of 4 bits, 64 of 8.
constexpr int64_t StepWeights(int bits) { return kStepBytes * 8 / bits; }
// An activation row's prepared bytes per step: its int8 values (for 4
// bits, the even weights' 64 and then the odd ones', the order of the low
// and high nibbles), then 16 lane terms (the zero point's share as int32,
// or with zero points per block, the lane's sum as a float), then the 16
// lanes' activation scales.
constexpr int64_t StepPrepared(int bits) { return StepWeights(bits) + 64 + 64; }
int64_t Steps(const Dims& d) { return (d.row_bytes + kStepBytes - 1) / kStepBytes; }
int64_t RowStride(const Dims& d) { return Steps(d) * StepPrepared(d.bits); }

// v rounded to the nearest integer, ties to even (as nearbyint in the
// default rounding mode), for |v| < 2^22: added to 1.5 * 2^23, v's integer
// part is the sum's low mantissa bits. A library call per value otherwise.
inline int RoundHalfEven(float v) {
  const float t = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &t, 4);
  return bits - 0x4B400000;
}

}  // namespace
}  // namespace int8

size_t Int8PreparedSize(const Dims& d) { return static_cast<size_t>(d.rows * int8::RowStride(d)); }

bool Int8PrepareReference(const Dims& d, const float* x, uint8_t* prepared) {
  using namespace int8;  // NOLINT(build/namespaces): this file's own layout
  const int64_t sw = StepWeights(d.bits), sp = StepPrepared(d.bits);
  const int lane_shift = d.bits == 4 ? 3 : 2;  // a lane holds sw / 16 weights: 8 or 4
  const float zero = std::nearbyint(d.zero);
  if (!d.zeros && zero != d.zero) return false;
  std::memset(prepared, 0, Int8PreparedSize(d));
  std::vector<float> scale(d.blocks), inverse(d.blocks);
  int block_shift = 0;  // blocks are powers of two
  while ((int64_t{1} << block_shift) < d.block) ++block_shift;
  for (int64_t r = 0; r < d.rows; ++r) {
    const float* row = x + r * d.k;
    uint8_t* out = prepared + r * RowStride(d);
    // Each block's scale; a NaN or an infinity anywhere makes `poison` a NaN.
    float poison = 0;
    for (int64_t b = 0; b < d.blocks; ++b) {
      float amax = 0;
      for (int64_t i = b * d.block; i < std::min(d.k, (b + 1) * d.block); ++i) {
        amax = std::max(amax, std::fabs(row[i]));
        poison += row[i] * 0.0f;
      }
      scale[b] = amax / 127;
      inverse[b] = amax > 0 ? 127 / amax : 0;
    }
    if (poison != 0) return false;  // NaN compares unequal
    for (int64_t s = 0; s * sw < d.k; ++s) {
      uint8_t* step = out + s * sp;
      int32_t sums[16] = {};
      float lane_scale[16] = {};
      for (int64_t i = s * sw; i < std::min(d.k, (s + 1) * sw); ++i) {
        const int64_t o = i - s * sw, b = i >> block_shift, lane = o >> lane_shift;
        const int v = RoundHalfEven(row[i] * inverse[b]);  // within [-127, 127]: |x| <= amax
        step[d.bits == 4 ? o % 2 * 64 + o / 2 : o] = static_cast<uint8_t>(static_cast<int8_t>(v));
        sums[lane] += v;
        lane_scale[lane] = scale[b];
      }
      // The lane sums as the zero point's share, or as floats.
      for (int lane = 0; lane < 16; ++lane) {
        if (d.zeros) {
          const float f = static_cast<float>(sums[lane]);
          std::memcpy(step + sw + lane * 4, &f, 4);
        } else {
          const int32_t share = -static_cast<int32_t>(zero) * sums[lane];
          std::memcpy(step + sw + lane * 4, &share, 4);
        }
      }
      std::memcpy(step + sw + 64, lane_scale, sizeof(lane_scale));
    }
  }
  return true;
}

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 warns that the "undefined" vectors its own AVX-512 intrinsics
// pass as unused operands are uninitialized (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define XONNX_INT8_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

namespace int8 {
namespace {

// What every weight row's steps share, worked out once per call: for
// blocks shorter than a step, how many a step holds and, per lane, which
// of them its weights are in (m * (sw / 16) / block).
struct Steps16 {
  int64_t steps, per_step;
  int block_shift;  // log2(block): blocks of a step or more start at s * sw >> block_shift
  __m512i which;
};

template <int kBits>
XONNX_INT8_AVX512 Steps16 StepsOf(const Dims& d) {
  constexpr int64_t sw = StepWeights(kBits);
  Steps16 t{Steps(d), d.block < sw ? sw / d.block : 0, 0, _mm512_setzero_si512()};
  while ((int64_t{1} << t.block_shift) < d.block) ++t.block_shift;
  alignas(64) int32_t lane_block[16];
  for (int m = 0; m < 16; ++m) lane_block[m] = t.per_step ? static_cast<int32_t>(m * (sw / 16) / d.block) : 0;
  t.which = _mm512_load_si512(lane_block);
  return t;
}

// Weight row `p` against activation rows [0, R) of `x` (the first row's
// prepared bytes; the others follow every `stride`): each row's sums
// go to sums[r * kGroup].
template <int R, int kBits, bool kZeros>
XONNX_INT8_AVX512 void Column(const Dims& d, const Steps16& t, const uint8_t* x, int64_t stride, const uint8_t* p,
                              const float* sc, const float* zr, __m512* sums) {
  constexpr int64_t sw = StepWeights(kBits), sp = StepPrepared(kBits);
  const int64_t per_step = t.per_step, steps = t.steps;
  const __m512i which = t.which;
  const __m512i nibble = _mm512_set1_epi8(15);
  __m512 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t s = 0; s < steps; ++s) {
    // The weights 64 steps on (the next rows', past this row's end):
    // a decode step streams them from memory once.
    _mm_prefetch(reinterpret_cast<const char*>(p + s * kStepBytes + kPrefetchBytes), _MM_HINT_T0);
    const int64_t left = d.row_bytes - s * kStepBytes;
    const __m512i w = left >= kStepBytes ? _mm512_loadu_si512(p + s * kStepBytes)
                                         : _mm512_maskz_loadu_epi8((__mmask64{1} << left) - 1, p + s * kStepBytes);
    __m512i lo = w, hi = w;
    if constexpr (kBits == 4) {
      lo = _mm512_and_si512(w, nibble);
      hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), nibble);
    }
    __m512 ws, wz = _mm512_setzero_ps();
    if (per_step) {
      const int64_t b0 = s * per_step;
      const __mmask16 have = static_cast<__mmask16>((1u << std::min(per_step, d.blocks - b0)) - 1);
      ws = _mm512_permutexvar_ps(which, _mm512_maskz_loadu_ps(have, sc + b0));
      if constexpr (kZeros) wz = _mm512_permutexvar_ps(which, _mm512_maskz_loadu_ps(have, zr + b0));
    } else {
      const int64_t b = s * sw >> t.block_shift;
      ws = _mm512_set1_ps(sc[b]);
      if constexpr (kZeros) wz = _mm512_set1_ps(zr[b]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* step = x + r * stride + s * sp;
      __m512i a = kZeros ? _mm512_setzero_si512() : _mm512_loadu_si512(step + sw);
      a = _mm512_dpbusd_epi32(a, lo, _mm512_loadu_si512(step));
      if constexpr (kBits == 4) a = _mm512_dpbusd_epi32(a, hi, _mm512_loadu_si512(step + 64));
      __m512 f = _mm512_cvtepi32_ps(a);
      if constexpr (kZeros) f = _mm512_fnmadd_ps(wz, _mm512_loadu_ps(step + sw), f);
      acc[r] = _mm512_fmadd_ps(f, _mm512_mul_ps(ws, _mm512_loadu_ps(step + sw + 64)), acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) sums[r * kGroup] = acc[r];
}

// Weight rows j to j + 3 (`p`: row j's bytes; `sc`, `zr`: its scales and
// zero points) against one activation row (a decode step at batch 1): the
// four rows' sums go to sums[0..3]. The activation's step is loaded once
// for the four, and a call covers four rows: with 512-wide rows (four
// steps each) the calls, not the steps, were most of a row's time.
template <int kBits, bool kZeros>
XONNX_INT8_AVX512 void Quad(const Dims& d, const Steps16& t, const uint8_t* x, const uint8_t* p, const float* sc,
                            const float* zr, __m512* sums) {
  constexpr int64_t sw = StepWeights(kBits), sp = StepPrepared(kBits);
  const __m512i nibble = _mm512_set1_epi8(15);
  __m512 acc[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) acc[q] = _mm512_setzero_ps();
  for (int64_t s = 0; s < t.steps; ++s) {
    const uint8_t* step = x + s * sp;
    const __m512i x_lo = _mm512_loadu_si512(step);
    const __m512i x_hi = kBits == 4 ? _mm512_loadu_si512(step + 64) : x_lo;
    const __m512i terms = _mm512_loadu_si512(step + sw);
    const __m512 x_scales = _mm512_loadu_ps(step + sw + 64);
    const int64_t left = d.row_bytes - s * kStepBytes;
    const __mmask64 bytes = left >= kStepBytes ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    __mmask16 have = 0;
    int64_t b = 0;
    if (t.per_step) {
      b = s * t.per_step;
      have = static_cast<__mmask16>((1u << std::min(t.per_step, d.blocks - b)) - 1);
    } else {
      b = s * sw >> t.block_shift;
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const uint8_t* w_at = p + q * d.row_bytes + s * kStepBytes;
      _mm_prefetch(reinterpret_cast<const char*>(w_at + kPrefetchBytes), _MM_HINT_T0);
      const __m512i w = _mm512_maskz_loadu_epi8(bytes, w_at);
      __m512i lo = w, hi = w;
      if constexpr (kBits == 4) {
        lo = _mm512_and_si512(w, nibble);
        hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), nibble);
      }
      const float* scq = sc + q * d.blocks;
      __m512 ws, wz = _mm512_setzero_ps();
      if (t.per_step) {
        ws = _mm512_permutexvar_ps(t.which, _mm512_maskz_loadu_ps(have, scq + b));
        if constexpr (kZeros) wz = _mm512_permutexvar_ps(t.which, _mm512_maskz_loadu_ps(have, zr + q * d.blocks + b));
      } else {
        ws = _mm512_set1_ps(scq[b]);
        if constexpr (kZeros) wz = _mm512_set1_ps(zr[q * d.blocks + b]);
      }
      __m512i a = kZeros ? _mm512_setzero_si512() : terms;
      a = _mm512_dpbusd_epi32(a, lo, x_lo);
      if constexpr (kBits == 4) a = _mm512_dpbusd_epi32(a, hi, x_hi);
      __m512 f = _mm512_cvtepi32_ps(a);
      if constexpr (kZeros) f = _mm512_fnmadd_ps(wz, _mm512_castsi512_ps(terms), f);
      acc[q] = _mm512_fmadd_ps(f, _mm512_mul_ps(ws, x_scales), acc[q]);
    }
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) sums[q] = acc[q];
}

// One activation row against weight rows [n0, n1): Quad's groups of four,
// then Column's rows one at a time, 16 rows' sums reduced together.
template <int kBits, bool kZeros>
XONNX_INT8_AVX512 void OneRow(const Dims& d, const Steps16& t, const uint8_t* x, const uint8_t* packed,
                              const float* scales, const float* zeros, float* y, int64_t n0, int64_t n1) {
  __m512 sums[kGroup];
  for (int64_t g = n0; g < n1; g += kGroup) {
    const int64_t count = std::min(kGroup, n1 - g);
    int64_t i = 0;
    for (; i + 4 <= count; i += 4)
      Quad<kBits, kZeros>(d, t, x, packed + (g + i) * d.row_bytes, scales + (g + i) * d.blocks,
                          zeros ? zeros + (g + i) * d.blocks : nullptr, sums + i);
    for (; i < count; ++i)
      Column<1, kBits, kZeros>(d, t, x, 0, packed + (g + i) * d.row_bytes, scales + (g + i) * d.blocks,
                               zeros ? zeros + (g + i) * d.blocks : nullptr, sums + i);
    for (; i < kGroup; ++i) sums[i] = _mm512_setzero_ps();
    float reduced[kGroup];
    Reduce16(sums, reduced);
    std::memcpy(y + g, reduced, count * sizeof(float));
  }
}

template <int kBits, bool kZeros>
XONNX_INT8_AVX512 void RowsOf(const Dims& d, const uint8_t* x, const uint8_t* packed, const float* scales,
                              const float* zeros, float* y, int64_t n0, int64_t n1) {
  // Column<R> for R rows of a tile, 1 to kRowTile.
  using ColumnFn = void (*)(const Dims&, const Steps16&, const uint8_t*, int64_t, const uint8_t*, const float*,
                            const float*, __m512*);
  static constexpr ColumnFn kColumns[kRowTile + 1] = {nullptr,
                                                      Column<1, kBits, kZeros>,
                                                      Column<2, kBits, kZeros>,
                                                      Column<3, kBits, kZeros>,
                                                      Column<4, kBits, kZeros>,
                                                      Column<5, kBits, kZeros>,
                                                      Column<6, kBits, kZeros>,
                                                      Column<7, kBits, kZeros>,
                                                      Column<8, kBits, kZeros>};
  const int64_t stride = RowStride(d);
  const Steps16 t = StepsOf<kBits>(d);
  if (d.rows == 1) return OneRow<kBits, kZeros>(d, t, x, packed, scales, zeros, y, n0, n1);
  ReduceColumns(d, y, n0, n1, [&](int64_t j, int64_t r0, int64_t rows, __m512* out) XONNX_INT8_AVX512 {
    kColumns[rows](d, t, x + r0 * stride, stride, packed + j * d.row_bytes, scales + j * d.blocks,
                   zeros ? zeros + j * d.blocks : nullptr, out);
  });
}

}  // namespace
}  // namespace int8

namespace int8 {
namespace {

// Int8PrepareReference's bytes, 16 values at a time: scales by block,
// values rounded by the conversion (to nearest, ties to even: the same
// integers), the 4-bit layout's even and odd values split by a permute,
// and the lane sums by VPDPBUSD with ones, over the very bytes the kernel
// multiplies. A row of 512 values took 2 us one by one, a sixth of a
// 512 x 512 product's time.
template <int kBits>
XONNX_INT8_AVX512 bool PrepareRows(const Dims& d, const float* x, uint8_t* prepared) {
  constexpr int64_t sw = StepWeights(kBits), sp = StepPrepared(kBits);
  constexpr int lane_weights = sw / 16;  // 8 or 4
  const float zero = std::nearbyint(d.zero);
  if (!d.zeros && zero != d.zero) return false;
  int block_shift = 0;
  while ((int64_t{1} << block_shift) < d.block) ++block_shift;
  std::vector<float> scale(d.blocks), inverse(d.blocks);
  const __m512i evens = EvenLanes(), odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
  const __m512i ones = _mm512_set1_epi8(1);
  const __m512i lane_at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32(lane_weights));
  auto tail = [&](int64_t at) { return FirstLanes(d.k - at); };  // a 16-value chunk's values inside the row
  for (int64_t r = 0; r < d.rows; ++r) {
    const float* row = x + r * d.k;
    uint8_t* out = prepared + r * RowStride(d);
    // Each block's scale; x * 0 is a NaN for a NaN or an infinity.
    __m512 poison = _mm512_setzero_ps();
    for (int64_t b = 0; b < d.blocks; ++b) {
      __m512 amax = _mm512_setzero_ps();
      for (int64_t i = b * d.block; i < std::min(d.k, (b + 1) * d.block); i += 16) {
        const __m512 v = _mm512_maskz_loadu_ps(tail(i), row + i);
        amax = _mm512_max_ps(amax, _mm512_abs_ps(v));
        poison = _mm512_add_ps(poison, _mm512_mul_ps(v, _mm512_setzero_ps()));
      }
      const float m = _mm512_reduce_max_ps(amax);
      scale[b] = m / 127;
      inverse[b] = m > 0 ? 127 / m : 0;
    }
    if (_mm512_cmp_ps_mask(poison, poison, _CMP_UNORD_Q)) return false;
    // Every step, those past the row too: zeros, as the reference leaves them.
    for (int64_t s = 0; s < Steps(d); ++s) {
      uint8_t* step = out + s * sp;
      // The rounded values of 16 weights from `at` (zeros past the row).
      auto rounded = [&](int64_t at) XONNX_INT8_AVX512 {
        const __mmask16 m = tail(at);
        if (!m) return _mm512_setzero_si512();
        const __m512 v = _mm512_maskz_loadu_ps(m, row + at);
        return _mm512_cvtps_epi32(_mm512_mul_ps(v, _mm512_set1_ps(inverse[at >> block_shift])));
      };
      for (int64_t c = 0; c < sw; c += kBits == 4 ? 32 : 16) {
        const int64_t at = s * sw + c;
        if constexpr (kBits == 4) {
          const __m512i v0 = rounded(at), v1 = rounded(at + 16);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(step + c / 2),
                           _mm512_cvtepi32_epi8(_mm512_permutex2var_epi32(v0, evens, v1)));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(step + 64 + c / 2),
                           _mm512_cvtepi32_epi8(_mm512_permutex2var_epi32(v0, odds, v1)));
        } else {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(step + c), _mm512_cvtepi32_epi8(rounded(at)));
        }
      }
      __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_loadu_si512(step));
      if constexpr (kBits == 4) sums = _mm512_dpbusd_epi32(sums, ones, _mm512_loadu_si512(step + 64));
      if (d.zeros)
        _mm512_storeu_ps(step + sw, _mm512_cvtepi32_ps(sums));
      else
        _mm512_storeu_si512(step + sw, _mm512_mullo_epi32(sums, _mm512_set1_epi32(-static_cast<int32_t>(zero))));
      // Each lane's activation scale: its block's, 0 for lanes past the row.
      const __m512i first = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(s * sw)), lane_at);
      const __mmask16 inside = _mm512_cmplt_epi32_mask(first, _mm512_set1_epi32(static_cast<int32_t>(d.k)));
      const __m512i block = _mm512_srlv_epi32(first, _mm512_set1_epi32(block_shift));
      _mm512_storeu_ps(step + sw + 64, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), inside, block, scale.data(), 4));
    }
  }
  return true;
}

}  // namespace
}  // namespace int8

bool Int8Prepare(const Dims& d, const float* x, uint8_t* prepared) {
  if (!CpuHasAvx512Vnni() || d.k >= (int64_t{1} << 30)) return Int8PrepareReference(d, x, prepared);
  return d.bits == 4 ? int8::PrepareRows<4>(d, x, prepared) : int8::PrepareRows<8>(d, x, prepared);
}

void Int8Rows(const Dims& d, const uint8_t* prepared, const uint8_t* packed, const float* scales, const float* zeros,
              float* y, int64_t n0, int64_t n1) {
  if (d.bits == 4)
    zeros ? int8::RowsOf<4, true>(d, prepared, packed, scales, zeros, y, n0, n1)
          : int8::RowsOf<4, false>(d, prepared, packed, scales, zeros, y, n0, n1);
  else
    zeros ? int8::RowsOf<8, true>(d, prepared, packed, scales, zeros, y, n0, n1)
          : int8::RowsOf<8, false>(d, prepared, packed, scales, zeros, y, n0, n1);
}

#undef XONNX_INT8_AVX512
#pragma GCC diagnostic pop
#else
bool Int8Prepare(const Dims& d, const float* x, uint8_t* prepared) { return Int8PrepareReference(d, x, prepared); }
void Int8Rows(const Dims&, const uint8_t*, const uint8_t*, const float*, const float*, float*, int64_t, int64_t) {}
#endif

}  // namespace xonnx::cpu::packed_dot
