#include "onnx/intermediates.h"

#include <exception>
#include <map>
#include <set>
#include <string>

#include "base/logging.h"
#include "onnx/shape_inference/implementation.h"

namespace xonnx::onnx_import {

absl::StatusOr<int> ExposeIntermediates(LoadedModel& model) {
  // The types come from ONNX's shape inference on a copy; a model it fails
  // on (an op it does not know, say) keeps what it could infer before.
  onnx::ModelProto inferred = model.proto;
  try {
    onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception& e) {
    LOG(WARNING) << model.path << ": shape inference stopped (" << e.what()
                 << "); values without a known type are not compared";
  }
  // Indices into value_info by name (a map of ONNX's own types would be
  // exported from the library as a template instance).
  std::map<std::string, int> known;
  for (int k = 0; k < inferred.graph().value_info_size(); ++k) known[inferred.graph().value_info(k).name()] = k;
  onnx::GraphProto& g = *model.proto.mutable_graph();
  std::set<std::string> taken;
  for (const auto& v : g.input()) taken.insert(v.name());
  for (const auto& v : g.output()) taken.insert(v.name());
  for (const auto& t : g.initializer()) taken.insert(t.name());
  int added = 0;
  for (const auto& node : g.node()) {
    for (const std::string& name : node.output()) {
      if (name.empty() || !taken.insert(name).second) continue;
      auto it = known.find(name);
      if (it == known.end()) continue;
      const onnx::ValueInfoProto& v = inferred.graph().value_info(it->second);
      if (!v.type().has_tensor_type() || v.type().tensor_type().elem_type() == onnx::TensorProto::UNDEFINED) continue;
      *g.add_output() = v;
      ++added;
    }
  }
  NoteRewrite(model, "every value as an output");
  VLOG(1) << model.path << ": " << added << " intermediate values made outputs";
  return added;
}

}  // namespace xonnx::onnx_import
