#include "runtime/graph_stages.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/monotonic_clock.h"
#include "base/status.h"
#include "onnx/nested_graph.h"
#include "onnx/tensor_proto.h"
#include "runtime/dtype.h"

namespace xonnx {

namespace {

// A host segment's node computed from its inputs' values (one tensor per
// node output; unnamed outputs get empty ones).
absl::StatusOr<std::vector<Tensor>> RunHostNode(const onnx_import::LoadedModel& model, const onnx_import::Segment& seg,
                                                const std::map<std::string, Tensor>& values) {
  const onnx::NodeProto& n = model.proto.graph().node(seg.nodes[0]);
  std::map<std::string, hlo::Literal> args;
  for (const auto& name : seg.inputs) {
    const Tensor& t = values.at(name);
    if (t.dtype() == DataType::kString)
      return Unimplemented("%s: node %s on the host: string input '%s' is not supported", model.path,
                           onnx_import::NodeLabel(n), name);
    // Borrowed, not copied: `values` outlives the node's run, and a
    // detector's masks and scores are megabytes read once.
    args.emplace(name, hlo::Literal::Borrow(hlo::Shape(ToHlo(t.dtype()), t.dims()), t.data(),
                                            std::shared_ptr<const void>(t.data(), [](const void*) {})));
  }
  ASSIGN_OR_RETURN(std::vector<hlo::Literal> lits, onnx_import::RunNodeOnHost(model, seg.nodes[0], args));
  std::vector<Tensor> outs(n.output_size());
  for (int o = 0; o < n.output_size() && o < static_cast<int>(lits.size()); ++o) {
    if (n.output(o).empty()) continue;
    ASSIGN_OR_RETURN(outs[o], TensorOf(lits[o]));
  }
  return outs;
}

}  // namespace

absl::StatusOr<ModelRunner*> GraphStages::Stage(const ModelRunner& parent, int k,
                                                const std::map<std::string, DataType>& types) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto it = stages_.find(k); it != stages_.end()) return it->second.get();
  const onnx_import::Segment& seg = split_.segments[k];
  std::map<std::string, int> onnx_types;
  for (const auto& name : seg.inputs) {
    DataType t = types.at(name);
    onnx_types[name] = t == DataType::kString ? onnx::TensorProto::STRING : onnx_import::OnnxType(ToHlo(t));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<onnx_import::LoadedModel> sub,
                   onnx_import::SegmentModel(parent.model(), seg, k, onnx_types));
  std::unique_ptr<ModelRunner> child = parent.ForSegment(std::move(sub), seg.outputs.size());
  ModelRunner* raw = child.get();
  stages_[k] = std::move(child);
  return raw;
}

void GraphStages::ForEachStage(const std::function<void(int, const ModelRunner&)>& fn) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [k, stage] : stages_) fn(k, *stage);
}

absl::StatusOr<std::vector<Tensor>> GraphStages::Run(const ModelRunner& parent, const std::vector<TensorSpec>& outputs,
                                                     const std::map<std::string, Tensor>& inputs,
                                                     const CallBounds* bounds) {
  const onnx_import::LoadedModel& model = parent.model();
  const onnx::GraphProto& g = model.proto.graph();
  // Every value a view of the caller's inputs or of its own segment's
  // outputs, which this map keeps until the call ends: a segment's
  // arguments are read, not copied (a detector passes megabytes of scores
  // from program to program).
  auto view = [](const Tensor& t) {
    return t.dtype() == DataType::kString ? t : Tensor::View(t.dtype(), t.dims(), t.data());
  };
  std::map<std::string, Tensor> values;
  for (const auto& [name, t] : inputs) values.emplace(name, view(t));
  for (size_t k = 0; k < split_.segments.size(); ++k) {
    const onnx_import::Segment& seg = split_.segments[k];
    if (bounds) RETURN_IF_ERROR(bounds->Check(model.path));
    if (seg.on_host) {
      const onnx::NodeProto& n = g.node(seg.nodes[0]);
      int64_t host_start = MonotonicNs();
      std::vector<Tensor> outs;
      if (seg.same_as >= 0) {  // the same node ran already: its outputs are these
        const onnx::NodeProto& first = g.node(split_.segments[seg.same_as].nodes[0]);
        for (int o = 0; o < n.output_size(); ++o)
          if (!n.output(o).empty())
            outs.push_back(view(values.at(first.output(o))));
          else
            outs.emplace_back();
      } else if (onnx_import::IsControlFlow(n)) {
        ASSIGN_OR_RETURN(outs, control_flow_.Run(parent, seg.nodes[0], values, bounds));
      } else {
        ASSIGN_OR_RETURN(outs, RunHostNode(model, seg, values));
      }
      if (TraceRecorder* trace = parent.trace())
        trace->Slice(absl::StrCat("host ", onnx_import::NodeLabel(n)), "host", host_start, MonotonicNs(),
                     TraceRecorder::ThreadId(), {{"op_type", n.op_type()}});
      if (static_cast<int>(outs.size()) != n.output_size())
        return Internal("%s: node %s gave %d values for %d outputs", model.path, onnx_import::NodeLabel(n), outs.size(),
                        n.output_size());
      for (int o = 0; o < n.output_size(); ++o)
        if (!n.output(o).empty()) values[n.output(o)] = std::move(outs[o]);
      continue;
    }
    std::map<std::string, DataType> types;
    std::map<std::string, Tensor> args;
    for (const auto& name : seg.inputs) {
      types[name] = values.at(name).dtype();
      args[name] = view(values.at(name));
    }
    ASSIGN_OR_RETURN(ModelRunner * stage, Stage(parent, k, types));
    ASSIGN_OR_RETURN(std::vector<Tensor> outs, stage->RunExact(args, 0, nullptr, nullptr, bounds));
    for (size_t o = 0; o < outs.size() && o < seg.outputs.size(); ++o) values[seg.outputs[o]] = std::move(outs[o]);
  }
  std::vector<Tensor> outs;
  for (const auto& spec : outputs) {
    if (auto it = values.find(spec.name); it != values.end()) {
      outs.push_back(it->second.is_view() ? it->second.Owned() : std::move(it->second));
      continue;
    }
    const onnx::TensorProto* init = onnx_import::FindInitializer(g, spec.name);
    if (!init) return Internal("%s: graph output '%s' was not computed", model.path, spec.name);
    ASSIGN_OR_RETURN(Tensor t, TensorFromProto(*init));
    outs.push_back(std::move(t));
  }
  return outs;
}

std::vector<std::string> GraphStages::NodeLabels(const onnx_import::LoadedModel& model, const std::vector<int>& nodes) {
  std::vector<std::string> labels;
  for (int i : nodes) labels.push_back(onnx_import::NodeLabel(model.proto.graph().node(i)));
  return labels;
}

std::string GraphStages::Description(const onnx_import::LoadedModel& model) const {
  std::vector<std::string> parts;
  if (!split_.host_nodes.empty())
    parts.push_back(
        absl::StrCat("runs partly on the host (", absl::StrJoin(NodeLabels(model, split_.host_nodes), ", "), ")"));
  if (!split_.value_nodes.empty())
    parts.push_back(absl::StrCat("compiles parts for values computed at run time (",
                                 absl::StrJoin(NodeLabels(model, split_.value_nodes), ", "), ")"));
  return absl::StrJoin(parts, " and ");
}

}  // namespace xonnx
