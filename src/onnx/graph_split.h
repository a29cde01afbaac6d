// Splitting a graph where static shapes cannot be had at compile time. An
// XLA program has static shapes, so
// - a node whose output shapes depend on runtime data (NonZero, Unique,
//   NonMaxSuppression, Compress with a computed condition) runs on the host
//   between programs: a host node;
// - a node whose shape-like input (a Reshape's shape, TopK's k, a Slice's
//   bounds: the registry's value_inputs) is computed from runtime data starts
//   a new program, which receives that value as an input and compiles for
//   it: a value node. (Without the split, every graph input the value depends
//   on would be bound by value, and the whole program would compile per
//   distinct input: per image, say.)
// The graph then runs as a sequence of segments: device segments (compiled
// programs, each for the shapes, and bound values, it is given) with the
// host nodes between them. The same ops on values known at compile time
// (constants, initializers, shapes) stay inside a program: the importer folds
// them; values computed from small graph inputs only (a shape given as an
// input) are bound by value without a split.
#ifndef XONNX_ONNX_GRAPH_SPLIT_H_
#define XONNX_ONNX_GRAPH_SPLIT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "onnx/model.h"

namespace xonnx::onnx_import {

// A run of nodes of the top-level graph that executes as one unit.
struct Segment {
  bool on_host = false;    // one host node; else nodes of one device program
  std::vector<int> nodes;  // indices into graph().node(), in graph order
  // Values read that the graph inputs or earlier segments define (never
  // initializers), and initializers read (subgraph bodies included).
  std::vector<std::string> inputs, initializers;
  // Values defined here that later segments or the graph outputs read.
  std::vector<std::string> outputs;
  // For a host node: an earlier host segment whose node has the same op,
  // attributes and inputs (exporters write `x[mask]` and `where(mask)` as
  // two NonZero of one mask), so its outputs are this node's; else -1.
  int same_as = -1;
};

// A graph's segments in execution order. One device segment holding every
// node means the graph needs no split.
struct GraphSplit {
  std::vector<Segment> segments;
  std::vector<int> host_nodes;   // node indices, in execution order
  std::vector<int> value_nodes;  // node indices, in execution order
  // Why each host If, Loop or Scan runs on the host (onnx/nested_graph.h).
  std::map<int, std::string> host_control_flow;
  // Whether the graph runs in parts (a lone host node is a part too).
  bool split() const { return segments.size() > 1 || (segments.size() == 1 && segments[0].on_host); }
};

// Finds the host and value nodes of `model`'s top-level graph and cuts it
// around them. An If, Loop or Scan whose bodies hold such nodes is a host
// node itself (onnx/nested_graph.h); its bodies are split when they run.
[[nodiscard]] absl::StatusOr<GraphSplit> SplitGraph(const LoadedModel& model);

// A model made of one device segment: its nodes and initializers; its inputs
// declared with the ONNX element types given (without shapes, which the
// caller provides per call), its outputs by name only. Messages keep the
// parent's path; the content fingerprint is derived from the parent's.
[[nodiscard]] absl::StatusOr<std::unique_ptr<LoadedModel>> SegmentModel(const LoadedModel& model,
                                                                        const Segment& segment, int index,
                                                                        const std::map<std::string, int>& input_types);

// Computes one node on the host from the values of its inputs (initializers
// are read from the model; absent optional inputs are skipped). Returns one
// literal per node output (empty for unnamed outputs).
[[nodiscard]] absl::StatusOr<std::vector<hlo::Literal>> RunNodeOnHost(
    const LoadedModel& model, int node, const std::map<std::string, hlo::Literal>& inputs);

// Whether an op draws random values (its outputs are runtime values).
bool IsRandomOp(const std::string& op);

// "Op 'name'" for messages and `xonnx info`.
std::string NodeLabel(const onnx::NodeProto& node);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_GRAPH_SPLIT_H_
