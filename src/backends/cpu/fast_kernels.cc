// Native kernels for the data-movement and reduction instructions that
// dominate real models once convolutions and dots run in oneDNN: reduce over
// a contiguous block of dims, reduce-window with an identity init, transpose,
// slice and broadcast. Each factory returns nullopt for forms it does not
// cover; the compiler then uses the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/thunks.h"
#include "evaluator/kernels.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::cpu {

namespace {

using hlo::Instruction;
using hlo::Opcode;

// The reducer as a compile-time op so the inner loops vectorize.
template <Opcode kOp>
struct Reducer {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kOp == Opcode::kAdd) return a + b;
    else if constexpr (kOp == Opcode::kMultiply) return a * b;
    else if constexpr (kOp == Opcode::kMaximum) return eval::internal::Max(a, b);
    else return eval::internal::Min(a, b);
  }
};

template <typename F>
void DispatchReducer(Opcode op, F&& f) {
  switch (op) {
    case Opcode::kAdd: f(Reducer<Opcode::kAdd>{}); break;
    case Opcode::kMultiply: f(Reducer<Opcode::kMultiply>{}); break;
    case Opcode::kMaximum: f(Reducer<Opcode::kMaximum>{}); break;
    default: f(Reducer<Opcode::kMinimum>{}); break;
  }
}

// Reduces n contiguous values into init. A running total is one dependent
// chain (an add's latency per element); 16 independent lanes vectorize and
// overlap instead, then meet pairwise. The order of a float sum changes, as
// XLA allows for reduce; a NaN still reaches the result through max/min.
template <typename R, typename T>
T ReduceContiguous(R r, T init, const T* x, int64_t n) {
  constexpr int kLanes = 16;
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

bool ReducibleType(hlo::PrimitiveType t) { return t == hlo::F32 || t == hlo::F64 || t == hlo::S32 || t == hlo::S64; }

template <typename F>
void DispatchReducible(hlo::PrimitiveType t, F&& f) {
  switch (t) {
    case hlo::F32: f(hlo::TypeTag<float>{}); break;
    case hlo::F64: f(hlo::TypeTag<double>{}); break;
    case hlo::S32: f(hlo::TypeTag<int32_t>{}); break;
    default: f(hlo::TypeTag<int64_t>{}); break;
  }
}

// Collapses `dims` around the sorted contiguous block [a, b): outer, mid, inner.
void Collapse(const std::vector<int64_t>& dims, int64_t a, int64_t b, int64_t* outer, int64_t* mid, int64_t* inner) {
  *outer = *mid = *inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) (i < a ? *outer : i < b ? *mid : *inner) *= dims[i];
}

}  // namespace

std::optional<Thunk> MakeFastReduceThunk(const Instruction& in, const ThunkIo& io) {
  if (in.operand_count() != 2 || !in.shape().IsArray()) return std::nullopt;
  const hlo::Shape& xs = in.operand(0)->shape();
  if (!ReducibleType(xs.element_type) || xs.ElementCount() == 0) return std::nullopt;
  std::optional<Opcode> op = eval::MatchScalarBinary(*in.to_apply());
  if (!op || (*op != Opcode::kAdd && *op != Opcode::kMultiply && *op != Opcode::kMaximum && *op != Opcode::kMinimum))
    return std::nullopt;
  const auto& d = in.dimensions;  // sorted
  for (size_t k = 1; k < d.size(); ++k)
    if (d[k] != d[k - 1] + 1) return std::nullopt;
  if (d.empty()) return std::nullopt;
  int64_t outer, mid, inner;
  Collapse(xs.dims, d.front(), d.back() + 1, &outer, &mid, &inner);
  BufferRef x = io.inputs[0], init = io.inputs[1], out = io.outputs[0];
  Opcode rop = *op;
  Thunk t;
  t.name = in.name();
  DispatchReducible(xs.element_type, [&](auto tag) {
   DispatchReducer(rop, [&](auto r) {
    using T = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      const T* X = static_cast<const T*>(f.Ptr(x));
      T* O = static_cast<T*>(f.Ptr(out));
      const T v0 = *static_cast<const T*>(f.Ptr(init));
      // Work items: (outer index, chunk of the inner dim), so a single
      // outer row (batch 1) still spreads over the threads.
      int64_t chunk = inner == 1 ? 1 : std::max<int64_t>(16, (inner + 7) / 8);
      int64_t chunks = (inner + chunk - 1) / chunk;
#pragma omp parallel for if (outer * mid * inner > 65536) schedule(static)
      for (int64_t item = 0; item < outer * chunks; ++item) {
        int64_t o = item / chunks, i0 = (item % chunks) * chunk, i1 = std::min(inner, i0 + chunk);
        T* dst = O + o * inner;
        const T* src = X + o * mid * inner;
        if (inner == 1) {
          dst[0] = ReduceContiguous(r, v0, src, mid);
        } else {
          for (int64_t i = i0; i < i1; ++i) dst[i] = v0;
          for (int64_t m = 0; m < mid; ++m) {
            const T* row = src + m * inner;
            for (int64_t i = i0; i < i1; ++i) dst[i] = r.Apply(dst[i], row[i]);
          }
        }
      }
      return absl::OkStatus();
    };
   });
  });
  return t;
}

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
    identity = (*op == Opcode::kMaximum && init == static_cast<double>(xs.element_type == hlo::S32 ? INT32_MIN : INT64_MIN)) ||
               (*op == Opcode::kMinimum && init == static_cast<double>(xs.element_type == hlo::S32 ? INT32_MAX : INT64_MAX));
  }
  if (!identity || xs.rank() > 8) return std::nullopt;
  for (const auto& w : in.window.dimensions)
    if (w.base_dilation != 1 || w.window_reversal) return std::nullopt;
  const hlo::Shape& os = in.shape();
  if (os.ElementCount() == 0) return std::nullopt;
  int64_t r = xs.rank();
  // The last dim is vectorized when its window is trivial (channels-last pooling).
  bool vec = in.window.dimensions.back().size == 1 && in.window.dimensions.back().stride == 1 &&
             in.window.dimensions.back().padding_low == 0 && in.window.dimensions.back().padding_high == 0;
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
          const auto& w = win.dimensions[d];
          int64_t start = idx[d] * w.stride - w.padding_low;
          int64_t first = 0;
          while (first < w.size && start + first * w.window_dilation < 0) ++first;
          int64_t last = w.size;
          while (last > first && start + (last - 1) * w.window_dilation >= in_dims[d]) --last;
          lo[d] = (start + first * w.window_dilation) * xst[d];
          cnt[d] = last - first;
          step[d] = w.window_dilation * xst[d];
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

template <typename F>
bool DispatchWidth(int width, F&& f) {
  switch (width) {
    case 1: f(hlo::TypeTag<uint8_t>{}); return true;
    case 2: f(hlo::TypeTag<uint16_t>{}); return true;
    case 4: f(hlo::TypeTag<uint32_t>{}); return true;
    case 8: f(hlo::TypeTag<uint64_t>{}); return true;
    default: return false;
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
  BufferRef x = io.inputs[0], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  bool ok = DispatchWidth(hlo::ByteWidth(os.element_type), [&](auto tag) {
    using W = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      StridedCopy<W>(static_cast<const W*>(f.Ptr(x)), static_cast<W*>(f.Ptr(out)), dims, strides, base);
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
  return t;
}

}  // namespace xonnx::cpu
