// A graph split around host nodes and values computed at run time (see
// onnx/graph_split.h): its device segments run as programs of their own,
// each through a ModelRunner made on first use (its input types are known
// then), and its host nodes on the host in between.
#ifndef XONNX_RUNTIME_GRAPH_STAGES_H_
#define XONNX_RUNTIME_GRAPH_STAGES_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "onnx/graph_split.h"
#include "runtime/call_bounds.h"
#include "runtime/host_control_flow.h"
#include "runtime/model_runner.h"
#include "xonnx/session.h"

namespace xonnx {

class GraphStages {
 public:
  // The split graph to run (set once, at Open).
  void set_split(onnx_import::GraphSplit split) { split_ = std::move(split); }

  // Whether the graph is split at all (else the session runs it whole).
  bool split() const { return split_.split(); }
  const onnx_import::GraphSplit& graph_split() const { return split_; }

  // Runs the split graph of `parent`'s model: device segments as programs
  // for the shapes they meet, host nodes on the host in between; returns
  // the model's `outputs` in order.
  // `bounds` (may be null) is checked before each part.
  absl::StatusOr<std::vector<Tensor>> Run(const ModelRunner& parent, const std::vector<TensorSpec>& outputs,
                                          const std::map<std::string, Tensor>& inputs, const CallBounds* bounds);
  // The runner of device segment k, made on first use from the element
  // types of its inputs.
  absl::StatusOr<ModelRunner*> Stage(const ModelRunner& parent, int k, const std::map<std::string, DataType>& types);
  // Calls fn(k, runner) for each segment runner made so far, in order.
  void ForEachStage(const std::function<void(int, const ModelRunner&)>& fn) const;

  // The labels of these nodes of `model`, for messages and Info().
  static std::vector<std::string> NodeLabels(const onnx_import::LoadedModel& model, const std::vector<int>& nodes);
  // Where the graph is split, for messages.
  std::string Description(const onnx_import::LoadedModel& model) const;

 private:
  onnx_import::GraphSplit split_;
  mutable std::mutex mu_;
  std::map<int, std::unique_ptr<ModelRunner>> stages_;  // guarded by mu_
  HostControlFlow control_flow_;                        // host If, Loop and Scan nodes
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_GRAPH_STAGES_H_
