// Elementwise transcendental functions over float arrays, written so that the
// compiler vectorizes them: the standard library's expf is a call per
// element, which left softmax and sigmoid loops an order of magnitude slower
// than the arithmetic around them.
#ifndef XONNX_BACKENDS_CPU_VECTOR_MATH_H_
#define XONNX_BACKENDS_CPU_VECTOR_MATH_H_

#include <cstdint>

namespace xonnx::cpu {

// y[i] = exp(x[i]), within 2 ulp of the correctly rounded result for every
// float; NaN, infinities, overflow and results in the subnormal range as
// std::exp gives them. `x` and `y` may be the same array.
void ExpF32(const float* x, float* y, int64_t n);

// y[i] = 1 / (1 + exp(-x[i])), the logistic sigmoid, with ExpF32's accuracy.
void LogisticF32(const float* x, float* y, int64_t n);

// The elementwise binary operations of fused loops on floats.
enum class Arith { kAdd, kSubtract, kMultiply, kDivide, kMaximum, kMinimum };

// y[i] = op(a[i], b[i]): the same results as the scalar operators (each
// one correctly rounded; maximum and minimum return a NaN operand, the
// first one if both are), on AVX2 when the CPU has it. `y` may be `a` or `b`.
void ArithF32(Arith op, const float* a, const float* b, float* y, int64_t n);

namespace internal {
// The baseline x86-64 (or other target) build of ExpF32 (false) and
// LogisticF32 (true), which those use on CPUs without AVX2 and FMA; for
// tests, which check both builds on any machine.
template <bool kLogistic>
void Portable(const float* x, float* y, int64_t n);
// The baseline build of ArithF32, for the same reason.
void PortableArith(Arith op, const float* a, const float* b, float* y, int64_t n);
}  // namespace internal

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_VECTOR_MATH_H_
