// ONNX Runtime's own ops that exporters and its transformer optimizer write:
// the com.microsoft activations (Gelu, FastGelu, BiasGelu, QuickGelu) and
// fused normalizations (SkipLayerNormalization,
// SkipSimplifiedLayerNormalization). Its SimplifiedLayerNormalization, which
// it registers in the ONNX domain, is ONNX's RMSNormalization
// (normalization.cc). Semantics follow ONNX
// Runtime's operator schemas (docs/ContribOperators.md there): the same
// attribute defaults, optional inputs and outputs.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/ops/activations.h"
#include "onnx/ops/normalize.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

constexpr char kMicrosoft[] = "com.microsoft";

absl::Status RequireFloat(NodeContext& ctx, Instruction* x) {
  if (!hlo::IsFloatingPoint(x->shape().element_type)) return ctx.Unsupported("non-float input");
  return absl::OkStatus();
}

// A [H] vector (gamma, beta, bias) broadcast along the last axis of `like`.
absl::StatusOr<Instruction*> AlongLastAxis(NodeContext& ctx, int i, Instruction* like, const char* what) {
  Instruction* v = ctx.input(i);
  int64_t h = like->shape().dims.back();
  if (v->shape().ElementCount() != h)
    return ctx.Error(absl::StrCat(what, " (input ", i, ") must have ", h,
                                  " elements, the input's last dimension; it has ", v->shape().ElementCount()));
  hlo::Builder& b = ctx.b();
  return b.Broadcast(b.Convert(b.Reshape(v, {h}), like->shape().element_type), like->shape().dims,
                     {like->shape().rank() - 1});
}

// Gelu (com.microsoft): the exact form.
absl::Status MsGelu(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  ctx.set_output(0, GeluOf(ctx.b(), x, /*tanh_approximation=*/false));
  return absl::OkStatus();
}

// BiasGelu: Gelu(A + B), B a [H] bias along the last axis.
absl::Status BiasGelu(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  ASSIGN_OR_RETURN(Instruction * bias, AlongLastAxis(ctx, 1, x, "bias"));
  hlo::Builder& b = ctx.b();
  ctx.set_output(0, GeluOf(b, b.Binary(Opcode::kAdd, x, bias), /*tanh_approximation=*/false));
  return absl::OkStatus();
}

// FastGelu: the tanh approximation of Gelu(X + bias), bias optional.
absl::Status FastGelu(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  hlo::Builder& b = ctx.b();
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(Instruction * bias, AlongLastAxis(ctx, 1, x, "bias"));
    x = b.Binary(Opcode::kAdd, x, bias);
  }
  ctx.set_output(0, GeluOf(b, x, /*tanh_approximation=*/true));
  return absl::OkStatus();
}

// QuickGelu: x * sigmoid(alpha x), alpha 1.702 by default.
absl::Status QuickGelu(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  hlo::Builder& b = ctx.b();
  Instruction* ax = b.Binary(Opcode::kMultiply, x, SplatLike(b, x, ctx.attr_f("alpha", 1.702f)));
  ctx.set_output(0, b.Binary(Opcode::kMultiply, x, b.Unary(Opcode::kLogistic, ax)));
  return absl::OkStatus();
}

// SkipLayerNormalization and SkipSimplifiedLayerNormalization: s = input +
// skip (+ bias), then layer (or RMS) normalization of s over the last axis,
// times gamma (+ beta). Outputs: the result, the mean, the inverse standard
// deviation (both over the last axis, keepdims) and s itself.
absl::Status SkipNormalization(NodeContext& ctx, bool rms) {
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  hlo::Builder& b = ctx.b();
  if (x->shape().rank() < 1) return ctx.Error("input must have at least one dimension");
  Instruction* skip = ctx.input(1);
  if (skip->shape().dims != x->shape().dims) {
    // ONNX Runtime accepts a skip that broadcasts over the leading axes.
    const auto& sd = skip->shape().dims;
    const auto& xd = x->shape().dims;
    auto joined = BroadcastDims(xd, sd);
    if (sd.empty() || sd.back() != xd.back() || !joined.ok() || *joined != xd)
      return ctx.Error(absl::StrCat("skip (input 1) must broadcast to the input's shape [", absl::StrJoin(xd, ","),
                                    "]; it is [", absl::StrJoin(sd, ","), "]"));
    skip = BroadcastTo(b, skip, xd);
  }
  Instruction* sum = b.Binary(Opcode::kAdd, x, b.Convert(skip, x->shape().element_type));
  // Inputs: input, skip, gamma, then beta and bias for the layer norm; bias
  // alone for the simplified one.
  int bias_index = rms ? 3 : 4;
  if (ctx.has_input(bias_index)) {
    ASSIGN_OR_RETURN(Instruction * bias, AlongLastAxis(ctx, bias_index, x, "bias"));
    sum = b.Binary(Opcode::kAdd, sum, bias);
  }
  // Statistics in f32 for 16-bit inputs, as ONNX Runtime's kernels accumulate.
  NormalizedFrom n = NormalizeFrom(b, sum, sum->shape().rank() - 1, ctx.attr_f("epsilon", 1e-12f), rms, true);
  ASSIGN_OR_RETURN(Instruction * gamma, AlongLastAxis(ctx, 2, x, "gamma"));
  Instruction* y = b.Binary(Opcode::kMultiply, n.y, gamma);
  if (!rms && ctx.has_input(3)) {
    ASSIGN_OR_RETURN(Instruction * beta, AlongLastAxis(ctx, 3, x, "beta"));
    y = b.Binary(Opcode::kAdd, y, beta);
  }
  ctx.set_output(0, y);
  if (ctx.wants_output(1)) {
    if (!n.stats.mean) return ctx.Unsupported("output 1 (mean): RMS normalization computes no mean");
    ctx.set_output(1, n.stats.mean);
  }
  if (ctx.wants_output(2)) ctx.set_output(2, n.stats.inv_std);
  if (ctx.wants_output(3)) ctx.set_output(3, sum);
  return absl::OkStatus();
}

absl::Status SkipLayerNormalization(NodeContext& ctx) { return SkipNormalization(ctx, /*rms=*/false); }
absl::Status SkipSimplifiedLayerNormalization(NodeContext& ctx) { return SkipNormalization(ctx, /*rms=*/true); }

// BiasAdd: X + bias (along the last axis) + skip, as diffusion models'
// optimized graphs write it.
absl::Status BiasAdd(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  RETURN_IF_ERROR(RequireFloat(ctx, x));
  hlo::Builder& b = ctx.b();
  ASSIGN_OR_RETURN(Instruction * bias, AlongLastAxis(ctx, 1, x, "bias"));
  Instruction* skip = ctx.input(2);
  if (skip->shape().dims != x->shape().dims)
    return ctx.Error(absl::StrCat("skip (input 2) must have the input's shape [", absl::StrJoin(x->shape().dims, ","),
                                  "]; it is [", absl::StrJoin(skip->shape().dims, ","), "]"));
  ctx.set_output(0, b.Binary(Opcode::kAdd, b.Binary(Opcode::kAdd, x, bias), skip));
  return absl::OkStatus();
}

// EmbedLayerNormalization (BERT's embeddings as ONNX Runtime's optimizer
// fuses them): word, position and segment embeddings of (B, S) ids summed
// and layer-normalized over the hidden axis; outputs the result, the mask's
// sum per sequence (mask_index, int32; zeros without a mask) and the sum
// before the normalization.
absl::Status EmbedLayerNormalization(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* ids = ctx.input(0);
  if (ids->shape().rank() != 2) return ctx.Error("input_ids must be (batch, sequence)");
  int64_t batch = ids->shape().dims[0], seq = ids->shape().dims[1];
  Instruction* words = ctx.input(2);
  RETURN_IF_ERROR(RequireFloat(ctx, words));
  // Ids index the embedding tables' rows, 0 to rows - 1, as ONNX Runtime
  // checks them.
  auto check_rows = [&](int ids_input, int table_input, const char* what) {
    return ctx.CheckIndexRange(ctx.input(ids_input), 0, ctx.shape(table_input).dims[0] - 1, what);
  };
  RETURN_IF_ERROR(check_rows(0, 2, "input_ids"));
  if (ctx.has_input(8)) RETURN_IF_ERROR(check_rows(8, 3, "position_ids"));
  if (ctx.has_input(1) && ctx.has_input(4)) RETURN_IF_ERROR(check_rows(1, 4, "segment_ids"));
  Instruction* sum = TakeAlongAxis(b, words, b.Convert(ids, hlo::S64), 0);
  // Positions: given (B, S) or (1, S), else 0..S-1 for every sequence.
  Instruction* positions;
  if (ctx.has_input(8)) {
    positions = BroadcastTo(b, b.Convert(ctx.input(8), hlo::S64), {batch, seq});
  } else {
    // The default positions 0..S-1 need S rows of the position table.
    if (seq > ctx.shape(3).dims[0])
      return ctx.Error(absl::StrCat("a sequence of ", seq, " tokens needs ", seq,
                                    " rows of position_embedding; it has ", ctx.shape(3).dims[0]));
    positions = b.Iota(hlo::Shape(hlo::S64, {batch, seq}), 1);
  }
  sum = b.Binary(Opcode::kAdd, sum, TakeAlongAxis(b, ctx.input(3), positions, 0));
  if (ctx.has_input(1) && ctx.has_input(4))
    sum = b.Binary(Opcode::kAdd, sum, TakeAlongAxis(b, ctx.input(4), b.Convert(ctx.input(1), hlo::S64), 0));
  NormalizedFrom n = NormalizeFrom(b, sum, 2, ctx.attr_f("epsilon", 1e-12f), /*rms=*/false, /*stash_f32=*/true);
  ASSIGN_OR_RETURN(Instruction * gamma, AlongLastAxis(ctx, 5, sum, "gamma"));
  ASSIGN_OR_RETURN(Instruction * beta, AlongLastAxis(ctx, 6, sum, "beta"));
  ctx.set_output(0, b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, n.y, gamma), beta));
  if (ctx.wants_output(1)) {
    Instruction* index;
    if (ctx.has_input(7)) {
      index = ReduceOver(b, b.Convert(ctx.input(7), hlo::S32), Opcode::kAdd, 0, {1}, false);
    } else {
      index = b.Broadcast(b.ScalarConstant(hlo::S32, 0), {batch}, {});
    }
    ctx.set_output(1, index);
  }
  if (ctx.wants_output(2)) ctx.set_output(2, sum);
  return absl::OkStatus();
}

}  // namespace

void RegisterMicrosoftOps(Registry& r) {
  auto ms = [&](const char* op, Converter fn) {
    r.Add({.domain = kMicrosoft, .op_type = op, .min_opset = 1, .max_opset = 1, .fn = fn});
  };
  ms("Gelu", MsGelu);
  ms("BiasGelu", BiasGelu);
  ms("FastGelu", FastGelu);
  ms("QuickGelu", QuickGelu);
  ms("SkipLayerNormalization", SkipLayerNormalization);
  ms("SkipSimplifiedLayerNormalization", SkipSimplifiedLayerNormalization);
  ms("BiasAdd", BiasAdd);
  ms("EmbedLayerNormalization", EmbedLayerNormalization);
}

}  // namespace xonnx::onnx_import
