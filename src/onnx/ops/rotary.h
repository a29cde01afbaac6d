// The rotation of rotary position embeddings, shared by the RotaryEmbedding
// ops (rotary.cc) and ONNX Runtime's GroupQueryAttention (do_rotary).
#ifndef XONNX_ONNX_OPS_ROTARY_H_
#define XONNX_ONNX_OPS_ROTARY_H_

#include <cstdint>

#include "hlo/builder.h"

namespace xonnx::onnx_import {

// cache[positions]: rows of a (max_position, R/2) cache picked by positions
// (B, S) -> (B, S, R/2).
hlo::Instruction* CacheRows(hlo::Builder& b, hlo::Instruction* cache, hlo::Instruction* positions);

// Rotates the first `rot` features of each head of xs, a rank-4 array with
// heads in dim 3 and the sequence in `seq_dim` (1: (B,S,N,H), 2: (B,N,S,H)),
// by the angles of cos and sin (B, S, rot/2): pairs are the two halves of
// those features, or neighbours when `interleaved`; the rest pass through.
hlo::Instruction* RotatePairs(hlo::Builder& b, hlo::Instruction* xs, int64_t seq_dim, hlo::Instruction* cos,
                              hlo::Instruction* sin, int64_t rot, bool interleaved);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_OPS_ROTARY_H_
