// ONNX Runtime's attention ops, as its transformer optimizer and exporters
// write them: com.microsoft Attention (input projection fused in),
// MultiHeadAttention (projections outside) and GroupQueryAttention (decoders
// with a KV cache). Both reduce to one core:
// softmax(Q K^T * scale + masks and biases) V per head, with past keys and
// values concatenated in front and returned as the present ones. Masked
// positions get `mask_filter_value` added (not minus infinity), as ONNX
// Runtime's kernels do, so that a fully masked row stays finite.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/ops/attention_core.h"
#include "onnx/ops/rotary.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::ComparisonDirection;
using hlo::Instruction;
using hlo::Opcode;

// A key mask in one of ONNX Runtime's forms, as a pred broadcastable to
// (B, N, S, T): (B, T) raw 0/1, (B, S, T) raw, or (B) valid lengths (keys
// at and after the length are masked).
absl::StatusOr<Instruction*> KeepFromMask(NodeContext& ctx, int i, int64_t batch, int64_t s, int64_t t) {
  Instruction* mask = ctx.input(i);
  hlo::Builder& b = ctx.b();
  const auto& d = mask->shape().dims;
  Instruction* zero = SplatLike(b, mask, 0);
  if (d == std::vector<int64_t>{batch, t})
    return b.Reshape(b.Compare(mask, zero, ComparisonDirection::kNe), {batch, 1, 1, t});
  if (d == std::vector<int64_t>{batch, s, t})
    return b.Reshape(b.Compare(mask, zero, ComparisonDirection::kNe), {batch, 1, s, t});
  if (d == std::vector<int64_t>{batch}) {
    Instruction* col = b.Iota(hlo::Shape(mask->shape().element_type, {batch, t}), 1);
    Instruction* len = b.Broadcast(mask, {batch, t}, {0});
    return b.Reshape(b.Compare(col, len, ComparisonDirection::kLt), {batch, 1, 1, t});
  }
  return ctx.Unsupported(absl::StrCat("a mask (input ", i, ") of shape ", Dims(mask), "; supported: (batch, ",
                                      "total_sequence) or (batch, sequence, total_sequence) of 0/1, or (batch) ",
                                      "lengths, here [", batch, ",", t, "], [", batch, ",", s, ",", t, "] or [", batch,
                                      "]"));
}

AttentionMasks MasksFromAttributes(const NodeContext& ctx) {
  AttentionMasks m;
  m.scale = ctx.attr_f("scale", 0.0f);
  m.filter = ctx.attr_f("mask_filter_value", -10000.0f);
  m.causal = ctx.attr_i("unidirectional", 0) != 0;
  m.causal_bottom_right = true;
  return m;
}

// The core under the node's attributes, with its mask (input `mask`) and
// attention bias (input `bias`) where given.
absl::StatusOr<Instruction*> AttendNode(NodeContext& ctx, Instruction* q, Instruction* k, Instruction* v, int mask,
                                        int bias) {
  AttentionMasks m = MasksFromAttributes(ctx);
  if (ctx.has_input(mask)) {
    ASSIGN_OR_RETURN(m.keep, KeepFromMask(ctx, mask, q->shape().dims[0], q->shape().dims[2], k->shape().dims[2]));
  }
  if (ctx.has_input(bias)) m.bias = ctx.input(bias);
  return Attend(ctx.b(), q, k, v, m);
}

// MultiHeadAttention: query (B,S,D); key and value (B,L,D) and (B,L,Dv), or
// already split into heads (B,N,L,H); bias (D+D+Dv) on the projections;
// key_padding_mask; attention_bias (B or 1, N or 1, S, T); past_key and
// past_value (B,N,P,H). Outputs: (B,S,Dv), present_key, present_value.
absl::Status MultiHeadAttention(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  int64_t heads = ctx.attr_i("num_heads", 0);
  if (heads <= 0) return ctx.Error("num_heads must be positive");
  Instruction* q = ctx.input(0);
  if (q->shape().rank() != 3)
    return ctx.Unsupported(absl::StrCat("query of shape ", Dims(q), ": only (batch, sequence, hidden) queries"));
  if (!ctx.has_input(1) || !ctx.has_input(2))
    return ctx.Unsupported("packed QKV or KV in the query or key: key and value must both be given");
  for (int i : {8, 9})
    if (ctx.has_input(i)) return ctx.Unsupported(absl::StrCat("input ", i, " (a shared KV-cache buffer)"));
  Instruction* k = ctx.input(1);
  Instruction* v = ctx.input(2);
  int64_t d = q->shape().dims[2];
  if (d % heads) return ctx.Error(absl::StrCat("query's hidden size ", d, " is not a multiple of num_heads ", heads));
  bool split_kv = k->shape().rank() == 4;
  if (split_kv != (v->shape().rank() == 4) || (!split_kv && (k->shape().rank() != 3 || v->shape().rank() != 3)))
    return ctx.Error(absl::StrCat("key ", Dims(k), " and value ", Dims(v),
                                  " must both be (batch, sequence, hidden) or both (batch, heads, sequence, head)"));
  if (ctx.has_input(3)) {
    if (split_kv) return ctx.Unsupported("a bias with keys and values already split into heads");
    Instruction* bias = ctx.input(3);
    int64_t dk = k->shape().dims[2], dv = v->shape().dims[2];
    if (bias->shape().ElementCount() != d + dk + dv)
      return ctx.Error(absl::StrCat("bias (input 3) must have ", d + dk + dv, " elements (query, key and value ",
                                    "hidden sizes); it has ", bias->shape().ElementCount()));
    bias = b.Reshape(bias, {d + dk + dv});
    auto part = [&](Instruction* x, int64_t from, int64_t n) {
      Instruction* slice = b.Slice(bias, {from}, {from + n}, {1});
      return b.Binary(Opcode::kAdd, x, b.Broadcast(b.Convert(slice, x->shape().element_type), x->shape().dims, {2}));
    };
    q = part(q, 0, d);
    k = part(k, d, dk);
    v = part(v, d + dk, dv);
  }
  q = SplitHeads(b, q, heads);
  if (!split_kv) {
    if (k->shape().dims[2] % heads || v->shape().dims[2] % heads)
      return ctx.Error("key and value hidden sizes must be multiples of num_heads");
    k = SplitHeads(b, k, heads);
    v = SplitHeads(b, v, heads);
  }
  if (ctx.has_input(6) != ctx.has_input(7)) return ctx.Error("past_key and past_value come together");
  if (ctx.has_input(6)) {
    if (split_kv) return ctx.Unsupported("past keys with keys already split into heads");
    k = b.Concatenate({ctx.input(6), k}, 2);
    v = b.Concatenate({ctx.input(7), v}, 2);
  }
  ASSIGN_OR_RETURN(Instruction * out, AttendNode(ctx, q, k, v, /*mask=*/4, /*bias=*/5));
  ctx.set_output(0, MergeHeads(b, out));
  if (ctx.wants_output(1)) ctx.set_output(1, k);
  if (ctx.wants_output(2)) ctx.set_output(2, v);
  if (ctx.wants_output(3)) return ctx.Unsupported("output 3 (the raw QK scores)");
  return absl::OkStatus();
}

// Attention: input (B,S,Din) times weights (Din, D+D+Dv) (+ bias) gives Q,
// K and V; mask_index; past (2,B,N,P,H); attention_bias. Outputs: (B,S,Dv)
// and present (2,B,N,T,H).
absl::Status Attention(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  int64_t heads = ctx.attr_i("num_heads", 0);
  if (heads <= 0) return ctx.Error("num_heads must be positive");
  if (ctx.attr_i("do_rotary", 0)) return ctx.Unsupported("do_rotary=1");
  if (ctx.attr_i("past_present_share_buffer", 0)) return ctx.Unsupported("past_present_share_buffer=1");
  if (ctx.has_input(6)) return ctx.Unsupported("input 6 (past_sequence_length)");
  Instruction* x = ctx.input(0);
  Instruction* w = ctx.input(1);
  if (x->shape().rank() != 3 || w->shape().rank() != 2 || w->shape().dims[0] != x->shape().dims[2])
    return ctx.Error(absl::StrCat("input ", Dims(x), " and weights ", Dims(w),
                                  " must be (batch, sequence, input_hidden) and (input_hidden, 3 x hidden)"));
  int64_t total = w->shape().dims[1];
  std::vector<int64_t> sizes = ctx.attr_ints("qkv_hidden_sizes", {total / 3, total / 3, total - 2 * (total / 3)});
  if (sizes.size() != 3 || sizes[0] + sizes[1] + sizes[2] != total || sizes[0] != sizes[1])
    return ctx.Error(absl::StrCat("qkv_hidden_sizes [", absl::StrJoin(sizes, ","), "] must be three sizes, the first ",
                                  "two equal, adding up to the weights' ", total, " columns"));
  for (int64_t n : sizes)
    if (n % heads) return ctx.Error(absl::StrCat("hidden size ", n, " is not a multiple of num_heads ", heads));
  hlo::DotDimensionNumbers proj;
  proj.lhs_contracting_dimensions = {2};
  proj.rhs_contracting_dimensions = {0};
  Instruction* qkv = b.Dot(x, b.Convert(w, x->shape().element_type), proj);  // (B, S, total)
  if (ctx.has_input(2)) {
    Instruction* bias = ctx.input(2);
    if (bias->shape().ElementCount() != total)
      return ctx.Error(
          absl::StrCat("bias (input 2) must have ", total, " elements; it has ", bias->shape().ElementCount()));
    qkv = b.Binary(Opcode::kAdd, qkv,
                   b.Broadcast(b.Convert(b.Reshape(bias, {total}), qkv->shape().element_type), qkv->shape().dims, {2}));
  }
  int64_t batch = x->shape().dims[0], s = x->shape().dims[1];
  auto columns = [&](int64_t from, int64_t n) {
    return SplitHeads(b, b.Slice(qkv, {0, 0, from}, {batch, s, from + n}, {1, 1, 1}), heads);
  };
  Instruction* q = columns(0, sizes[0]);
  Instruction* k = columns(sizes[0], sizes[1]);
  Instruction* v = columns(sizes[0] + sizes[1], sizes[2]);
  if (ctx.has_input(4)) {
    if (sizes[1] != sizes[2]) return ctx.Error("past needs key and value of the same hidden size");
    Instruction* past = ctx.input(4);  // (2, B, N, P, H)
    const auto& pd = past->shape().dims;
    if (pd.size() != 5 || pd[0] != 2 || pd[1] != batch || pd[2] != heads || pd[4] != sizes[1] / heads)
      return ctx.Error(
          absl::StrCat("past (input 4) must be (2, batch, num_heads, past_sequence, head_size); it is ", Dims(past)));
    std::vector<int64_t> one = {batch, heads, pd[3], pd[4]};
    k = b.Concatenate(
        {b.Reshape(b.Slice(past, {0, 0, 0, 0, 0}, {1, pd[1], pd[2], pd[3], pd[4]}, {1, 1, 1, 1, 1}), one), k}, 2);
    v = b.Concatenate(
        {b.Reshape(b.Slice(past, {1, 0, 0, 0, 0}, {2, pd[1], pd[2], pd[3], pd[4]}, {1, 1, 1, 1, 1}), one), v}, 2);
  }
  ASSIGN_OR_RETURN(Instruction * out, AttendNode(ctx, q, k, v, /*mask=*/3, /*bias=*/5));
  ctx.set_output(0, MergeHeads(b, out));
  if (ctx.wants_output(1)) {
    std::vector<int64_t> pd = {1, batch, heads, k->shape().dims[2], k->shape().dims[3]};
    ctx.set_output(1, b.Concatenate({b.Reshape(k, pd), b.Reshape(v, pd)}, 0));
  }
  return absl::OkStatus();
}

// GroupQueryAttention, as ONNX Runtime's decoders use it: query (B,S,N*H),
// key and value (B,S,Nkv*H) or packed into the query, past_key and
// past_value (B,Nkv,P,H), seqlens_k (B: each sequence's total length - 1),
// total_sequence_length (compiled in: the present's length T), and with
// do_rotary the cos and sin caches. Always causal. The new keys and values
// go after the past: at P for a prompt (S > 1), at seqlens_k for one token
// (S = 1, where sequences of a batch may have different lengths); a query
// at position p sees keys 0..p within its sequence's total length. Present
// positions after a sequence's keys are zero.
absl::Status GroupQueryAttention(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  int64_t heads = ctx.attr_i("num_heads", 0), kv_heads = ctx.attr_i("kv_num_heads", 0);
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads)
    return ctx.Error(
        absl::StrCat("num_heads (", heads, ") must be a positive multiple of kv_num_heads (", kv_heads, ")"));
  if (ctx.attr_f("softcap", 0.0f) != 0.0f) return ctx.Unsupported("softcap");
  if (ctx.attr_i("smooth_softmax", 0)) return ctx.Unsupported("smooth_softmax");
  if (ctx.attr_i("local_window_size", -1) != -1) return ctx.Unsupported("local_window_size (sliding windows)");
  if (ctx.attr_i("qk_output", 0)) return ctx.Unsupported("qk_output");
  for (int i : {9, 10, 11})
    if (ctx.has_input(i))
      return ctx.Unsupported(absl::StrCat("input ", i, " (position_ids, attention_bias, head_sink)"));
  Instruction* query = ctx.input(0);
  if (query->shape().rank() != 3) return ctx.Unsupported(absl::StrCat("query of shape ", Dims(query)));
  int64_t batch = query->shape().dims[0], s = query->shape().dims[1];
  Instruction *q, *k, *v;
  if (ctx.has_input(1)) {
    q = query;
    k = ctx.input(1);
    v = ctx.input(2);
  } else {  // Q, K and V packed in the query's last axis
    int64_t d = query->shape().dims[2], head = d / (heads + 2 * kv_heads);
    if (head * (heads + 2 * kv_heads) != d)
      return ctx.Error(
          absl::StrCat("a packed query's last dimension ", d, " must be (num_heads + 2 kv_num_heads) ", "x head size"));
    auto part = [&](int64_t from, int64_t n) {
      return b.Slice(query, {0, 0, from * head}, {batch, s, (from + n) * head}, {1, 1, 1});
    };
    q = part(0, heads);
    k = part(heads, kv_heads);
    v = part(heads + kv_heads, kv_heads);
  }
  int64_t head = q->shape().dims[2] / heads;
  if (q->shape().dims[2] % heads || k->shape().dims[2] != kv_heads * head || v->shape().dims != k->shape().dims)
    return ctx.Error(absl::StrCat("query ", Dims(q), ", key ", Dims(k), " and value ", Dims(v),
                                  " do not split into num_heads and kv_num_heads heads of one size"));
  q = SplitHeads(b, q, heads);
  k = SplitHeads(b, k, kv_heads);
  v = SplitHeads(b, v, kv_heads);
  int64_t past = ctx.has_input(3) ? ctx.input(3)->shape().dims[2] : 0;
  ASSIGN_OR_RETURN(std::vector<int64_t> total_l, ctx.ConstInts(6));
  if (total_l.size() != 1) return ctx.Error("total_sequence_length must be one value");
  int64_t total = total_l[0];
  if (total < s || total < past)
    return ctx.Error(absl::StrCat("total_sequence_length ", total, " is shorter than the past (", past,
                                  ") or the new tokens (", s, ")"));
  if (s > 1 && past + s > total)
    return ctx.Error(absl::StrCat("a prompt of ", s, " tokens after a past of ", past,
                                  " does not fit total_sequence_length ", total));
  // Where each sequence's new tokens start, and its total length.
  Instruction* lengths = b.Convert(ctx.input(5), hlo::S64);  // (B): total - 1
  if (lengths->shape().ElementCount() != batch)
    return ctx.Error(absl::StrCat("seqlens_k must have ", batch, " values, one per sequence"));
  lengths = b.Reshape(lengths, {batch});
  Instruction* start = s == 1 ? lengths : b.Broadcast(b.ScalarConstant(hlo::S64, past), {batch}, {});
  Instruction* total_b = b.Binary(Opcode::kAdd, lengths, b.Broadcast(b.ScalarConstant(hlo::S64, 1), {batch}, {}));
  if (ctx.attr_i("do_rotary", 0)) {
    if (!ctx.has_input(7) || !ctx.has_input(8)) return ctx.Error("do_rotary needs cos_cache and sin_cache");
    Instruction* cos = ctx.input(7);
    Instruction* sin = ctx.input(8);
    Instruction* pos =
        b.Binary(Opcode::kAdd, b.Broadcast(start, {batch, s}, {0}), b.Iota(hlo::Shape(hlo::S64, {batch, s}), 1));
    Instruction* pc = CacheRows(b, cos, pos);
    Instruction* ps = CacheRows(b, sin, pos);
    int64_t rot = 2 * cos->shape().dims[1];
    bool interleaved = ctx.attr_i("rotary_interleaved", 0) != 0;
    q = RotatePairs(b, q, 2, pc, ps, rot, interleaved);
    k = RotatePairs(b, k, 2, pc, ps, rot, interleaved);
  }
  // The present: the past up to `start`, the new tokens from there, zeros after.
  auto present = [&](Instruction* past_x, Instruction* new_x) {
    std::vector<int64_t> pd = {batch, kv_heads, total, head};
    Instruction* j = b.Iota(hlo::Shape(hlo::S64, pd), 2);
    Instruction* st = b.Broadcast(start, pd, {0});
    Instruction* zero = b.Broadcast(b.ScalarConstant(new_x->shape().element_type, 0), pd, {});
    Instruction* old = zero;
    if (past_x) {
      int64_t p = past_x->shape().dims[2];
      std::vector<hlo::PaddingDimension> cfg(4);
      cfg[2].edge_padding_high = total - p;
      old = b.Pad(past_x, b.ScalarConstant(past_x->shape().element_type, 0), cfg);
    }
    Instruction* fresh;
    if (s == 1) {
      fresh = b.Broadcast(b.Reshape(new_x, {batch, kv_heads, head}), pd, {0, 1, 3});
    } else {
      std::vector<hlo::PaddingDimension> cfg(4);
      cfg[2].edge_padding_low = past;
      cfg[2].edge_padding_high = total - past - s;
      fresh = b.Pad(new_x, b.ScalarConstant(new_x->shape().element_type, 0), cfg);
    }
    Instruction* end = b.Binary(Opcode::kAdd, st, b.Broadcast(b.ScalarConstant(hlo::S64, s), pd, {}));
    return b.Select(b.Compare(j, st, ComparisonDirection::kLt), old,
                    b.Select(b.Compare(j, end, ComparisonDirection::kLt), fresh, zero));
  };
  Instruction* pk = present(ctx.has_input(3) ? ctx.input(3) : nullptr, k);
  Instruction* pv = present(ctx.has_input(4) ? ctx.input(4) : nullptr, v);
  // Query i of sequence b sits at start_b + i and sees keys j <= that, below total_b.
  std::vector<int64_t> md = {batch, 1, s, total};
  Instruction* j = b.Iota(hlo::Shape(hlo::S64, md), 3);
  Instruction* at = b.Binary(Opcode::kAdd, b.Broadcast(start, md, {0}), b.Iota(hlo::Shape(hlo::S64, md), 2));
  AttentionMasks m;
  m.scale = ctx.attr_f("scale", 0.0f);
  m.filter = -std::numeric_limits<double>::infinity();
  m.keep = b.Binary(Opcode::kAnd, b.Compare(j, at, ComparisonDirection::kLe),
                    b.Compare(j, b.Broadcast(total_b, md, {0}), ComparisonDirection::kLt));
  Instruction* out = Attend(b, q, RepeatHeads(b, pk, heads / kv_heads), RepeatHeads(b, pv, heads / kv_heads), m);
  ctx.set_output(0, MergeHeads(b, out));
  if (ctx.wants_output(1)) ctx.set_output(1, pk);
  if (ctx.wants_output(2)) ctx.set_output(2, pv);
  return absl::OkStatus();
}

}  // namespace

void RegisterMicrosoftAttentionOps(Registry& r) {
  r.Add({.domain = "com.microsoft",
         .op_type = "GroupQueryAttention",
         .min_opset = 1,
         .max_opset = 1,
         .fn = GroupQueryAttention})
      .value_inputs = {6};
  r.Add({.domain = "com.microsoft", .op_type = "Attention", .min_opset = 1, .max_opset = 1, .fn = Attention});
  r.Add({.domain = "com.microsoft",
         .op_type = "MultiHeadAttention",
         .min_opset = 1,
         .max_opset = 1,
         .fn = MultiHeadAttention});
}

}  // namespace xonnx::onnx_import
