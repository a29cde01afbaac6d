// Matrix-vector products with constant weights: a recurrent cell's step
// (h times the recurrent weights), a decoder's projections at batch 1, a
// classifier's head. oneDNN's matmul spends about 7 us a call on such a
// product of 128 x 512 weights, mostly on its fixed cost, which a
// recurrent net pays per time step and direction; this kernel reads
// weights packed at compile time in panels of 16 columns and takes about
// one microsecond.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/shared_packing.h"
#include "backends/cpu/runtime/thunks.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace xonnx::cpu {

namespace {

constexpr int64_t kPanelLanes = 16;  // columns per panel
constexpr int64_t kGroup = 4;        // panels computed together (independent sums)
// Multiply-adds from which both threads share a call: 128K (512 KB of
// weights), above a recurrent step's (a GRU's 192 x 576, whose weights
// stay in cache from step to step) and below a squeeze-excitation layer's
// 960 x 240, whose weights come from memory (0.05 ms on one thread, 0.02
// on two; 256K kept it on one).
constexpr int64_t kParallel = 1 << 17;

// The weights as [N / 16 panels][K][16], zero-padded to whole panels: a
// panel's column sums advance one row of 16 contiguous values per k.
struct Packed {
  int64_t k = 0, n = 0, panels = 0;
  std::vector<float> w;
};

// Packs constant weights `c` (row-major [K, N] when `k_major`, else [N, K]).
std::shared_ptr<Packed> PackNew(const hlo::Literal& c, int64_t k, int64_t n, bool k_major) {
  auto p = std::make_shared<Packed>();
  p->k = k;
  p->n = n;
  p->panels = (n + kPanelLanes - 1) / kPanelLanes;
  p->w.assign(p->panels * k * kPanelLanes, 0.0f);
  const float* src = c.data<float>();
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < k; ++i)
      p->w[(j / kPanelLanes * k + i) * kPanelLanes + j % kPanelLanes] = k_major ? src[i * n + j] : src[j * k + i];
  return p;
}

// The packing of `c`, shared by every product that reads the same
// constant (an unrolled recurrence has one dot per time step on the same
// weights: a copy for each made every step read its weights from memory,
// 16 us instead of 1 per step).
std::shared_ptr<Packed> Pack(const hlo::Literal& c, int64_t k, int64_t n, bool k_major) {
  struct Key {
    const void* data;
    int64_t k, n;
    bool k_major;
    bool operator==(const Key&) const = default;
  };
  return SharedPacking<Packed>(Key{c.untyped_data(), k, n, k_major}, [&] { return PackNew(c, k, n, k_major); });
}

// y[panels p0..p1) = x . w for one row x of length K.
void RowPortable(const Packed& p, const float* x, float* y, int64_t p0, int64_t p1) {
  for (int64_t q = p0; q < p1; ++q) {
    float acc[kPanelLanes] = {};
    const float* w = p.w.data() + q * p.k * kPanelLanes;
    for (int64_t i = 0; i < p.k; ++i)
      for (int64_t l = 0; l < kPanelLanes; ++l) acc[l] += x[i] * w[i * kPanelLanes + l];
    int64_t cols = std::min(kPanelLanes, p.n - q * kPanelLanes);
    std::memcpy(y + q * kPanelLanes, acc, cols * sizeof(float));
  }
}

using RowKernel = void (*)(const Packed& p, const float* x, float* y, int64_t p0, int64_t p1);

#if defined(__x86_64__) && defined(__GNUC__)
// Four panels at a time: four independent chains of FMAs hide their
// latency, and x[k] is broadcast once for the four.
__attribute__((target("avx512f"))) void RowAvx512(const Packed& p, const float* x, float* y, int64_t p0, int64_t p1) {
  const int64_t k = p.k, stride = k * kPanelLanes;
  auto store = [&](int64_t q, __m512 v) __attribute__((target("avx512f"))) {
    int64_t cols = std::min(kPanelLanes, p.n - q * kPanelLanes);
    _mm512_mask_storeu_ps(y + q * kPanelLanes, static_cast<__mmask16>((1u << cols) - 1), v);
  };
  int64_t q = p0;
  for (; q + kGroup <= p1; q += kGroup) {
    const float* w = p.w.data() + q * stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < k; ++i) {
      __m512 xi = _mm512_set1_ps(x[i]);
      a0 = _mm512_fmadd_ps(xi, _mm512_loadu_ps(w + i * kPanelLanes), a0);
      a1 = _mm512_fmadd_ps(xi, _mm512_loadu_ps(w + stride + i * kPanelLanes), a1);
      a2 = _mm512_fmadd_ps(xi, _mm512_loadu_ps(w + 2 * stride + i * kPanelLanes), a2);
      a3 = _mm512_fmadd_ps(xi, _mm512_loadu_ps(w + 3 * stride + i * kPanelLanes), a3);
    }
    store(q, a0);
    store(q + 1, a1);
    store(q + 2, a2);
    store(q + 3, a3);
  }
  for (; q < p1; ++q) {
    const float* w = p.w.data() + q * stride;
    __m512 a = _mm512_setzero_ps();
    for (int64_t i = 0; i < k; ++i) a = _mm512_fmadd_ps(_mm512_set1_ps(x[i]), _mm512_loadu_ps(w + i * kPanelLanes), a);
    store(q, a);
  }
}

RowKernel PickRow() { return CpuHasAvx512() ? RowAvx512 : RowPortable; }
#else
RowKernel PickRow() { return RowPortable; }
#endif

}  // namespace

bool GemvTakes(const hlo::Instruction& dot) {
  if (dot.opcode() != hlo::Opcode::kDot || dot.shape().element_type != hlo::F32) return false;
  const hlo::Instruction* lhs = dot.operand(0);
  const hlo::Instruction* rhs = dot.operand(1);
  const hlo::DotDimensionNumbers& d = dot.dot_dnums;
  if (rhs->opcode() != hlo::Opcode::kConstant || rhs->shape().element_type != hlo::F32 ||
      lhs->shape().element_type != hlo::F32 || !d.lhs_batch_dimensions.empty() || rhs->shape().rank() != 2 ||
      d.lhs_contracting_dimensions.size() != 1 || d.rhs_contracting_dimensions.size() != 1)
    return false;
  const int64_t lrank = lhs->shape().rank();
  if ((lrank != 1 && lrank != 2) || d.lhs_contracting_dimensions[0] != lrank - 1) return false;
  const int64_t rc = d.rhs_contracting_dimensions[0];
  const int64_t rows = lrank == 2 ? lhs->shape().dims[0] : 1;
  return rows <= kGemvMaxRows && rhs->shape().dims[rc] != 0 && rhs->shape().dims[1 - rc] != 0;
}

std::optional<Thunk> MakeGemvThunk(const hlo::Instruction& dot, const ThunkIo& io) {
  if (!GemvTakes(dot)) return std::nullopt;
  const hlo::Instruction* lhs = dot.operand(0);
  const hlo::Instruction* rhs = dot.operand(1);
  const hlo::DotDimensionNumbers& d = dot.dot_dnums;
  const int64_t lrank = lhs->shape().rank();
  const int64_t rc = d.rhs_contracting_dimensions[0];
  const int64_t k = rhs->shape().dims[rc], n = rhs->shape().dims[1 - rc];
  const int64_t rows = lrank == 2 ? lhs->shape().dims[0] : 1;
  std::shared_ptr<Packed> p = Pack(*rhs->literal, k, n, rc == 0);
  static const RowKernel row = PickRow();
  BufferRef x_ref = io.inputs.at(0), y_ref = io.outputs.at(0);
  Thunk t;
  t.name = dot.name();
  t.run = [p, x_ref, y_ref, rows](Frame& f) -> absl::Status {
    const float* x = static_cast<const float*>(f.Ptr(x_ref));
    float* y = static_cast<float*>(f.Ptr(y_ref));
    if (rows * p->k * p->n < kParallel) {
      for (int64_t r = 0; r < rows; ++r) row(*p, x + r * p->k, y + r * p->n, 0, p->panels);
      return absl::OkStatus();
    }
    // Columns split between the threads in whole groups of panels.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < (p->panels + kGroup - 1) / kGroup; ++g)
        row(*p, x + r * p->k, y + r * p->n, g * kGroup, std::min(p->panels, (g + 1) * kGroup));
    return absl::OkStatus();
  };
  return t;
}

}  // namespace xonnx::cpu
