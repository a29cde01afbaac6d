#include "runtime/host_control_flow.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "onnx/graph_split.h"
#include "onnx/nested_graph.h"
#include "onnx/tensor_proto.h"
#include "runtime/dtype.h"
#include "runtime/graph_stages.h"

namespace xonnx {

struct HostControlFlow::Body {
  std::unique_ptr<ModelRunner> runner;
  GraphStages stages;
  std::vector<std::string> inputs;  // the body model's inputs, in order
  std::vector<TensorSpec> outputs;
};

HostControlFlow::HostControlFlow() = default;
HostControlFlow::~HostControlFlow() = default;

namespace {

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t IntAttr(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = Attr(n, name);
  return a ? a->i() : fallback;
}

std::vector<int64_t> IntsAttr(const onnx::NodeProto& n, const std::string& name, size_t count, int64_t fallback) {
  std::vector<int64_t> out(count, fallback);
  if (const onnx::AttributeProto* a = Attr(n, name))
    for (int k = 0; k < a->ints_size() && k < static_cast<int>(count); ++k) out[k] = a->ints(k);
  return out;
}

// A scalar's value as a truth value or a count.
absl::StatusOr<int64_t> ScalarOf(const Tensor& t, const std::string& what) {
  if (t.element_count() != 1) return InvalidArgument("%s must have one element, not shape %s", what, t.ShapeString());
  if (t.dtype() == DataType::kInt64) return t.data_as<int64_t>()[0];
  if (t.dtype() == DataType::kString) return InvalidArgument("%s must be numeric or bool, not a string", what);
  return hlo::SaturatingInt64(t.GetAsDouble(0));
}

// A node input's value: computed so far, or an initializer.
absl::StatusOr<Tensor> InputValue(const onnx_import::LoadedModel& model, const std::map<std::string, Tensor>& values,
                                  const std::string& name) {
  if (auto v = values.find(name); v != values.end()) return v->second;
  if (const onnx::TensorProto* init = onnx_import::FindInitializer(model.proto.graph(), name))
    return TensorFromProto(*init);
  return Internal("%s: '%s' has no value", model.path, name);
}

Tensor Int64Scalar(int64_t v) { return Tensor::FromVector(DataType::kInt64, {}, std::vector<int64_t>{v}); }
Tensor BoolScalar(bool v) { return Tensor::FromVector(DataType::kBool, {}, std::vector<uint8_t>{v}); }

// The element type and dims a body output declares, for a stacked output
// of no iterations: [0, declared dims (unknown ones 0)].
std::pair<DataType, std::vector<int64_t>> EmptyStack(const onnx::ValueInfoProto& v) {
  DataType type = DataType::kFloat32;
  std::vector<int64_t> dims = {0};
  if (!v.type().has_tensor_type()) return {type, dims};
  if (auto t = onnx_import::HloType(v.type().tensor_type().elem_type()); t.ok())
    if (auto d = FromHlo(*t); d.ok()) type = *d;
  for (const auto& d : v.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : 0);
  return {type, dims};
}

// Appends each scan output's per-step values stacked along its axis
// (`axes[k]`; negative counts from the end of the stacked rank), last step
// first where `reverse[k]`; `first` is the body output of scan output 0.
absl::Status AppendStacked(const std::vector<std::vector<Tensor>>& scans, const onnx::GraphProto& body, int first,
                           const std::vector<int64_t>& axes, const std::vector<int64_t>& reverse,
                           const std::string& where, std::vector<Tensor>* result) {
  for (size_t k = 0; k < scans.size(); ++k) {
    int64_t rank = scans[k].empty() ? 0 : scans[k][0].dims().size();
    int64_t axis = axes[k] < 0 ? axes[k] + rank + 1 : axes[k];
    auto [type, dims] = EmptyStack(body.output(first + k));
    auto stacked = StackTensors(scans[k], scans[k].empty() ? 0 : axis, reverse[k] != 0, type, dims);
    if (!stacked.ok()) return Annotate(stacked.status(), absl::StrCat(where, ": scan output ", k));
    result->push_back(*std::move(stacked));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> StackTensors(const std::vector<Tensor>& parts, int64_t axis, bool reverse, DataType empty_type,
                                    const std::vector<int64_t>& empty_dims) {
  if (parts.empty()) return Tensor(empty_type, empty_dims);
  const Tensor& first = parts[0];
  const std::vector<int64_t>& dims = first.dims();
  if (first.dtype() == DataType::kString) return Unimplemented("stacking string tensors on the host");
  if (axis < 0 || axis > static_cast<int64_t>(dims.size()))
    return InvalidArgument("axis %d is out of range for rank %d parts", axis, dims.size());
  for (const Tensor& p : parts)
    if (p.dtype() != first.dtype() || p.dims() != dims)
      return InvalidArgument("the values to stack differ in shape or type (%s and %s)", first.ShapeString(),
                             p.ShapeString());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  size_t part_bytes = first.byte_size();
  size_t inner = outer ? part_bytes / outer : 0;
  std::vector<int64_t> out_dims = dims;
  const int64_t n = parts.size();
  out_dims.insert(out_dims.begin() + axis, n);
  Tensor out(first.dtype(), out_dims);
  auto* dst = static_cast<uint8_t*>(out.data());
  for (int64_t k = 0; k < n; ++k) {
    const auto* src = static_cast<const uint8_t*>(parts[reverse ? n - 1 - k : k].data());
    for (int64_t o = 0; o < outer && inner; ++o) std::memcpy(dst + (o * n + k) * inner, src + o * inner, inner);
  }
  return out;
}

absl::StatusOr<Tensor> SliceAxis(const Tensor& t, int64_t axis, int64_t index) {
  const std::vector<int64_t>& dims = t.dims();
  if (t.dtype() == DataType::kString) return Unimplemented("slicing string tensors on the host");
  if (axis < 0 || axis >= static_cast<int64_t>(dims.size()) || index < 0 || index >= dims[axis])
    return InvalidArgument("index %d along axis %d is out of range for shape %s", index, axis, t.ShapeString());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  std::vector<int64_t> out_dims = dims;
  out_dims.erase(out_dims.begin() + axis);
  Tensor out(t.dtype(), out_dims);
  size_t inner = out.byte_size() / (outer ? outer : 1);
  const auto* src = static_cast<const uint8_t*>(t.data());
  auto* dst = static_cast<uint8_t*>(out.data());
  for (int64_t o = 0; o < outer && inner; ++o)
    std::memcpy(dst + o * inner, src + (o * dims[axis] + index) * inner, inner);
  return out;
}

absl::StatusOr<std::vector<Tensor>> HostControlFlow::RunBody(const ModelRunner& parent, int node,
                                                             const std::string& attr, const std::vector<Tensor>& formal,
                                                             const std::map<std::string, Tensor>& values,
                                                             const CallBounds* bounds) {
  const onnx_import::LoadedModel& model = parent.model();
  const onnx::NodeProto& n = model.proto.graph().node(node);
  const onnx::GraphProto& g = Attr(n, attr)->g();
  if (static_cast<int>(formal.size()) != g.input_size())
    return InvalidArgument("%s: node %s: %s takes %d inputs, %d given", model.path, onnx_import::NodeLabel(n), attr,
                           g.input_size(), formal.size());
  // The body's inputs by name: its formal inputs, then what it captures.
  std::map<std::string, Tensor> inputs;
  for (int k = 0; k < g.input_size(); ++k) inputs[g.input(k).name()] = formal[k];
  std::vector<std::string> captured;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto [it, fresh] = captures_.try_emplace({node, attr});
    if (fresh)
      for (const std::string& name : onnx_import::CapturedNames(g))
        if (!inputs.count(name) && !onnx_import::FindInitializer(model.proto.graph(), name)) it->second.push_back(name);
    captured = it->second;
  }
  for (const std::string& name : captured) {
    auto v = values.find(name);
    if (v == values.end())
      return Internal("%s: node %s: %s reads '%s', which has no value", model.path, onnx_import::NodeLabel(n), attr,
                      name);
    inputs[name] = v->second;
  }
  std::string key = absl::StrCat(node, " ", attr);
  for (const auto& [name, t] : inputs) absl::StrAppend(&key, " ", static_cast<int>(t.dtype()));
  Body* body = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    std::unique_ptr<Body>& slot = bodies_[key];
    if (!slot) {
      std::map<std::string, int> types;
      for (const auto& [name, t] : inputs)
        types[name] =
            t.dtype() == DataType::kString ? onnx::TensorProto::STRING : onnx_import::OnnxType(ToHlo(t.dtype()));
      ASSIGN_OR_RETURN(std::unique_ptr<onnx_import::LoadedModel> sub, onnx_import::BodyModel(model, node, attr, types));
      sub->path = absl::StrCat(model.path, ": node '", n.name(), "' (", n.op_type(), ") subgraph '", g.name(), "'");
      auto b = std::make_unique<Body>();
      for (const auto& in : sub->proto.graph().input()) b->inputs.push_back(in.name());
      for (const auto& out : sub->proto.graph().output()) b->outputs.push_back(TensorSpec{.name = out.name()});
      ASSIGN_OR_RETURN(onnx_import::GraphSplit split, onnx_import::SplitGraph(*sub));
      b->stages.set_split(std::move(split));
      b->runner = parent.ForSegment(std::move(sub), b->outputs.size());
      slot = std::move(b);
    }
    body = slot.get();
  }
  if (bounds) RETURN_IF_ERROR(bounds->Check(model.path));
  if (body->stages.split()) return body->stages.Run(*body->runner, body->outputs, inputs, bounds);
  return body->runner->RunExact(inputs, 0, nullptr, nullptr, bounds);
}

absl::StatusOr<std::vector<Tensor>> HostControlFlow::RunIf(const ModelRunner& parent, int node,
                                                           const std::map<std::string, Tensor>& values,
                                                           const CallBounds* bounds) {
  const onnx_import::LoadedModel& model = parent.model();
  const onnx::NodeProto& n = model.proto.graph().node(node);
  ASSIGN_OR_RETURN(Tensor c, InputValue(model, values, n.input(0)));
  auto cond = ScalarOf(c, "the condition");
  if (!cond.ok()) return Annotate(cond.status(), absl::StrCat(model.path, ": node ", onnx_import::NodeLabel(n)));
  return RunBody(parent, node, *cond ? "then_branch" : "else_branch", {}, values, bounds);
}

absl::StatusOr<std::vector<Tensor>> HostControlFlow::RunLoop(const ModelRunner& parent, int node,
                                                             const std::map<std::string, Tensor>& values,
                                                             const CallBounds* bounds) {
  const onnx_import::LoadedModel& model = parent.model();
  const onnx::NodeProto& n = model.proto.graph().node(node);
  std::string where = absl::StrCat(model.path, ": node ", onnx_import::NodeLabel(n));
  int64_t trips = std::numeric_limits<int64_t>::max();
  bool cond = true;
  if (n.input_size() > 0 && !n.input(0).empty()) {
    ASSIGN_OR_RETURN(Tensor t, InputValue(model, values, n.input(0)));
    auto m = ScalarOf(t, "the trip count");
    if (!m.ok()) return Annotate(m.status(), where);
    trips = *m;
  }
  if (n.input_size() > 1 && !n.input(1).empty()) {
    ASSIGN_OR_RETURN(Tensor t, InputValue(model, values, n.input(1)));
    auto c = ScalarOf(t, "the condition");
    if (!c.ok()) return Annotate(c.status(), where);
    cond = *c != 0;
  }
  std::vector<Tensor> carried;
  for (int k = 2; k < n.input_size(); ++k) {
    ASSIGN_OR_RETURN(Tensor t, InputValue(model, values, n.input(k)));
    carried.push_back(std::move(t));
  }
  const onnx::GraphProto& body = Attr(n, "body")->g();
  const size_t n_carried = carried.size();
  if (body.output_size() < static_cast<int>(1 + n_carried))
    return InvalidArgument("%s: the body has %d outputs, fewer than 1 + %d carried values", where, body.output_size(),
                           n_carried);
  std::vector<std::vector<Tensor>> scans(body.output_size() - 1 - n_carried);
  for (int64_t i = 0; i < trips && cond; ++i) {
    std::vector<Tensor> formal = {Int64Scalar(i), BoolScalar(cond)};
    for (Tensor& t : carried) formal.push_back(std::move(t));
    ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunBody(parent, node, "body", formal, values, bounds));
    if (outs.size() != static_cast<size_t>(body.output_size()))
      return Internal("%s: the body gave %d values for %d outputs", where, outs.size(), body.output_size());
    auto c = ScalarOf(outs[0], "the body's condition output");
    if (!c.ok()) return Annotate(c.status(), where);
    cond = *c != 0;
    for (size_t k = 0; k < n_carried; ++k) carried[k] = std::move(outs[1 + k]);
    for (size_t k = 0; k < scans.size(); ++k) scans[k].push_back(std::move(outs[1 + n_carried + k]));
  }
  std::vector<Tensor> result = std::move(carried);
  std::vector<int64_t> zeros(scans.size(), 0);
  RETURN_IF_ERROR(AppendStacked(scans, body, 1 + n_carried, zeros, zeros, where, &result));
  return result;
}

absl::StatusOr<std::vector<Tensor>> HostControlFlow::RunScan(const ModelRunner& parent, int node,
                                                             const std::map<std::string, Tensor>& values,
                                                             const CallBounds* bounds) {
  const onnx_import::LoadedModel& model = parent.model();
  const onnx::NodeProto& n = model.proto.graph().node(node);
  std::string where = absl::StrCat(model.path, ": node ", onnx_import::NodeLabel(n));
  if (model.default_opset() < 9) return Unimplemented("%s: Scan before opset 9 cannot run on the host", where);
  const onnx::GraphProto& body = Attr(n, "body")->g();
  const int m = IntAttr(n, "num_scan_inputs", 0);
  const int states = n.input_size() - m;
  if (m < 1 || states < 0)
    return InvalidArgument("%s: num_scan_inputs %d does not fit %d inputs", where, m, n.input_size());
  const int outs_scan = body.output_size() - states;
  if (outs_scan < 0) return InvalidArgument("%s: the body has fewer outputs than state values", where);
  std::vector<int64_t> in_axes = IntsAttr(n, "scan_input_axes", m, 0),
                       in_rev = IntsAttr(n, "scan_input_directions", m, 0),
                       out_axes = IntsAttr(n, "scan_output_axes", outs_scan, 0),
                       out_rev = IntsAttr(n, "scan_output_directions", outs_scan, 0);
  std::vector<Tensor> state, xs;
  for (int k = 0; k < states; ++k) {
    ASSIGN_OR_RETURN(Tensor t, InputValue(model, values, n.input(k)));
    state.push_back(std::move(t));
  }
  int64_t steps = -1;
  for (int k = 0; k < m; ++k) {
    ASSIGN_OR_RETURN(Tensor x, InputValue(model, values, n.input(states + k)));
    int64_t rank = x.dims().size();
    if (in_axes[k] < 0) in_axes[k] += rank;
    if (in_axes[k] < 0 || in_axes[k] >= rank)
      return InvalidArgument("%s: scan input %d of shape %s has no axis %d", where, k, x.ShapeString(), in_axes[k]);
    int64_t len = x.dims()[in_axes[k]];
    if (steps >= 0 && len != steps)
      return InvalidArgument("%s: scan inputs have different lengths (%d and %d)", where, steps, len);
    steps = len;
    xs.push_back(std::move(x));
  }
  std::vector<std::vector<Tensor>> scans(outs_scan);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Tensor> formal = std::move(state);
    for (int k = 0; k < m; ++k) {
      auto slice = SliceAxis(xs[k], in_axes[k], in_rev[k] ? steps - 1 - t : t);
      if (!slice.ok()) return Annotate(slice.status(), absl::StrCat(where, ": scan input ", k));
      formal.push_back(*std::move(slice));
    }
    ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunBody(parent, node, "body", formal, values, bounds));
    if (outs.size() != static_cast<size_t>(body.output_size()))
      return Internal("%s: the body gave %d values for %d outputs", where, outs.size(), body.output_size());
    state.assign(outs.begin(), outs.begin() + states);
    for (int k = 0; k < outs_scan; ++k) scans[k].push_back(std::move(outs[states + k]));
  }
  std::vector<Tensor> result = std::move(state);
  RETURN_IF_ERROR(AppendStacked(scans, body, states, out_axes, out_rev, where, &result));
  return result;
}

absl::StatusOr<std::vector<Tensor>> HostControlFlow::Run(const ModelRunner& parent, int node,
                                                         const std::map<std::string, Tensor>& values,
                                                         const CallBounds* bounds) {
  const onnx::NodeProto& n = parent.model().proto.graph().node(node);
  if (n.op_type() == "If") return RunIf(parent, node, values, bounds);
  if (n.op_type() == "Loop") return RunLoop(parent, node, values, bounds);
  if (n.op_type() == "Scan") return RunScan(parent, node, values, bounds);
  return Internal("%s: node %s is not control flow", parent.model().path, onnx_import::NodeLabel(n));
}

}  // namespace xonnx
