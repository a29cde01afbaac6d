// Native data-movement kernels: transpose (tiled, with AVX2 8x8 blocks),
// slice and broadcast, each a strided copy of collapsed dims. The factory
// returns nullopt for forms it does not cover; the compiler then uses the
// reference kernel.
#include <algorithm>
#include <cstring>
#include <numeric>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/strided_loops.h"
#include "backends/cpu/runtime/thunks.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Copies elements of width W along `dims` reading through `src_strides`
// (elements), writing densely; parallel over the outer index.
template <typename W>
void StridedCopy(const W* src, W* dst, const std::vector<int64_t>& dims, const std::vector<int64_t>& src_strides,
                 int64_t base) {
  int64_t r = dims.size();
  int64_t inner = r ? dims.back() : 1;
  int64_t inner_stride = r ? src_strides.back() : 0;
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < r; ++d) rows *= dims[d];
#pragma omp parallel for if (rows * inner > 65536) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t off = base, rem = row;
    for (int64_t d = r - 2; d >= 0; --d) {
      off += (rem % dims[d]) * src_strides[d];
      rem /= dims[d];
    }
    W* out = dst + row * inner;
    const W* in = src + off;
    if (inner_stride == 1) {
      std::memcpy(out, in, inner * sizeof(W));
    } else {
      for (int64_t i = 0; i < inner; ++i) out[i] = in[i * inner_stride];
    }
  }
}

// Merges output dims that are also adjacent, in order, in the source
// (stride of d = stride of d+1 times size of d+1) and drops size-1 dims, so
// that a channels-first to channels-last transpose becomes the 2-D
// transpose it is.
void CollapseDims(std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  std::vector<int64_t> d2, s2;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!d2.empty() && s2.back() == strides[d] * dims[d]) {
      d2.back() *= dims[d];
      s2.back() = strides[d];
    } else {
      d2.push_back(dims[d]);
      s2.push_back(strides[d]);
    }
  }
  if (d2.empty()) d2 = {1}, s2 = {1};
  dims = std::move(d2);
  strides = std::move(s2);
}

#if defined(__x86_64__) && defined(__GNUC__)
// out[j * out_stride + k] = in[k * in_stride + j] for an 8 x 8 block of
// 4-byte elements, in registers: eight loads of eight, three rounds of
// unpacks and shuffles, eight stores. About six times faster than the
// element loop, which reads each of 8 source rows one element at a time.
__attribute__((target("avx2"))) void Transpose8x8(const float* in, int64_t in_stride, float* out, int64_t out_stride) {
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(in + k * in_stride);
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    r[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
    r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
    r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
    r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(out + k * out_stride, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
    _mm256_storeu_ps(out + (k + 4) * out_stride, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
  }
}

__attribute__((target("avx2"))) inline __m256 Permute(__m256 v, int i0, int i1, int i2, int i3, int i4, int i5, int i6,
                                                      int i7) {
  return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(i0, i1, i2, i3, i4, i5, i6, i7));
}

// out[3 * j + k] = in[k * in_stride + j] for j < 8, k < 3: eight pixels of
// a 3-channel image from channels-first to channels-last (every vision
// model's first transpose), each output vector gathered from the three
// planes by a permute per plane and two blends.
__attribute__((target("avx2"))) void Interleave3x8(const float* in, int64_t in_stride, float* out) {
  const __m256 a = _mm256_loadu_ps(in), b = _mm256_loadu_ps(in + in_stride), c = _mm256_loadu_ps(in + 2 * in_stride);
  // Positions 1, 4, 7 (0x92) and 2, 5 (0x24) of each output.
  __m256 o0 = _mm256_blend_ps(Permute(a, 0, 0, 0, 1, 0, 0, 2, 0), Permute(b, 0, 0, 0, 0, 1, 0, 0, 2), 0x92);
  o0 = _mm256_blend_ps(o0, Permute(c, 0, 0, 0, 0, 0, 1, 0, 0), 0x24);
  __m256 o1 = _mm256_blend_ps(Permute(c, 2, 0, 0, 3, 0, 0, 4, 0), Permute(a, 0, 3, 0, 0, 4, 0, 0, 5), 0x92);
  o1 = _mm256_blend_ps(o1, Permute(b, 0, 0, 3, 0, 0, 4, 0, 0), 0x24);
  __m256 o2 = _mm256_blend_ps(Permute(b, 5, 0, 0, 6, 0, 0, 7, 0), Permute(c, 0, 5, 0, 0, 6, 0, 0, 7), 0x92);
  o2 = _mm256_blend_ps(o2, Permute(a, 0, 0, 6, 0, 0, 7, 0, 0), 0x24);
  _mm256_storeu_ps(out, o0);
  _mm256_storeu_ps(out + 8, o1);
  _mm256_storeu_ps(out + 16, o2);
}

#else
void Transpose8x8(const float*, int64_t, float*, int64_t) {}
void Interleave3x8(const float*, int64_t, float*) {}
#endif

// dst[o][r][c] = src[off(o) + c * sc + r] for an output of [outer..., rows,
// cols], off(o) the outer dims' index times their source strides: the
// source is read along its contiguous rows dim, in tiles that keep the
// written lines in cache, instead of gathering each output row element by
// element from far apart. Any number of outer dims (a pixel shuffle's
// 6-D transpose keeps three after merging).
// The work is split in items of a row tile by a run of columns, so that a
// transpose with few rows (channels-last to channels-first with 27
// channels: one row tile) still spreads over the threads.
// The rows dim need not be next to the columns in the output: `rs` is
// its output stride and `outer_out_strides` the outer dims' (a transpose
// that reverses [C, H, W] to [W, H, C] keeps H between them).
template <typename W>
void TiledTranspose(const W* src, W* dst, const std::vector<int64_t>& outer_dims,
                    const std::vector<int64_t>& outer_strides, const std::vector<int64_t>& outer_out_strides,
                    int64_t rows, int64_t cols, int64_t sc, int64_t rs) {
  constexpr int64_t kTileRows = 64, kTileCols = 16, kItemCols = 1024;
  int64_t rt = (rows + kTileRows - 1) / kTileRows, ct = (cols + kItemCols - 1) / kItemCols, outer = 1;
  for (int64_t d : outer_dims) outer *= d;
  int64_t rank = outer_dims.size();
#pragma omp parallel for if (outer * rows * cols > 65536) schedule(static)
  for (int64_t item = 0; item < outer * rt * ct; ++item) {
    int64_t o = item / (rt * ct), tile = item % (rt * ct);
    int64_t r0 = tile / ct * kTileRows, r1 = std::min(rows, r0 + kTileRows);
    int64_t first = tile % ct * kItemCols, last = std::min(cols, first + kItemCols);
    int64_t off = 0, out_off = 0;
    for (int64_t d = rank - 1, rem = o; d >= 0; --d) {
      off += rem % outer_dims[d] * outer_strides[d];
      out_off += rem % outer_dims[d] * outer_out_strides[d];
      rem /= outer_dims[d];
    }
    const W* in = src + off;
    W* out = dst + out_off;
    for (int64_t c0 = first; c0 < last; c0 += kTileCols) {
      int64_t c1 = std::min(last, c0 + kTileCols);
      if (sizeof(W) == 4 && CpuHasAvx2() && cols == 3 && rs == 3 && r1 - r0 >= 8) {
        int64_t r = r0;
        for (; r + 8 <= r1; r += 8)
          Interleave3x8(reinterpret_cast<const float*>(in + r), sc, reinterpret_cast<float*>(out + r * 3));
        for (; r < r1; ++r)
          for (int64_t c = 0; c < 3; ++c) out[r * 3 + c] = in[c * sc + r];
        continue;
      }
      if (sizeof(W) == 4 && CpuHasAvx2() && c1 - c0 == kTileCols && r1 - r0 >= 8) {
        // Whole 8 x 8 blocks in registers; the rows past the last block
        // by the element loop.
        int64_t r = r0;
        for (; r + 8 <= r1; r += 8)
          for (int64_t c = c0; c < c1; c += 8)
            Transpose8x8(reinterpret_cast<const float*>(in + c * sc + r), sc,
                         reinterpret_cast<float*>(out + r * rs + c), rs);
        for (; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) out[r * rs + c] = in[c * sc + r];
        continue;
      }
      // Row by row: each output row's part of the tile is one cache line
      // written at once. (Column by column wrote a line in each of the
      // rows in turn, and rows 2^k bytes apart all fall in one cache set.)
      // Rows narrower than a tile (an image's 3 channels) are written
      // column by column, reading the source's rows in order.
      if (cols >= kTileCols) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) out[r * rs + c] = in[c * sc + r];
      } else {
        for (int64_t c = c0; c < c1; ++c)
          for (int64_t r = r0; r < r1; ++r) out[r * rs + c] = in[c * sc + r];
      }
    }
  }
}

}  // namespace

std::optional<Thunk> MakeFastMoveThunk(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  if (!os.IsArray() || os.ElementCount() == 0) return std::nullopt;
  const hlo::Shape& xs = in.operand(0)->shape();
  std::vector<int64_t> xst = xs.Strides(), strides(os.rank(), 0);
  int64_t base = 0;
  switch (in.opcode()) {
    case Opcode::kTranspose:
      for (int64_t d = 0; d < os.rank(); ++d) strides[d] = xst[in.dimensions[d]];
      break;
    case Opcode::kSlice:
      for (int64_t d = 0; d < os.rank(); ++d) {
        strides[d] = xst[d] * in.slice_strides[d];
        base += xst[d] * in.slice_starts[d];
      }
      break;
    case Opcode::kBroadcast:
      for (size_t k = 0; k < in.dimensions.size(); ++k) strides[in.dimensions[k]] = xst[k];
      break;
    default:
      return std::nullopt;
  }
  if (os.rank() == 0) return std::nullopt;
  std::vector<int64_t> dims = os.dims;
  CollapseDims(dims, strides);
  BufferRef x = io.inputs[0], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  int64_t r = dims.size();
  // A transpose that makes the source's contiguous dim an outer one (the
  // rows) and reads the innermost (the columns) far apart: tile it, the
  // dims between them and before looped over.
  int64_t row_dim = -1;
  for (int64_t d = 0; d + 1 < r; ++d)
    if (strides[d] == 1) row_dim = d;
  bool tiled = row_dim >= 0 && strides[r - 1] != 1;
  bool ok = DispatchWidth(hlo::ByteWidth(os.element_type), [&](auto tag) {
    using W = typename decltype(tag)::type;
    if (tiled) {
      std::vector<int64_t> out_strides = hlo::Shape(os.element_type, dims).Strides();
      std::vector<int64_t> outer_dims, outer_strides, outer_out_strides;
      for (int64_t d = 0; d + 1 < r; ++d) {
        if (d == row_dim) continue;
        outer_dims.push_back(dims[d]);
        outer_strides.push_back(strides[d]);
        outer_out_strides.push_back(out_strides[d]);
      }
      int64_t rows = dims[row_dim], cols = dims[r - 1], sc = strides[r - 1], rs = out_strides[row_dim];
      t.run = [=](Frame& f) -> absl::Status {
        TiledTranspose<W>(static_cast<const W*>(f.Ptr(x)) + base, static_cast<W*>(f.Ptr(out)), outer_dims,
                          outer_strides, outer_out_strides, rows, cols, sc, rs);
        return absl::OkStatus();
      };
      return;
    }
    t.run = [=](Frame& f) -> absl::Status {
      StridedCopy<W>(static_cast<const W*>(f.Ptr(x)), static_cast<W*>(f.Ptr(out)), dims, strides, base);
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
  return t;
}

}  // namespace xonnx::cpu
