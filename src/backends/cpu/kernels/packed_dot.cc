// Products by 4- and 8-bit block-quantized weights (MatMulNBits) read as
// they are stored. A decoder's step multiplies a few rows by every weight
// once, so it is bound by the bytes it reads: 4-bit weights are an eighth
// of f32 ones, but only if nothing unpacks them to floats in memory first.
// This kernel dequantizes each block in registers: for 4 bits, the 16
// values (i - zero) * scale a block's nibbles can take are one vector, and
// a permute by the nibbles gives the weights (exactly the values the
// program's own dequantization computes); 8-bit weights convert and scale
// in registers. The activation's rows are multiplied against each weight
// row in 16 lanes and summed at the end.
#include "backends/cpu/kernels/packed_dot.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/runtime/thunks.h"

namespace xonnx::cpu {
// A namespace of its own: the unity build compiles the kernels together.
namespace packed_dot {
namespace {

// Weights per chunk of 16 bytes: the unit the vector kernel reads.
constexpr int64_t ChunkWeights(int bits) { return bits == 4 ? 32 : 16; }
// Rows from which the product is oneDNN's GEMM on weights dequantized to
// f32, kPanel weight rows at a time (a prompt's product: the vector
// kernel spends a few instructions per weight on unpacking, which the
// GEMM's reuse of each weight over many rows does not have to).
constexpr int64_t kGemmRows = 32;
constexpr int64_t kPanel = 256;

// The portable kernel: every weight dequantized as the program would,
// (q - zero) * scale, and multiplied in order.
void RowsPortable(const Dims& d, const float* x, const uint8_t* packed, const float* scales, const float* zeros,
                  float* y, int64_t n0, int64_t n1) {
  for (int64_t j = n0; j < n1; ++j) {
    const uint8_t* p = packed + j * d.row_bytes;
    for (int64_t r = 0; r < d.rows; ++r) {
      float acc = 0;
      for (int64_t i = 0; i < d.k; ++i) {
        int q = d.bits == 8 ? p[i] : (i % 2 ? p[i / 2] >> 4 : p[i / 2] & 15);
        int64_t b = j * d.blocks + i / d.block;
        float w = (static_cast<float>(q) - (d.zeros ? zeros[b] : d.zero)) * scales[b];
        acc += x[r * d.k + i] * w;
      }
      y[r * d.n + j] = acc;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 warns that the "undefined" vectors its own AVX-512 intrinsics
// pass as unused operands are uninitialized (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The activation rows for the vector kernel, padded with zeros to whole
// chunks, in tiles of TileRows rows: a tile holds chunk 0 of its rows,
// then chunk 1, and so on, so that the kernel reads a chunk's rows at
// fixed offsets from one address. For 4 bits, each chunk's 32 values are
// reordered evens first, then odds, the order of its low and high nibbles.
// Tiles of kRowTile rows, or of all the rows when there are fewer: a
// decode step's one row is then contiguous (11 KB for K = 2816) and stays
// in L1 while each weight row reads it, where slots for 8 rows spread it
// over 88 KB that came from L2 for every weight row.
int64_t TileRows(const Dims& d) { return std::min(kRowTile, d.rows); }
size_t PreparedSize(const Dims& d) {
  const int64_t tile = TileRows(d);
  return (d.rows + tile - 1) / tile * tile * d.kp;
}
// Each chunk of a row is two masked loads (zeros past K) and, for 4 bits,
// two permutes that gather its evens and its odds; only a last tile's
// missing rows are zeroed. One value at a time, the preparation of a
// 512-wide row was a tenth of its product's time.
XONNX_PACKED_AVX512 void PrepareRows(const Dims& d, const float* x, float* xp) {
  const int64_t cw = ChunkWeights(d.bits), chunks = d.kp / cw, tile = TileRows(d);
  if (d.rows % tile) std::fill(xp, xp + PreparedSize(d), 0.0f);
  const __m512i evens = EvenLanes(), odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
  for (int64_t r = 0; r < d.rows; ++r) {
    const float* from = x + r * d.k;
    float* at = xp + r / tile * tile * d.kp + r % tile * cw;
    for (int64_t c = 0; c < chunks; ++c) {
      float* to = at + c * tile * cw;
      const int64_t first = c * cw, left = d.k - first;
      const __m512 v0 = _mm512_maskz_loadu_ps(FirstLanes(left), from + first);
      if (d.bits == 4) {
        const __m512 v1 = _mm512_maskz_loadu_ps(FirstLanes(left - 16), from + first + 16);
        _mm512_storeu_ps(to, _mm512_permutex2var_ps(v0, evens, v1));
        _mm512_storeu_ps(to + 16, _mm512_permutex2var_ps(v0, odds, v1));
      } else {
        _mm512_storeu_ps(to, v0);
      }
    }
  }
}

// One chunk's weights for rows [0, R): w_lo and w_hi in lanes l hold
// weights 2l and 2l + 1 of the chunk (4 bits) or w_lo weight l (8 bits).
// `x`: the chunk's rows in its tile.
template <int R, int kBits>
XONNX_PACKED_AVX512 inline void Accumulate(__m512 w_lo, __m512 w_hi, const float* x, __m512* lo, __m512* hi) {
  constexpr int64_t cw = ChunkWeights(kBits);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    lo[r] = _mm512_fmadd_ps(w_lo, _mm512_loadu_ps(x + r * cw), lo[r]);
    if constexpr (kBits == 4) hi[r] = _mm512_fmadd_ps(w_hi, _mm512_loadu_ps(x + r * cw + 16), hi[r]);
  }
}

// The chunk's weights, masked to the lanes before K and to the bytes the
// row has (a last block of 16 4-bit weights is half a chunk): the slow
// path of a row's last chunk, and of blocks of 16 4-bit weights, whose
// chunk spans two blocks (lanes 0-7 and 8-15).
template <int kBits>
XONNX_PACKED_AVX512 void ChunkWeightsMasked(const Dims& d, const uint8_t* p, const float* sc, const float* zr,
                                            int64_t c, __m512* w_lo, __m512* w_hi) {
  const int64_t cw = ChunkWeights(kBits), first = c * cw, left = d.k - first;
  // Low nibbles are the even weights, high ones the odd.
  const __mmask16 m_lo = FirstLanes(kBits == 4 ? (left + 1) / 2 : left), m_hi = FirstLanes(left / 2);
  const int64_t bytes_left = d.row_bytes - c * 16;
  __m128i raw = bytes_left >= 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + c * 16))
                                 : _mm_maskz_loadu_epi8(FirstLanes(bytes_left), p + c * 16);
  __m512i v = _mm512_cvtepu8_epi32(raw);
  const int64_t b0 = first / d.block, b1 = std::min((first + cw - 1) / d.block, d.blocks - 1);
  // Per lane, the block's zero point and scale (two blocks: lanes 8-15 the second).
  auto lanes = [&](const float* v0, const float* v1) XONNX_PACKED_AVX512 {
    return _mm512_mask_blend_ps(static_cast<__mmask16>(0xFF00), _mm512_set1_ps(*v0), _mm512_set1_ps(*v1));
  };
  __m512 s = lanes(sc + b0, sc + b1);
  __m512 z = zr ? lanes(zr + b0, zr + b1) : _mm512_set1_ps(d.zero);
  auto dequantize = [&](__m512i q, __mmask16 m) XONNX_PACKED_AVX512 {
    return _mm512_maskz_mul_ps(m, _mm512_sub_ps(_mm512_cvtepi32_ps(q), z), s);
  };
  if constexpr (kBits == 4) {
    *w_lo = dequantize(_mm512_and_si512(v, _mm512_set1_epi32(15)), m_lo);
    *w_hi = dequantize(_mm512_srli_epi32(v, 4), m_hi);
  } else {
    *w_lo = dequantize(v, m_lo);
    *w_hi = _mm512_setzero_ps();
  }
}

// Chunk c's weights on the fast path (blocks of at least a chunk, and K
// past the chunk's end): for 4 bits, the 16 values a block's nibbles stand
// for, (i - zero) * scale, are one vector, and the weights are two
// permutes of it by the nibbles; 8-bit weights convert, subtract and
// scale. `iota_less_zero`: 0..15 less the zero point shared by all blocks.
template <int kBits, bool kZeros>
XONNX_PACKED_AVX512 inline void ChunkWeightsFast(const Dims& d, const uint8_t* p, const float* sc, const float* zr,
                                                 int64_t c, __m512 iota_less_zero, __m512* w_lo, __m512* w_hi) {
  const int64_t b = c >> d.shift;
  __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + c * 16)));
  const __m512 s = _mm512_set1_ps(sc[b]);
  if constexpr (kBits == 4) {
    const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 table = _mm512_mul_ps(kZeros ? _mm512_sub_ps(iota, _mm512_set1_ps(zr[b])) : iota_less_zero, s);
    *w_lo = _mm512_permutexvar_ps(v, table);
    *w_hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table);
  } else {
    const __m512 z = _mm512_set1_ps(kZeros ? zr[b] : d.zero);
    *w_lo = *w_hi = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(v), z), s);
  }
}

// 0..15 less the zero point all blocks share (ChunkWeightsFast).
XONNX_PACKED_AVX512 inline __m512 IotaLessZero(const Dims& d) {
  return _mm512_sub_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_ps(d.zero));
}

// Rows [r0, r0 + R) against weight row j. Blocks of at least a chunk
// (and every 8-bit one) run the fast path: for 4 bits, the 16 values a
// block's nibbles stand for, (i - zero) * scale, are one vector, and a
// chunk's weights are two permutes of it by the nibbles; 8-bit weights
// convert, subtract and scale. Even and odd lanes keep sums of their own,
// and with one or two rows, alternate chunks too: a row's additions are
// then two or four chains instead of one waiting on each other.
template <int R, int kBits, bool kZeros>
XONNX_PACKED_AVX512 void Column(const Dims& d, const float* xp, const uint8_t* p, const float* sc, const float* zr,
                                __m512* sums, int64_t r0) {
  constexpr int64_t cw = ChunkWeights(kBits);
  constexpr int kSets = R <= 2 ? 2 : 1;
  const int64_t chunks = (d.k + cw - 1) / cw;
  __m512 lo[kSets][R], hi[kSets][R];
  for (int k = 0; k < kSets; ++k)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) lo[k][r] = hi[k][r] = _mm512_setzero_ps();
  const float* x = xp + r0 * d.kp;  // r0's tile (r0 is a multiple of kRowTile)
  const int64_t tile = TileRows(d);
  int64_t c = 0;
  if (d.block >= cw) {
    const __m512 iota_less_zero = IotaLessZero(d);
    auto step = [&](int64_t c, __m512 * l, __m512 * h) XONNX_PACKED_AVX512 __attribute__((always_inline)) {
      // The weights kPrefetchBytes on (the next rows', past this row's end):
      // a decode step streams them from memory once.
      _mm_prefetch(reinterpret_cast<const char*>(p + c * 16 + kPrefetchBytes), _MM_HINT_T0);
      __m512 w_lo, w_hi;
      ChunkWeightsFast<kBits, kZeros>(d, p, sc, zr, c, iota_less_zero, &w_lo, &w_hi);
      Accumulate<R, kBits>(w_lo, w_hi, x + c * tile * cw, l, h);
    };
    // Every chunk but a last one that ends past K or past the row's bytes.
    const int64_t whole = d.k % cw == 0 && d.row_bytes >= chunks * 16 ? chunks : chunks - 1;
    if constexpr (kSets == 2)
      for (; c + 2 <= whole; c += 2) {
        step(c, lo[0], hi[0]);
        step(c + 1, lo[kSets - 1], hi[kSets - 1]);
      }
    for (; c < whole; ++c) step(c, lo[0], hi[0]);
  }
  for (; c < chunks; ++c) {
    __m512 w_lo, w_hi;
    ChunkWeightsMasked<kBits>(d, p, sc, zr, c, &w_lo, &w_hi);
    Accumulate<R, kBits>(w_lo, w_hi, x + c * tile * cw, lo[0], hi[0]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    __m512 sum = _mm512_add_ps(lo[0][r], hi[0][r]);
    if constexpr (kSets == 2) sum = _mm512_add_ps(sum, _mm512_add_ps(lo[kSets - 1][r], hi[kSets - 1][r]));
    sums[r * kGroup] = sum;
  }
}

// Weight rows j to j + 3 (`p`: row j's bytes; `sc`, `zr`: its scales and
// zero points, or null) against a single activation row (a decode step at
// batch 1), the four rows' sums to sums[0..3]: each chunk of the
// activation is loaded once for the four, and a call covers four rows,
// where a 512-wide row (16 chunks) spent as long in its call as in its
// chunks.
template <int kBits, bool kZeros>
XONNX_PACKED_AVX512 void Quad(const Dims& d, const float* x, const uint8_t* p, const float* sc, const float* zr,
                              __m512* sums) {
  constexpr int64_t cw = ChunkWeights(kBits);
  const int64_t chunks = (d.k + cw - 1) / cw;
  // Chunks on the fast path: blocks of at least a chunk, and every chunk
  // but a last one that ends past K or past the row's bytes.
  const int64_t whole = d.block < cw ? 0 : d.k % cw == 0 && d.row_bytes >= chunks * 16 ? chunks : chunks - 1;
  const __m512 iota_less_zero = IotaLessZero(d);
  __m512 lo[4], hi[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) lo[q] = hi[q] = _mm512_setzero_ps();
  for (int64_t c = 0; c < chunks; ++c) {
    const __m512 x_lo = _mm512_loadu_ps(x + c * cw);
    const __m512 x_hi = kBits == 4 ? _mm512_loadu_ps(x + c * cw + 16) : x_lo;
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const uint8_t* pq = p + q * d.row_bytes;
      const float* zq = zr ? zr + q * d.blocks : nullptr;
      __m512 w_lo, w_hi;
      if (c < whole) {
        _mm_prefetch(reinterpret_cast<const char*>(pq + c * 16 + kPrefetchBytes), _MM_HINT_T0);
        ChunkWeightsFast<kBits, kZeros>(d, pq, sc + q * d.blocks, zq, c, iota_less_zero, &w_lo, &w_hi);
      } else {
        ChunkWeightsMasked<kBits>(d, pq, sc + q * d.blocks, zq, c, &w_lo, &w_hi);
      }
      lo[q] = _mm512_fmadd_ps(w_lo, x_lo, lo[q]);
      if constexpr (kBits == 4) hi[q] = _mm512_fmadd_ps(w_hi, x_hi, hi[q]);
    }
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) sums[q] = _mm512_add_ps(lo[q], hi[q]);
}

// One activation row against weight rows [n0, n1): Quad's groups of four,
// then Column's rows one at a time, 16 rows' sums reduced together.
template <int kBits, bool kZeros>
XONNX_PACKED_AVX512 void OneRow(const Dims& d, const float* xp, const uint8_t* packed, const float* scales,
                                const float* zeros, float* y, int64_t n0, int64_t n1) {
  __m512 sums[kGroup];
  for (int64_t g = n0; g < n1; g += kGroup) {
    const int64_t count = std::min(kGroup, n1 - g);
    int64_t i = 0;
    for (; i + 4 <= count; i += 4)
      Quad<kBits, kZeros>(d, xp, packed + (g + i) * d.row_bytes, scales + (g + i) * d.blocks,
                          zeros ? zeros + (g + i) * d.blocks : nullptr, sums + i);
    for (; i < count; ++i)
      Column<1, kBits, kZeros>(d, xp, packed + (g + i) * d.row_bytes, scales + (g + i) * d.blocks,
                               zeros ? zeros + (g + i) * d.blocks : nullptr, sums + i, 0);
    for (; i < kGroup; ++i) sums[i] = _mm512_setzero_ps();
    float reduced[kGroup];
    Reduce16(sums, reduced);
    std::memcpy(y + g, reduced, count * sizeof(float));
  }
}

// Weight rows [n0, n1) for every row of the activation.
template <int kBits, bool kZeros>
XONNX_PACKED_AVX512 void RowsOf(const Dims& d, const float* xp, const uint8_t* packed, const float* scales,
                                const float* zeros, float* y, int64_t n0, int64_t n1) {
  // Column<R> for R rows of a tile, 1 to kRowTile.
  using ColumnFn = void (*)(const Dims&, const float*, const uint8_t*, const float*, const float*, __m512*, int64_t);
  static constexpr ColumnFn kColumns[kRowTile + 1] = {nullptr,
                                                      Column<1, kBits, kZeros>,
                                                      Column<2, kBits, kZeros>,
                                                      Column<3, kBits, kZeros>,
                                                      Column<4, kBits, kZeros>,
                                                      Column<5, kBits, kZeros>,
                                                      Column<6, kBits, kZeros>,
                                                      Column<7, kBits, kZeros>,
                                                      Column<8, kBits, kZeros>};
  if (d.rows == 1) return OneRow<kBits, kZeros>(d, xp, packed, scales, zeros, y, n0, n1);
  ReduceColumns(d, y, n0, n1, [&](int64_t j, int64_t r0, int64_t rows, __m512* out) XONNX_PACKED_AVX512 {
    kColumns[rows](d, xp, packed + j * d.row_bytes, scales + j * d.blocks, zeros ? zeros + j * d.blocks : nullptr, out,
                   r0);
  });
}

// Weight row `p` dequantized to f32 in order: out[0, kp), zeros past K.
template <int kBits, bool kZeros>
XONNX_PACKED_AVX512 void DequantizeRow(const Dims& d, const uint8_t* p, const float* sc, const float* zr, float* out) {
  constexpr int64_t cw = ChunkWeights(kBits);
  const int64_t chunks = d.kp / cw;
  // Lanes of the even weights (first) and the odd ones, back in order.
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512 iota_less_zero = IotaLessZero(d);
  for (int64_t c = 0; c < chunks; ++c) {
    __m512 w_lo, w_hi;
    if (d.block >= cw && (c + 1) * cw <= d.k)
      ChunkWeightsFast<kBits, kZeros>(d, p, sc, zr, c, iota_less_zero, &w_lo, &w_hi);
    else
      ChunkWeightsMasked<kBits>(d, p, sc, kZeros ? zr : nullptr, c, &w_lo, &w_hi);
    if constexpr (kBits == 4) {
      _mm512_storeu_ps(out + c * cw, _mm512_permutex2var_ps(w_lo, first, w_hi));
      _mm512_storeu_ps(out + c * cw + 16, _mm512_permutex2var_ps(w_lo, second, w_hi));
    } else {
      _mm512_storeu_ps(out + c * cw, w_lo);
    }
  }
}

// y = x . W^T by oneDNN's GEMM, W dequantized to f32 panels of about
// kPanel rows.
template <int kBits, bool kZeros>
XONNX_PACKED_AVX512 bool GemmRows(const Dims& d, const float* x, const uint8_t* packed, const float* scales,
                                  const float* zeros, float* y) {
  // Each thread dequantizes its own panels and multiplies by them alone
  // (oneDNN's sgemm runs on the calling thread inside a parallel region):
  // a panel stays in the caches of the core that wrote it, and the threads
  // meet once per product instead of twice per panel. Panels are at most
  // kPanel rows, at least one per thread, and a whole number per thread.
  const int64_t threads = std::max(1, omp_get_max_threads());
  const int64_t panels = ((d.n + kPanel - 1) / kPanel + threads - 1) / threads * threads;
  const int64_t width = ((d.n + panels - 1) / panels + 15) / 16 * 16;
  bool ok = true;
#pragma omp parallel reduction(&& : ok)
  {
    // DequantizeRow writes each row's kp values: panels are not zeroed
    // first (112 panels of 1-3 MB in a 188M model's prompt).
    std::unique_ptr<float[]> own(new float[width * d.kp]);
#pragma omp for schedule(static)
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t n0 = p * width, count = std::min(width, d.n - n0);
      if (count <= 0) continue;
      for (int64_t j = n0; j < n0 + count; ++j)
        DequantizeRow<kBits, kZeros>(d, packed + j * d.row_bytes, scales + j * d.blocks,
                                     zeros ? zeros + j * d.blocks : nullptr, own.get() + (j - n0) * d.kp);
      ok = ok &&
           dnnl_sgemm('N', 'T', d.rows, count, d.k, 1.0f, x, d.k, own.get(), d.kp, 0.0f, y + n0, d.n) == dnnl_success;
    }
  }
  return ok;
}

// False when oneDNN's GEMM fails.
bool GemmAvx512(const Dims& d, const float* x, const uint8_t* packed, const float* scales, const float* zeros,
                float* y) {
  if (d.bits == 4)
    return zeros ? GemmRows<4, true>(d, x, packed, scales, zeros, y)
                 : GemmRows<4, false>(d, x, packed, scales, zeros, y);
  return zeros ? GemmRows<8, true>(d, x, packed, scales, zeros, y) : GemmRows<8, false>(d, x, packed, scales, zeros, y);
}

void RowsAvx512(const Dims& d, const float* xp, const uint8_t* packed, const float* scales, const float* zeros,
                float* y, int64_t n0, int64_t n1) {
  if (d.bits == 4)
    zeros ? RowsOf<4, true>(d, xp, packed, scales, zeros, y, n0, n1)
          : RowsOf<4, false>(d, xp, packed, scales, zeros, y, n0, n1);
  else
    zeros ? RowsOf<8, true>(d, xp, packed, scales, zeros, y, n0, n1)
          : RowsOf<8, false>(d, xp, packed, scales, zeros, y, n0, n1);
}

bool UseAvx512() { return CpuHasAvx512Bw(); }

#pragma GCC diagnostic pop
#else
bool UseAvx512() { return false; }
size_t PreparedSize(const Dims&) { return 0; }
bool GemmAvx512(const Dims&, const float*, const uint8_t*, const float*, const float*, float*) { return false; }
void PrepareRows(const Dims&, const float*, float*) {}
void RowsAvx512(const Dims&, const float*, const uint8_t*, const float*, const float*, float*, int64_t, int64_t) {}
#endif

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// out[i] = the sum of v[i]'s 16 lanes, for 16 vectors at once: pairs,
// then quadruples, are added lane by lane and interleaved, so that 45
// instructions do the work of 16 separate reductions (about 10 each).
XONNX_PACKED_AVX512 void Reduce16(const __m512* v, float* out) {
  __m512 a[8], b[4];
  for (int i = 0; i < 8; ++i)
    a[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; ++i)
    b[i] = _mm512_add_ps(_mm512_shuffle_ps(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  __m512 c0 = _mm512_add_ps(_mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(3, 1, 3, 1)));
  __m512 c1 = _mm512_add_ps(_mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(3, 1, 3, 1)));
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_f32x4(c0, c1, _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm512_shuffle_f32x4(c0, c1, _MM_SHUFFLE(3, 1, 3, 1))));
}

#pragma GCC diagnostic pop
#endif
}  // namespace packed_dot

namespace packed_dot {
namespace {

// Whether the product runs on the interleaved layout: constant 4-bit
// weights and scales (zero points constant or none) by a few f32 rows.
bool Interleaves(const Dims& d, const PackedWeights& w) {
  return UseAvx512() && d.bits == 4 && !d.int8 && d.rows < kGemmRows && w.packed_constant && w.scales_constant &&
         !w.zeros;
}

// How the product prepares its activation where it may share that with
// others (every weight, scale and zero point known when the program is
// made, so that nothing it reads is computed by the program).
Shared SharedPreparation(const Dims& d, const PackedWeights& w) {
  if (Interleaves(d, w)) return Shared::kInterleaved;
  const bool constant = (w.packed_constant || w.packed_values) && w.scales_constant && !w.zeros;
  if (UseAvx512() && d.int8 && d.rows < kGemmRows && constant) return Shared::kInt8;
  return Shared::kNone;
}

// The dims of `dot`'s product: its activation's rows by the weights `w`
// describes.
Dims DimsOf(const hlo::Instruction& dot, const PackedWeights& w) {
  Dims d;
  d.bits = w.bits;
  d.block = w.block;
  d.blocks = w.blocks;
  d.n = w.n;
  d.k = w.k;
  d.rows = dot.operand(0)->shape().ElementCount() / std::max<int64_t>(w.k, 1);
  d.row_bytes = w.blocks * w.block * w.bits / 8;
  const int64_t cw = ChunkWeights(w.bits);
  d.kp = (w.k + cw - 1) / cw * cw;
  d.shift = 0;
  while ((cw << d.shift) < w.block) ++d.shift;
  d.zeros = w.zeros != nullptr || w.zero_values != nullptr;
  d.zero = w.zero;
  d.int8 = w.int8_activations;
  return d;
}

}  // namespace

bool SamePreparation(const Dims& a, const Dims& b) {
  if (a.k != b.k || a.block != b.block || a.blocks != b.blocks || a.rows != b.rows || a.bits != b.bits ||
      a.int8 != b.int8)
    return false;
  // An activation rounded to int8 is laid out for one zero point, or for
  // zero points per block.
  return !a.int8 || (a.zeros == b.zeros && a.zero == b.zero);
}

std::optional<Product> PlanProduct(const hlo::Instruction& dot, const ThunkIo& io, const PackedWeights& w) {
  Product p;
  p.d = DimsOf(dot, w);
  const Dims& d = p.d;
  if (io.inputs.size() != 2u + (w.packed ? 1 : 0) + (w.zeros ? 1 : 0) || io.outputs.size() != 1) return std::nullopt;
  if (!w.packed && (!w.packed_values || w.packed_values->shape().element_type != hlo::U8 ||
                    w.packed_values->element_count() != w.n * d.row_bytes))
    return std::nullopt;
  if (w.zero_values &&
      (w.zero_values->shape().element_type != hlo::F32 || w.zero_values->element_count() != w.n * w.blocks))
    return std::nullopt;
  size_t next = 1;
  p.x = io.inputs[0];
  p.y = io.outputs[0];
  p.packed = w.packed ? io.inputs[next++] : BufferRef{};
  p.scales = io.inputs[next++];
  p.zeros = w.zeros ? io.inputs[next++] : BufferRef{};
  p.zero_values = w.zero_values;
  p.packed_values = w.packed_values;
  p.vector = UseAvx512();
  // Constant 4-bit weights multiplied by an f32 activation: the
  // interleaved layout's kernel for steps (a copy of the weights). Constant
  // zero points are unpacked at planning (zero_values).
  p.shared = SharedPreparation(d, w);
  if (p.shared == Shared::kInterleaved)
    p.interleaved = Interleave(d, w.packed_constant->data<uint8_t>(), w.scales_constant->data<float>(),
                               p.zero_values ? p.zero_values->data<float>() : nullptr);
  return p;
}

Operands OperandsOf(const Product& p, Frame& f) {
  Operands o;
  o.x = static_cast<const float*>(f.Ptr(p.x));
  o.packed = p.packed_values ? p.packed_values->data<uint8_t>() : static_cast<const uint8_t*>(f.Ptr(p.packed));
  o.scales = static_cast<const float*>(f.Ptr(p.scales));
  o.zeros = p.zero_values ? p.zero_values->data<float>()
            : p.d.zeros   ? static_cast<const float*>(f.Ptr(p.zeros))
                          : nullptr;
  o.y = static_cast<float*>(f.Ptr(p.y));
  return o;
}

absl::Status RunProduct(const Product& p, Frame& f) {
  const Dims& d = p.d;
  const auto [x, packed, scales, zeros, y] = OperandsOf(p, f);
  if (d.rows == 0 || d.n == 0) return absl::OkStatus();
  if (d.k == 0) {
    std::fill(y, y + d.rows * d.n, 0.0f);
    return absl::OkStatus();
  }
  if (p.vector && d.rows >= kGemmRows) {
    if (!GemmAvx512(d, x, packed, scales, zeros, y))
      return absl::InternalError("packed-matmul: oneDNN's GEMM failed on the dequantized weights");
    return absl::OkStatus();
  }
  if (p.interleaved) {
    const InterleavedMember one{d, p.interleaved.get(), y};
    if (InterleavedProducts({&one, 1}, x)) return absl::OkStatus();
  }
  std::unique_ptr<float[]> prepared;     // PrepareRows writes every value
  std::unique_ptr<uint8_t[]> quantized;  // Int8Prepare writes every byte
  if (d.int8) {
    quantized.reset(new uint8_t[Int8PreparedSize(d)]);
    if (!Int8Prepare(d, x, quantized.get())) quantized.reset();  // not finite: the f32 kernel
  }
  if (p.vector && !quantized) {
    prepared.reset(new float[PreparedSize(d)]);
    PrepareRows(d, x, prepared.get());
  }
  auto part = [&](int64_t n0, int64_t n1) {
    if (quantized)
      Int8Rows(d, quantized.get(), packed, scales, zeros, y, n0, n1);
    else if (p.vector)
      RowsAvx512(d, prepared.get(), packed, scales, zeros, y, n0, n1);
    else
      RowsPortable(d, x, packed, scales, zeros, y, n0, n1);
  };
  if (d.rows * d.n * d.k < kParallel) {
    part(0, d.n);
    return absl::OkStatus();
  }
  // Weight rows split between the threads in runs of 16.
  const int64_t runs = (d.n + 15) / 16;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < runs; ++g) part(g * 16, std::min(d.n, (g + 1) * 16));
  return absl::OkStatus();
}

}  // namespace packed_dot

int PackedDotSharedPreparation(const hlo::Instruction& dot, const PackedWeights& w) {
  return static_cast<int>(packed_dot::SharedPreparation(packed_dot::DimsOf(dot, w), w));
}

bool PackedDotsSharePreparation(const hlo::Instruction& a, const PackedWeights& wa, const hlo::Instruction& b,
                                const PackedWeights& wb) {
  return packed_dot::SamePreparation(packed_dot::DimsOf(a, wa), packed_dot::DimsOf(b, wb));
}

std::optional<Thunk> MakePackedDotThunk(const hlo::Instruction& dot, const ThunkIo& io, const PackedWeights& w) {
  std::optional<packed_dot::Product> p = packed_dot::PlanProduct(dot, io, w);
  if (!p) return std::nullopt;
  Thunk t;
  t.name = dot.name();
  t.run = [p = *std::move(p)](Frame& f) { return packed_dot::RunProduct(p, f); };
  return t;
}

}  // namespace xonnx::cpu
