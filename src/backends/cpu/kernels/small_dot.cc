// Products of a few rows per batch by a matrix known only at run time: a
// decoder step's attention, where each head multiplies one new token's
// query by the cached keys (Q . K^T, keys stored [slots, head_dim]) and
// its probabilities by the cached values (P . V). oneDNN's matmul paid
// about 5 us per call of fixed cost there, where a product by one new slot
// takes 1-2 us, and read keys stored [slots, head_dim] at about 9 GB/s.
// This kernel reads each operand once, in place through any strides, and
// splits the columns between the threads when the product is large.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/packed_dot.h"
#include "backends/cpu/runtime/thunks.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace xonnx::cpu {

// Named, not anonymous: the unity build puts this file beside other
// kernels' helpers.
namespace small_dot {

using packed_dot::kPrefetchBytes;     // how far ahead the kernels prefetch B
constexpr int64_t kColumnBlock = 64;  // columns per task: four vectors of 16
// Multiply-adds from which both threads share a call: 64K (256 KB of an
// operand), a 4-head step over 256 slots of 64.
constexpr int64_t kParallelMacs = 1 << 16;

// Where the elements of both operands are, in elements from their
// buffers' starts: A(i, kk) at a + i * a_row + kk * a_k for the batch's a,
// B(kk, j) at b + kk * b_k + j * b_col. The result is row-major [batch, m, n].
struct Geometry {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> batch_dims, a_batch, b_batch;  // the batch dims and their strides in each operand
  int64_t a_off = 0, b_off = 0;
  int64_t a_row = 0, a_k = 0, b_k = 0, b_col = 0;
};

// The origins of flat batch `t` in each operand.
void BatchOrigins(const Geometry& g, int64_t t, int64_t* a, int64_t* b) {
  *a = g.a_off;
  *b = g.b_off;
  for (int64_t d = static_cast<int64_t>(g.batch_dims.size()) - 1; d >= 0; --d) {
    const int64_t i = t % g.batch_dims[d];
    t /= g.batch_dims[d];
    *a += i * g.a_batch[d];
    *b += i * g.b_batch[d];
  }
}

// y[i, j] for every row i and the columns [j0, j1) of one batch; `scratch`
// holds m * k floats for the kernels that want A's rows contiguous.
using Block = void (*)(const Geometry& g, const float* a, const float* b, float* y, int64_t j0, int64_t j1,
                       float* scratch);

void BlockPortable(const Geometry& g, const float* a, const float* b, float* y, int64_t j0, int64_t j1, float*) {
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = j0; j < j1; ++j) {
      float acc = 0;
      for (int64_t kk = 0; kk < g.k; ++kk) acc += a[i * g.a_row + kk * g.a_k] * b[kk * g.b_k + j * g.b_col];
      y[i * g.n + j] = acc;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
// B's rows along k contiguous (keys stored [slots, head_dim]): each output
// is a dot product of two contiguous runs, kept as a vector of partial
// sums, C columns at a time so that their chains are independent; a group
// of 16 columns' vectors is reduced across lanes at once (Reduce16).
template <int M, int C>
XONNX_PACKED_AVX512 void DotColumns(const float* const* rows, const float* b, int64_t b_col, int64_t k,
                                    __m512 (*sums)[16], int c0) {
  __m512 acc[M][C];
  for (int i = 0; i < M; ++i)
    for (int c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16) {
    __m512 x[M];
    for (int i = 0; i < M; ++i) x[i] = _mm512_loadu_ps(rows[i] + kk);
    for (int c = 0; c < C; ++c) {
      _mm_prefetch(reinterpret_cast<const char*>(b + c * b_col + kk) + kPrefetchBytes, _MM_HINT_T0);
      const __m512 w = _mm512_loadu_ps(b + c * b_col + kk);
      for (int i = 0; i < M; ++i) acc[i][c] = _mm512_fmadd_ps(x[i], w, acc[i][c]);
    }
  }
  if (kk < k) {
    const __mmask16 tail = packed_dot::FirstLanes(k - kk);
    __m512 x[M];
    for (int i = 0; i < M; ++i) x[i] = _mm512_maskz_loadu_ps(tail, rows[i] + kk);
    for (int c = 0; c < C; ++c) {
      const __m512 w = _mm512_maskz_loadu_ps(tail, b + c * b_col + kk);
      for (int i = 0; i < M; ++i) acc[i][c] = _mm512_fmadd_ps(x[i], w, acc[i][c]);
    }
  }
  for (int i = 0; i < M; ++i)
    for (int c = 0; c < C; ++c) sums[i][c0 + c] = acc[i][c];
}

template <int M>
XONNX_PACKED_AVX512 void DotsAvx512(const Geometry& g, const float* a, const float* b, float* y, int64_t j0, int64_t j1,
                                    float* scratch) {
  const float* rows[M];
  for (int i = 0; i < M; ++i) {
    if (g.a_k == 1) {
      rows[i] = a + i * g.a_row;
      continue;
    }
    float* r = scratch + i * g.k;
    for (int64_t kk = 0; kk < g.k; ++kk) r[kk] = a[i * g.a_row + kk * g.a_k];
    rows[i] = r;
  }
  __m512 sums[M][16];
  for (int64_t j = j0; j < j1; j += 16) {
    const int count = static_cast<int>(std::min<int64_t>(16, j1 - j));
    int c = 0;
    for (; c + 4 <= count; c += 4) DotColumns<M, 4>(rows, b + (j + c) * g.b_col, g.b_col, g.k, sums, c);
    for (; c < count; ++c) DotColumns<M, 1>(rows, b + (j + c) * g.b_col, g.b_col, g.k, sums, c);
    for (int i = 0; i < M; ++i) {
      for (int z = count; z < 16; ++z) sums[i][z] = _mm512_setzero_ps();
      float out[16];
      packed_dot::Reduce16(sums[i], out);
      std::memcpy(y + i * g.n + j, out, count * sizeof(float));
    }
  }
}

// B's columns contiguous (values stored [slots, head_dim]): each row of
// the result gathers a[i, kk] times B's row kk, V vectors of 16 columns
// at a time, the last one masked.
template <int M, int V>
XONNX_PACKED_AVX512 void AxpyColumns(const Geometry& g, const float* a, const float* b, float* y, int64_t j,
                                     int64_t width) {
  __mmask16 mask[V];
  for (int v = 0; v < V; ++v) {
    mask[v] = packed_dot::FirstLanes(width - 16 * v);
  }
  __m512 acc[M][V];
  for (int i = 0; i < M; ++i)
    for (int v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < g.k; ++kk) {
    const float* row = b + kk * g.b_k + j;
    for (int v = 0; v < V; ++v) _mm_prefetch(reinterpret_cast<const char*>(row + 16 * v) + kPrefetchBytes, _MM_HINT_T0);
    __m512 w[V];
    for (int v = 0; v < V; ++v) w[v] = _mm512_maskz_loadu_ps(mask[v], row + 16 * v);
    for (int i = 0; i < M; ++i) {
      const __m512 x = _mm512_set1_ps(a[i * g.a_row + kk * g.a_k]);
      for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(x, w[v], acc[i][v]);
    }
  }
  for (int i = 0; i < M; ++i)
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(y + i * g.n + j + 16 * v, mask[v], acc[i][v]);
}

template <int M>
XONNX_PACKED_AVX512 void AxpyAvx512(const Geometry& g, const float* a, const float* b, float* y, int64_t j0, int64_t j1,
                                    float*) {
  int64_t j = j0;
  for (; j + 64 <= j1; j += 64) AxpyColumns<M, 4>(g, a, b, y, j, 64);
  for (; j < j1; j += 16) AxpyColumns<M, 1>(g, a, b, y, j, j1 - j);
}

// The kernel for the operands' strides, by rows 1 to 4.
Block PickBlock(const Geometry& g) {
  if (!CpuHasAvx512Bw()) return BlockPortable;
  static constexpr Block kDots[] = {DotsAvx512<1>, DotsAvx512<2>, DotsAvx512<3>, DotsAvx512<4>};
  static constexpr Block kAxpy[] = {AxpyAvx512<1>, AxpyAvx512<2>, AxpyAvx512<3>, AxpyAvx512<4>};
  // A dim of one element has no stride that matters.
  const bool k_contiguous = g.b_k == 1 || g.k == 1;
  const bool columns_contiguous = g.b_col == 1 || g.n == 1;
  if (columns_contiguous && (g.n > 1 || !k_contiguous)) return kAxpy[g.m - 1];
  if (k_contiguous) return kDots[g.m - 1];
  return BlockPortable;
}
#else
Block PickBlock(const Geometry&) { return BlockPortable; }
#endif

// The operands' geometry from the dot's form and their views.
Geometry GeometryOf(const hlo::Instruction& dot, const DotForm& f, const DotViews& views) {
  const int64_t nb = dot.dot_dnums.lhs_batch_dimensions.size();
  StridedView va = views.lhs ? *views.lhs : StridedView::RowMajor(dot.operand(0)->shape().dims);
  StridedView vb = views.rhs ? *views.rhs : StridedView::RowMajor(dot.operand(1)->shape().dims);
  Geometry g;
  g.m = f.m;
  g.k = f.k;
  g.n = f.n;
  for (int64_t d = 0; d < nb; ++d) {
    g.batch_dims.push_back(dot.shape().dims[d]);
    g.a_batch.push_back(va.strides[d]);
    g.b_batch.push_back(vb.strides[d]);
  }
  g.a_off = va.offset;
  g.b_off = vb.offset;
  g.a_row = va.strides[f.ta ? nb + 1 : nb];
  g.a_k = va.strides[f.ta ? nb : nb + 1];
  g.b_k = vb.strides[f.tb ? nb + 1 : nb];
  g.b_col = vb.strides[f.tb ? nb : nb + 1];
  return g;
}

}  // namespace small_dot

bool SmallDotTakes(const hlo::Instruction& dot) {
  std::optional<DotForm> f = DotFormOf(dot, hlo::F32);
  return f && f->m <= kSmallDotMaxRows && dot.operand(0)->shape().element_type == hlo::F32 &&
         dot.operand(1)->shape().element_type == hlo::F32 && dot.operand(1)->opcode() != hlo::Opcode::kConstant;
}

std::optional<Thunk> MakeSmallDotThunk(const hlo::Instruction& dot, const ThunkIo& io, const DotViews& views) {
  if (!SmallDotTakes(dot)) return std::nullopt;
  const DotForm f = *DotFormOf(dot, hlo::F32);
  const int64_t nb = dot.dot_dnums.lhs_batch_dimensions.size();
  for (const std::optional<StridedView>* v : {&views.lhs, &views.rhs})
    if (*v && static_cast<int64_t>((*v)->strides.size()) != nb + 2) return std::nullopt;
  const small_dot::Geometry g = small_dot::GeometryOf(dot, f, views);
  const small_dot::Block block = small_dot::PickBlock(g);
  using small_dot::kColumnBlock;
  const int64_t column_blocks = (g.n + kColumnBlock - 1) / kColumnBlock;
  const int64_t tasks = f.batch * column_blocks;
  const bool parallel = tasks > 1 && f.batch * g.m * g.k * g.n >= small_dot::kParallelMacs;
  BufferRef a_ref = io.inputs.at(0), b_ref = io.inputs.at(1), y_ref = io.outputs.at(0);
  Thunk t;
  t.name = dot.name();
  t.run = [g, block, column_blocks, tasks, parallel, a_ref, b_ref, y_ref](Frame& fr) -> absl::Status {
    const float* a = static_cast<const float*>(fr.Ptr(a_ref));
    const float* b = static_cast<const float*>(fr.Ptr(b_ref));
    float* y = static_cast<float*>(fr.Ptr(y_ref));
    auto run = [&](int64_t task) {
      // A's rows gathered where they are strided; at most 4 x k floats.
      thread_local std::vector<float> scratch;
      if (g.a_k != 1 && static_cast<int64_t>(scratch.size()) < g.m * g.k) scratch.resize(g.m * g.k);
      const int64_t batch = task / column_blocks, j0 = task % column_blocks * kColumnBlock;
      int64_t ao, bo;
      small_dot::BatchOrigins(g, batch, &ao, &bo);
      block(g, a + ao, b + bo, y + batch * g.m * g.n, j0, std::min(g.n, j0 + kColumnBlock), scratch.data());
    };
    if (!parallel) {
      for (int64_t task = 0; task < tasks; ++task) run(task);
      return absl::OkStatus();
    }
#pragma omp parallel for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) run(task);
    return absl::OkStatus();
  };
  return t;
}

}  // namespace xonnx::cpu
