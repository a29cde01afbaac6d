// Runs an If, Loop or Scan on the host when its bodies cannot be compiled
// into one program (onnx/nested_graph.h): the host reads the condition or
// counts the iterations, and each branch or body runs as a graph of its own
// through a runner made on first use: one program when it needs no split,
// else split around its own host nodes (GraphStages), which may be control
// flow again, to any depth. Each body compiles once per set of input shapes
// it meets, as any program.
#ifndef XONNX_RUNTIME_HOST_CONTROL_FLOW_H_
#define XONNX_RUNTIME_HOST_CONTROL_FLOW_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/call_bounds.h"
#include "runtime/model_runner.h"
#include "xonnx/tensor.h"

namespace xonnx {

class HostControlFlow {
 public:
  HostControlFlow();
  ~HostControlFlow();

  // Runs node `node` (If, Loop or Scan) of `parent`'s graph. `values` holds
  // the values computed so far: the node's inputs and what its bodies read
  // from the enclosing scope (initializers excepted). Returns one tensor
  // per node output. `bounds` (may be null) is checked before each body
  // runs.
  absl::StatusOr<std::vector<Tensor>> Run(const ModelRunner& parent, int node,
                                          const std::map<std::string, Tensor>& values, const CallBounds* bounds);

 private:
  struct Body;
  // Runs graph attribute `attr` of the node with `formal` as its formal
  // inputs, in order, and what it captures from `values`.
  absl::StatusOr<std::vector<Tensor>> RunBody(const ModelRunner& parent, int node, const std::string& attr,
                                              const std::vector<Tensor>& formal,
                                              const std::map<std::string, Tensor>& values, const CallBounds* bounds);
  absl::StatusOr<std::vector<Tensor>> RunIf(const ModelRunner& parent, int node,
                                            const std::map<std::string, Tensor>& values, const CallBounds* bounds);
  absl::StatusOr<std::vector<Tensor>> RunLoop(const ModelRunner& parent, int node,
                                              const std::map<std::string, Tensor>& values, const CallBounds* bounds);
  absl::StatusOr<std::vector<Tensor>> RunScan(const ModelRunner& parent, int node,
                                              const std::map<std::string, Tensor>& values, const CallBounds* bounds);

  std::mutex mu_;
  // By node, attribute and input types; a body's runner is thread-safe.
  std::map<std::string, std::unique_ptr<Body>> bodies_;  // guarded by mu_
  // By node and attribute: the outer values a body reads (not its formal
  // inputs, not initializers), found once rather than at every iteration.
  std::map<std::pair<int, std::string>, std::vector<std::string>> captures_;  // guarded by mu_
};

// Tensors of equal shape and type stacked along a new axis `axis` (0 to
// their rank), last first when `reverse`. With no parts the result has
// `empty_dims` and `empty_type`.
absl::StatusOr<Tensor> StackTensors(const std::vector<Tensor>& parts, int64_t axis, bool reverse, DataType empty_type,
                                    const std::vector<int64_t>& empty_dims);
// Index `index` of `t` along `axis`, that axis dropped.
absl::StatusOr<Tensor> SliceAxis(const Tensor& t, int64_t axis, int64_t index);

}  // namespace xonnx

#endif  // XONNX_RUNTIME_HOST_CONTROL_FLOW_H_
