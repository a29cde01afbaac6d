// The Open Inference Protocol's tensors, independent of the transport: the
// wire names of data types, tensors as raw bytes (the binary extension and
// gRPC's raw contents), and one inference request and response as the HTTP
// and gRPC front ends hand them to the server and back.
#ifndef XONNX_SERVE_WIRE_H_
#define XONNX_SERVE_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xonnx/status.h"
#include "xonnx/tensor.h"

namespace xonnx::serve {

// An INVALID_ARGUMENT status: the server's answer to a malformed request
// or configuration (400 over HTTP).
inline Status Invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

// "FP32", "INT64", "BYTES", ... for a data type, and back. BYTES is a
// tensor of strings (ONNX's STRING).
std::string WireName(DataType t);
StatusOr<DataType> DataTypeFromWire(std::string_view name);

// The number of elements of `shape`, refusing negative dimensions and
// counts above `max_elements` (the request's size bound) before anything is
// allocated. `what` names the tensor in the message.
StatusOr<int64_t> ElementCount(const std::vector<int64_t>& shape, int64_t max_elements, const std::string& what);

// Whether `n` raw bytes are what a tensor of `dtype` (not BYTES) and
// `shape` takes; the error says what it takes.
Status CheckRawSize(DataType dtype, const std::vector<int64_t>& shape, size_t n, const std::string& what);
// A tensor from its raw bytes: little-endian, row-major elements, or for
// BYTES each element as a 4-byte little-endian length and its bytes. The
// size must be exactly what the shape and type take.
StatusOr<Tensor> TensorFromRaw(DataType dtype, const std::vector<int64_t>& shape, std::string_view raw,
                               const std::string& what);
// The raw bytes of a tensor, appended to `out`.
void AppendRaw(const Tensor& t, std::string& out);
// How many bytes AppendRaw writes.
size_t RawSize(const Tensor& t);

// An input as a request carries it, decoded.
struct InferInput {
  std::string name;
  Tensor tensor;  // of the request's datatype and shape
};
// An output the request asks for; `binary` returns it as raw bytes (HTTP's
// binary extension; gRPC always answers raw).
struct RequestedOutput {
  std::string name;
  bool binary = false;
};
struct InferRequest {
  std::string model, version, id;  // empty version: the server's choice
  std::vector<InferInput> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output
  bool binary_outputs = false;           // the default for outputs not listed
  int64_t timeout_us = 0;                // the request's "timeout" parameter; 0: none
  std::string transport;                 // "http" or "grpc", for logs and metrics
};
struct InferOutput {
  std::string name;
  Tensor tensor;
  bool binary = false;
};
struct InferResponse {
  std::string model, version, id;
  std::vector<InferOutput> outputs;
};

// The HTTP status of a failed call: 400 for a bad request, 404 an unknown
// model or version, 503 not ready or draining, 504 past the deadline, 500 a
// failure of the server, as Triton answers; a full queue is 429 (Triton
// says 503 there), so that clients and load balancers can tell "retry
// later, elsewhere" from "this server is going away".
int HttpStatusOf(StatusCode code);

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_WIRE_H_
