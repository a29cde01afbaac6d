// Products by a constant matrix with a few nonzeros in each output row:
// the separable interpolation matrices of Resize and Upsample (linear: two
// neighbours per output, cubic: four, nearest: one), applied to one axis of
// an activation. Multiplied densely, a 160-to-320 upscale does 160
// multiply-adds per output element where two are needed; oneDNN ran U^2-Net
// style decoders' upsamplings at about 20 ms a call, mostly on zeros. This
// kernel keeps, per output row, the nonzero columns and their weights, and
// reads just those.
#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/runtime/thunks.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace xonnx::cpu {

namespace {

// Nonzeros per output row the kernel takes (cubic interpolation's four).
constexpr int64_t kMaxTaps = 4;
// Columns of the activation computed together when the contracted axis is
// not the last: one vector of floats read contiguously from each tap's row.
constexpr int64_t kTile = 16;

// The matrix by output row: taps[o * kMaxTaps + t] = (column, weight) for
// t < count[o]; and the same by tap for 16 outputs at a time, for the
// vector kernel: lanes[(block * taps + t) * 16 + l] is output 16 * block + l's
// tap t, present where bit l of mask[block * taps + t] is set.
struct Taps {
  int64_t in = 0, out = 0;
  std::vector<int32_t> count;
  std::vector<int32_t> column;
  std::vector<float> weight;
  int64_t taps = 0;  // the most of any row
  std::vector<int32_t> lane_column;
  std::vector<float> lane_weight;
  std::vector<uint16_t> mask;
};

void ByLane(Taps* t) {
  for (int64_t o = 0; o < t->out; ++o) t->taps = std::max<int64_t>(t->taps, t->count[o]);
  const int64_t blocks = (t->out + 15) / 16;
  t->lane_column.assign(blocks * t->taps * 16, 0);
  t->lane_weight.assign(blocks * t->taps * 16, 0.0f);
  t->mask.assign(blocks * t->taps, 0);
  for (int64_t o = 0; o < t->out; ++o)
    for (int32_t k = 0; k < t->count[o]; ++k) {
      const int64_t slot = o / 16 * t->taps + k;
      t->lane_column[slot * 16 + o % 16] = t->column[o * kMaxTaps + k];
      t->lane_weight[slot * 16 + o % 16] = t->weight[o * kMaxTaps + k];
      t->mask[slot] |= static_cast<uint16_t>(1u << (o % 16));
    }
}

// The taps of constant [out, in] (or [in, out] when `in_major`) weights, or
// null when a row has more than kMaxTaps nonzeros.
std::shared_ptr<Taps> TapsOf(const hlo::Literal& c, int64_t in, int64_t out, bool in_major) {
  auto t = std::make_shared<Taps>();
  t->in = in;
  t->out = out;
  t->count.assign(out, 0);
  t->column.assign(out * kMaxTaps, 0);
  t->weight.assign(out * kMaxTaps, 0.0f);
  const float* w = c.data<float>();
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) {
      const float v = in_major ? w[i * out + o] : w[o * in + i];
      if (v == 0.0f) continue;
      if (t->count[o] == kMaxTaps) return nullptr;
      t->column[o * kMaxTaps + t->count[o]] = static_cast<int32_t>(i);
      t->weight[o * kMaxTaps + t->count[o]] = v;
      ++t->count[o];
    }
  return t;
}

// x viewed as [a, in, b] (the contracted axis in the middle), y as
// [a, b, out] (the dot's order: the free dims, then the weights' out).
struct Geometry {
  int64_t a = 1, b = 1;
};

// The contracted axis last: each output row of a reads its own row of x.
void LastAxis(const Taps& t, const float* x, float* y, int64_t a0, int64_t a1) {
  for (int64_t a = a0; a < a1; ++a) {
    const float* row = x + a * t.in;
    float* dst = y + a * t.out;
    for (int64_t o = 0; o < t.out; ++o) {
      const int32_t* col = &t.column[o * kMaxTaps];
      const float* w = &t.weight[o * kMaxTaps];
      float acc = 0.0f;
      for (int32_t k = 0; k < t.count[o]; ++k) acc += w[k] * row[col[k]];
      dst[o] = acc;
    }
  }
}

using LastAxisKernel = void (*)(const Taps& t, const float* x, float* y, int64_t a0, int64_t a1);

#if defined(__x86_64__) && defined(__GNUC__)
// 16 outputs at a time: each tap's 16 columns gathered from the row and
// multiplied by its 16 weights, lanes without that tap left alone.
__attribute__((target("avx512f"))) void LastAxisAvx512(const Taps& t, const float* x, float* y, int64_t a0,
                                                       int64_t a1) {
  const int64_t blocks = (t.out + 15) / 16;
  for (int64_t a = a0; a < a1; ++a) {
    const float* row = x + a * t.in;
    float* dst = y + a * t.out;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t k = 0; k < t.taps; ++k) {
        const int64_t slot = blk * t.taps + k;
        const __mmask16 m = t.mask[slot];
        const __m512i col = _mm512_loadu_si512(&t.lane_column[slot * 16]);
        const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, col, row, 4);
        acc = _mm512_mask3_fmadd_ps(_mm512_loadu_ps(&t.lane_weight[slot * 16]), v, acc, m);
      }
      const int64_t left = std::min<int64_t>(16, t.out - blk * 16);
      _mm512_mask_storeu_ps(dst + blk * 16, static_cast<__mmask16>((1u << left) - 1), acc);
    }
  }
}

LastAxisKernel PickLastAxis() { return CpuHasAvx512() ? LastAxisAvx512 : LastAxis; }
#else
LastAxisKernel PickLastAxis() { return LastAxis; }
#endif

// The contracted axis inside: kTile columns of b at a time, each tap's row
// read contiguously, each output row written as a run over o.
void InnerAxis(const Taps& t, const Geometry& g, const float* x, float* y, int64_t a, int64_t b0) {
  const int64_t cols = std::min(kTile, g.b - b0);
  const float* slab = x + a * t.in * g.b + b0;
  float* dst = y + (a * g.b + b0) * t.out;
  for (int64_t o = 0; o < t.out; ++o) {
    const int32_t* col = &t.column[o * kMaxTaps];
    const float* w = &t.weight[o * kMaxTaps];
    float acc[kTile] = {};
    for (int32_t k = 0; k < t.count[o]; ++k) {
      const float* src = slab + col[k] * g.b;
      if (cols == kTile) {
        for (int64_t l = 0; l < kTile; ++l) acc[l] += w[k] * src[l];
      } else {
        for (int64_t l = 0; l < cols; ++l) acc[l] += w[k] * src[l];
      }
    }
    for (int64_t l = 0; l < cols; ++l) dst[l * t.out + o] = acc[l];
  }
}

// The in-place form (the axis keeps its place): output row (a, o) is the
// weighted sum of the taps' rows of x, each b floats long and contiguous.
void Rows(const Taps& t, const Geometry& g, const float* x, float* y, int64_t a, int64_t o) {
  const float* slab = x + a * t.in * g.b;
  float* dst = y + (a * t.out + o) * g.b;
  const int32_t* col = &t.column[o * kMaxTaps];
  const float* w = &t.weight[o * kMaxTaps];
  const int32_t n = t.count[o];
  if (n == 0) {
    std::fill(dst, dst + g.b, 0.0f);
    return;
  }
  const float* s0 = slab + col[0] * g.b;
  for (int64_t l = 0; l < g.b; ++l) dst[l] = w[0] * s0[l];
  for (int32_t k = 1; k < n; ++k) {
    const float* src = slab + col[k] * g.b;
    for (int64_t l = 0; l < g.b; ++l) dst[l] += w[k] * src[l];
  }
}

using RowsKernel = void (*)(const Taps& t, const Geometry& g, const float* x, float* y, int64_t a, int64_t o);

#if defined(__x86_64__) && defined(__GNUC__)
// 16 floats at a time, every tap's product added before the one store.
__attribute__((target("avx512f"))) void RowsAvx512(const Taps& t, const Geometry& g, const float* x, float* y,
                                                   int64_t a, int64_t o) {
  const float* slab = x + a * t.in * g.b;
  float* dst = y + (a * t.out + o) * g.b;
  const int32_t n = t.count[o];
  const float* src[kMaxTaps];
  __m512 w[kMaxTaps];
  for (int32_t k = 0; k < n; ++k) {
    src[k] = slab + t.column[o * kMaxTaps + k] * g.b;
    w[k] = _mm512_set1_ps(t.weight[o * kMaxTaps + k]);
  }
  for (int64_t l = 0; l < g.b; l += 16) {
    const __mmask16 m = g.b - l >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (g.b - l)) - 1);
    __m512 acc = _mm512_setzero_ps();
    for (int32_t k = 0; k < n; ++k) acc = _mm512_fmadd_ps(w[k], _mm512_maskz_loadu_ps(m, src[k] + l), acc);
    _mm512_mask_storeu_ps(dst + l, m, acc);
  }
}

RowsKernel PickRows() { return CpuHasAvx512() ? RowsAvx512 : Rows; }
#else
RowsKernel PickRows() { return Rows; }
#endif

// The taps of the dot's constant weights when the kernel takes its form
// (by output row only: the planner asks, the thunk adds the lane layout).
std::shared_ptr<Taps> TapsOfDot(const hlo::Instruction& dot, bool any_width = false) {
  if (dot.opcode() != hlo::Opcode::kDot || dot.shape().element_type != hlo::F32) return nullptr;
  const hlo::DotDimensionNumbers& d = dot.dot_dnums;
  if (d.lhs_contracting_dimensions.size() != 1 || d.rhs_contracting_dimensions.size() != 1) return nullptr;
  const bool in_place = SparseDotInPlace(dot);
  const hlo::Instruction* x = dot.operand(in_place ? 1 : 0);
  const hlo::Instruction* w = dot.operand(in_place ? 0 : 1);
  if (x->shape().element_type != hlo::F32 || SparseWeightsConstant(x)) return nullptr;
  const hlo::Instruction* c = SparseWeightsConstant(w);
  if (!c) return nullptr;
  int64_t in, out;
  bool in_major = false;
  if (in_place) {  // [..., out, in]
    in = w->shape().dims.back();
    out = w->shape().dims[w->shape().rank() - 2];
  } else {
    if (!d.lhs_batch_dimensions.empty() || w->shape().rank() != 2) return nullptr;
    const int64_t rc = d.rhs_contracting_dimensions[0];
    in = w->shape().dims[rc];
    out = w->shape().dims[1 - rc];
    in_major = rc == 0;
  }
  if (c->shape().ElementCount() != in * out) return nullptr;
  // Few inputs per output are no saving over a dense product of the
  // operand as it is; in place the product saves its transposes too.
  if ((!in_place && !any_width && in < 2 * kMaxTaps) || in == 0 || out == 0 || in > (int64_t{1} << 30)) return nullptr;
  return TapsOf(*c->literal, in, out, in_major);
}

}  // namespace

const hlo::Instruction* SparseWeightsConstant(const hlo::Instruction* w) {
  // Reshapes keep the values' order; a broadcast that only adds leading
  // dims repeats the whole matrix.
  while (w->opcode() == hlo::Opcode::kReshape ||
         (w->opcode() == hlo::Opcode::kBroadcast && w->operand(0)->shape().rank() == 2 &&
          w->dimensions == std::vector<int64_t>{w->shape().rank() - 2, w->shape().rank() - 1}))
    w = w->operand(0);
  return w->opcode() == hlo::Opcode::kConstant && w->shape().element_type == hlo::F32 ? w : nullptr;
}

const hlo::Instruction* SparseDotInPlaceMatrix(const hlo::Instruction& dot) {
  if (dot.opcode() != hlo::Opcode::kDot) return nullptr;
  const hlo::DotDimensionNumbers& d = dot.dot_dnums;
  const int64_t nb = static_cast<int64_t>(d.lhs_batch_dimensions.size());
  const hlo::Instruction* lhs = dot.operand(0);
  if (lhs->shape().rank() != nb + 2 || dot.operand(1)->shape().rank() < nb + 1) return nullptr;
  for (int64_t k = 0; k < nb; ++k)
    if (d.lhs_batch_dimensions[k] != k || d.rhs_batch_dimensions[k] != k) return nullptr;
  if (d.lhs_contracting_dimensions != std::vector<int64_t>{nb + 1} ||
      d.rhs_contracting_dimensions != std::vector<int64_t>{nb})
    return nullptr;
  // One [out, in] matrix for every batch: itself, or broadcast over the
  // batch dims (not a product by a constant of its own per batch, which
  // a constant-left MatMul folds to).
  const hlo::Instruction* m = lhs;
  if (nb > 0) {
    if (lhs->opcode() != hlo::Opcode::kBroadcast || lhs->dimensions != std::vector<int64_t>{nb, nb + 1}) return nullptr;
    m = lhs->operand(0);
  }
  const hlo::Instruction* c = SparseWeightsConstant(m);
  if (!c || c->shape().ElementCount() != m->shape().ElementCount()) return nullptr;
  return m;
}

bool SparseDotInPlace(const hlo::Instruction& dot) { return SparseDotInPlaceMatrix(dot) != nullptr; }

bool SparseDotTakes(const hlo::Instruction& dot) { return TapsOfDot(dot) != nullptr; }

bool SparseDotTakesInPlace(const hlo::Instruction& dot) { return TapsOfDot(dot, /*any_width=*/true) != nullptr; }

std::optional<Thunk> MakeSparseDotThunk(const hlo::Instruction& dot, const ThunkIo& io) {
  std::shared_ptr<Taps> taps = TapsOfDot(dot);
  if (!taps) return std::nullopt;
  ByLane(taps.get());
  const bool in_place = SparseDotInPlace(dot);
  const int64_t axis =
      in_place ? dot.dot_dnums.rhs_contracting_dimensions[0] : dot.dot_dnums.lhs_contracting_dimensions[0];
  const hlo::Instruction* x = dot.operand(in_place ? 1 : 0);
  Geometry g;
  const auto& dims = x->shape().dims;
  for (int64_t k = 0; k < static_cast<int64_t>(dims.size()); ++k) {
    if (k < axis) g.a *= dims[k];
    if (k > axis) g.b *= dims[k];
  }
  // The in-place form's weights are read from the taps; its activation is
  // its second input.
  BufferRef x_ref = io.inputs.at(in_place ? 1 : 0), y_ref = io.outputs.at(0);
  Thunk t;
  t.name = dot.name();
  t.run = [taps, g, in_place, x_ref, y_ref](Frame& f) -> absl::Status {
    const float* xp = static_cast<const float*>(f.Ptr(x_ref));
    float* yp = static_cast<float*>(f.Ptr(y_ref));
    const bool parallel = g.a * g.b * taps->out > 65536;
    if (g.b == 1) {
      static const LastAxisKernel last_axis = PickLastAxis();
#pragma omp parallel for if (parallel) schedule(static)
      for (int64_t a = 0; a < g.a; ++a) last_axis(*taps, xp, yp, a, a + 1);
      return absl::OkStatus();
    }
    if (in_place) {
      static const RowsKernel rows = PickRows();
      const int64_t out = taps->out;
#pragma omp parallel for if (parallel) schedule(static)
      for (int64_t r = 0; r < g.a * out; ++r) rows(*taps, g, xp, yp, r / out, r % out);
      return absl::OkStatus();
    }
    const int64_t tiles = (g.b + kTile - 1) / kTile;
#pragma omp parallel for collapse(2) if (parallel) schedule(static)
    for (int64_t a = 0; a < g.a; ++a)
      for (int64_t tile = 0; tile < tiles; ++tile) InnerAxis(*taps, g, xp, yp, a, tile * kTile);
    return absl::OkStatus();
  };
  return t;
}

}  // namespace xonnx::cpu
