// Which inputs and outputs of a decoder model carry what: the token ids,
// the attention mask, the positions, and the key/value cache in and out.
#ifndef XONNX_GENERATE_DECODER_STYLE_H_
#define XONNX_GENERATE_DECODER_STYLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xonnx/session.h"
#include "xonnx/status.h"

namespace xonnx {

struct DecoderStyle {
  std::string name;                                     // "hf"
  std::string input_ids, attention_mask, position_ids;  // position_ids may be empty
  DataType ids_dtype = DataType::kInt64, mask_dtype = DataType::kInt64, positions_dtype = DataType::kInt64;
  // The cache: layer i's key then value, in and out, [batch, heads, length, head_dim].
  std::vector<TensorSpec> past;
  std::vector<std::string> present;
  std::vector<size_t> present_index;  // in the model's outputs
  size_t logits_index = 0;
  int64_t heads = 0, head_dim = 0;
  DataType cache_dtype = DataType::kFloat32;
};

// The style of a model from its declared inputs and outputs, or an error
// that names what does not fit any style known.
StatusOr<DecoderStyle> DetectDecoderStyle(const std::vector<TensorSpec>& inputs,
                                          const std::vector<TensorSpec>& outputs);

}  // namespace xonnx

#endif  // XONNX_GENERATE_DECODER_STYLE_H_
