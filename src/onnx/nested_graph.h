// Control flow whose bodies need the host. A branch or loop body compiles
// into one HLO computation with static shapes, so a data-dependent node
// inside it (NonZero, NonMaxSuppression, Unique, Compress on runtime data),
// or a node of an If branch whose shape-like input is computed at run time
// (a Reshape's shape, TopK's k), cannot be compiled there. Such an If, Loop
// or Scan runs on the host instead: the host evaluates the condition or
// counts the iterations, and each branch or body runs as a graph of its own,
// split around its host nodes like the top-level graph (onnx/graph_split.h),
// at any depth. docs/user_guide.md ("Data-dependent ops and control flow")
// explains the choice against bounded dynamic shapes.
#ifndef XONNX_ONNX_NESTED_GRAPH_H_
#define XONNX_ONNX_NESTED_GRAPH_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/model.h"

namespace xonnx::onnx_import {

// Whether node `n` is an If, Loop or Scan.
bool IsControlFlow(const onnx::NodeProto& n);

// Why control-flow node `n` must run on the host: the label of the first
// node in its bodies, at any depth, that cannot be compiled inside them
// ("NonZero 'nz' in then_branch of If 'inner' in else_branch"), or "" when
// none. `runtime` says which values of the enclosing scope are known only
// at run time (as SplitGraph computes them; absent names are known).
std::string HostNeedInside(const onnx::NodeProto& n, const std::map<std::string, bool>& runtime,
                           const std::map<std::string, int64_t>& opsets);

// The values a body reads from the enclosing scopes (at any depth), in name
// order.
std::vector<std::string> CapturedNames(const onnx::GraphProto& body);

// A model made of `body` (a graph attribute of node `node` of `model`'s
// graph) to run on its own: inputs are the body's formal inputs, then the
// captured values that are not initializers of `model`, declared with the
// ONNX element types given (shapes come per call); captured initializers
// are copied in; outputs are the body's. `attr` names the attribute, for
// the graph's name and the fingerprint.
[[nodiscard]] absl::StatusOr<std::unique_ptr<LoadedModel>> BodyModel(const LoadedModel& model, int node,
                                                                     const std::string& attr,
                                                                     const std::map<std::string, int>& input_types);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_NESTED_GRAPH_H_
