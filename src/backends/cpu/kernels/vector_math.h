// Elementwise transcendental functions over float arrays, written so that the
// compiler vectorizes them: the standard library's expf is a call per
// element, which left softmax and sigmoid loops an order of magnitude slower
// than the arithmetic around them.
#ifndef XONNX_BACKENDS_CPU_KERNELS_VECTOR_MATH_H_
#define XONNX_BACKENDS_CPU_KERNELS_VECTOR_MATH_H_

#include <cstdint>
#include <vector>

namespace xonnx::cpu {

// y[i] = exp(x[i]), within 2 ulp of the correctly rounded result for every
// float; NaN, infinities, overflow and results in the subnormal range as
// std::exp gives them. `x` and `y` may be the same array.
void ExpF32(const float* x, float* y, int64_t n);

// y[i] = 1 / (1 + exp(-x[i])), the logistic sigmoid, with ExpF32's accuracy.
void LogisticF32(const float* x, float* y, int64_t n);

// y[i] = x[i] / (1 + exp(-x[i])), swish (SiLU, x times its logistic), with
// ExpF32's accuracy and one rounding after it; -0 where exp(-x) overflows
// (x below about -88.72, where |swish(x)| < 3e-37), as x times the float
// logistic gives. `x` and `y` may be the same array.
void SwishF32(const float* x, float* y, int64_t n);

// y[i] = tanh(x[i]), within 4 ulp of the correctly rounded result (the
// odd Taylor series for |x| < 0.25, else from ExpF32); +-1 at infinities,
// NaN for NaN. `x` and `y` may be the same array.
void TanhF32(const float* x, float* y, int64_t n);

// y[i] = erf(x[i]) (GELU's exact form), within 3e-7 of it and 4 ulp
// where |x| < 0.75 (the odd Taylor series there; beyond, 1 - a polynomial
// in 1 / (1 + 0.33|x|) times ExpF32(-x^2)); +-1 from |x| = 4, NaN for
// NaN. `x` and `y` may be the same array.
void ErfF32(const float* x, float* y, int64_t n);

// Whether the five above run 16 lanes wide on this CPU (AVX-512). Then
// SwishF32 over a convolution's result measured about twice as fast as
// oneDNN 2.6's swish post-op, which computes the same function in the
// convolution's kernel.
bool VectorMathIs16Wide();

// The elementwise binary operations of fused loops on floats.
enum class Arith { kAdd, kSubtract, kMultiply, kDivide, kMaximum, kMinimum };

// y[i] = op(a[i], b[i]): the same results as the scalar operators (each
// one correctly rounded; maximum and minimum return a NaN operand, the
// first one if both are), on AVX2 when the CPU has it. `y` may be `a` or `b`.
void ArithF32(Arith op, const float* a, const float* b, float* y, int64_t n);
// y[i] = op(a[i], b): ArithF32 with one value for the second operand (a
// row kernel's mean or scale along a row), the same results.
void ArithScalarF32(Arith op, const float* a, float b, float* y, int64_t n);

// y[i] = x[i] rounded to the nearest integer, ties to even (std::nearbyint
// in the default rounding mode): -0 for negative values that round to 0;
// NaN, infinities and values already integral (|x| >= 2^23) unchanged.
// The quantizers' rounding.
void RoundEvenF32(const float* x, float* y, int64_t n);

// y[i] = x[i] converted with HLO's semantics (truncated toward zero,
// saturated at the bounds, NaN to 0): a quantizer's last step, without a
// branch per element.
void ConvertF32ToU8(const float* x, uint8_t* y, int64_t n);
void ConvertF32ToS8(const float* x, int8_t* y, int64_t n);

// A quantizer's operands, one value per element (a scalar laid out over
// the array): x, its scale, zero point and the clamp's bounds. With `acc`,
// x is instead an integer product's rescaled sum, f32(acc) * mul + add
// (mul and add may be null: not applied). `scalar` bit k says operand k of
// (scale, zero_point, lo, hi, mul, add) has one value repeated, which a
// kernel may read once.
struct QuantizeArgs {
  const float *x, *scale, *zero_point, *lo, *hi;
  const int32_t* acc = nullptr;
  const float *mul = nullptr, *add = nullptr;
  unsigned scalar = 0;
};

// y[i] = convert(clamp(lo, round_even(x / scale) + zero_point, hi)), the
// fused loops' quantizer (QuantizeLinear as imported, after a product's
// rescaling where there is one) in one pass, with the results of its nodes
// run one after another: each step is the same operation as ArithF32's,
// RoundEvenF32's and ConvertF32ToU8's, none contracted.
void QuantizeF32(const QuantizeArgs& a, uint8_t* y, int64_t n);
void QuantizeF32(const QuantizeArgs& a, int8_t* y, int64_t n);

// GELU's exact form as exporters write it, in one pass over registers:
// s = x / c (`divide`) or x * c, u = erf(s) + 1, then (x * u) * h, or
// (x * h) * u with `half_first`. Each step is the operation ArithF32 and
// ErfF32 compute, in the same order, so the result equals running the
// steps one after another bit for bit (the fused loops' GELU node).
struct GeluErfForm {
  float c = 0, h = 0;
  bool divide = false, half_first = false;
};
void GeluErfF32(const GeluErfForm& f, const float* x, float* y, int64_t n);

namespace internal {
using Kernel = void (*)(const float* x, float* y, int64_t n);
using ArithKernel = void (*)(Arith op, const float* a, const float* b, float* y, int64_t n);
using ArithScalarKernel = void (*)(Arith op, const float* a, float b, float* y, int64_t n);

// One build of the kernels above: the baseline x86-64 (or other target)
// one, the AVX2 + FMA one, the AVX-512 one.
struct Build {
  const char* name;
  Kernel exp, logistic, swish, tanh, erf;
  ArithKernel arith;
  ArithScalarKernel arith_scalar;
  Kernel round_even;
  void (*to_u8)(const float* x, uint8_t* y, int64_t n);
  void (*to_s8)(const float* x, int8_t* y, int64_t n);
  void (*quantize_u8)(const QuantizeArgs& a, uint8_t* y, int64_t n);
  void (*quantize_s8)(const QuantizeArgs& a, int8_t* y, int64_t n);
};

// The builds this CPU can run, the baseline one first; the functions above
// use the last. For tests, which check each of them on any machine.
std::vector<Build> Builds();
}  // namespace internal

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_KERNELS_VECTOR_MATH_H_
