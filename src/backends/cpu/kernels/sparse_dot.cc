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

// The taps of the dot's constant weights when the kernel takes its form
// (by output row only: the planner asks, the thunk adds the lane layout).
std::shared_ptr<Taps> TapsOfDot(const hlo::Instruction& dot) {
  if (dot.opcode() != hlo::Opcode::kDot || dot.shape().element_type != hlo::F32) return nullptr;
  const hlo::Instruction* x = dot.operand(0);
  const hlo::Instruction* w = dot.operand(1);
  const hlo::Shape& weights = w->shape();  // as the dot reads them
  const hlo::DotDimensionNumbers& d = dot.dot_dnums;
  // Through reshapes of the constant: the same values in the same order.
  while (w->opcode() == hlo::Opcode::kReshape) w = w->operand(0);
  if (w->opcode() != hlo::Opcode::kConstant || x->opcode() == hlo::Opcode::kConstant ||
      w->shape().element_type != hlo::F32 || x->shape().element_type != hlo::F32 || weights.rank() != 2 ||
      !d.lhs_batch_dimensions.empty() || d.lhs_contracting_dimensions.size() != 1 ||
      d.rhs_contracting_dimensions.size() != 1)
    return nullptr;
  const int64_t rc = d.rhs_contracting_dimensions[0];
  const int64_t in = weights.dims[rc], out = weights.dims[1 - rc];
  // Few inputs per output are no saving over the dense product.
  if (in < 2 * kMaxTaps || out == 0 || in > (int64_t{1} << 30)) return nullptr;
  return TapsOf(*w->literal, in, out, rc == 0);
}

}  // namespace

bool SparseDotTakes(const hlo::Instruction& dot) { return TapsOfDot(dot) != nullptr; }

std::optional<Thunk> MakeSparseDotThunk(const hlo::Instruction& dot, const ThunkIo& io) {
  std::shared_ptr<Taps> taps = TapsOfDot(dot);
  if (!taps) return std::nullopt;
  ByLane(taps.get());
  const int64_t axis = dot.dot_dnums.lhs_contracting_dimensions[0];
  const hlo::Instruction* x = dot.operand(0);
  Geometry g;
  const auto& dims = x->shape().dims;
  for (int64_t k = 0; k < static_cast<int64_t>(dims.size()); ++k) {
    if (k < axis) g.a *= dims[k];
    if (k > axis) g.b *= dims[k];
  }
  BufferRef x_ref = io.inputs.at(0), y_ref = io.outputs.at(0);
  Thunk t;
  t.name = dot.name();
  t.run = [taps, g, x_ref, y_ref](Frame& f) -> absl::Status {
    const float* xp = static_cast<const float*>(f.Ptr(x_ref));
    float* yp = static_cast<float*>(f.Ptr(y_ref));
    const bool parallel = g.a * g.b * taps->out > 65536;
    if (g.b == 1) {
      static const LastAxisKernel last_axis = PickLastAxis();
#pragma omp parallel for if (parallel) schedule(static)
      for (int64_t a = 0; a < g.a; ++a) last_axis(*taps, xp, yp, a, a + 1);
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
