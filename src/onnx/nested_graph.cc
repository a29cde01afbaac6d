#include "onnx/nested_graph.h"

#include <algorithm>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/fingerprint.h"
#include "onnx/context.h"
#include "onnx/graph_split.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {

namespace {

// The names node `n` reads: its inputs and what its bodies capture.
std::set<std::string> NodeReads(const onnx::NodeProto& n) {
  std::set<std::string> reads;
  for (const auto& in : n.input())
    if (!in.empty()) reads.insert(in);
  for (const auto& a : n.attribute()) {
    if (a.has_g()) FreeNames(a.g(), {}, reads);
    for (const auto& g : a.graphs()) FreeNames(g, {}, reads);
  }
  return reads;
}

// HostNeedInside for one body, whose formal inputs are runtime values and,
// where `formal_data` says so, data. In an If branch a shape-like input
// computed at run time cannot be compiled (`branch`); in a loop body one
// that follows only the iteration number is fine (the importer unrolls such
// loops), one computed from data is not.
std::string NeedInBody(const onnx::GraphProto& g, bool branch, const std::vector<bool>& formal_data,
                       std::map<std::string, bool> runtime, std::map<std::string, bool> data,
                       const std::map<std::string, int64_t>& opsets) {
  for (int k = 0; k < g.input_size(); ++k) {
    runtime[g.input(k).name()] = true;
    data[g.input(k).name()] = k < static_cast<int>(formal_data.size()) ? formal_data[k] : true;
  }
  for (const auto& t : g.initializer()) runtime[t.name()] = data[t.name()] = false;
  const Registry& registry = Registry::Get();
  auto is = [](const std::map<std::string, bool>& m, const std::string& name) {
    auto it = m.find(name);
    return it != m.end() && it->second;
  };
  for (const auto& n : g.node()) {
    bool any_runtime = IsRandomOp(n.op_type()), any_data = any_runtime;
    for (const auto& r : NodeReads(n)) {
      any_runtime |= is(runtime, r);
      any_data |= is(data, r);
    }
    NodeOpset opset = OpsetOf(n, opsets);
    if (const ConverterEntry* entry = registry.FindEntry(opset.domain, n.op_type(), opset.version)) {
      for (int k : entry->value_inputs) {
        if (k >= n.input_size() || n.input(k).empty() || !is(runtime, n.input(k))) continue;
        if (entry->host_when_runtime) return NodeLabel(n);
        if (branch || is(data, n.input(k)))
          return absl::StrCat(NodeLabel(n), ", whose input '", n.input(k), "' is computed at run time");
      }
    }
    if (IsControlFlow(n)) {
      std::string inner = HostNeedInside(n, runtime, opsets);
      if (!inner.empty()) return absl::StrCat(inner, " of ", NodeLabel(n));
    }
    if (n.op_type() == "Shape" || n.op_type() == "Size") any_runtime = any_data = false;
    for (const auto& o : n.output()) {
      runtime[o] = any_runtime;
      data[o] = any_data;
    }
  }
  return "";
}

// Whether a Loop's body computes its condition (not `cond_out =
// Identity(cond_in)` or a constant) while it has scan outputs: their length
// then depends on data, which one program cannot have.
bool ScanOutputsOfVaryingLength(const onnx::NodeProto& n, const onnx::GraphProto& body) {
  int carried = std::max(0, n.input_size() - 2);
  if (body.output_size() <= 1 + carried || body.input_size() < 2) return false;
  const std::string& cond_out = body.output(0).name();
  if (cond_out == body.input(1).name()) return false;
  for (const auto& nd : body.node())
    for (const auto& o : nd.output())
      if (o == cond_out)
        return !(nd.op_type() == "Constant" ||
                 (nd.op_type() == "Identity" && nd.input_size() == 1 && nd.input(0) == body.input(1).name()));
  return false;  // an initializer or an outer value: fixed for the whole loop
}

// The declared dims of a graph output (-1 where dynamic), or nullopt when
// its rank is not declared.
std::optional<std::vector<int64_t>> DeclaredDims(const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : v.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return dims;
}

// Why an If on a runtime condition cannot be one conditional: its branches
// declare outputs of different ranks or fixed sizes (a detector's RoI
// heads: f32[150] against f32[150,1]), so the output's shape depends on
// the condition. "" when they agree or do not say.
std::string BranchesOfDifferentShapes(const onnx::NodeProto& n) {
  const onnx::GraphProto *then_g = nullptr, *else_g = nullptr;
  for (const auto& a : n.attribute()) {
    if (a.name() == "then_branch" && a.has_g()) then_g = &a.g();
    if (a.name() == "else_branch" && a.has_g()) else_g = &a.g();
  }
  if (!then_g || !else_g || then_g->output_size() != else_g->output_size()) return "";
  for (int k = 0; k < then_g->output_size(); ++k) {
    auto t = DeclaredDims(then_g->output(k)), e = DeclaredDims(else_g->output(k));
    if (!t || !e) continue;
    bool differ = t->size() != e->size();
    for (size_t d = 0; d < t->size() && !differ; ++d) differ = (*t)[d] >= 0 && (*e)[d] >= 0 && (*t)[d] != (*e)[d];
    if (differ)
      return absl::StrCat("branches whose output ", k, " has different shapes ([", absl::StrJoin(*t, ","), "] and [",
                          absl::StrJoin(*e, ","), "])");
  }
  return "";
}

}  // namespace

bool IsControlFlow(const onnx::NodeProto& n) {
  return n.domain().empty() && (n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan");
}

std::string HostNeedInside(const onnx::NodeProto& n, const std::map<std::string, bool>& runtime,
                           const std::map<std::string, int64_t>& opsets) {
  if (!IsControlFlow(n)) return "";
  if (n.op_type() == "If" && n.input_size() > 0) {
    auto cond = runtime.find(n.input(0));
    if (cond != runtime.end() && cond->second)
      if (std::string why = BranchesOfDifferentShapes(n); !why.empty()) return why;
  }
  for (const auto& a : n.attribute()) {
    if (!a.has_g()) continue;
    if (n.op_type() == "Loop" && ScanOutputsOfVaryingLength(n, a.g()))
      return "scan outputs whose length the body's condition decides";
    // Which formal inputs hold data: a Loop's iteration number and
    // condition do not; carried values and scan slices do when the values
    // they start from do.
    // Inside a body every runtime value of the enclosing scope counts as
    // data: the importer binds small graph inputs by value only where they
    // are read directly, not through a body's parameters.
    auto data_of = [&](int input) {
      if (input >= n.input_size() || n.input(input).empty()) return false;
      auto it = runtime.find(n.input(input));
      return it != runtime.end() && it->second;
    };
    std::vector<bool> formal;
    if (n.op_type() == "Loop") {
      formal = {false, false};
      for (int k = 2; k < n.input_size(); ++k) formal.push_back(data_of(k));
    } else if (n.op_type() == "Scan") {
      for (int k = 0; k < n.input_size(); ++k) formal.push_back(data_of(k));
    }
    std::string inner = NeedInBody(a.g(), n.op_type() == "If", formal, runtime, runtime, opsets);
    if (!inner.empty()) return absl::StrCat(inner, " in ", a.name());
  }
  return "";
}

std::vector<std::string> CapturedNames(const onnx::GraphProto& body) {
  std::set<std::string> free;
  FreeNames(body, {}, free);
  return {free.begin(), free.end()};
}

absl::StatusOr<std::unique_ptr<LoadedModel>> BodyModel(const LoadedModel& model, int node, const std::string& attr,
                                                       const std::map<std::string, int>& input_types) {
  const onnx::GraphProto& g = model.proto.graph();
  const onnx::NodeProto& n = g.node(node);
  const onnx::GraphProto* body = nullptr;
  for (const auto& a : n.attribute())
    if (a.name() == attr && a.has_g()) body = &a.g();
  if (!body)
    return absl::InvalidArgumentError(
        absl::StrCat(model.path, ": node ", NodeLabel(n), " has no graph attribute '", attr, "'"));
  auto out = std::make_unique<LoadedModel>();
  out->path = model.path;
  out->opsets = model.opsets;
  Fingerprinter f;
  f.UpdateField(model.content_fingerprint);
  f.UpdateField(absl::StrCat("node ", node, " ", attr));
  out->content_fingerprint = f.Finish().Hex();
  onnx::ModelProto& p = out->proto;
  p.set_ir_version(model.proto.ir_version());
  *p.mutable_opset_import() = model.proto.opset_import();
  onnx::GraphProto& sg = *p.mutable_graph();
  sg.set_name(
      absl::StrCat(g.name().empty() ? "model" : g.name(), "_", n.name().empty() ? n.op_type() : n.name(), "_", attr));
  auto declare = [&](const std::string& name) -> absl::Status {
    auto t = input_types.find(name);
    if (t == input_types.end())
      return absl::InternalError(
          absl::StrCat(model.path, ": node ", NodeLabel(n), " ", attr, ": no element type for input '", name, "'"));
    onnx::ValueInfoProto* v = sg.add_input();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(t->second);
    return absl::OkStatus();
  };
  for (const auto& in : body->input()) {
    absl::Status st = declare(in.name());
    if (!st.ok()) return st;
  }
  for (const std::string& name : CapturedNames(*body)) {
    if (const onnx::TensorProto* init = FindInitializer(g, name)) {
      *sg.add_initializer() = *init;
      continue;
    }
    absl::Status st = declare(name);
    if (!st.ok()) return st;
  }
  for (const auto& t : body->initializer()) *sg.add_initializer() = t;
  for (const auto& nd : body->node()) *sg.add_node() = nd;
  for (const auto& o : body->output()) sg.add_output()->set_name(o.name());
  return out;
}

}  // namespace xonnx::onnx_import
