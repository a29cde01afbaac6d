// Elementwise ONNX ops: arithmetic, math functions, activations, logic,
// comparisons, Cast, Clip, Where.
#include <cmath>
#include <cstdlib>
#include <limits>

#include "base/status.h"
#include "onnx/ops/activations.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// Before opset 7, binary ops broadcast only with broadcast=1, aligning B at
// `axis` of A (default: its trailing dims) instead of numpy's right
// alignment. Reshaping B to A's rank with ones elsewhere makes the numpy
// rules give the same result.
absl::StatusOr<Instruction*> LegacyBroadcast(NodeContext& ctx, Instruction* a, Instruction* b) {
  if (ctx.opset() >= 7 || !a || !b) return b;
  int64_t ra = a->shape().rank(), rb = b->shape().rank();
  if (ctx.attr_i("broadcast", 0) == 0) {
    if (a->shape().dims != b->shape().dims)
      return ctx.Error("input shapes differ and broadcast=0 (opsets before 7 broadcast only when asked)");
    return b;
  }
  int64_t axis = ctx.attr_i("axis", ra - rb);
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra) return ctx.Error("broadcast axis out of range");
  std::vector<int64_t> dims(ra, 1);
  for (int64_t i = 0; i < rb; ++i) dims[axis + i] = b->shape().dims[i];
  return ctx.b().Reshape(b, dims);
}

// Inputs 0..n-1 broadcast to a common shape.
absl::StatusOr<std::vector<Instruction*>> Inputs(NodeContext& ctx) {
  std::vector<Instruction*> xs;
  for (int i = 0; i < ctx.input_count(); ++i) xs.push_back(ctx.input(i));
  if (xs.size() == 2) {
    ASSIGN_OR_RETURN(xs[1], LegacyBroadcast(ctx, xs[0], xs[1]));
  }
  return BroadcastAll(ctx, xs);
}

template <Opcode op>
absl::Status Binary(NodeContext& ctx) {
  ASSIGN_OR_RETURN(auto xs, Inputs(ctx));
  if (xs.size() != 2) return ctx.Error("expects 2 inputs");
  ctx.set_output(0, ctx.b().Binary(op, xs[0], xs[1]));
  return absl::OkStatus();
}

template <Opcode op>
absl::Status Unary(NodeContext& ctx) {
  ctx.set_output(0, ctx.b().Unary(op, ctx.input(0)));
  return absl::OkStatus();
}

absl::Status RequireFloat(NodeContext& ctx, Instruction* x) {
  if (x && !hlo::IsFloatingPoint(x->shape().element_type))
    return ctx.Unsupported(
        absl::StrCat("input type ", hlo::PrimitiveTypeName(x->shape().element_type), " (floating-point types only)"));
  return absl::OkStatus();
}

// Variadic Max/Min/Sum/Mean with broadcasting.
template <Opcode op, bool kMean = false>
absl::Status Variadic(NodeContext& ctx) {
  ASSIGN_OR_RETURN(auto xs, Inputs(ctx));
  if (xs.empty()) return ctx.Error("needs at least one input");
  Instruction* acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) acc = ctx.b().Binary(op, acc, xs[i]);
  if (kMean) acc = ctx.b().Binary(Opcode::kDivide, acc, SplatLike(ctx.b(), acc, xs.size()));
  ctx.set_output(0, acc);
  return absl::OkStatus();
}

absl::Status Div(NodeContext& ctx) { return Binary<Opcode::kDivide>(ctx); }

absl::Status Pow(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* y = ctx.input(1);
  if (!x || !y) return ctx.Error("expects 2 inputs");
  // ONNX allows a different exponent type; compute in the base's type.
  y = ctx.b().Convert(y, x->shape().element_type);
  ASSIGN_OR_RETURN(y, LegacyBroadcast(ctx, x, y));
  ASSIGN_OR_RETURN(auto xs, BroadcastAll(ctx, {x, y}));
  ctx.set_output(0, ctx.b().Binary(Opcode::kPower, xs[0], xs[1]));
  return absl::OkStatus();
}

absl::Status Mod(NodeContext& ctx) {
  ASSIGN_OR_RETURN(auto xs, Inputs(ctx));
  hlo::Builder& b = ctx.b();
  bool fmod = ctx.attr_i("fmod", 0) != 0;
  Instruction* r = b.Binary(Opcode::kRemainder, xs[0], xs[1]);
  hlo::PrimitiveType t = xs[0]->shape().element_type;
  if (fmod || hlo::IsUnsignedInteger(t)) {
    if (!fmod && hlo::IsFloatingPoint(t)) return ctx.Error("fmod must be 1 for floating-point inputs");
    ctx.set_output(0, r);
    return absl::OkStatus();
  }
  if (hlo::IsFloatingPoint(t)) return ctx.Error("fmod must be 1 for floating-point inputs");
  // Python-style modulo: the result takes the divisor's sign.
  Instruction* zero = SplatLike(b, r, 0);
  Instruction* r_neg = b.Compare(r, zero, hlo::ComparisonDirection::kLt);
  Instruction* y_neg = b.Compare(xs[1], zero, hlo::ComparisonDirection::kLt);
  Instruction* nonzero = b.Compare(r, zero, hlo::ComparisonDirection::kNe);
  Instruction* differ = b.Binary(Opcode::kAnd, nonzero, b.Compare(r_neg, y_neg, hlo::ComparisonDirection::kNe));
  ctx.set_output(0, b.Select(differ, b.Binary(Opcode::kAdd, r, xs[1]), r));
  return absl::OkStatus();
}

absl::Status Reciprocal(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ctx.set_output(0, ctx.b().Binary(Opcode::kDivide, SplatLike(ctx.b(), x, 1), x));
  return absl::OkStatus();
}

// f(x) built from HLO primitives for the inverse/hyperbolic functions XLA
// has no opcode for.
template <typename F>
absl::Status FloatFn(NodeContext& ctx, F f) {
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  ctx.set_output(0, f(ctx.b(), x));
  return absl::OkStatus();
}

Instruction* Sqrt1MinusSq(hlo::Builder& b, Instruction* x) {
  return b.Unary(Opcode::kSqrt, b.Binary(Opcode::kSubtract, SplatLike(b, x, 1), b.Binary(Opcode::kMultiply, x, x)));
}

absl::Status Asin(NodeContext& ctx) {
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) { return b.Binary(Opcode::kAtan2, x, Sqrt1MinusSq(b, x)); });
}
absl::Status Acos(NodeContext& ctx) {
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) { return b.Binary(Opcode::kAtan2, Sqrt1MinusSq(b, x), x); });
}
absl::Status Atan(NodeContext& ctx) {
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) { return b.Binary(Opcode::kAtan2, x, SplatLike(b, x, 1)); });
}
absl::Status Sinh(NodeContext& ctx) {
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) {
    Instruction* e = b.Unary(Opcode::kExp, x);
    Instruction* en = b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, x));
    return b.Binary(Opcode::kMultiply, b.Binary(Opcode::kSubtract, e, en), SplatLike(b, x, 0.5));
  });
}
absl::Status Cosh(NodeContext& ctx) {
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) {
    Instruction* e = b.Unary(Opcode::kExp, x);
    Instruction* en = b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, x));
    return b.Binary(Opcode::kMultiply, b.Binary(Opcode::kAdd, e, en), SplatLike(b, x, 0.5));
  });
}
absl::Status Asinh(NodeContext& ctx) {  // log(x + sqrt(x^2 + 1))
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) {
    Instruction* s =
        b.Unary(Opcode::kSqrt, b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, x, x), SplatLike(b, x, 1)));
    return b.Unary(Opcode::kLog, b.Binary(Opcode::kAdd, x, s));
  });
}
absl::Status Acosh(NodeContext& ctx) {  // log(x + sqrt(x^2 - 1))
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) {
    Instruction* s =
        b.Unary(Opcode::kSqrt, b.Binary(Opcode::kSubtract, b.Binary(Opcode::kMultiply, x, x), SplatLike(b, x, 1)));
    return b.Unary(Opcode::kLog, b.Binary(Opcode::kAdd, x, s));
  });
}
absl::Status Atanh(NodeContext& ctx) {  // 0.5 * log((1 + x) / (1 - x))
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) {
    Instruction* one = SplatLike(b, x, 1);
    Instruction* q = b.Binary(Opcode::kDivide, b.Binary(Opcode::kAdd, one, x), b.Binary(Opcode::kSubtract, one, x));
    return b.Binary(Opcode::kMultiply, b.Unary(Opcode::kLog, q), SplatLike(b, x, 0.5));
  });
}

absl::Status Relu(NodeContext& ctx) {
  ctx.set_output(0, ReluOf(ctx.b(), ctx.input(0)));
  return absl::OkStatus();
}

absl::Status LeakyRelu(NodeContext& ctx) {
  ctx.set_output(0, LeakyReluOf(ctx.b(), ctx.input(0), ctx.attr_f("alpha", 0.01f)));
  return absl::OkStatus();
}

// Before opset 7, PRelu's slope has no broadcast attribute: it is the
// input's shape, one value, or (as Caffe2-era exporters write it) one value
// per channel, [C] along dim 1. Numpy's right alignment covers [C, 1, 1];
// a [C] it would pair with the last dim goes along the channels instead.
absl::StatusOr<Instruction*> LegacySlope(NodeContext& ctx, Instruction* x, Instruction* slope) {
  if (ctx.opset() >= 7 || !x || !slope) return slope;
  const std::vector<int64_t>& xd = x->shape().dims;
  const std::vector<int64_t>& sd = slope->shape().dims;
  bool right_aligned = sd.size() <= xd.size();
  for (size_t k = 0; k < sd.size() && right_aligned; ++k)
    right_aligned = sd[sd.size() - 1 - k] == 1 || sd[sd.size() - 1 - k] == xd[xd.size() - 1 - k];
  if (right_aligned) return slope;
  if (sd.size() == 1 && xd.size() >= 2 && sd[0] == xd[1]) {
    std::vector<int64_t> dims(xd.size(), 1);
    dims[1] = sd[0];
    return ctx.b().Reshape(slope, dims);
  }
  return ctx.Error(absl::StrCat("slope of shape ", hlo::Shape(slope->shape().element_type, sd).ToString(),
                                " fits neither the input's shape ", x->shape().ToString(),
                                " nor one value per channel (dim 1)"));
}

absl::Status PRelu(NodeContext& ctx) {
  std::vector<Instruction*> xs = {ctx.input(0), ctx.input(1)};
  ASSIGN_OR_RETURN(xs[1], LegacySlope(ctx, xs[0], xs[1]));
  ASSIGN_OR_RETURN(xs, BroadcastAll(ctx, xs));
  hlo::Builder& b = ctx.b();
  Instruction* neg = b.Binary(Opcode::kMultiply, xs[0], xs[1]);
  ctx.set_output(0, b.Select(b.Compare(xs[0], SplatLike(b, xs[0], 0), hlo::ComparisonDirection::kGe), xs[0], neg));
  return absl::OkStatus();
}

// alpha * (exp(x) - 1) for x < 0, else x; scaled for Selu.
absl::Status EluLike(NodeContext& ctx, double alpha, double gamma) {
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  ctx.set_output(0, EluOf(ctx.b(), x, alpha, gamma));
  return absl::OkStatus();
}
absl::Status Elu(NodeContext& ctx) { return EluLike(ctx, ctx.attr_f("alpha", 1.0f), 1.0); }
absl::Status Selu(NodeContext& ctx) {
  return EluLike(ctx, ctx.attr_f("alpha", 1.67326319217681884765625f), ctx.attr_f("gamma", 1.05070102214813232421875f));
}

absl::Status Celu(NodeContext& ctx) {  // max(0,x) + min(0, alpha*(exp(x/alpha)-1))
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  hlo::Builder& b = ctx.b();
  double alpha = ctx.attr_f("alpha", 1.0f);
  Instruction* e =
      b.Binary(Opcode::kMultiply, b.Unary(Opcode::kExpm1, b.Binary(Opcode::kDivide, x, SplatLike(b, x, alpha))),
               SplatLike(b, x, alpha));
  ctx.set_output(0, b.Binary(Opcode::kAdd, b.Binary(Opcode::kMaximum, x, SplatLike(b, x, 0)),
                             b.Binary(Opcode::kMinimum, e, SplatLike(b, x, 0))));
  return absl::OkStatus();
}

absl::Status ThresholdedRelu(NodeContext& ctx) {
  ctx.set_output(0, ThresholdedReluOf(ctx.b(), ctx.input(0), ctx.attr_f("alpha", 1.0f)));
  return absl::OkStatus();
}

absl::Status Sigmoid(NodeContext& ctx) { return Unary<Opcode::kLogistic>(ctx); }

absl::Status HardSigmoid(NodeContext& ctx) {
  ctx.set_output(0, HardSigmoidOf(ctx.b(), ctx.input(0), ctx.attr_f("alpha", 0.2f), ctx.attr_f("beta", 0.5f)));
  return absl::OkStatus();
}

absl::Status HardSwish(NodeContext& ctx) {  // x * clamp(x/6 + 0.5, 0, 1)
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  Instruction* y =
      b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, x, SplatLike(b, x, 1.0 / 6)), SplatLike(b, x, 0.5));
  Instruction* hs =
      b.Clamp(b.ScalarConstant(x->shape().element_type, 0), y, b.ScalarConstant(x->shape().element_type, 1));
  ctx.set_output(0, b.Binary(Opcode::kMultiply, x, hs));
  return absl::OkStatus();
}

absl::Status SoftplusOp(NodeContext& ctx) { return FloatFn(ctx, SoftplusOf); }
absl::Status Softsign(NodeContext& ctx) { return FloatFn(ctx, SoftsignOf); }
absl::Status Mish(NodeContext& ctx) {
  return FloatFn(ctx, [](hlo::Builder& b, Instruction* x) {
    return b.Binary(Opcode::kMultiply, x, b.Unary(Opcode::kTanh, SoftplusOf(b, x)));
  });
}

absl::Status Round(NodeContext& ctx) { return Unary<Opcode::kRoundNearestEven>(ctx); }

absl::Status IsNaN(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ctx.set_output(0, ctx.b().Compare(x, x, hlo::ComparisonDirection::kNe));
  return absl::OkStatus();
}

absl::Status IsInf(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  bool pos = ctx.attr_i("detect_positive", 1), neg = ctx.attr_i("detect_negative", 1);
  Instruction* r = Splat(b, hlo::PRED, 0, x->shape().dims);
  if (pos) r = b.Binary(Opcode::kOr, r, b.Compare(x, SplatLike(b, x, INFINITY), hlo::ComparisonDirection::kEq));
  if (neg) r = b.Binary(Opcode::kOr, r, b.Compare(x, SplatLike(b, x, -INFINITY), hlo::ComparisonDirection::kEq));
  ctx.set_output(0, r);
  return absl::OkStatus();
}

template <hlo::ComparisonDirection dir>
absl::Status Compare(NodeContext& ctx) {
  ASSIGN_OR_RETURN(auto xs, Inputs(ctx));
  ctx.set_output(0, ctx.b().Compare(xs[0], xs[1], dir));
  return absl::OkStatus();
}

template <Opcode op>
absl::Status Logical(NodeContext& ctx) {
  ASSIGN_OR_RETURN(auto xs, Inputs(ctx));
  ctx.set_output(0, ctx.b().Binary(op, xs[0], xs[1]));
  return absl::OkStatus();
}

absl::Status BitShift(NodeContext& ctx) {
  ASSIGN_OR_RETURN(auto xs, Inputs(ctx));
  std::string dir = ctx.attr_s("direction", "");
  if (dir == "LEFT")
    ctx.set_output(0, ctx.b().Binary(Opcode::kShiftLeft, xs[0], xs[1]));
  else if (dir == "RIGHT")
    ctx.set_output(0, ctx.b().Binary(Opcode::kShiftRightLogical, xs[0], xs[1]));
  else
    return ctx.Error("direction must be LEFT or RIGHT");
  return absl::OkStatus();
}

absl::Status Where(NodeContext& ctx) {
  ASSIGN_OR_RETURN(auto xs, Inputs(ctx));
  ctx.set_output(0, ctx.b().Select(xs[0], xs[1], xs[2]));
  return absl::OkStatus();
}

// The shortest decimal that reads back as the same float (numpy's str).
std::string FloatToString(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  for (int p = 1; p <= 17; ++p) {
    std::string s = absl::StrFormat("%.*g", p, v);
    if (single ? std::strtof(s.c_str(), nullptr) == static_cast<float>(v) : std::strtod(s.c_str(), nullptr) == v)
      return s;
  }
  return absl::StrFormat("%.17g", v);
}

// Casts involving strings happen while converting: string inputs are known,
// and a numeric input cast to string must be known at compile time.
absl::Status CastToFrom(NodeContext& ctx, bool to_string, hlo::PrimitiveType to) {
  hlo::Builder& b = ctx.b();
  if (const StringTensor* in = ctx.string_input(0)) {
    if (to_string) {
      ctx.set_string_output(0, *in);
      return absl::OkStatus();
    }
    hlo::Literal l(hlo::Shape(hlo::F64, in->dims));
    for (size_t i = 0; i < in->values.size(); ++i) {
      char* end = nullptr;
      l.data<double>()[i] = std::strtod(in->values[i].c_str(), &end);
      if (end == in->values[i].c_str())
        return ctx.Error(absl::StrCat("cannot parse '", in->values[i], "' as a number"));
    }
    ctx.set_output(0, b.Constant(l.Convert(to)));
    return absl::OkStatus();
  }
  Instruction* x = ctx.input(0);
  if (!x) return ctx.Error("needs an input");
  if (!to_string) {
    ctx.set_output(0, b.Convert(x, to));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(hlo::Literal v, ctx.RequireConstant(x, "a value cast to string"));
  StringTensor out{v.shape().dims, {}};
  bool single = v.shape().element_type != hlo::F64;
  for (int64_t i = 0; i < v.element_count(); ++i)
    out.values.push_back(hlo::IsFloatingPoint(v.shape().element_type) ? FloatToString(v.GetAsDouble(i), single)
                                                                      : absl::StrCat(v.GetAsInt64(i)));
  ctx.set_string_output(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Cast(NodeContext& ctx) {
  int64_t to = ctx.attr_i("to", 0);
  if (to == onnx::TensorProto::STRING) return CastToFrom(ctx, true, hlo::PRIMITIVE_TYPE_INVALID);
  auto t = HloType(static_cast<int32_t>(to));
  if (!t.ok()) return ctx.Unsupported(std::string(t.status().message()));
  return CastToFrom(ctx, false, *t);
}

absl::Status CastLike(NodeContext& ctx) {
  if (ctx.string_input(1)) return CastToFrom(ctx, true, hlo::PRIMITIVE_TYPE_INVALID);
  Instruction* like = ctx.input(1);
  if (!like) return ctx.Error("needs a target_type input");
  return CastToFrom(ctx, false, like->shape().element_type);
}

absl::Status Clip(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  if (!x) return ctx.Error("needs an input");
  hlo::Builder& b = ctx.b();
  hlo::PrimitiveType t = x->shape().element_type;
  Instruction* lo;
  Instruction* hi;
  if (ctx.opset() < 11) {
    lo = b.ScalarConstant(t, ctx.attr_f("min", -std::numeric_limits<float>::infinity()));
    hi = b.ScalarConstant(t, ctx.attr_f("max", std::numeric_limits<float>::infinity()));
    if (hlo::IsInteger(t)) return ctx.Unsupported("integer Clip before opset 11");
  } else {
    lo = ctx.has_input(1) ? b.Reshape(ctx.input(1), {}) : b.ScalarConstant(t, LowestValue(t));
    hi = ctx.has_input(2) ? b.Reshape(ctx.input(2), {}) : b.ScalarConstant(t, HighestValue(t));
  }
  // ONNX: min(max(x, lo), hi), which is what clamp computes.
  ctx.set_output(0, b.Clamp(lo, x, hi));
  return absl::OkStatus();
}

// Forwards a value of any kind (tensor, strings, sequence, optional).
absl::Status Identity(NodeContext& ctx) { return ctx.ForwardInput(0, 0); }

absl::Status Not(NodeContext& ctx) { return Unary<Opcode::kNot>(ctx); }

absl::Status Sign(NodeContext& ctx) { return Unary<Opcode::kSign>(ctx); }

absl::Status Abs(NodeContext& ctx) { return Unary<Opcode::kAbs>(ctx); }

absl::Status Neg(NodeContext& ctx) { return Unary<Opcode::kNegate>(ctx); }

}  // namespace

void RegisterElementwiseOps(Registry& r) {
  r.Add("Add", Binary<Opcode::kAdd>);
  r.Add("Sub", Binary<Opcode::kSubtract>);
  r.Add("Mul", Binary<Opcode::kMultiply>);
  r.Add("Div", Div);
  r.Add("Pow", Pow);
  r.Add("Mod", Mod, 10);
  r.Add("Max", Variadic<Opcode::kMaximum>);
  r.Add("Min", Variadic<Opcode::kMinimum>);
  r.Add("Sum", Variadic<Opcode::kAdd>);
  r.Add("Mean", Variadic<Opcode::kAdd, true>);
  r.Add("Abs", Abs);
  r.Add("Neg", Neg);
  r.Add("Sign", Sign, 9);
  r.Add("Exp", Unary<Opcode::kExp>);
  r.Add("Log", Unary<Opcode::kLog>);
  r.Add("Sqrt", Unary<Opcode::kSqrt>);
  r.Add("Reciprocal", Reciprocal);
  r.Add("Floor", Unary<Opcode::kFloor>);
  r.Add("Ceil", Unary<Opcode::kCeil>);
  r.Add("Round", Round, 11);
  r.Add("Sin", Unary<Opcode::kSin>, 7);
  r.Add("Cos", Unary<Opcode::kCos>, 7);
  r.Add("Tan", Unary<Opcode::kTan>, 7);
  r.Add("Asin", Asin, 7);
  r.Add("Acos", Acos, 7);
  r.Add("Atan", Atan, 7);
  r.Add("Sinh", Sinh, 9);
  r.Add("Cosh", Cosh, 9);
  r.Add("Asinh", Asinh, 9);
  r.Add("Acosh", Acosh, 9);
  r.Add("Atanh", Atanh, 9);
  r.Add("Erf", Unary<Opcode::kErf>, 9);
  r.Add("Tanh", Unary<Opcode::kTanh>);
  r.Add("Sigmoid", Sigmoid);
  r.Add("HardSigmoid", HardSigmoid);
  r.Add("HardSwish", HardSwish, 14);
  r.Add("Relu", Relu);
  r.Add("LeakyRelu", LeakyRelu);
  r.Add("PRelu", PRelu);
  r.Add("Elu", Elu);
  r.Add("Selu", Selu);
  r.Add("Celu", Celu, 12);
  r.Add("ThresholdedRelu", ThresholdedRelu, 10);
  r.Add("Softplus", SoftplusOp);
  r.Add("Softsign", Softsign);
  r.Add("Mish", Mish, 18);
  r.Add("IsNaN", IsNaN, 9);
  r.Add("IsInf", IsInf, 10);
  r.Add("Not", Not);
  r.Add("And", Logical<Opcode::kAnd>);
  r.Add("Or", Logical<Opcode::kOr>);
  r.Add("Xor", Logical<Opcode::kXor>);
  r.Add("BitwiseAnd", Logical<Opcode::kAnd>, 18);
  r.Add("BitwiseOr", Logical<Opcode::kOr>, 18);
  r.Add("BitwiseXor", Logical<Opcode::kXor>, 18);
  r.Add("BitwiseNot", Not, 18);
  r.Add("BitShift", BitShift, 11);
  r.Add("Equal", Compare<hlo::ComparisonDirection::kEq>);
  r.Add("Less", Compare<hlo::ComparisonDirection::kLt>);
  r.Add("Greater", Compare<hlo::ComparisonDirection::kGt>);
  r.Add("LessOrEqual", Compare<hlo::ComparisonDirection::kLe>, 12);
  r.Add("GreaterOrEqual", Compare<hlo::ComparisonDirection::kGe>, 12);
  r.Add("Where", Where, 9);
  r.Add("Cast", Cast);
  r.Add("CastLike", CastLike, 15);
  r.Add("Clip", Clip);
  r.Add("Identity", Identity);
}

}  // namespace xonnx::onnx_import
