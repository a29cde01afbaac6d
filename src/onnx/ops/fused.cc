// ONNX Runtime's fused forms of ONNX ops, which it writes when it saves a
// model it has optimized (graph optimization level "extended" or higher):
// FusedConv and FusedGemm (the op followed by an activation) and
// FusedMatMul (transposes and a scale folded into MatMul).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "onnx/ops/activations.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// The activation a fused node names, with its parameters (LeakyRelu: alpha;
// Clip: min, max; HardSigmoid: alpha, beta; Elu: alpha).
absl::StatusOr<Instruction*> FusedActivation(NodeContext& ctx, Instruction* x, const std::string& name,
                                             const std::vector<float>& params) {
  hlo::Builder& b = ctx.b();
  auto param = [&](size_t i, float def) { return i < params.size() ? params[i] : def; };
  if (name.empty()) return x;
  if (name == "Clip")
    return b.Clamp(SplatLike(b, x, param(0, -3.402823e38f)), x, SplatLike(b, x, param(1, 3.402823e38f)));
  if (name == "HardSwish") return b.Binary(Opcode::kMultiply, x, HardSigmoidOf(b, x, 1.0 / 6, 0.5));
  float alpha = 1.0f, beta = 0.5f;  // ONNX's defaults where ActivationDefaults knows them
  ActivationDefaults(name, &alpha, &beta);
  if (Instruction* y = NamedActivation(b, name, x, param(0, alpha), param(1, beta))) return y;
  return ctx.Unsupported(absl::StrCat("activation '", name, "'"));
}

// FusedConv: activation(Conv(X, W) + B (+ Z)).
absl::Status FusedConv(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(Instruction * y, ConvWithAttributes(ctx, ctx.input(0), ctx.input(1)));
  if (!y) return absl::OkStatus();  // the builder holds the error
  y = AddChannelBias(b, y, ctx.has_input(2) ? ctx.input(2) : nullptr);
  if (ctx.has_input(3)) y = b.Binary(Opcode::kAdd, y, BroadcastTo(b, ctx.input(3), y->shape().dims));
  ASSIGN_OR_RETURN(y, FusedActivation(ctx, y, ctx.attr_s("activation", ""), ctx.attr_floats("activation_params")));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

// FusedGemm: activation(Gemm(A, B, C)).
absl::Status FusedGemm(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Instruction * y, GemmWithAttributes(ctx));
  if (!y) return absl::OkStatus();
  std::vector<float> params = {ctx.attr_f("activation_alpha", 0.01f), ctx.attr_f("activation_beta", 0.5f)};
  ASSIGN_OR_RETURN(y, FusedActivation(ctx, y, ctx.attr_s("activation", ""), params));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

// Swaps the last two dims (a vector stays as it is).
Instruction* TransposeLast(hlo::Builder& b, Instruction* x) {
  int64_t r = x->shape().rank();
  if (r < 2) return x;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i) perm.push_back(i);
  std::swap(perm[r - 1], perm[r - 2]);
  return b.Transpose(x, perm);
}

// Moves dim 0 behind the batch dims, before the last: (d0, d1..dn-2, dn-1)
// -> (d1..dn-2, d0, dn-1), the "batch transpose" of FusedMatMul.
Instruction* TransposeBatch(hlo::Builder& b, Instruction* x) {
  int64_t r = x->shape().rank();
  if (r < 3) return x;
  std::vector<int64_t> perm;
  for (int64_t i = 1; i < r - 1; ++i) perm.push_back(i);
  perm.push_back(0);
  perm.push_back(r - 1);
  return b.Transpose(x, perm);
}

// FusedMatMul: alpha * op(A) op(B), op moving the first dim behind the batch
// dims (transBatchA / transBatchB) and then swapping the last two (transA /
// transB); numpy MatMul otherwise.
absl::Status FusedMatMul(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* a = ctx.input(0);
  Instruction* w = ctx.input(1);
  if (ctx.attr_i("transBatchA", 0)) a = TransposeBatch(b, a);
  if (ctx.attr_i("transBatchB", 0)) w = TransposeBatch(b, w);
  if (ctx.attr_i("transA", 0)) a = TransposeLast(b, a);
  if (ctx.attr_i("transB", 0)) w = TransposeLast(b, w);
  ASSIGN_OR_RETURN(Instruction * y, NumpyMatMul(ctx, a, w));
  float alpha = ctx.attr_f("alpha", 1.0f);
  if (alpha != 1.0f) y = b.Binary(Opcode::kMultiply, y, SplatLike(b, y, alpha));
  ctx.set_output(0, y);
  return absl::OkStatus();
}

}  // namespace

void RegisterFusedOps(Registry& r) {
  for (auto [op, fn] : {std::pair<const char*, Converter>{"FusedConv", FusedConv},
                        {"FusedGemm", FusedGemm},
                        {"FusedMatMul", FusedMatMul}})
    r.Add({.domain = "com.microsoft", .op_type = op, .min_opset = 1, .max_opset = 1, .fn = fn});
}

}  // namespace xonnx::onnx_import
