// The activations ONNX defines both as ops and as names in the recurrent
// ops' `activations` attribute (RNN, GRU, LSTM), built once for both: the
// op converters in elementwise.cc and the cells in rnn.cc call these.
#ifndef XONNX_ONNX_OPS_ACTIVATIONS_H_
#define XONNX_ONNX_OPS_ACTIVATIONS_H_

#include <string>

#include "hlo/builder.h"

namespace xonnx::onnx_import {

hlo::Instruction* ReluOf(hlo::Builder& b, hlo::Instruction* x);
// x for x >= 0, alpha * x below.
hlo::Instruction* LeakyReluOf(hlo::Builder& b, hlo::Instruction* x, double alpha);
// x for x > 0, alpha * (exp(x) - 1) below; times gamma (Selu).
hlo::Instruction* EluOf(hlo::Builder& b, hlo::Instruction* x, double alpha, double gamma = 1.0);
// x for x > alpha, else 0.
hlo::Instruction* ThresholdedReluOf(hlo::Builder& b, hlo::Instruction* x, double alpha);
// clamp(alpha * x + beta, 0, 1).
hlo::Instruction* HardSigmoidOf(hlo::Builder& b, hlo::Instruction* x, double alpha, double beta);
// log(1 + exp(x)), computed stably.
hlo::Instruction* SoftplusOf(hlo::Builder& b, hlo::Instruction* x);
// x / (1 + |x|).
hlo::Instruction* SoftsignOf(hlo::Builder& b, hlo::Instruction* x);
// alpha * x + beta.
hlo::Instruction* AffineOf(hlo::Builder& b, hlo::Instruction* x, double alpha, double beta);
// alpha * tanh(beta * x).
hlo::Instruction* ScaledTanhOf(hlo::Builder& b, hlo::Instruction* x, double alpha, double beta);

// x * Phi(x), Phi the standard normal CDF: exactly (with erf), or with
// the tanh approximation 0.5 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Gelu (opset 20) and ONNX Runtime's Gelu, BiasGelu and FastGelu share it.
hlo::Instruction* GeluOf(hlo::Builder& b, hlo::Instruction* x, bool tanh_approximation);

// A recurrent op's activation by its attribute name, with its alpha and
// beta; null for a name ONNX does not define there.
hlo::Instruction* NamedActivation(hlo::Builder& b, const std::string& name, hlo::Instruction* x, double alpha,
                                  double beta);
// The alpha and beta a named activation takes when the node gives none
// (the ONNX operator docs' defaults); false for names without parameters.
bool ActivationDefaults(const std::string& name, float* alpha, float* beta);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_OPS_ACTIVATIONS_H_
