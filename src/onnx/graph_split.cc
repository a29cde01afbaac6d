#include "onnx/graph_split.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/fingerprint.h"
#include "base/status.h"
#include "hlo/builder.h"
#include "onnx/context.h"
#include "onnx/importer.h"
#include "onnx/nested_graph.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"
#include "passes/constant_folding.h"

namespace xonnx::onnx_import {

namespace {

// The values of the top-level graph that node `n` reads: its inputs and what
// its subgraph bodies capture from the outer scope.
std::vector<std::string> Reads(const onnx::NodeProto& n, const std::set<std::string>& outer) {
  std::set<std::string> names;
  for (const auto& in : n.input())
    if (!in.empty()) names.insert(in);
  std::set<std::string> captured;
  for (const auto& a : n.attribute()) {
    if (a.has_g()) FreeNames(a.g(), {}, captured);
    for (const auto& g : a.graphs()) FreeNames(g, {}, captured);
  }
  for (const auto& c : captured)
    if (outer.count(c)) names.insert(c);
  return {names.begin(), names.end()};
}

// Whether a graph input is small enough to be bound by value as it is (a
// shape or a count, say): a declared static shape of at most 16 elements.
// Values computed from such inputs alone need no split.
bool IsSmallInput(const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return false;
  int64_t n = 1;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return false;
    n *= d.dim_value();
  }
  return n <= 16;
}

// The inputs, initializers and outputs of each segment: what crosses a
// boundary (`segment_of`: each node's segment; `reads`: what each reads).
void SetBoundaries(const onnx::GraphProto& g, const std::vector<int>& segment_of,
                   const std::vector<std::vector<std::string>>& reads, const std::set<std::string>& initializers,
                   GraphSplit* split) {
  std::map<std::string, int> defined_in;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& o : g.node(i).output())
      if (!o.empty()) defined_in[o] = segment_of[i];
  std::vector<std::set<std::string>> ins(split->segments.size()), inits(split->segments.size()),
      outs(split->segments.size());
  for (int i = 0; i < g.node_size(); ++i) {
    int s = segment_of[i];
    for (const auto& r : reads[i]) {
      auto d = defined_in.find(r);
      if (d != defined_in.end() && d->second == s) continue;
      if (d != defined_in.end()) {
        outs[d->second].insert(r);
        ins[s].insert(r);
      } else if (initializers.count(r)) {
        inits[s].insert(r);
      } else {
        ins[s].insert(r);
      }
    }
  }
  for (const auto& o : g.output())
    if (auto d = defined_in.find(o.name()); d != defined_in.end()) outs[d->second].insert(o.name());
  for (size_t s = 0; s < split->segments.size(); ++s) {
    Segment& seg = split->segments[s];
    seg.inputs.assign(ins[s].begin(), ins[s].end());
    seg.initializers.assign(inits[s].begin(), inits[s].end());
    // Outputs in the order the nodes define them, for readable programs.
    for (int i : seg.nodes)
      for (const auto& o : g.node(i).output())
        if (!o.empty() && outs[s].count(o)) seg.outputs.push_back(o);
  }
}

// Host nodes computed twice from the same inputs run once. Only nodes
// whose result is a function of their inputs and attributes (the data-
// dependent ops); control flow may hold random ops and runs each time.
void MarkRepeatedHostNodes(const onnx::GraphProto& g, GraphSplit* split) {
  std::map<std::string, int> first;
  for (size_t k = 0; k < split->segments.size(); ++k) {
    Segment& seg = split->segments[k];
    if (!seg.on_host || split->host_control_flow.count(seg.nodes[0])) continue;
    const onnx::NodeProto& n = g.node(seg.nodes[0]);
    std::string key = absl::StrCat(n.domain(), "\n", n.op_type(), "\n", absl::StrJoin(n.input(), "\n"), "\n");
    for (const auto& a : n.attribute()) absl::StrAppend(&key, a.SerializeAsString(), "\n");
    for (const auto& o : n.output()) absl::StrAppend(&key, o.empty() ? "-" : "+");  // the same outputs computed
    auto [it, inserted] = first.emplace(std::move(key), static_cast<int>(k));
    if (!inserted) seg.same_as = it->second;
  }
}

}  // namespace

bool IsRandomOp(const std::string& op) {
  return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
         op == "Bernoulli" || op == "Multinomial" || op == "Dropout";
}

std::string NodeLabel(const onnx::NodeProto& node) {
  return absl::StrCat(node.op_type(), " '",
                      node.name().empty() ? (node.output_size() ? node.output(0) : "?") : node.name(), "'");
}

absl::StatusOr<GraphSplit> SplitGraph(const LoadedModel& model) {
  const onnx::GraphProto& g = model.proto.graph();
  std::set<std::string> initializers, outer;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  outer = initializers;
  for (const auto& v : g.input()) outer.insert(v.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output())
      if (!o.empty()) outer.insert(o);

  const Registry& registry = Registry::Get();

  // Which values are known only at run time: graph inputs, and what is
  // computed from them or drawn at random. Shapes are always known. `data`
  // marks the runtime values that depend on more than small graph inputs
  // (see IsSmallInput), which are the ones worth a split.
  std::map<std::string, bool> runtime, data;
  std::set<std::string> produced;
  for (const auto& v : g.input()) {
    runtime[v.name()] = !initializers.count(v.name());
    data[v.name()] = runtime[v.name()] && !IsSmallInput(v);
  }
  for (const auto& t : g.initializer()) runtime[t.name()] = data[t.name()] = false;
  // The level of a value: how many program boundaries precede it on its
  // longest path from the graph inputs. Device nodes of level L form
  // segment L; host nodes of level L run after it and define values of
  // level L + 1; a node whose value input is computed at level L from data
  // gets level L + 1, so that the value reaches it as a program input.
  std::map<std::string, int> level;
  std::vector<int> node_level(g.node_size());
  std::vector<bool> on_host(g.node_size());
  std::vector<std::vector<std::string>> reads(g.node_size());
  std::vector<int> value_nodes;
  GraphSplit split;
  int max_level = 0;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    reads[i] = Reads(n, outer);
    bool any_runtime = IsRandomOp(n.op_type()), any_data = any_runtime;
    int lv = 0;
    for (const auto& r : reads[i]) {
      any_runtime |= runtime[r];
      any_data |= data[r];
      lv = std::max(lv, level[r]);
    }
    NodeOpset opset = OpsetOf(n, model.opsets);
    const ConverterEntry* entry = registry.FindEntry(opset.domain, n.op_type(), opset.version);
    bool value_node = false;
    if (entry) {
      for (int k : entry->value_inputs) {
        if (k >= n.input_size() || n.input(k).empty() || !runtime[n.input(k)]) continue;
        if (entry->host_when_runtime) {
          on_host[i] = true;
        } else if (produced.count(n.input(k)) && data[n.input(k)]) {
          lv = std::max(lv, level[n.input(k)] + 1);
          value_node = true;
        }
      }
    }
    std::string inside = HostNeedInside(n, runtime, model.opsets);
    if (!inside.empty()) {
      on_host[i] = true;
      split.host_control_flow[i] = std::move(inside);
    }
    if (value_node && !on_host[i]) value_nodes.push_back(i);
    if (n.op_type() == "Shape" || n.op_type() == "Size") any_runtime = any_data = false;
    node_level[i] = lv;
    max_level = std::max(max_level, lv);
    for (const auto& o : n.output()) {
      if (o.empty()) continue;
      produced.insert(o);
      runtime[o] = any_runtime;
      // What a host node computes is data, whatever its inputs were.
      data[o] = any_data || on_host[i];
      level[o] = on_host[i] ? lv + 1 : lv;
    }
  }

  std::vector<int> segment_of(g.node_size(), -1);
  for (int lv = 0; lv <= max_level; ++lv) {
    Segment device;
    for (int i = 0; i < g.node_size(); ++i)
      if (!on_host[i] && node_level[i] == lv) device.nodes.push_back(i);
    if (!device.nodes.empty()) {
      for (int i : device.nodes) segment_of[i] = split.segments.size();
      split.segments.push_back(std::move(device));
    }
    for (int i = 0; i < g.node_size(); ++i) {
      if (!on_host[i] || node_level[i] != lv) continue;
      Segment host;
      host.on_host = true;
      host.nodes.push_back(i);
      segment_of[i] = split.segments.size();
      split.segments.push_back(std::move(host));
      split.host_nodes.push_back(i);
    }
  }

  SetBoundaries(g, segment_of, reads, initializers, &split);
  MarkRepeatedHostNodes(g, &split);
  // Value nodes in execution order.
  std::stable_sort(value_nodes.begin(), value_nodes.end(), [&](int a, int b) { return segment_of[a] < segment_of[b]; });
  split.value_nodes = value_nodes;
  return split;
}

absl::StatusOr<std::unique_ptr<LoadedModel>> SegmentModel(const LoadedModel& model, const Segment& segment, int index,
                                                          const std::map<std::string, int>& input_types) {
  if (segment.on_host) return absl::InvalidArgumentError("a host segment has no model");
  auto out = std::make_unique<LoadedModel>();
  out->path = model.path;
  out->opsets = model.opsets;
  Fingerprinter f;
  f.UpdateField(model.content_fingerprint);
  f.UpdateField(absl::StrCat("segment ", index));
  out->content_fingerprint = f.Finish().Hex();
  onnx::ModelProto& p = out->proto;
  p.set_ir_version(model.proto.ir_version());
  *p.mutable_opset_import() = model.proto.opset_import();
  const onnx::GraphProto& g = model.proto.graph();
  onnx::GraphProto& sg = *p.mutable_graph();
  sg.set_name(absl::StrCat(g.name().empty() ? "model" : g.name(), "_part", index));
  for (const std::string& name : segment.inputs) {
    auto t = input_types.find(name);
    if (t == input_types.end())
      return absl::InternalError(absl::StrCat("no element type for segment input '", name, "'"));
    onnx::ValueInfoProto* v = sg.add_input();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(t->second);
  }
  std::set<std::string> wanted(segment.initializers.begin(), segment.initializers.end());
  for (const auto& t : g.initializer())
    if (wanted.count(t.name())) *sg.add_initializer() = t;
  for (int i : segment.nodes) *sg.add_node() = g.node(i);
  for (const std::string& name : segment.outputs) sg.add_output()->set_name(name);
  return out;
}

absl::StatusOr<std::vector<hlo::Literal>> RunNodeOnHost(const LoadedModel& model, int node,
                                                        const std::map<std::string, hlo::Literal>& inputs) {
  const onnx::GraphProto& g = model.proto.graph();
  const onnx::NodeProto& n = g.node(node);
  std::string where = absl::StrCat(model.path, ": node ", NodeLabel(n), " on the host");
  hlo::Module module("host");
  hlo::Builder b(&module, "host");
  // Everything here is a constant: fold it all, whatever its size.
  b.set_folder(
      [](const hlo::Instruction& i) { return passes::FoldInstruction(i, std::numeric_limits<int64_t>::max()); });
  GraphValues values;
  for (const auto& name : n.input()) {
    if (name.empty() || values.values.count(name)) continue;
    if (auto it = inputs.find(name); it != inputs.end()) {
      values.values[name] = b.Constant(it->second);
      continue;
    }
    const onnx::TensorProto* init = FindInitializer(g, name);
    if (!init) return absl::InternalError(absl::StrCat(where, ": no value for input '", name, "'"));
    auto lit = LiteralFromTensorProto(*init);
    if (!lit.ok()) return Annotate(lit.status(), absl::StrCat(where, ": initializer '", name, "'"));
    values.values[name] = b.Constant(*std::move(lit));
  }
  onnx::GraphProto one;
  *one.add_node() = n;
  absl::Status st = ConvertNodes(one, model.opsets, b, values);
  if (!st.ok()) return Annotate(st, model.path);
  std::vector<hlo::Literal> out;
  for (const auto& name : n.output()) {
    if (name.empty()) {
      out.emplace_back();
      continue;
    }
    auto v = values.values.find(name);
    if (v == values.values.end() || v->second->opcode() != hlo::Opcode::kConstant)
      return absl::InternalError(absl::StrCat(where, ": output '", name, "' could not be computed"));
    // The module is this call's own: its constants are moved out, not
    // copied, unless one value is two outputs.
    bool repeated = false;
    for (const auto& earlier : n.output()) {
      if (&earlier == &name) break;
      repeated |= earlier == name;
    }
    out.push_back(repeated ? *v->second->literal : std::move(*v->second->literal));
  }
  return out;
}

}  // namespace xonnx::onnx_import
