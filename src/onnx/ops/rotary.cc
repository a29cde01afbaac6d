// Rotary position embeddings: ONNX's RotaryEmbedding (opset 23) and ONNX
// Runtime's com.microsoft RotaryEmbedding, which differ only in their inputs'
// order and in how positions are given. The first rotary_embedding_dim
// features of each head are rotated in pairs by the angles whose cosines and
// sines the caches hold; the rest pass through. Pairs are the two halves of
// those features, or neighbours when `interleaved`.
#include "onnx/ops/rotary.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
using hlo::Instruction;
using hlo::Opcode;

Instruction* CacheRows(hlo::Builder& b, Instruction* cache, Instruction* positions) {
  const auto& pd = positions->shape().dims;
  hlo::GatherDimensionNumbers d;
  d.offset_dims = {2};
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = 2;
  Instruction* idx = b.Reshape(b.Convert(positions, hlo::S64), {pd[0], pd[1], 1});
  return b.Gather(cache, idx, d, {1, cache->shape().dims[1]});
}

Instruction* RotatePairs(hlo::Builder& b, Instruction* xs, int64_t seq_dim, Instruction* cos, Instruction* sin,
                         int64_t rot, bool interleaved) {
  int64_t half = rot / 2, head = xs->shape().dims[3];
  hlo::PrimitiveType t = xs->shape().element_type;
  std::vector<int64_t> hd = xs->shape().dims;
  hd[3] = half;
  std::vector<int64_t> bcast = seq_dim == 1 ? std::vector<int64_t>{0, 1, 3} : std::vector<int64_t>{0, 2, 3};
  cos = b.Broadcast(b.Convert(cos, t), hd, bcast);
  sin = b.Broadcast(b.Convert(sin, t), hd, bcast);
  std::vector<int64_t> lo(4, 0), hi = xs->shape().dims, step(4, 1);
  Instruction *x1, *x2;
  if (interleaved) {
    hi[3] = rot;
    step[3] = 2;
    x1 = b.Slice(xs, lo, hi, step);
    lo[3] = 1;
    x2 = b.Slice(xs, lo, hi, step);
  } else {
    hi[3] = half;
    x1 = b.Slice(xs, lo, hi, step);
    lo[3] = half;
    hi[3] = rot;
    x2 = b.Slice(xs, lo, hi, step);
  }
  Instruction* y1 =
      b.Binary(Opcode::kSubtract, b.Binary(Opcode::kMultiply, x1, cos), b.Binary(Opcode::kMultiply, x2, sin));
  Instruction* y2 = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, x2, cos), b.Binary(Opcode::kMultiply, x1, sin));
  Instruction* rotated;
  if (interleaved) {
    std::vector<int64_t> pair = hd;
    pair.push_back(1);
    std::vector<int64_t> rd = xs->shape().dims;
    rd[3] = rot;
    rotated = b.Reshape(b.Concatenate({b.Reshape(y1, pair), b.Reshape(y2, pair)}, 4), rd);
  } else {
    rotated = b.Concatenate({y1, y2}, 3);
  }
  if (rot < head) {
    std::vector<int64_t> from(4, 0);
    from[3] = rot;
    rotated = b.Concatenate({rotated, b.Slice(xs, from, xs->shape().dims, {1, 1, 1, 1})}, 3);
  }
  return rotated;
}

namespace {

struct RotaryInputs {
  int x = 0, cos = 0, sin = 0, positions = -1;  // input indices; positions -1: none
  bool offset_positions = false;                // a one-element position is the first position
};

absl::Status Rotary(NodeContext& ctx, const RotaryInputs& in) {
  hlo::Builder& b = ctx.b();
  Instruction* x = ctx.input(in.x);
  if (!hlo::IsFloatingPoint(x->shape().element_type)) return ctx.Unsupported("non-float input");
  const auto& xd = x->shape().dims;
  int64_t batch, seq, heads, head;
  // x as (B, S, N, H) for 3-D inputs, (B, N, S, H) for 4-D ones; `seq_dim`
  // says where S is.
  Instruction* xs;
  int64_t seq_dim;
  if (xd.size() == 3) {
    heads = ctx.attr_i("num_heads", 0);
    if (heads <= 0 || xd[2] % heads)
      return ctx.Error(absl::StrCat("a 3-D input [", absl::StrJoin(xd, ","),
                                    "] needs num_heads dividing its hidden size; num_heads is ", heads));
    batch = xd[0], seq = xd[1], head = xd[2] / heads;
    xs = b.Reshape(x, {batch, seq, heads, head});
    seq_dim = 1;
  } else if (xd.size() == 4) {
    batch = xd[0], heads = xd[1], seq = xd[2], head = xd[3];
    xs = x;
    seq_dim = 2;
  } else {
    return ctx.Error(absl::StrCat("input must be (batch, sequence, hidden) or (batch, heads, sequence, head); it is [",
                                  absl::StrJoin(xd, ","), "]"));
  }
  int64_t rot = ctx.attr_i("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  if (rot <= 0 || rot > head || rot % 2)
    return ctx.Error(absl::StrCat("rotary_embedding_dim ", rot, " must be even and at most the head size ", head));
  int64_t half = rot / 2;
  Instruction* cos = ctx.input(in.cos);
  Instruction* sin = ctx.input(in.sin);
  if (cos->shape().dims != sin->shape().dims) return ctx.Error("cos_cache and sin_cache must have the same shape");
  if (in.positions >= 0 && ctx.has_input(in.positions)) {
    Instruction* pos = ctx.input(in.positions);
    if (cos->shape().rank() != 2 || cos->shape().dims[1] != half)
      return ctx.Error(absl::StrCat("with position ids, the caches must be (max_position, ", half, "); they are [",
                                    absl::StrJoin(cos->shape().dims, ","), "]"));
    if (in.offset_positions && pos->shape().ElementCount() == 1) {
      // One position: the first of the sequence, the rest follow it.
      Instruction* first = b.Broadcast(b.Reshape(b.Convert(pos, hlo::S64), {}), {batch, seq}, {});
      pos = b.Binary(Opcode::kAdd, first, b.Iota(hlo::Shape(hlo::S64, {batch, seq}), 1));
    } else if (pos->shape().dims != std::vector<int64_t>{batch, seq}) {
      return ctx.Error(absl::StrCat("position ids must be (batch, sequence) = [", batch, ",", seq, "]; they are [",
                                    absl::StrJoin(pos->shape().dims, ","), "]"));
    }
    // Positions past the caches would be clamped by the gather.
    RETURN_IF_ERROR(ctx.CheckIndexRange(pos, 0, cos->shape().dims[0] - 1, "position ids"));
    cos = CacheRows(b, cos, pos);
    sin = CacheRows(b, sin, pos);
  } else if (cos->shape().dims != std::vector<int64_t>{batch, seq, half}) {
    return ctx.Error(absl::StrCat("without position ids, the caches must be (batch, sequence, ", half, ") = [", batch,
                                  ",", seq, ",", half, "]; they are [", absl::StrJoin(cos->shape().dims, ","), "]"));
  }
  Instruction* rotated = RotatePairs(b, xs, seq_dim, cos, sin, rot, ctx.attr_i("interleaved", 0) != 0);
  ctx.set_output(0, b.Reshape(rotated, xd));
  return absl::OkStatus();
}

// ONNX (opset 23): X, cos_cache, sin_cache, position_ids (optional).
absl::Status RotaryEmbedding(NodeContext& ctx) { return Rotary(ctx, {.x = 0, .cos = 1, .sin = 2, .positions = 3}); }

// ONNX Runtime: input, position_ids, cos_cache, sin_cache; a one-element
// position_ids is the position of the first token.
absl::Status MsRotaryEmbedding(NodeContext& ctx) {
  if (ctx.attr_i("is_packed_batching", 0)) return ctx.Unsupported("is_packed_batching=1");
  return Rotary(ctx, {.x = 0, .cos = 2, .sin = 3, .positions = 1, .offset_positions = true});
}

}  // namespace

void RegisterRotaryOps(Registry& r) {
  r.Add("RotaryEmbedding", RotaryEmbedding, 23);
  r.Add({.domain = "com.microsoft",
         .op_type = "RotaryEmbedding",
         .min_opset = 1,
         .max_opset = 1,
         .fn = MsRotaryEmbedding});
}

}  // namespace xonnx::onnx_import
