// Conversions between f32 and the 16-bit floats (f16, bf16) over arrays, for
// the fused loops. A half-precision program that rounds after every
// operation converts each intermediate value down and back up, so these run
// as often as the arithmetic itself and must be as fast: one vector
// instruction per 8 values where the CPU has F16C, branch-free integer code
// (which the compiler vectorizes) for bf16.
//
// The results are those of xonnx::FloatToHalfBits, HalfBitsToFloat,
// FloatToBF16Bits and BF16BitsToFloat bit for bit (round to nearest, ties to
// even, subnormals kept), except that a NaN may carry a different payload:
// it is still a NaN of the same sign.
#ifndef XONNX_BACKENDS_CPU_KERNELS_HALF_CONVERT_H_
#define XONNX_BACKENDS_CPU_KERNELS_HALF_CONVERT_H_

#include <cstdint>
#include <vector>

namespace xonnx::cpu {

void ConvertF32ToF16(const float* x, uint16_t* y, int64_t n);
void ConvertF16ToF32(const uint16_t* x, float* y, int64_t n);
void ConvertF32ToBF16(const float* x, uint16_t* y, int64_t n);
void ConvertBF16ToF32(const uint16_t* x, float* y, int64_t n);

namespace internal {
// One build of the four conversions: the portable one, the AVX2 + F16C one.
struct HalfConvertBuild {
  const char* name;
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_bf16)(const float* x, uint16_t* y, int64_t n);
  void (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);
};

// The builds this CPU can run, the portable one first; the functions above
// use the last. For tests, which check each of them on any machine.
std::vector<HalfConvertBuild> HalfConvertBuilds();
}  // namespace internal

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_KERNELS_HALF_CONVERT_H_
