// The structural rules of an ONNX graph, checked by xonnx itself where
// libonnx's checker cannot run (opsets newer than it knows, ONNX Runtime's
// ops in the ONNX domain): without them a duplicate definition would be
// accepted and an arbitrary one of its definitions would win.
#ifndef XONNX_ONNX_STRUCTURE_H_
#define XONNX_ONNX_STRUCTURE_H_

#include <string>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace xonnx::onnx_import {

// Checks `g` and every subgraph in it: each value is defined once in its
// graph (single static assignment: graph inputs, initializers and node
// outputs do not repeat a name, except an initializer giving an input its
// default); every value a node or the graph's outputs read is defined in
// the graph or an enclosing one. Errors name `path`, the graph and the node.
[[nodiscard]] absl::Status CheckStructure(const onnx::GraphProto& g, const std::string& path);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_STRUCTURE_H_
