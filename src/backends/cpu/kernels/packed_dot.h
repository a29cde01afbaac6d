// What the two kernels of products by block-quantized weights share: the
// product's dimensions, the walk over weight rows whose sums are reduced
// 16 at a time, and the 8-bit-activation kernel's entry points
// (packed_dot_int8.cc), which the f32 kernel's thunk (packed_dot.cc) calls
// where the product allows it.
#ifndef XONNX_BACKENDS_CPU_KERNELS_PACKED_DOT_H_
#define XONNX_BACKENDS_CPU_KERNELS_PACKED_DOT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/fingerprint.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace xonnx::cpu::packed_dot {

struct Dims {
  int bits;
  int64_t block, blocks, n, k, rows;
  int64_t row_bytes;  // one weight row's packed bytes: blocks * block * bits / 8
  int64_t kp;         // the activation's padded row: whole chunks
  int shift;          // chunk -> block: c >> shift (blocks of at least a chunk)
  bool zeros;         // a zero point per block (else `zero` for all)
  float zero;
  bool int8;  // the activation may be rounded to 8 bits (packed_dot_int8.cc)
};

// Rows of the activation computed against one weight row at a time.
constexpr int64_t kRowTile = 8;
// Weight rows whose sums are reduced together (Reduce16).
constexpr int64_t kGroup = 16;
// How far ahead of what they read both kernels prefetch the weights.
constexpr int64_t kPrefetchBytes = 4096;
// Multiply-adds from which the weight rows are split between threads.
constexpr int64_t kParallel = 1 << 16;

// The 8-bit-activation kernel, for products whose dot allows it
// (hlo::kInt8ActivationsAttribute) on a CPU with AVX-512 VNNI: each block
// of an activation row is rounded to int8 with a scale of its own (its
// largest magnitude / 127), and each weight block's integers are multiplied
// by those in 8-bit products summed in 32 bits (VPDPBUSD), then scaled
// once per block: y = sum over blocks of scale_w * scale_x * sum((q_w -
// zero) * q_x). The bytes Int8Prepare writes for `d.rows` rows.
size_t Int8PreparedSize(const Dims& d);
// False, writing nothing usable, when a value of x is not finite (the f32
// kernel then gives the NaN or infinity it should) or the zero point all
// blocks share is not a whole number.
bool Int8Prepare(const Dims& d, const float* x, uint8_t* prepared);
// The same bytes computed one value at a time: the definition the vector
// preparation must match byte for byte (tested), and the preparation where
// AVX-512 VNNI is missing.
bool Int8PrepareReference(const Dims& d, const float* x, uint8_t* prepared);
// y's columns [n0, n1) for every row.
void Int8Rows(const Dims& d, const uint8_t* prepared, const uint8_t* packed, const float* scales, const float* zeros,
              float* y, int64_t n0, int64_t n1);

// 4-bit weights laid out again when the program is made
// (packed_dot_interleaved.cc): per 16 weight rows and per 32-bit word of a
// row (8 weights), the 16 rows' words side by side; per 16 rows and
// block, the 16 rows' scales, and zero points where each block has its
// own. Rows past N are zeros.
struct Interleaved {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<uint32_t[], Free> codes;
  std::unique_ptr<float[], Free> scales;
  std::unique_ptr<float[], Free> zeros;  // null: d.zero for all blocks
  int64_t groups = 0;                    // of 16 weight rows
  Fingerprint128 codes_print;            // of the packed bytes it was made from
};
// The layout of `packed` with its `scales` and `zeros` (f32 [N, blocks],
// null for one zero point), shared with every other program that reads
// the same weights; null where it does not apply (8 bits, a scale or zero
// point that is not finite) or the vector kernel is not built.
std::shared_ptr<const Interleaved> Interleave(const Dims& d, const uint8_t* packed, const float* scales,
                                              const float* zeros);
// y's columns [16 g0, 16 g1) (clipped to N) for every row of x [rows, K],
// rows `ldx` apart, which must hold zeros past K up to the last block's
// end; with zero points, `x_sums` holds each row's sums per block
// ([rows, blocks]). Needs AVX-512 (F, BW, VL, DQ).
void InterleavedRows(const Dims& d, const Interleaved& w, const float* x, int64_t ldx, const float* x_sums, float* y,
                     int64_t g0, int64_t g1);
// One product of a group that reads one activation: its dims (N its own;
// K, blocks and rows those of every member), its layout and its result.
struct InterleavedMember {
  Dims d;
  const Interleaved* w;
  float* y;
};
// y = x . W^T for every member, on the interleaved layout: x padded with
// zeros to whole blocks where K ends inside one (and with zero points per
// block, its sums per block) once for all, and the members' groups of 16
// weight rows split between the threads of one team. False, computing
// nothing, for an activation value that is not finite or so large that a
// block's unscaled sum could overflow where the program's scaled terms do
// not (16 * block * |x| within the float range): sums such as
// sum(q * x) - z * sum(x) would make a NaN of what is an infinity in the
// program, so the other kernel runs (packed_dot_group.cc).
bool InterleavedProducts(absl::Span<const InterleavedMember> members, const float* x);

// A product of a group whose activation is rounded to int8 once for all
// (Int8Prepare): its dims and its operands.
struct Int8Member {
  Dims d;
  const uint8_t* packed;
  const float* scales;
  const float* zeros;
  float* y;
};
// y = the product by the rounded activation for every member, the
// members' runs of 16 weight rows split between the threads of one team.
// False, computing nothing, where Int8Prepare refuses x (not finite).
bool Int8Products(absl::Span<const Int8Member> members, const float* x);

// How a product prepares its activation, which products of one
// activation prepare once for all when they share it: on the interleaved
// layout (f32, InterleavedProducts) or rounded to int8 (Int8Products);
// kNone where its weights are read at run time or it runs on oneDNN's
// GEMM (prompts).
enum class Shared { kNone = 0, kInterleaved = 1, kInt8 = 2 };

// Whether products of dims `a` and `b` that read one activation may share
// its preparation: the same K, blocks, rows and bits, and, rounded to
// int8, the same zero point or zero points per block.
bool SamePreparation(const Dims& a, const Dims& b);

// A product as the program runs it (packed_dot.cc): its dims, buffers,
// the weights known when the program is made, and their interleaved
// layout where the product runs on it.
struct Product {
  Dims d;
  BufferRef x, packed, scales, zeros, y;
  bool vector = false;  // the AVX-512 kernels
  Shared shared = Shared::kNone;
  std::shared_ptr<const hlo::Literal> zero_values, packed_values;
  std::shared_ptr<const Interleaved> interleaved;
};
// A product's operands in a call.
struct Operands {
  const float* x;
  const uint8_t* packed;
  const float* scales;
  const float* zeros;  // null: d.zero for all blocks
  float* y;
};
Operands OperandsOf(const Product& p, Frame& f);
// The product of `dot` on the packed weights `w`; nullopt when the buffers
// do not match what `w` says the kernel reads.
std::optional<Product> PlanProduct(const hlo::Instruction& dot, const ThunkIo& io, const PackedWeights& w);
// Runs it on the kernel its form takes.
absl::Status RunProduct(const Product& p, Frame& f);

// One pass over the activation x [rows, blocks * block], as InterleavedRows
// reads it: false when a value is not finite or its magnitude is above
// `bound`; else, with `sums` (non-null), each row's sums per block
// ([rows, blocks]). Needs AVX-512 (F, BW, VL, DQ).
bool ScanActivation(const Dims& d, const float* x, float bound, float* sums);

#if defined(__x86_64__) && defined(__GNUC__)
#define XONNX_PACKED_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

// The first n of 16 lanes (none for n <= 0, all from 16): the mask of a
// row's last, partial vector, n its values left.
inline __mmask16 FirstLanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : static_cast<__mmask16>((1u << n) - 1);
}
// Lanes 0, 2, ..., 30 of two vectors (VPERMT2PS / VPERMT2D indices): a
// chunk's even values; add 1 for the odd ones.
XONNX_PACKED_AVX512 inline __m512i EvenLanes() {
  return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}

// out[i] = the sum of v[i]'s 16 lanes, for 16 vectors at once.
XONNX_PACKED_AVX512 void Reduce16(const __m512* v, float* out);

// Weight rows [n0, n1) for every row of the activation, kGroup weight
// rows at a time, whose sums are reduced together: column(j, r0, rows,
// out) leaves weight row j's sums for activation rows [r0, r0 + rows)
// in out[q * kGroup], q < rows, each a vector whose lanes add up to y.
template <typename Column>
XONNX_PACKED_AVX512 void ReduceColumns(const Dims& d, float* y, int64_t n0, int64_t n1, Column column) {
  __m512 sums[kRowTile * kGroup];
  for (int64_t r = 0; r < d.rows; r += kRowTile) {
    const int64_t rows = std::min(kRowTile, d.rows - r);
    for (int64_t g = n0; g < n1; g += kGroup) {
      const int64_t count = std::min(kGroup, n1 - g);
      // Columns past the last weight row are reduced too: zeros.
      for (int64_t q = 0; q < rows; ++q)
        for (int64_t i = count; i < kGroup; ++i) sums[q * kGroup + i] = _mm512_setzero_ps();
      for (int64_t i = 0; i < count; ++i) column(g + i, r, rows, sums + i);
      for (int64_t q = 0; q < rows; ++q) {
        float reduced[kGroup];
        Reduce16(sums + q * kGroup, reduced);
        std::memcpy(y + (r + q) * d.n + g, reduced, count * sizeof(float));
      }
    }
  }
}
#endif

}  // namespace xonnx::cpu::packed_dot

#endif  // XONNX_BACKENDS_CPU_KERNELS_PACKED_DOT_H_
