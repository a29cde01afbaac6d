// 4-bit block-quantized weights with one zero point for all blocks, laid
// out again when the program is made so that a vector holds 16 weight
// rows. A decode step with an f32 activation is bound by the vector
// instructions that turn nibbles into floats (packed_dot.cc spends 7 per
// 32 weights of a row: widen, shift, two permutes, the block's table
// scaled, two multiply-adds). Here 32-bit lane r of a 64-byte load holds 8
// consecutive weights of row r, as the row stores them: a shift brings
// weight i's nibble to the lane's low bits, one permute of the table
// 0..15 less the zero point gives 16 rows' unscaled weights, and one
// multiply-add by the activation's value (a broadcast load) adds them to
// 16 rows' sums: 23 instructions per 128 weights. Each block's sums are
// scaled once, by the 16 rows' scales of the block (one load), and the
// sums come out as one vector per 16 rows, with no reduction across
// lanes. The product is the same sum as the program's, grouped per block
// as sum(s * sum((q - zero) * x)) instead of sum(((q - zero) * s) * x).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/string_view.h"
#include "backends/cpu/kernels/packed_dot.h"
#include "backends/cpu/kernels/shared_packing.h"

namespace xonnx::cpu::packed_dot {

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 warns that the "undefined" vectors its own AVX-512 intrinsics
// pass as unused operands are uninitialized (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace interleaved {
namespace {

// 32-bit words of packed weights per block: 8 weights each.
int64_t BlockWords(const Dims& d) { return d.block / 8; }

// One call's operands for 16 weight rows: their interleaved codes, scales
// and zero points (or null: the table holds the zero point); the
// activation's rows, `ldx` apart (zeros past K up to the blocks' end), and
// with zero points their sums per block (`blocks` per row); where the 16
// rows' sums of each activation row go (y + r * ldy, `lanes` of them).
struct GroupArgs {
  const uint32_t* codes;
  const float* scales;
  const float* zeros;
  const float* x;
  int64_t ldx;
  const float* x_sums;
  float* y;
  int64_t ldy;
  __mmask16 lanes;
};

// Weight rows [16g, 16g + 16) against activation rows [0, R). With one or
// two activation rows, even and odd weights keep sums of their own, so
// that each block's multiply-adds are two chains instead of one. With zero
// points per block, `table` is 0..15 and each block's sums less zero * the
// block's activation sum are scaled: sum(q * x) - z * sum(x) is
// sum((q - z) * x).
template <int R, bool kZeros>
XONNX_PACKED_AVX512 void Group(const Dims& d, const GroupArgs& a, __m512 table) {
  constexpr int kChains = R <= 2 ? 2 : 1;
  const int64_t words = BlockWords(d);
  __m512 acc[R][kChains];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kChains; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < d.blocks; ++b) {
    const uint32_t* cb = a.codes + b * words * 16;
    const float* xb = a.x + b * d.block;
    __m512 part[R][kChains];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < kChains; ++c) part[r][c] = _mm512_setzero_ps();
    for (int64_t t = 0; t < words; ++t) {
      _mm_prefetch(reinterpret_cast<const char*>(cb + t * 16) + kPrefetchBytes, _MM_HINT_T0);
      const __m512i v = _mm512_load_si512(cb + t * 16);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        // vpermps reads a lane's low 4 bits: no mask is needed.
        const __m512 w = _mm512_permutexvar_ps(i == 0 ? v : _mm512_srli_epi32(v, 4 * i), table);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
          part[r][i % kChains] = _mm512_fmadd_ps(w, _mm512_set1_ps(xb[r * a.ldx + t * 8 + i]), part[r][i % kChains]);
      }
    }
    const __m512 s = _mm512_load_ps(a.scales + b * 16);
    if constexpr (kZeros) {
      const __m512 z = _mm512_load_ps(a.zeros + b * 16);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        __m512 p = part[r][0];
        if constexpr (kChains == 2) p = _mm512_add_ps(p, part[r][kChains - 1]);
        p = _mm512_fnmadd_ps(z, _mm512_set1_ps(a.x_sums[r * d.blocks + b]), p);
        acc[r][0] = _mm512_fmadd_ps(p, s, acc[r][0]);
      }
    } else {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < kChains; ++c) acc[r][c] = _mm512_fmadd_ps(part[r][c], s, acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    __m512 sum = acc[r][0];
    if constexpr (kChains == 2 && !kZeros) sum = _mm512_add_ps(sum, acc[r][kChains - 1]);
    _mm512_mask_storeu_ps(a.y + r * a.ldy, a.lanes, sum);
  }
}

template <bool kZeros>
XONNX_PACKED_AVX512 void Rows(const Dims& d, const Interleaved& w, const float* x, int64_t ldx, const float* x_sums,
                              float* y, int64_t g0, int64_t g1) {
  using GroupFn = void (*)(const Dims&, const GroupArgs&, __m512);
  static constexpr GroupFn kGroups[kRowTile + 1] = {nullptr,          Group<1, kZeros>, Group<2, kZeros>,
                                                    Group<3, kZeros>, Group<4, kZeros>, Group<5, kZeros>,
                                                    Group<6, kZeros>, Group<7, kZeros>, Group<8, kZeros>};
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 table = kZeros ? iota : _mm512_sub_ps(iota, _mm512_set1_ps(d.zero));
  const int64_t words = d.row_bytes / 4;
  for (int64_t g = g0; g < g1; ++g) {
    for (int64_t r = 0; r < d.rows; r += kRowTile) {
      const int64_t rows = std::min(kRowTile, d.rows - r);
      const GroupArgs a{w.codes.get() + g * words * 16,
                        w.scales.get() + g * d.blocks * 16,
                        kZeros ? w.zeros.get() + g * d.blocks * 16 : nullptr,
                        x + r * ldx,
                        ldx,
                        kZeros ? x_sums + r * d.blocks : nullptr,
                        y + r * d.n + g * 16,
                        d.n,
                        FirstLanes(d.n - g * 16)};
      kGroups[rows](d, a, table);
    }
  }
}

// A zeroed 64-byte aligned array of n values: each vector is one cache line.
template <typename T>
std::unique_ptr<T[], Interleaved::Free> Aligned(size_t n) {
  const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, std::max<size_t>(bytes, 64));
  if (p) std::memset(p, 0, bytes);
  return std::unique_ptr<T[], Interleaved::Free>(static_cast<T*>(p));
}

// A new copy of `packed` and `scales` in the interleaved layout.
std::shared_ptr<const Interleaved> InterleaveNew(const Dims& d, const uint8_t* packed, const float* scales,
                                                 const float* zeros) {
  auto out = std::make_shared<Interleaved>();
  out->groups = (d.n + 15) / 16;
  const int64_t words = d.row_bytes / 4;  // whole blocks of at least 16 weights: whole words
  const size_t code_count = static_cast<size_t>(out->groups * words * 16);
  const size_t scale_count = static_cast<size_t>(out->groups * d.blocks * 16);
  // Rows past N keep zero codes and zero scales (their lanes are not stored).
  out->codes = interleaved::Aligned<uint32_t>(code_count);
  out->scales = interleaved::Aligned<float>(scale_count);
  if (zeros) out->zeros = interleaved::Aligned<float>(scale_count);
  if (!out->codes || !out->scales || (zeros && !out->zeros)) return nullptr;
  out->codes_print =
      FingerprintOf(absl::string_view(reinterpret_cast<const char*>(packed), static_cast<size_t>(d.n * d.row_bytes)));
  for (int64_t j = 0; j < d.n; ++j) {
    const int64_t g = j / 16, lane = j % 16;
    const uint8_t* row = packed + j * d.row_bytes;
    uint32_t* to = out->codes.get() + g * words * 16 + lane;
    for (int64_t t = 0; t < words; ++t) std::memcpy(to + t * 16, row + t * 4, 4);
    float* s = out->scales.get() + g * d.blocks * 16 + lane;
    for (int64_t b = 0; b < d.blocks; ++b) s[b * 16] = scales[j * d.blocks + b];
    if (!zeros) continue;
    float* z = out->zeros.get() + g * d.blocks * 16 + lane;
    for (int64_t b = 0; b < d.blocks; ++b) z[b * 16] = zeros[j * d.blocks + b];
  }
  return out;
}

}  // namespace
}  // namespace interleaved

std::shared_ptr<const Interleaved> Interleave(const Dims& d, const uint8_t* packed, const float* scales,
                                              const float* zeros) {
  if (d.bits != 4 || d.zeros != (zeros != nullptr) || d.block < 16 || d.block % 8 != 0) return nullptr;
  // A scale or zero point that is not finite: the program's ((q - z) * s)
  // * x gives NaN where q equals z, the sum scaled after the fact would
  // give an infinity. The other kernel scales first, as the program does.
  if (!std::isfinite(d.zero)) return nullptr;
  for (int64_t i = 0; i < d.n * d.blocks; ++i)
    if (!std::isfinite(scales[i]) || (zeros && !std::isfinite(zeros[i]))) return nullptr;
  // One copy for every program that reads these weights: a decoder's
  // prompt and step programs, and the shapes its load-time check compiles.
  // The programs share the packed bytes' constant but may each have their
  // own copy of the scales and zero points: those are compared by value.
  struct Key {
    const void* packed;
    int64_t n, blocks, block;
    bool operator==(const Key&) const = default;
  };
  auto same_values = [&](const Interleaved& w) {
    if ((w.zeros != nullptr) != (zeros != nullptr)) return false;
    // The bytes at the address too, should anything have rewritten them.
    const Fingerprint128 codes_print =
        FingerprintOf(absl::string_view(reinterpret_cast<const char*>(packed), static_cast<size_t>(d.n * d.row_bytes)));
    if (!(codes_print == w.codes_print)) return false;
    for (int64_t j = 0; j < d.n; ++j)
      for (int64_t b = 0; b < d.blocks; ++b) {
        const int64_t at = (j / 16 * d.blocks + b) * 16 + j % 16;
        if (std::memcmp(&w.scales[at], &scales[j * d.blocks + b], 4) != 0 ||
            (zeros && std::memcmp(&w.zeros[at], &zeros[j * d.blocks + b], 4) != 0))
          return false;
      }
    return true;
  };
  return SharedPacking<const Interleaved>(
      Key{packed, d.n, d.blocks, d.block}, [&] { return interleaved::InterleaveNew(d, packed, scales, zeros); },
      same_values);
}

namespace interleaved {

// Blocks are whole vectors (16 or more, a power of two: the planner's).
template <bool kSums>
XONNX_PACKED_AVX512 bool Scan(const Dims& d, const float* x, float bound, float* sums) {
  const __m512 limit = _mm512_set1_ps(bound);
  const __m512 magnitude = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const int64_t width = d.blocks * d.block;
  for (int64_t r = 0; r < d.rows; ++r) {
    __mmask16 out = 0;  // lanes above the bound, or NaN (unordered)
    for (int64_t b = 0; b < d.blocks; ++b) {
      const float* p = x + r * width + b * d.block;
      __m512 s = _mm512_setzero_ps();
      for (int64_t i = 0; i < d.block; i += 16) {
        const __m512 v = _mm512_loadu_ps(p + i);
        out |= _mm512_cmp_ps_mask(_mm512_and_ps(v, magnitude), limit, _CMP_NLE_UQ);
        if (kSums) s = _mm512_add_ps(s, v);
      }
      if (kSums) sums[r * d.blocks + b] = _mm512_reduce_add_ps(s);
    }
    if (out) return false;
  }
  return true;
}

}  // namespace interleaved

bool ScanActivation(const Dims& d, const float* x, float bound, float* sums) {
  return sums ? interleaved::Scan<true>(d, x, bound, sums) : interleaved::Scan<false>(d, x, bound, sums);
}

void InterleavedRows(const Dims& d, const Interleaved& w, const float* x, int64_t ldx, const float* x_sums, float* y,
                     int64_t g0, int64_t g1) {
  if (w.zeros)
    interleaved::Rows<true>(d, w, x, ldx, x_sums, y, g0, g1);
  else
    interleaved::Rows<false>(d, w, x, ldx, x_sums, y, g0, g1);
}

#pragma GCC diagnostic pop
#else
std::shared_ptr<const Interleaved> Interleave(const Dims&, const uint8_t*, const float*, const float*) {
  return nullptr;
}
void InterleavedRows(const Dims&, const Interleaved&, const float*, int64_t, const float*, float*, int64_t, int64_t) {}
bool ScanActivation(const Dims&, const float*, float, float*) { return false; }
#endif

}  // namespace xonnx::cpu::packed_dot
