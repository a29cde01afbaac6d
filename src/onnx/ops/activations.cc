#include "onnx/ops/activations.h"

#include <cmath>

#include "onnx/context.h"

namespace xonnx::onnx_import {

using hlo::ComparisonDirection;
using hlo::Instruction;
using hlo::Opcode;

Instruction* ReluOf(hlo::Builder& b, Instruction* x) { return b.Binary(Opcode::kMaximum, x, SplatLike(b, x, 0)); }

Instruction* LeakyReluOf(hlo::Builder& b, Instruction* x, double alpha) {
  Instruction* neg = b.Binary(Opcode::kMultiply, x, SplatLike(b, x, alpha));
  return b.Select(b.Compare(x, SplatLike(b, x, 0), ComparisonDirection::kGe), x, neg);
}

Instruction* EluOf(hlo::Builder& b, Instruction* x, double alpha, double gamma) {
  Instruction* neg = b.Binary(Opcode::kMultiply, b.Unary(Opcode::kExpm1, x), SplatLike(b, x, alpha));
  Instruction* r = b.Select(b.Compare(x, SplatLike(b, x, 0), ComparisonDirection::kGt), x, neg);
  return gamma == 1.0 ? r : b.Binary(Opcode::kMultiply, r, SplatLike(b, x, gamma));
}

Instruction* ThresholdedReluOf(hlo::Builder& b, Instruction* x, double alpha) {
  Instruction* gt = b.Compare(x, SplatLike(b, x, alpha), ComparisonDirection::kGt);
  return b.Select(gt, x, SplatLike(b, x, 0));
}

Instruction* HardSigmoidOf(hlo::Builder& b, Instruction* x, double alpha, double beta) {
  Instruction* y =
      b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, x, SplatLike(b, x, alpha)), SplatLike(b, x, beta));
  hlo::PrimitiveType t = x->shape().element_type;
  return b.Clamp(b.ScalarConstant(t, 0), y, b.ScalarConstant(t, 1));
}

Instruction* SoftplusOf(hlo::Builder& b, Instruction* x) {
  // log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)), which never overflows.
  Instruction* ax = b.Unary(Opcode::kAbs, x);
  return b.Binary(Opcode::kAdd, b.Binary(Opcode::kMaximum, x, SplatLike(b, x, 0)),
                  b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, ax))));
}

Instruction* SoftsignOf(hlo::Builder& b, Instruction* x) {
  return b.Binary(Opcode::kDivide, x, b.Binary(Opcode::kAdd, SplatLike(b, x, 1), b.Unary(Opcode::kAbs, x)));
}

Instruction* GeluOf(hlo::Builder& b, Instruction* x, bool tanh_approximation) {
  Instruction* cdf;
  if (tanh_approximation) {
    Instruction* x3 = b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, x, x), x);
    Instruction* inner =
        b.Binary(Opcode::kMultiply, SplatLike(b, x, std::sqrt(2.0 / M_PI)),
                 b.Binary(Opcode::kAdd, x, b.Binary(Opcode::kMultiply, x3, SplatLike(b, x, 0.044715))));
    cdf = b.Binary(Opcode::kAdd, SplatLike(b, x, 1), b.Unary(Opcode::kTanh, inner));
  } else {
    cdf = b.Binary(Opcode::kAdd, SplatLike(b, x, 1),
                   b.Unary(Opcode::kErf, b.Binary(Opcode::kMultiply, x, SplatLike(b, x, M_SQRT1_2))));
  }
  return b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, x, SplatLike(b, x, 0.5)), cdf);
}

Instruction* AffineOf(hlo::Builder& b, Instruction* x, double alpha, double beta) {
  return b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, x, SplatLike(b, x, alpha)), SplatLike(b, x, beta));
}

Instruction* ScaledTanhOf(hlo::Builder& b, Instruction* x, double alpha, double beta) {
  return b.Binary(Opcode::kMultiply, SplatLike(b, x, alpha),
                  b.Unary(Opcode::kTanh, b.Binary(Opcode::kMultiply, x, SplatLike(b, x, beta))));
}

Instruction* NamedActivation(hlo::Builder& b, const std::string& name, Instruction* x, double alpha, double beta) {
  if (name == "Sigmoid") return b.Unary(Opcode::kLogistic, x);
  if (name == "Tanh") return b.Unary(Opcode::kTanh, x);
  if (name == "Relu") return ReluOf(b, x);
  if (name == "HardSigmoid") return HardSigmoidOf(b, x, alpha, beta);
  if (name == "LeakyRelu") return LeakyReluOf(b, x, alpha);
  if (name == "ThresholdedRelu") return ThresholdedReluOf(b, x, alpha);
  if (name == "Affine") return AffineOf(b, x, alpha, beta);
  if (name == "ScaledTanh") return ScaledTanhOf(b, x, alpha, beta);
  if (name == "Softsign") return SoftsignOf(b, x);
  if (name == "Softplus") return SoftplusOf(b, x);
  if (name == "Elu") return EluOf(b, x, alpha);
  return nullptr;
}

bool ActivationDefaults(const std::string& name, float* alpha, float* beta) {
  if (name == "LeakyRelu") {
    *alpha = 0.01f;
  } else if (name == "HardSigmoid") {
    *alpha = 0.2f;
    *beta = 0.5f;
  } else if (name == "Elu" || name == "ThresholdedRelu") {
    *alpha = 1.0f;
  } else {
    return false;
  }
  return true;
}

}  // namespace xonnx::onnx_import
