// The REST form of inference requests and responses: a JSON object,
// optionally followed by raw tensor bytes (the binary tensor data
// extension, whose JSON part's length is the Inference-Header-Content-Length
// header).
#ifndef XONNX_SERVE_HTTP_CODEC_H_
#define XONNX_SERVE_HTTP_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "serve/wire.h"

namespace xonnx::serve {

// The largest JSON part a request may have: parsed, JSON takes many times
// its size in memory, so large tensors must travel as binary data.
inline constexpr size_t kMaxJsonBytes = size_t{16} << 20;

// Decodes a request body into `request` (model and version come from the
// path). `header_length` is the Inference-Header-Content-Length header's
// value, absent when the header is. Every malformed body (bad JSON, unknown
// datatypes, data that does not match the shape, binary data shorter or
// longer than declared, more than `max_elements` in a tensor) fails with
// INVALID_ARGUMENT and a message that says what is wrong.
Status DecodeInferRequest(std::string_view body, std::optional<int64_t> header_length, int64_t max_elements,
                          InferRequest& request);

// Encodes a response: the JSON part, then the binary outputs' bytes.
// `json_length` gets the JSON part's length (for the header) and `binary`
// whether any output is binary.
std::string EncodeInferResponse(const InferResponse& response, size_t& json_length, bool& binary);

// {"error": message}
std::string ErrorJson(const std::string& message);

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_HTTP_CODEC_H_
