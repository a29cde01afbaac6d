// Scaled dot-product attention per head, shared by ONNX's Attention and
// ONNX Runtime's Attention and MultiHeadAttention: softmax(Q K^T * scale +
// biases and masks) V.
#ifndef XONNX_ONNX_OPS_ATTENTION_CORE_H_
#define XONNX_ONNX_OPS_ATTENTION_CORE_H_

#include <cstdint>
#include <string>

#include "hlo/builder.h"

namespace xonnx::onnx_import {

// "[2,8,64]": a value's dims, for the attention ops' messages.
std::string Dims(const hlo::Instruction* x);

// (B, S, N*H) -> (B, N, S, H).
hlo::Instruction* SplitHeads(hlo::Builder& b, hlo::Instruction* x, int64_t heads);
// (B, N, S, H) -> (B, S, N*H).
hlo::Instruction* MergeHeads(hlo::Builder& b, hlo::Instruction* x);
// (B, Nkv, T, H) -> (B, Nkv * groups, T, H), each head repeated `groups`
// times in place: the keys and values of grouped-query attention.
hlo::Instruction* RepeatHeads(hlo::Builder& b, hlo::Instruction* x, int64_t groups);

// What the core needs besides Q, K and V.
struct AttentionMasks {
  double scale = 0;        // 0: 1 / sqrt(head size)
  double filter = -10000;  // added where a key is masked (ONNX: minus infinity)
  // Query i sees keys j <= i + (T - S) when the mask is aligned to the
  // bottom right (the last query sees every key: decoding with a past), or
  // j <= i when aligned to the top left.
  bool causal = false;
  bool causal_bottom_right = true;
  hlo::Instruction* keep = nullptr;  // pred, broadcastable to (B, N, S, T): where a key may be seen
  hlo::Instruction* bias = nullptr;  // additive, broadcastable to (B, N, S, T)
  // The type the softmax is computed in (the scores' when invalid).
  hlo::PrimitiveType softmax_type = hlo::PRIMITIVE_TYPE_INVALID;
};

// q (B,N,S,H), k (B,N,T,H), v (B,N,T,Hv) -> (B,N,S,Hv).
hlo::Instruction* Attend(hlo::Builder& b, hlo::Instruction* q, hlo::Instruction* k, hlo::Instruction* v,
                         const AttentionMasks& m);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_OPS_ATTENTION_CORE_H_
