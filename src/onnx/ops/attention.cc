// ONNX's Attention (opset 23): scaled dot-product attention over Q, K and V
// given per head (B, N, S, H) or with the heads in the last axis (B, S, N*H,
// with q_num_heads and kv_num_heads), grouped-query attention when K and V
// have fewer heads than Q, an optional boolean or additive mask, past keys
// and values concatenated in front (returned as the present ones), and
// causal masking. Masked scores are minus infinity, as the specification
// says. With a past, the causal mask is aligned to the bottom right (the last
// query sees every key), as ONNX Runtime computes it.
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/ops/attention_core.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;

// Q, K or V as (B, N, S, H): 4-D as given, 3-D split into `heads`.
absl::StatusOr<Instruction*> PerHead(NodeContext& ctx, int i, const char* heads_attr) {
  Instruction* x = ctx.input(i);
  if (x->shape().rank() == 4) return x;
  if (x->shape().rank() != 3)
    return ctx.Error(absl::StrCat("input ", i, " must be (batch, heads, sequence, head) or (batch, sequence, ",
                                  "hidden); it is ", Dims(x)));
  int64_t heads = ctx.attr_i(heads_attr, 0);
  if (heads <= 0 || x->shape().dims[2] % heads)
    return ctx.Error(absl::StrCat("a 3-D input ", i, " ", Dims(x), " needs ", heads_attr, " dividing its last ",
                                  "dimension; it is ", heads));
  return SplitHeads(ctx.b(), x, heads);
}

absl::Status Attention(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  if (ctx.attr_f("softcap", 0.0f) != 0.0f) return ctx.Unsupported("softcap");
  if (ctx.wants_output(3)) return ctx.Unsupported("output 3 (qk_matmul_output)");
  Instruction* q3 = ctx.input(0);
  if (!hlo::IsFloatingPoint(q3->shape().element_type)) return ctx.Unsupported("non-float input");
  ASSIGN_OR_RETURN(Instruction * q, PerHead(ctx, 0, "q_num_heads"));
  ASSIGN_OR_RETURN(Instruction * k, PerHead(ctx, 1, "kv_num_heads"));
  ASSIGN_OR_RETURN(Instruction * v, PerHead(ctx, 2, "kv_num_heads"));
  if (ctx.has_input(4) != ctx.has_input(5)) return ctx.Error("past_key and past_value come together");
  if (ctx.has_input(4)) {
    k = b.Concatenate({ctx.input(4), k}, 2);
    v = b.Concatenate({ctx.input(5), v}, 2);
  }
  if (ctx.wants_output(1)) ctx.set_output(1, k);
  if (ctx.wants_output(2)) ctx.set_output(2, v);
  int64_t qh = q->shape().dims[1], kvh = k->shape().dims[1];
  if (kvh <= 0 || qh % kvh)
    return ctx.Error(absl::StrCat("Q's ", qh, " heads must be a multiple of K's and V's ", kvh));
  AttentionMasks m;
  m.scale = ctx.attr_f("scale", 0.0f);
  m.filter = -std::numeric_limits<double>::infinity();
  m.causal = ctx.attr_i("is_causal", 0) != 0;
  m.causal_bottom_right = true;
  if (ctx.has_attr("softmax_precision")) {
    ASSIGN_OR_RETURN(m.softmax_type, HloType(static_cast<int32_t>(ctx.attr_i("softmax_precision", 1))));
  }
  if (ctx.has_input(3)) {
    Instruction* mask = ctx.input(3);
    if (mask->shape().element_type == hlo::PRED)
      m.keep = mask;
    else
      m.bias = mask;
  }
  Instruction* y = Attend(b, q, RepeatHeads(b, k, qh / kvh), RepeatHeads(b, v, qh / kvh), m);
  ctx.set_output(0, q3->shape().rank() == 3 ? MergeHeads(b, y) : y);
  return absl::OkStatus();
}

}  // namespace

void RegisterAttentionOps(Registry& r) { r.Add("Attention", Attention, 23); }

}  // namespace xonnx::onnx_import
