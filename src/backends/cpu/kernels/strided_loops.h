// Loops the native data-movement kernels share (internal header): walking
// the rows of a strided box in parallel, and copying one box of elements
// into another.
#ifndef XONNX_BACKENDS_CPU_KERNELS_STRIDED_LOOPS_H_
#define XONNX_BACKENDS_CPU_KERNELS_STRIDED_LOOPS_H_

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "hlo/types.h"

namespace xonnx::cpu {

// Below this many elements of work a loop runs on the calling thread: a
// parallel region costs more than it saves.
inline constexpr int64_t kParallelElements = 1 << 16;

// Calls chunk(i0, i1) over [0, n) split into one contiguous range per
// thread, or once on the calling thread when n items of `item_work`
// elements each are too little work to share.
template <typename F>
void ForRanges(int64_t n, int64_t item_work, F&& chunk) {
  if (n < 2 || n * item_work < kParallelElements || omp_get_max_threads() == 1) {
    chunk(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t per = (n + threads - 1) / threads, i0 = std::min(n, t * per), i1 = std::min(n, i0 + per);
    if (i0 < i1) chunk(i0, i1);
  }
}

// Calls f(offsets) for every row of `dims` (all but the innermost dim of a
// box, row-major), where offsets[k] = sum over d of index[d] * strides[k][d].
// Rows are split into one contiguous chunk per thread; each chunk finds its
// first index by division and then steps an odometer, so a row costs a few
// adds however short it is. `row_elements` sizes the work to decide whether
// to go parallel.
template <size_t K, typename F>
void ForEachRow(const std::vector<int64_t>& dims, const std::array<std::vector<int64_t>, K>& strides,
                int64_t row_elements, F&& f) {
  int64_t rank = dims.size(), rows = 1;
  for (int64_t d : dims) rows *= d;
  if (rows == 0) return;
  auto chunk = [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(rank);
    std::array<int64_t, K> off{};
    for (int64_t d = rank - 1, rem = r0; d >= 0; --d) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
      for (size_t k = 0; k < K; ++k) off[k] += idx[d] * strides[k][d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      f(off);
      for (int64_t d = rank - 1; d >= 0; --d) {
        for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
        if (++idx[d] < dims[d]) break;
        for (size_t k = 0; k < K; ++k) off[k] -= dims[d] * strides[k][d];
        idx[d] = 0;
      }
    }
  };
  ForRanges(rows, row_elements, chunk);
}

// A box of elements read and written through strides (in elements; a
// negative stride walks a dim backwards).
struct Box {
  std::vector<int64_t> dims, src, dst;
  // Drops size-1 dims and merges a dim into the next where both sides are
  // contiguous across them, so that the innermost run is as long as it can be.
  void Simplify() {
    Box b;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1) continue;
      if (!b.dims.empty() && b.src.back() == src[d] * dims[d] && b.dst.back() == dst[d] * dims[d]) {
        b.dims.back() *= dims[d];
        b.src.back() = src[d];
        b.dst.back() = dst[d];
      } else {
        b.dims.push_back(dims[d]);
        b.src.push_back(src[d]);
        b.dst.push_back(dst[d]);
      }
    }
    if (b.dims.empty()) b.dims = {1}, b.src = {1}, b.dst = {1};
    *this = std::move(b);
  }
  int64_t ElementCount() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

// Calls f(TypeTag<U>{}) with the unsigned integer type of `width` bytes
// (a data movement needs only the element's size); false for other widths.
template <typename F>
bool DispatchWidth(int width, F&& f) {
  switch (width) {
    case 1:
      f(hlo::TypeTag<uint8_t>{});
      return true;
    case 2:
      f(hlo::TypeTag<uint16_t>{});
      return true;
    case 4:
      f(hlo::TypeTag<uint32_t>{});
      return true;
    case 8:
      f(hlo::TypeTag<uint64_t>{});
      return true;
    default:
      return false;
  }
}

// Copies the box (already simplified) from src to dst, elements of type W.
template <typename W>
void CopyBox(const W* src, W* dst, const Box& b) {
  int64_t r = b.dims.size(), inner = b.dims[r - 1], si = b.src[r - 1], di = b.dst[r - 1];
  std::vector<int64_t> outer(b.dims.begin(), b.dims.end() - 1);
  std::array<std::vector<int64_t>, 2> strides{std::vector<int64_t>(b.src.begin(), b.src.end() - 1),
                                              std::vector<int64_t>(b.dst.begin(), b.dst.end() - 1)};
  ForEachRow<2>(outer, strides, inner, [&](const std::array<int64_t, 2>& off) {
    const W* s = src + off[0];
    W* d = dst + off[1];
    if (si == 1 && di == 1) {
      std::memcpy(d, s, inner * sizeof(W));
    } else {
      for (int64_t i = 0; i < inner; ++i) d[i * di] = s[i * si];
    }
  });
}

// Fills n elements of width `width` with the one at `value`.
void FillElements(void* dst, const void* value, int width, int64_t n);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_KERNELS_STRIDED_LOOPS_H_
