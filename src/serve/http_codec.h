// The REST form of inference requests and responses: a JSON object,
// optionally followed by raw tensor bytes (the binary tensor data
// extension, whose JSON part's length is the Inference-Header-Content-Length
// header).
#ifndef XONNX_SERVE_HTTP_CODEC_H_
#define XONNX_SERVE_HTTP_CODEC_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The same decoding, as the body arrives. When the body's length is known
// (Content-Length), the JSON part is decoded as soon as it is complete and
// each input's binary data is copied straight into its tensor: a large
// request is never held twice, and its bytes are copied once, when they
// are read. A body of unknown length (chunked) is held and decoded at the
// end. Append() never refuses bytes: the rest of a malformed body is still
// read (so that the connection stays in step) and only counted.
class InferRequestDecoder {
 public:
  // `body_length` is -1 when it is not known.
  InferRequestDecoder(std::optional<int64_t> header_length, int64_t body_length, int64_t max_elements,
                      InferRequest& request);
  void Append(std::string_view bytes);
  // After the last bytes: OK with `request` filled, or what is wrong with
  // the body (the first problem found).
  Status Finish();
  int64_t bytes_received() const { return received_; }

 private:
  // An input whose bytes follow the JSON part, in the body's order. BYTES
  // tensors are held and parsed at the end; others go into their tensor.
  struct BinaryPart {
    size_t input = 0;  // in request.inputs
    size_t size = 0;   // binary_data_size
    bool held = false;
    std::string bytes;  // when held
  };
  Status DecodeJson(std::string_view text, uint64_t binary_size);
  Status DecodeInput(const nlohmann::json& in, size_t index, uint64_t binary_size, uint64_t& cursor);
  void Route(std::string_view bytes);

  std::optional<int64_t> header_length_;
  int64_t body_length_;
  int64_t max_elements_;
  InferRequest& request_;
  Status status_;           // the first problem found
  bool streaming_ = false;  // the body's length is known
  uint64_t json_size_ = 0;  // streaming: the JSON part's length
  bool json_done_ = false;  // streaming: the JSON part is decoded
  std::string held_;        // the JSON part, or the whole body when not streaming
  std::vector<BinaryPart> parts_;
  size_t part_ = 0;     // the part the next bytes belong to
  size_t part_at_ = 0;  // and how much of it has arrived
  int64_t received_ = 0;
};

// Encodes a response: the JSON part, then the binary outputs' bytes.
// `json_length` gets the JSON part's length (for the header) and `binary`
// whether any output is binary.
std::string EncodeInferResponse(const InferResponse& response, size_t& json_length, bool& binary);

// {"error": message}
std::string ErrorJson(const std::string& message);

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_HTTP_CODEC_H_
