// Native scatter: the operand copied to the output, then every update
// combined into the element its index vector and window position name
// (ONNX ScatterND and ScatterElements, with or without a reduction, as the
// importer lowers them). Elements outside the operand are skipped, as the
// evaluator skips them.
//
// Updates apply in their order, so repeated indices give the evaluator's
// result; the threads split the *output* into ranges, and each applies, in
// order, the updates that land in its range. An update's window is combined
// a contiguous run at a time, and its index vector is read once per window.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/algorithm/container.h"
#include "backends/cpu/kernels/index_reader.h"
#include "backends/cpu/kernels/strided_loops.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/kernels.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::cpu {

namespace {

using hlo::Instruction;
using hlo::Opcode;

// dst[i] = op(dst[i], u[i]) for n elements; no op: dst[i] = u[i].
template <typename T>
void CombineRun(std::optional<Opcode> op, T* dst, const T* u, int64_t n) {
  if (!op) {
    std::memcpy(dst, u, n * sizeof(T));
    return;
  }
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    switch (*op) {
      case Opcode::kAdd:
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] + u[i]);
        break;
      case Opcode::kMultiply:
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] * u[i]);
        break;
      case Opcode::kMaximum:
        for (int64_t i = 0; i < n; ++i) dst[i] = eval::internal::Max(dst[i], u[i]);
        break;
      default:
        for (int64_t i = 0; i < n; ++i) dst[i] = eval::internal::Min(dst[i], u[i]);
        break;
    }
  }
}

// The scatter's geometry, from its dimension numbers: updates are batch
// positions (one index vector each, read through `index`) times a window.
struct ScatterGeometry {
  int64_t rank = 0;                    // the operand's
  std::vector<int64_t> dims, strides;  // the operand's
  IndexReader index;
  std::vector<int64_t> component_dims;  // the operand dim each index component starts
  // Window dims, in the update's order: size, update stride and the operand
  // dim each moves along.
  std::vector<int64_t> window_sizes, window_update_strides, window_operand_dims;
  // Per update dim: whether it is a window dim.
  std::vector<bool> is_window;
  bool batch_first = true;  // every batch dim of the update precedes every window dim
  int64_t positions = 1, window_elements = 1;
  // Each update a whole row of the operand's first dim (ScatterND of rows,
  // a graph network's messages): one index per update, no window to walk.
  bool whole_rows = false;
};

ScatterGeometry GeometryOf(const Instruction& in) {
  const auto& dn = in.scatter_dnums;
  const hlo::Shape& os = in.shape();
  const hlo::Shape& us = in.operand(2)->shape();
  ScatterGeometry g{
      os.rank(), os.dims, os.Strides(),
      IndexReader(in.operand(1)->shape(), dn.index_vector_dim, dn.scatter_dims_to_operand_dims, os.Strides(), os.dims)};
  g.component_dims = dn.scatter_dims_to_operand_dims;
  g.positions = g.index.BatchCount();
  std::vector<int64_t> ust = us.Strides(), window_operand;
  for (int64_t d = 0; d < os.rank(); ++d)
    if (!absl::c_linear_search(dn.inserted_window_dims, d)) window_operand.push_back(d);
  bool seen_window = false;
  for (int64_t d = 0; d < us.rank(); ++d) {
    const bool w = absl::c_linear_search(dn.update_window_dims, d);
    g.is_window.push_back(w);
    if (w) {
      g.window_operand_dims.push_back(window_operand[g.window_sizes.size()]);
      g.window_sizes.push_back(us.dims[d]);
      g.window_update_strides.push_back(ust[d]);
      g.window_elements *= us.dims[d];
      seen_window = true;
    } else if (seen_window) {
      g.batch_first = false;
    }
  }
  g.whole_rows = g.batch_first && g.rank >= 1 && g.component_dims == std::vector<int64_t>{0} &&
                 static_cast<int64_t>(g.window_sizes.size()) == g.rank - 1;
  for (int64_t j = 0; g.whole_rows && j + 1 < g.rank; ++j)
    g.whole_rows = g.window_operand_dims[j] == j + 1 && g.window_sizes[j] == g.dims[j + 1];
  return g;
}

// Applies the updates of a batch-first scatter whose output offsets fall in
// [lo, hi), in order.
template <typename T, typename I>
void ScatterRange(const ScatterGeometry& g, std::optional<Opcode> op, const I* idx, const T* u, T* o, int64_t lo,
                  int64_t hi) {
  const IndexReader& index = g.index;
  const int64_t nb = index.batch_dims.size(), nw = g.window_sizes.size(), nc = g.component_dims.size();
  auto next_position = [&](int64_t& ioff, std::vector<int64_t>& bidx) {
    for (int64_t d = nb - 1; d >= 0; --d) {
      ioff += index.batch_strides[d];
      if (++bidx[d] < index.batch_dims[d]) break;
      ioff -= index.batch_dims[d] * index.batch_strides[d];
      bidx[d] = 0;
    }
  };
  if (g.whole_rows) {  // a row index per update, its row in this range or not
    const int64_t row = g.window_elements;
    std::vector<int64_t> bidx(nb, 0);
    for (int64_t p = 0, ioff = 0; p < g.positions; ++p, next_position(ioff, bidx)) {
      const int64_t r = static_cast<int64_t>(idx[ioff + index.component_offsets[0]]), off = r * row;
      if (r < 0 || r >= g.dims[0] || off >= hi || off + row <= lo) continue;
      const int64_t a = std::max(off, lo), b = std::min(off + row, hi);
      CombineRun<T>(op, o + a, u + p * row + (a - off), b - a);
    }
    return;
  }
  // A window's innermost run, when contiguous in the operand (the update's
  // window is contiguous: batch dims come first).
  const bool runs = nw > 0 && g.strides[g.window_operand_dims.back()] == 1;
  const int64_t run_len = runs ? g.window_sizes.back() : 1;
  std::vector<int64_t> extent(g.rank, 1);
  std::vector<bool> in_window(g.rank, false);
  for (int64_t j = 0; j < nw; ++j) {
    extent[g.window_operand_dims[j]] = g.window_sizes[j];
    in_window[g.window_operand_dims[j]] = true;
  }
  std::vector<int64_t> bidx(nb, 0), start(g.rank), widx(nw, 0);
  // Combines `n` update elements from `up` at output offset `off`, clipped
  // to this thread's range.
  auto combine = [&](int64_t off, const T* up, int64_t n) {
    const int64_t a = std::max(off, lo), b = std::min(off + n, hi);
    if (a < b) CombineRun<T>(op, o + a, up + (a - off), b - a);
  };
  int64_t ioff = 0;
  for (int64_t p = 0; p < g.positions; ++p) {
    std::fill(start.begin(), start.end(), 0);
    for (int64_t k = 0; k < nc; ++k)
      start[g.component_dims[k]] = static_cast<int64_t>(idx[ioff + index.component_offsets[k]]);
    // Whether the whole window lies inside the operand, and whether the dims
    // it does not move along (fixed over it) do.
    bool inside = true, fixed_inside = true;
    int64_t base = 0;
    for (int64_t d = 0; d < g.rank; ++d) {
      inside &= start[d] >= 0 && start[d] + extent[d] <= g.dims[d];
      fixed_inside &= in_window[d] || (start[d] >= 0 && start[d] < g.dims[d]);
      base += start[d] * g.strides[d];
    }
    const T* up = u + p * g.window_elements;
    std::fill(widx.begin(), widx.end(), 0);
    // Inside: whole runs. Partly outside: element by element, each checked.
    const int64_t step = inside ? run_len : 1, last = inside && runs ? nw - 2 : nw - 1;
    for (int64_t w = 0; fixed_inside && w < g.window_elements; w += step) {
      int64_t off = base, uoff = 0;
      bool in = true;
      for (int64_t j = 0; j < nw; ++j) {
        const int64_t d = g.window_operand_dims[j], pos = start[d] + widx[j];
        in &= inside || (pos >= 0 && pos < g.dims[d]);
        off += widx[j] * g.strides[d];
        uoff += widx[j] * g.window_update_strides[j];
      }
      if (in) combine(off, up + uoff, step);
      for (int64_t j = last; j >= 0; --j) {
        if (++widx[j] < g.window_sizes[j]) break;
        widx[j] = 0;
      }
    }
    next_position(ioff, bidx);
  }
}

// Scatters in any layout of batch and window dims, one element at a time
// (the importer's scatters are batch-first; this is for the rest).
template <typename T>
void ScatterElementwise(const ScatterGeometry& g, std::optional<Opcode> op, hlo::PrimitiveType index_type,
                        const void* idx, const T* u, T* o, const std::vector<int64_t>& update_dims) {
  const int64_t ur = update_dims.size();
  int64_t updates = 1;
  for (int64_t d : update_dims) updates *= d;
  std::vector<int64_t> uidx(ur, 0), start(g.rank);
  for (int64_t e = 0; e < updates; ++e) {
    int64_t ioff = 0, b = 0, j = 0;
    for (int64_t d = 0; d < ur; ++d)
      if (!g.is_window[d]) ioff += uidx[d] * g.index.batch_strides[b++];
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < g.component_dims.size(); ++k)
      start[g.component_dims[k]] = eval::ReadIndex(idx, index_type, ioff + g.index.component_offsets[k]);
    for (int64_t d = 0; d < ur; ++d)
      if (g.is_window[d]) start[g.window_operand_dims[j++]] += uidx[d];
    bool inside = true;
    int64_t at = 0;
    for (int64_t d = 0; d < g.rank; ++d) {
      inside &= start[d] >= 0 && start[d] < g.dims[d];
      at += start[d] * g.strides[d];
    }
    if (inside) CombineRun<T>(op, o + at, u + e, 1);
    for (int64_t d = ur - 1; d >= 0; --d) {
      if (++uidx[d] < update_dims[d]) break;
      uidx[d] = 0;
    }
  }
}

}  // namespace

std::optional<Thunk> MakeScatterThunk(const Instruction& in, const ThunkIo& io) {
  if (in.operand_count() != 3) return std::nullopt;
  const hlo::Shape& os = in.shape();
  const hlo::Computation& comp = *in.to_apply();
  std::optional<Opcode> op;
  const bool replace = comp.root()->opcode() == Opcode::kParameter && comp.root()->parameter_number == 1;
  if (!replace) {
    op = ArithmeticReducer(comp);
    if (!op) return std::nullopt;
    if (os.element_type == hlo::PRED) return std::nullopt;
  }
  const ScatterGeometry g = GeometryOf(in);
  const std::vector<int64_t> update_dims = in.operand(2)->shape().dims;
  const hlo::PrimitiveType index_type = in.operand(1)->shape().element_type;
  const int64_t bytes = os.ByteSize(), elements = os.ElementCount();
  const int64_t work = g.positions * g.window_elements;
  BufferRef x = io.inputs[0], indices = io.inputs[1], upd = io.inputs[2], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  hlo::TypeSwitch(os.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      T* o = static_cast<T*>(f.Ptr(out));
      if (static_cast<void*>(o) != f.Ptr(x)) std::memcpy(o, f.Ptr(x), bytes);
      const void* idx = f.Ptr(indices);
      const T* u = static_cast<const T*>(f.Ptr(upd));
      if (!g.batch_first) {
        ScatterElementwise<T>(g, op, index_type, idx, u, o, update_dims);
        return absl::OkStatus();
      }
      const int threads = work >= kParallelElements ? omp_get_max_threads() : 1;
      // The index type is dispatched once, not per index read.
      auto scatter = [&](auto* typed_idx) {
        if (threads <= 1) {
          ScatterRange<T>(g, op, typed_idx, u, o, 0, elements);
          return;
        }
#pragma omp parallel num_threads(threads)
        {
          const int64_t n = omp_get_num_threads(), k = omp_get_thread_num();
          ScatterRange<T>(g, op, typed_idx, u, o, elements * k / n, elements * (k + 1) / n);
        }
      };
      switch (index_type) {
        case hlo::S32:
          scatter(static_cast<const int32_t*>(idx));
          break;
        case hlo::S64:
          scatter(static_cast<const int64_t*>(idx));
          break;
        default:
          ScatterElementwise<T>(g, op, index_type, idx, u, o, update_dims);
          break;
      }
      return absl::OkStatus();
    };
  });
  return t;
}

}  // namespace xonnx::cpu
