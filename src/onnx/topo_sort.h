// Puts a graph's nodes in topological order, as ONNX requires and as some
// exporters and editing tools fail to write them (ONNX Runtime sorts such
// graphs and runs them; so does xonnx).
#ifndef XONNX_ONNX_TOPO_SORT_H_
#define XONNX_ONNX_TOPO_SORT_H_

#include <string>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace xonnx::onnx_import {

// Orders the nodes of `g` and of every subgraph in it (If, Loop, Scan
// bodies) so that each node comes after the nodes producing what it reads,
// its subgraphs' reads of outer values included, keeping the file's order
// wherever it already is one. `moved` receives the number of graphs whose
// order changed. A cycle is an error naming `path` and the nodes on it.
[[nodiscard]] absl::Status SortNodes(onnx::GraphProto* g, const std::string& path, int* moved);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_TOPO_SORT_H_
