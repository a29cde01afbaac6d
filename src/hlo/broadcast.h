// Numpy's broadcasting rules over HLO: the common shape of two dimension
// lists, and a value broadcast to a shape (dims right-aligned, size-1 dims
// expanding). Shared by ONNX's converters and the program API.
#ifndef XONNX_HLO_BROADCAST_H_
#define XONNX_HLO_BROADCAST_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/builder.h"

namespace xonnx::hlo {

// The broadcast of dimension lists a and b; an error naming both when they
// do not broadcast.
absl::StatusOr<std::vector<int64_t>> BroadcastDims(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// x broadcast to `dims` (x itself when it has them); an error of `b` when
// it cannot be.
Instruction* BroadcastTo(Builder& b, Instruction* x, const std::vector<int64_t>& dims);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_BROADCAST_H_
