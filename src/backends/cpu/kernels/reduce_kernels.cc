// Native reduction kernels: reduce over a contiguous block of dims (also a
// global pool over oneDNN's blocked channels) and reduce-window with an
// identity init. Each factory returns nullopt for forms it does not cover;
// the compiler then uses the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/strided_loops.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/kernels.h"
#include "evaluator/scalar_ops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace xonnx::cpu {

namespace {

using hlo::Instruction;
using hlo::Opcode;

// The reducer as a compile-time op so the inner loops vectorize.
template <Opcode kOp>
struct Reducer {
  static constexpr Opcode kOpcode = kOp;
  // Max and min give the same result in any order of the elements, so a
  // reduction of them may be split across threads.
  static constexpr bool kOrderFree = kOp == Opcode::kMaximum || kOp == Opcode::kMinimum;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kOp == Opcode::kAdd)
      return a + b;
    else if constexpr (kOp == Opcode::kMultiply)
      return a * b;
    else if constexpr (kOp == Opcode::kMaximum)
      return eval::internal::Max(a, b);
    else
      return eval::internal::Min(a, b);
  }
};

template <typename F>
void DispatchReducer(Opcode op, F&& f) {
  switch (op) {
    case Opcode::kAdd:
      f(Reducer<Opcode::kAdd>{});
      break;
    case Opcode::kMultiply:
      f(Reducer<Opcode::kMultiply>{});
      break;
    case Opcode::kMaximum:
      f(Reducer<Opcode::kMaximum>{});
      break;
    default:
      f(Reducer<Opcode::kMinimum>{});
      break;
  }
}

// Reduces n contiguous values into init. A running total is one dependent
// chain (an add's latency per element); 16 independent lanes vectorize and
// overlap instead, then meet pairwise. The order of a float sum changes, as
// XLA allows for reduce; a NaN still reaches the result through max/min.
constexpr int64_t kLanes = 16;
// At most this many columns (a row of up to 64 channels) are summed by one
// work item of a leading-dims reduce in one pass over its rows, so that
// each row is read once, whole, instead of once per 16-column block. Wider
// rows go 16 columns at a time: 64-wide items measured slower there (144
// to 1152 channels, EfficientNet's pools at batch 64).
constexpr int64_t kColumns = 64;

#if defined(__x86_64__) && defined(__GNUC__)
// A float row's sum, maximum or minimum in AVX-512 registers: four
// accumulators of 16 lanes, the tail read masked. The portable loop below
// compiles to 4-lane SSE and a NaN check per element; a softmax over 1024
// keys spent more time in its two reductions than in its exponentials.
// Returns false where a NaN makes the order of max/min matter (the
// portable loop then gives the evaluator's answer).
template <Opcode kOp>
__attribute__((target("avx512f"), always_inline)) inline __m512 ApplyAvx512(__m512 a, __m512 b) {
  if constexpr (kOp == Opcode::kAdd) return _mm512_add_ps(a, b);
  if constexpr (kOp == Opcode::kMultiply) return _mm512_mul_ps(a, b);
  // The zero-masked forms: GCC 12 warns that the plain ones' undefined
  // pass-through operand is uninitialized.
  if constexpr (kOp == Opcode::kMaximum) return _mm512_maskz_max_ps(0xffff, a, b);
  return _mm512_maskz_min_ps(0xffff, a, b);
}

template <Opcode kOp>
__attribute__((target("avx512f"))) bool ReduceRowAvx512(const float* x, int64_t n, float* result) {
  constexpr auto apply = ApplyAvx512<kOp>;
  __m512 a0 = _mm512_loadu_ps(x), a1 = _mm512_loadu_ps(x + 16), a2 = _mm512_loadu_ps(x + 32),
         a3 = _mm512_loadu_ps(x + 48);
  __mmask16 nan = _mm512_cmp_ps_mask(a0, a0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(a1, a1, _CMP_UNORD_Q) |
                  _mm512_cmp_ps_mask(a2, a2, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(a3, a3, _CMP_UNORD_Q);
  int64_t m = 64;
  for (; m + 64 <= n; m += 64) {
    const __m512 v0 = _mm512_loadu_ps(x + m), v1 = _mm512_loadu_ps(x + m + 16), v2 = _mm512_loadu_ps(x + m + 32),
                 v3 = _mm512_loadu_ps(x + m + 48);
    a0 = apply(a0, v0);
    a1 = apply(a1, v1);
    a2 = apply(a2, v2);
    a3 = apply(a3, v3);
    if constexpr (kOp == Opcode::kMaximum || kOp == Opcode::kMinimum)
      nan |= _mm512_cmp_ps_mask(v0, v0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q) |
             _mm512_cmp_ps_mask(v2, v2, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v3, v3, _CMP_UNORD_Q);
  }
  for (; m < n; m += 16) {
    const __mmask16 k = n - m >= 16 ? 0xffff : static_cast<__mmask16>((1u << (n - m)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + m);
    a0 = _mm512_mask_mov_ps(a0, k, apply(a0, v));
    if constexpr (kOp == Opcode::kMaximum || kOp == Opcode::kMinimum)
      nan |= _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q);
  }
  if ((kOp == Opcode::kMaximum || kOp == Opcode::kMinimum) && nan) return false;
  float lane[16];
  _mm512_storeu_ps(lane, apply(apply(a0, a1), apply(a2, a3)));
  for (int w = 8; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) lane[j] = Reducer<kOp>::Apply(lane[j], lane[j + w]);
  *result = lane[0];
  return true;
}
#endif

template <typename R, typename T>
T ReduceContiguous(R r, T init, const T* x, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (std::is_same_v<T, float>) {
    static const bool avx512 = CpuHasAvx512();
    float v;
    if (n >= 64 && avx512 && ReduceRowAvx512<R::kOpcode>(x, n, &v)) return r.Apply(init, v);
  }
#endif
  if (n < 2 * kLanes) {
    T acc = init;
    for (int64_t m = 0; m < n; ++m) acc = r.Apply(acc, x[m]);
    return acc;
  }
  T lane[kLanes];
  for (int j = 0; j < kLanes; ++j) lane[j] = x[j];
  int64_t m = kLanes;
  for (; m + kLanes <= n; m += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] = r.Apply(lane[j], x[m + j]);
  for (int j = 0; m < n; ++m, ++j) lane[j] = r.Apply(lane[j], x[m]);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) lane[j] = r.Apply(lane[j], lane[j + w]);
  return r.Apply(init, lane[0]);
}

// acc[j] = the reduction of src[m * stride + j] over rows m in [m0, m1)
// (m1 > m0), for j < width <= kColumns. Rows alternate between two sets of
// accumulators, so consecutive rows do not wait on each other's adds.
template <typename R, typename T>
[[gnu::always_inline]] inline void ReduceColumns(R r, const T* src, int64_t stride, int64_t m0, int64_t m1,
                                                 int64_t width, T* acc) {
  T odd[kColumns];
  for (int64_t j = 0; j < width; ++j) acc[j] = src[m0 * stride + j];
  int64_t m = m0 + 1;
  if (m == m1) return;
  for (int64_t j = 0; j < width; ++j) odd[j] = src[m * stride + j];
  for (++m; m + 1 < m1; m += 2) {
    const T* a = src + m * stride;
    const T* b = a + stride;
    for (int64_t j = 0; j < width; ++j) {
      acc[j] = r.Apply(acc[j], a[j]);
      odd[j] = r.Apply(odd[j], b[j]);
    }
  }
  if (m < m1)
    for (int64_t j = 0; j < width; ++j) acc[j] = r.Apply(acc[j], src[m * stride + j]);
  for (int64_t j = 0; j < width; ++j) acc[j] = r.Apply(acc[j], odd[j]);
}

bool ReducibleType(hlo::PrimitiveType t) { return t == hlo::F32 || t == hlo::F64 || t == hlo::S32 || t == hlo::S64; }

template <typename F>
void DispatchReducible(hlo::PrimitiveType t, F&& f) {
  switch (t) {
    case hlo::F32:
      f(hlo::TypeTag<float>{});
      break;
    case hlo::F64:
      f(hlo::TypeTag<double>{});
      break;
    case hlo::S32:
      f(hlo::TypeTag<int32_t>{});
      break;
    default:
      f(hlo::TypeTag<int64_t>{});
      break;
  }
}

// Collapses `dims` around the sorted contiguous block [a, b): outer, mid, inner.
void Collapse(const std::vector<int64_t>& dims, int64_t a, int64_t b, int64_t* outer, int64_t* mid, int64_t* inner) {
  *outer = *mid = *inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) (i < a ? *outer : i < b ? *mid : *inner) *= dims[i];
}

}  // namespace

float ReduceContiguousF32(Opcode op, float init, const float* x, int64_t n) {
  float result = init;
  DispatchReducer(op, [&](auto r) { result = ReduceContiguous(r, init, x, n); });
  return result;
}

std::optional<Opcode> ArithmeticReducer(const hlo::Computation& reducer) {
  std::optional<Opcode> op = eval::MatchScalarBinary(reducer);
  if (op && (*op == Opcode::kAdd || *op == Opcode::kMultiply || *op == Opcode::kMaximum || *op == Opcode::kMinimum))
    return op;
  return std::nullopt;
}

bool FastReduceTakesBlocked(const Instruction& in) {
  if (in.opcode() != Opcode::kReduce || in.operand_count() != 2 || !in.shape().IsArray()) return false;
  const hlo::Shape& xs = in.operand(0)->shape();
  if (xs.element_type != hlo::F32 || xs.rank() != 4 || in.dimensions != std::vector<int64_t>{1, 2}) return false;
  if (DnnlChannelBlock(xs.dims[3]) == 0) return false;
  return ArithmeticReducer(*in.to_apply()).has_value();
}

std::optional<Thunk> MakeFastReduceThunk(const Instruction& in, const ThunkIo& io, int block) {
  if (block && (!FastReduceTakesBlocked(in) || in.operand(0)->shape().dims[3] % block != 0)) return std::nullopt;
  if (in.operand_count() != 2 || !in.shape().IsArray()) return std::nullopt;
  const hlo::Shape& xs = in.operand(0)->shape();
  if (!ReducibleType(xs.element_type) || xs.ElementCount() == 0) return std::nullopt;
  std::optional<Opcode> op = ArithmeticReducer(*in.to_apply());
  if (!op) return std::nullopt;
  const auto& d = in.dimensions;  // sorted
  for (size_t k = 1; k < d.size(); ++k)
    if (d[k] != d[k - 1] + 1) return std::nullopt;
  if (d.empty()) return std::nullopt;
  int64_t outer, mid, inner;
  Collapse(xs.dims, d.front(), d.back() + 1, &outer, &mid, &inner);
  if (block) {
    // Blocked [N, C / block, H, W, block]: the spatial dims are a
    // contiguous run of rows of `block` channels, and the rows' sums,
    // [N, C / block, block], are the plain [N, C] result.
    outer = xs.dims[0] * (xs.dims[3] / block);
    mid = xs.dims[1] * xs.dims[2];
    inner = block;
  }
  BufferRef x = io.inputs[0], init = io.inputs[1], out = io.outputs[0];
  Opcode rop = *op;
  Thunk t;
  t.name = in.name();
  if (block) t.kind = "reduce-blocked";
  DispatchReducible(xs.element_type, [&](auto tag) {
    DispatchReducer(rop, [&](auto r) {
      using T = typename decltype(tag)::type;
      if (inner == 1) {
        // A whole value to one element (a dynamic quantizer's min and max)
        // is one row: split it in parts, one per thread, and reduce the
        // parts' results, where the reducer allows any order.
        constexpr int64_t kPartRows = 32768;
        const int64_t parts = outer == 1 && decltype(r)::kOrderFree ? std::min<int64_t>(16, mid / kPartRows) : 1;
        if (parts > 1) {
          t.run = [=](Frame& f) -> absl::Status {
            const T* X = static_cast<const T*>(f.Ptr(x));
            const T v0 = *static_cast<const T*>(f.Ptr(init));
            T partial[16];
            const int64_t per_part = (mid + parts - 1) / parts;
#pragma omp parallel for schedule(static)
            for (int64_t p = 0; p < parts; ++p)
              partial[p] = ReduceContiguous(r, v0, X + p * per_part, std::min(per_part, mid - p * per_part));
            *static_cast<T*>(f.Ptr(out)) = ReduceContiguous(r, v0, partial, parts);
            return absl::OkStatus();
          };
          return;
        }
        t.run = [=](Frame& f) -> absl::Status {
          const T* X = static_cast<const T*>(f.Ptr(x));
          T* O = static_cast<T*>(f.Ptr(out));
          const T v0 = *static_cast<const T*>(f.Ptr(init));
#pragma omp parallel for if (outer * mid > 65536) schedule(static)
          for (int64_t o = 0; o < outer; ++o) O[o] = ReduceContiguous(r, v0, X + o * mid, mid);
          return absl::OkStatus();
        };
        return;
      }
      // Reducing leading dims (a global pool in channels-last order): work
      // items are (part of the rows, outer index, block of columns), so
      // that one outer row (batch 1) still spreads over the threads. The part
      // varies slowest: a thread's consecutive items read the same rows, and
      // two threads read different rows rather than halves of the same cache
      // lines (a 32-channel pool read every line on both threads). The parts
      // depend on the shape alone and meet in order: the same result on any
      // number of threads.
      const int64_t block = inner <= kColumns ? inner : kLanes;  // columns per item
      int64_t col_blocks = (inner + block - 1) / block;
      int64_t parts = std::clamp<int64_t>(8 / (outer * col_blocks), 1, std::max<int64_t>(1, mid / 64));
      t.run = [=](Frame& f) -> absl::Status {
        const T* X = static_cast<const T*>(f.Ptr(x));
        T* O = static_cast<T*>(f.Ptr(out));
        const T v0 = *static_cast<const T*>(f.Ptr(init));
        std::vector<T> partial(parts > 1 ? parts * outer * inner : 0);
        int64_t rows_per_part = (mid + parts - 1) / parts;
#pragma omp parallel for if (outer * mid * inner > 65536) schedule(static)
        for (int64_t item = 0; item < outer * col_blocks * parts; ++item) {
          int64_t cb = item % col_blocks, o = item / col_blocks % outer, part = item / col_blocks / outer;
          int64_t c0 = cb * block, width = std::min(block, inner - c0);
          int64_t m0 = part * rows_per_part, m1 = std::min(mid, m0 + rows_per_part);
          const T* src = X + o * mid * inner + c0;
          T acc[kColumns];
          // Constant widths for the common channel counts, so the loops unroll.
          if (width == kLanes)
            ReduceColumns(r, src, inner, m0, m1, kLanes, acc);
          else if (width == 32)
            ReduceColumns(r, src, inner, m0, m1, 32, acc);
          else if (width == kColumns)
            ReduceColumns(r, src, inner, m0, m1, kColumns, acc);
          else
            ReduceColumns(r, src, inner, m0, m1, width, acc);
          if (parts == 1) {
            for (int64_t j = 0; j < width; ++j) O[o * inner + c0 + j] = r.Apply(v0, acc[j]);
          } else {
            std::copy(acc, acc + width, partial.data() + (part * outer + o) * inner + c0);
          }
        }
        if (parts > 1) {
          for (int64_t k = 0; k < outer * inner; ++k) {
            T v = v0;
            for (int64_t part = 0; part < parts; ++part) v = r.Apply(v, partial[part * outer * inner + k]);
            O[k] = v;
          }
        }
        return absl::OkStatus();
      };
    });
  });
  return t;
}

namespace {

// A reduce-window whose window along one dim reaches back over the whole dim
// (size >= the dim, padding_low = size - 1, stride 1) and is trivial along the
// others is a running reduction (ONNX's CumSum): one pass, each output the
// previous one combined with the next element. That is the order in which the
// window kernel combines a window's elements, so the results are the same;
// the window kernel takes O(n^2) for it (a 16384-long CumSum took 1.2 s).
std::optional<Thunk> MakePrefixScanThunk(const Instruction& in, const ThunkIo& io, Opcode op, double init) {
  const hlo::Shape& xs = in.operand(0)->shape();
  int64_t axis = -1;
  for (int64_t d = 0; d < xs.rank(); ++d) {
    const auto& w = in.window.dimensions[d];
    if (w.stride != 1 || w.window_dilation != 1 || w.base_dilation != 1 || w.padding_high != 0) return std::nullopt;
    if (w.size == 1 && w.padding_low == 0) continue;
    if (axis >= 0 || w.size < xs.dims[d] || w.padding_low != w.size - 1) return std::nullopt;
    axis = d;
  }
  if (axis < 0) return std::nullopt;
  int64_t outer = 1, n = xs.dims[axis], inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs.dims[d];
  for (int64_t d = axis + 1; d < xs.rank(); ++d) inner *= xs.dims[d];
  BufferRef x = io.inputs[0], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  t.kind = "prefix-scan";
  DispatchReducible(xs.element_type, [&](auto tag) {
    DispatchReducer(op, [&](auto red) {
      using T = typename decltype(tag)::type;
      const T v0 = static_cast<T>(init);
      // Work items: (outer index, block of inner columns); within an item the
      // scan runs down the dim with the columns as the vector lanes.
      constexpr int64_t kBlock = 256;
      const int64_t blocks = (inner + kBlock - 1) / kBlock;
      t.run = [=](Frame& f) -> absl::Status {
        const T* X = static_cast<const T*>(f.Ptr(x));
        T* O = static_cast<T*>(f.Ptr(out));
#pragma omp parallel for if (outer * n * inner > 32768) schedule(static)
        for (int64_t item = 0; item < outer * blocks; ++item) {
          const int64_t o = item / blocks, c0 = item % blocks * kBlock, width = std::min(kBlock, inner - c0);
          const T* src = X + o * n * inner + c0;
          T* dst = O + o * n * inner + c0;
          for (int64_t j = 0; j < width; ++j) dst[j] = red.Apply(v0, src[j]);
          for (int64_t i = 1; i < n; ++i) {
            const T* s = src + i * inner;
            const T* prev = dst + (i - 1) * inner;
            T* d = dst + i * inner;
            for (int64_t j = 0; j < width; ++j) d[j] = red.Apply(prev[j], s[j]);
          }
        }
        return absl::OkStatus();
      };
    });
  });
  return t;
}

// A reduce-window whose last dim has a window of stride 1 (a pool over
// channels-first images, the last dim the image's width): each output row
// combines, per window offset, a shifted run of an input row, with the
// offsets in the window's row-major order. That is the generic kernel's
// order for each element, so the results are the same; the runs vectorize
// where the generic kernel walks one element's window at a time (an average
// pool over 192 channels of 28x28 took 6 ms).
std::optional<Thunk> MakeRowWindowThunk(const Instruction& in, const ThunkIo& io, Opcode op, double init) {
  const hlo::Shape& xs = in.operand(0)->shape();
  const hlo::Shape& os = in.shape();
  const int64_t r = xs.rank();
  if (r < 2 || r > 8) return std::nullopt;
  for (const auto& w : in.window.dimensions)
    if (w.base_dilation != 1 || w.window_dilation != 1) return std::nullopt;
  const hlo::WindowDimension last = in.window.dimensions.back();
  if (last.stride != 1 || last.size < 2) return std::nullopt;
  hlo::Window win = in.window;
  std::vector<int64_t> in_dims = xs.dims, out_dims = os.dims, xst = xs.Strides();
  const int64_t iw = in_dims.back(), ow = out_dims.back();
  int64_t rows = 1;
  for (int64_t d = 0; d < r - 1; ++d) rows *= out_dims[d];
  BufferRef x = io.inputs[0], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  t.kind = "reduce-window-rows";
  DispatchReducible(xs.element_type, [&](auto tag) {
    DispatchReducer(op, [&](auto red) {
      using T = typename decltype(tag)::type;
      const T v0 = static_cast<T>(init);
      t.run = [=](Frame& f) -> absl::Status {
        const T* X = static_cast<const T*>(f.Ptr(x));
        T* O = static_cast<T*>(f.Ptr(out));
#pragma omp parallel for if (rows * ow * last.size > 32768) schedule(static)
        for (int64_t p = 0; p < rows; ++p) {
          // The valid window offsets [lo, hi) of each outer dim.
          int64_t lo[8], hi[8], at[8], rem = p;
          for (int64_t d = r - 2; d >= 0; --d) {
            const int64_t idx = rem % out_dims[d];
            rem /= out_dims[d];
            const auto& w = win.dimensions[d];
            const int64_t start = idx * w.stride - w.padding_low;
            lo[d] = std::max<int64_t>(0, -start);
            hi[d] = std::min<int64_t>(w.size, in_dims[d] - start);
            at[d] = start;
          }
          T* dst = O + p * ow;
          for (int64_t j = 0; j < ow; ++j) dst[j] = v0;
          bool empty = false;
          for (int64_t d = 0; d < r - 1; ++d) empty |= lo[d] >= hi[d];
          if (empty) continue;
          int64_t k[8];
          for (int64_t d = 0; d < r - 1; ++d) k[d] = lo[d];
          while (true) {
            int64_t base = 0;
            for (int64_t d = 0; d < r - 1; ++d) base += (at[d] + k[d]) * xst[d];
            for (int64_t kx = 0; kx < last.size; ++kx) {
              // Output j reads input j - padding_low + kx, when inside.
              const int64_t shift = kx - last.padding_low;
              const int64_t j0 = std::max<int64_t>(0, -shift), j1 = std::min<int64_t>(ow, iw - shift);
              const T* src = X + base + shift;
              for (int64_t j = j0; j < j1; ++j) dst[j] = red.Apply(dst[j], src[j]);
            }
            int64_t d = r - 2;
            for (; d >= 0; --d) {
              if (++k[d] < hi[d]) break;
              k[d] = lo[d];
            }
            if (d < 0) break;
          }
        }
        return absl::OkStatus();
      };
    });
  });
  return t;
}

}  // namespace

std::optional<Thunk> MakeFastReduceWindowThunk(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& xs = in.operand(0)->shape();
  const Instruction* init_instr = in.operand(1);
  if (!ReducibleType(xs.element_type) || init_instr->opcode() != Opcode::kConstant) return std::nullopt;
  std::optional<Opcode> op = eval::MatchScalarBinary(*in.to_apply());
  if (!op) return std::nullopt;
  double init = init_instr->literal->GetAsDouble(0);
  // Skipping padded positions is exact only when init is the identity.
  bool identity = (*op == Opcode::kAdd && init == 0) ||
                  (*op == Opcode::kMaximum && init <= -std::numeric_limits<double>::max()) ||
                  (*op == Opcode::kMinimum && init >= std::numeric_limits<double>::max());
  if (!identity && hlo::IsInteger(xs.element_type)) {
    // Integer max/min pooling pads with the type's extreme value.
    identity =
        (*op == Opcode::kMaximum && init == static_cast<double>(xs.element_type == hlo::S32 ? INT32_MIN : INT64_MIN)) ||
        (*op == Opcode::kMinimum && init == static_cast<double>(xs.element_type == hlo::S32 ? INT32_MAX : INT64_MAX));
  }
  if (!identity || xs.rank() > 8) return std::nullopt;
  for (const auto& w : in.window.dimensions)
    if (w.window_reversal) return std::nullopt;
  if (std::optional<Thunk> scan = MakePrefixScanThunk(in, io, *op, init)) return scan;
  if (std::optional<Thunk> rows = MakeRowWindowThunk(in, io, *op, init)) return rows;
  const hlo::Shape& os = in.shape();
  if (os.ElementCount() == 0) return std::nullopt;
  int64_t r = xs.rank();
  // The last dim is vectorized when its window is trivial (channels-last pooling).
  bool vec = in.window.dimensions.back().size == 1 && in.window.dimensions.back().stride == 1 &&
             in.window.dimensions.back().padding_low == 0 && in.window.dimensions.back().padding_high == 0 &&
             in.window.dimensions.back().base_dilation == 1;
  int64_t lanes = vec ? xs.dims.back() : 1;
  int64_t outer_rank = vec ? r - 1 : r;
  std::vector<int64_t> xst = xs.Strides(), ost = os.Strides();
  hlo::Window win = in.window;
  std::vector<int64_t> in_dims = xs.dims, out_dims = os.dims;
  BufferRef x = io.inputs[0], out = io.outputs[0];
  Opcode rop = *op;
  int64_t out_positions = 1;
  for (int64_t d = 0; d < outer_rank; ++d) out_positions *= out_dims[d];
  Thunk t;
  t.name = in.name();
  DispatchReducible(xs.element_type, [&](auto tag) {
    DispatchReducer(rop, [&](auto red) {
      using T = typename decltype(tag)::type;
      T v0 = static_cast<T>(init);
      t.run = [=](Frame& f) -> absl::Status {
        const T* X = static_cast<const T*>(f.Ptr(x));
        T* O = static_cast<T*>(f.Ptr(out));
#pragma omp parallel for if (out_positions * lanes > 16384) schedule(static)
        for (int64_t p = 0; p < out_positions; ++p) {
          // Decompose p into the output index of the outer dims.
          int64_t idx[8];
          int64_t rem = p;
          for (int64_t d = outer_rank - 1; d >= 0; --d) {
            idx[d] = rem % out_dims[d];
            rem /= out_dims[d];
          }
          // Valid window offsets per dim.
          int64_t lo[8], cnt[8], step[8];
          int64_t total = 1;
          for (int64_t d = 0; d < outer_rank; ++d) {
            // Window element j reads position q = start + j * wd of the
            // padded, base-dilated input: an element where q >= 0, q is a
            // multiple of bd and q / bd < in_dims. Those j step by
            // bd / gcd(wd, bd), from the first.
            const auto& w = win.dimensions[d];
            const int64_t wd = w.window_dilation, bd = w.base_dilation;
            int64_t start = idx[d] * w.stride - w.padding_low;
            int64_t first = 0;
            while (first < w.size && (start + first * wd < 0 || (start + first * wd) % bd != 0)) ++first;
            const int64_t jstep = bd / std::gcd(wd, bd), q0 = start + first * wd, qmax = (in_dims[d] - 1) * bd;
            cnt[d] = first < w.size && q0 <= qmax
                         ? std::min((w.size - 1 - first) / jstep, (qmax - q0) / (jstep * wd)) + 1
                         : 0;
            lo[d] = q0 / bd * xst[d];
            step[d] = jstep * wd / bd * xst[d];
            total *= cnt[d];
          }
          T* dst = O + p * lanes;
          for (int64_t l = 0; l < lanes; ++l) dst[l] = v0;
          if (total == 0) continue;
          int64_t k[8] = {0};
          while (true) {
            int64_t off = 0;
            for (int64_t d = 0; d < outer_rank; ++d) off += lo[d] + k[d] * step[d];
            const T* src = X + off;
            for (int64_t l = 0; l < lanes; ++l) dst[l] = red.Apply(dst[l], src[l]);
            int64_t d = outer_rank - 1;
            for (; d >= 0; --d) {
              if (++k[d] < cnt[d]) break;
              k[d] = 0;
            }
            if (d < 0) break;
          }
        }
        return absl::OkStatus();
      };
    });
  });
  return t;
}

}  // namespace xonnx::cpu
