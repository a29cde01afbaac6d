// The scalar semantics of every HLO elementwise opcode, written once. The
// evaluator, constant folding and the CPU backend's fused loops all call
// these array kernels, so they cannot drift apart (MLX unary_ops.h style).
#ifndef XONNX_EVALUATOR_SCALAR_OPS_H_
#define XONNX_EVALUATOR_SCALAR_OPS_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "hlo/literal.h"
#include "hlo/opcode.h"

namespace xonnx::eval {

using hlo::ComparisonDirection;
using hlo::Opcode;

// The type arithmetic happens in: float for the 16-bit floats, else T.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<ComputeType<T>>;

namespace internal {

template <typename C>
C WrapAdd(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename C>
C WrapSub(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename C>
C WrapMul(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = std::make_unsigned_t<C>;
    // Promote to avoid int promotion UB for 16-bit types.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<C>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// XLA: integer x/0 is -1 (all bits set), INT_MIN/-1 is INT_MIN.
template <typename C>
C Div(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return static_cast<C>(-1);
    if constexpr (std::is_signed_v<C>)
      if (a == std::numeric_limits<C>::min() && b == -1) return a;
    return a / b;
  } else {
    return a / b;
  }
}
// XLA: integer x%0 is x, INT_MIN%-1 is 0; floats use fmod.
template <typename C>
C Rem(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<C>)
      if (b == -1) return 0;
    return a % b;
  } else {
    return std::fmod(a, b);
  }
}
// max/min propagate NaN like XLA.
template <typename C>
C Max(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a > b ? a : b;
}
template <typename C>
C Min(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? a : b;
}
// The order sorts and TopK give values: NaN as the largest value (after
// every number ascending, before every number descending), as torch and
// NumPy order it; a comparison alone would leave NaN unordered. Two NaNs
// are equal (neither comes first).
template <typename C>
bool SortsBefore(C a, C b, bool ascending) {
  bool na = false, nb = false;
  if constexpr (std::is_floating_point_v<C>) na = a != a, nb = b != b;
  if (ascending) return nb ? !na : (!na && a < b);
  return na ? !nb : (!nb && a > b);
}
template <typename C>
C Pow(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::pow(a, b);
  } else if constexpr (std::is_same_v<C, bool>) {
    return a || !b;
  } else {
    if constexpr (std::is_signed_v<C>) {
      if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    }
    C result = 1;
    C base = a;
    auto e = static_cast<std::make_unsigned_t<C>>(b);
    while (e) {
      if (e & 1) result = WrapMul(result, base);
      base = WrapMul(base, base);
      e >>= 1;
    }
    return result;
  }
}
template <typename C>
C ShiftLeft(C a, C b) {
  using U = std::make_unsigned_t<C>;
  if (static_cast<U>(b) >= sizeof(C) * 8) return 0;
  return static_cast<C>(static_cast<U>(a) << static_cast<U>(b));
}
template <typename C>
C ShiftRightLogical(C a, C b) {
  using U = std::make_unsigned_t<C>;
  if (static_cast<U>(b) >= sizeof(C) * 8) return 0;
  return static_cast<C>(static_cast<U>(a) >> static_cast<U>(b));
}
template <typename C>
C ShiftRightArithmetic(C a, C b) {
  using S = std::make_signed_t<C>;
  using U = std::make_unsigned_t<C>;
  if (static_cast<U>(b) >= sizeof(C) * 8) return static_cast<S>(a) < 0 ? static_cast<C>(-1) : 0;
  return static_cast<C>(static_cast<S>(a) >> static_cast<U>(b));
}

}  // namespace internal

// out[i] = op(a[i]) for a unary elementwise opcode (not convert/is-finite).
// Returns false when the opcode/type pair is not defined.
template <typename T>
bool UnaryKernel(Opcode op, const T* a, T* out, int64_t n) {
  using C = ComputeType<T>;
  auto map = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(static_cast<C>(a[i])));
    return true;
  };
  switch (op) {
    case Opcode::kCopy:
      return map([](C x) { return x; });
    case Opcode::kNegate:
      if constexpr (std::is_same_v<C, bool>)
        return false;
      else
        return map([](C x) { return internal::WrapSub(C(0), x); });
    case Opcode::kAbs:
      if constexpr (std::is_same_v<C, bool>)
        return false;
      else if constexpr (std::is_unsigned_v<C>)
        return map([](C x) { return x; });
      else if constexpr (std::is_integral_v<C>)
        return map([](C x) { return x < 0 ? internal::WrapSub(C(0), x) : x; });
      else
        return map([](C x) { return std::fabs(x); });
    case Opcode::kSign:
      if constexpr (std::is_same_v<C, bool>)
        return false;
      else if constexpr (std::is_floating_point_v<C>)
        return map([](C x) { return x != x ? x : (x > 0 ? C(1) : (x < 0 ? C(-1) : x)); });
      else
        return map([](C x) { return static_cast<C>((x > 0) - (x < 0)); });
    case Opcode::kNot:
      if constexpr (std::is_same_v<C, bool>)
        return map([](C x) { return !x; });
      else if constexpr (std::is_integral_v<C>)
        return map([](C x) { return static_cast<C>(~x); });
      else
        return false;
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case Opcode::kExp:
        return map([](C x) { return std::exp(x); });
      case Opcode::kExpm1:
        return map([](C x) { return std::expm1(x); });
      case Opcode::kLog:
        return map([](C x) { return std::log(x); });
      case Opcode::kLog1p:
        return map([](C x) { return std::log1p(x); });
      case Opcode::kTanh:
        return map([](C x) { return std::tanh(x); });
      case Opcode::kLogistic:
        return map([](C x) { return C(1) / (C(1) + std::exp(-x)); });
      case Opcode::kSqrt:
        return map([](C x) { return std::sqrt(x); });
      case Opcode::kRsqrt:
        return map([](C x) { return C(1) / std::sqrt(x); });
      case Opcode::kCbrt:
        return map([](C x) { return std::cbrt(x); });
      case Opcode::kSin:
        return map([](C x) { return std::sin(x); });
      case Opcode::kCos:
        return map([](C x) { return std::cos(x); });
      case Opcode::kTan:
        return map([](C x) { return std::tan(x); });
      case Opcode::kFloor:
        return map([](C x) { return std::floor(x); });
      case Opcode::kCeil:
        return map([](C x) { return std::ceil(x); });
      case Opcode::kRoundNearestEven:
        return map([](C x) { return std::nearbyint(x); });
      case Opcode::kRoundNearestAfz:
        return map([](C x) { return std::round(x); });
      case Opcode::kErf:
        return map([](C x) { return std::erf(x); });
      default:
        break;
    }
  }
  return false;
}

// out[i] = op(a[i], b[i]) for a binary elementwise opcode.
template <typename T>
bool BinaryKernel(Opcode op, const T* a, const T* b, T* out, int64_t n) {
  using C = ComputeType<T>;
  auto map = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(static_cast<C>(a[i]), static_cast<C>(b[i])));
    return true;
  };
  if constexpr (std::is_same_v<C, bool>) {
    switch (op) {
      case Opcode::kAnd:
      case Opcode::kMinimum:
      case Opcode::kMultiply:
        return map([](C x, C y) { return x && y; });
      case Opcode::kOr:
      case Opcode::kMaximum:
      case Opcode::kAdd:
        return map([](C x, C y) { return x || y; });
      case Opcode::kXor:
        return map([](C x, C y) { return x != y; });
      default:
        return false;
    }
  } else {
    switch (op) {
      case Opcode::kAdd:
        return map([](C x, C y) { return internal::WrapAdd(x, y); });
      case Opcode::kSubtract:
        return map([](C x, C y) { return internal::WrapSub(x, y); });
      case Opcode::kMultiply:
        return map([](C x, C y) { return internal::WrapMul(x, y); });
      case Opcode::kDivide:
        return map([](C x, C y) { return internal::Div(x, y); });
      case Opcode::kRemainder:
        return map([](C x, C y) { return internal::Rem(x, y); });
      case Opcode::kMaximum:
        return map([](C x, C y) { return internal::Max(x, y); });
      case Opcode::kMinimum:
        return map([](C x, C y) { return internal::Min(x, y); });
      case Opcode::kPower:
        return map([](C x, C y) { return internal::Pow(x, y); });
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<C>) {
      if (op == Opcode::kAtan2) return map([](C x, C y) { return std::atan2(x, y); });
    } else {
      switch (op) {
        case Opcode::kAnd:
          return map([](C x, C y) { return static_cast<C>(x & y); });
        case Opcode::kOr:
          return map([](C x, C y) { return static_cast<C>(x | y); });
        case Opcode::kXor:
          return map([](C x, C y) { return static_cast<C>(x ^ y); });
        case Opcode::kShiftLeft:
          return map([](C x, C y) { return internal::ShiftLeft(x, y); });
        case Opcode::kShiftRightLogical:
          return map([](C x, C y) { return internal::ShiftRightLogical(x, y); });
        case Opcode::kShiftRightArithmetic:
          return map([](C x, C y) { return internal::ShiftRightArithmetic(x, y); });
        default:
          break;
      }
    }
    return false;
  }
}

// out[i] = compare(a[i], b[i]) with IEEE semantics for floats.
template <typename T>
void CompareKernel(ComparisonDirection dir, const T* a, const T* b, bool* out, int64_t n) {
  using C = ComputeType<T>;
  auto map = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(static_cast<C>(a[i]), static_cast<C>(b[i]));
  };
  switch (dir) {
    case ComparisonDirection::kEq:
      return map([](C x, C y) { return x == y; });
    case ComparisonDirection::kNe:
      return map([](C x, C y) { return x != y; });
    case ComparisonDirection::kGe:
      return map([](C x, C y) { return x >= y; });
    case ComparisonDirection::kGt:
      return map([](C x, C y) { return x > y; });
    case ComparisonDirection::kLe:
      return map([](C x, C y) { return x <= y; });
    case ComparisonDirection::kLt:
      return map([](C x, C y) { return x < y; });
  }
}

template <typename T>
void IsFiniteKernel(const T* a, bool* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::isfinite(static_cast<double>(static_cast<ComputeType<T>>(a[i])));
}

// select with an array or scalar predicate (pred_stride 1 or 0).
template <typename T>
void SelectKernel(const bool* p, int64_t pred_stride, const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = p[i * pred_stride] ? a[i] : b[i];
}

// clamp with scalar or array bounds (strides 0 or 1).
template <typename T>
void ClampKernel(const T* lo, int64_t lo_stride, const T* x, const T* hi, int64_t hi_stride, T* out, int64_t n) {
  using C = ComputeType<T>;
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<T>(internal::Min(internal::Max(static_cast<C>(x[i]), static_cast<C>(lo[i * lo_stride])),
                                          static_cast<C>(hi[i * hi_stride])));
}

template <typename To, typename From>
void ConvertKernel(const From* a, To* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = hlo::ConvertValue<To, From>(a[i]);
}

}  // namespace xonnx::eval

#endif  // XONNX_EVALUATOR_SCALAR_OPS_H_
