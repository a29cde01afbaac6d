#include "onnx/importer.h"

#include <algorithm>
#include <iostream>
#include <limits>
#include <set>

#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"
#include "onnx/defs/schema.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"
#include "passes/constant_folding.h"
#include "passes/convert_precision.h"
#include "passes/exact_products.h"
#include "passes/pipeline.h"
#include "passes/xla_compatibility.h"

namespace xonnx::onnx_import {

namespace {

absl::StatusOr<TensorInfo> InfoFromValue(const onnx::ValueInfoProto& v, const std::string& model) {
  TensorInfo info;
  info.name = v.name();
  const onnx::TypeProto* type = &v.type();
  if (type->has_optional_type()) {
    info.is_optional = true;
    type = &type->optional_type().elem_type();
  }
  if (type->has_sequence_type()) {
    info.is_sequence = true;
    type = &type->sequence_type().elem_type();
  }
  if (!type->has_tensor_type())
    return Unimplemented(
        "%s: value '%s' is not a tensor, a sequence of tensors or an optional of either (maps are not supported)",
        model, v.name());
  const auto& tt = type->tensor_type();
  if (tt.elem_type() == onnx::TensorProto::STRING) {
    if (info.is_sequence || info.is_optional)
      return Unimplemented("%s: value '%s': sequences and optionals of strings are not supported", model, v.name());
    info.is_string = true;
  } else {
    auto t = HloType(tt.elem_type());
    if (!t.ok()) return Annotate(t.status(), absl::StrCat(model, ": value '", v.name(), "'"));
    info.type = *t;
  }
  if (tt.has_shape()) {
    for (const auto& d : tt.shape().dim()) {
      info.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      info.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
  }
  return info;
}

std::set<std::string> InitializerNames(const onnx::GraphProto& g) {
  std::set<std::string> s;
  for (const auto& t : g.initializer()) s.insert(t.name());
  return s;
}

void CollectUnsupported(const onnx::GraphProto& g, const LoadedModel& model,
                        std::map<std::string, UnsupportedOp>& out) {
  const Registry& reg = Registry::Get();
  for (const auto& n : g.node()) {
    auto [domain, opset] = OpsetOf(n, model.opsets);
    if (!reg.Find(domain, n.op_type(), opset)) {
      std::string key = absl::StrCat(domain, "::", n.op_type());
      auto& u = out[key];
      u.domain = domain;
      u.op_type = n.op_type();
      u.opset = opset;
      u.nodes.push_back(n.name().empty() ? (n.output_size() ? n.output(0) : "?") : n.name());
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectUnsupported(a.g(), model, out);
      for (const auto& sub : a.graphs()) CollectUnsupported(sub, model, out);
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<TensorInfo>> ModelInputs(const LoadedModel& model) {
  std::set<std::string> inits = InitializerNames(model.proto.graph());
  std::vector<TensorInfo> out;
  for (const auto& v : model.proto.graph().input()) {
    if (inits.count(v.name())) continue;
    ASSIGN_OR_RETURN(TensorInfo info, InfoFromValue(v, model.path));
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::vector<TensorInfo>> ModelOutputs(const LoadedModel& model) {
  std::vector<TensorInfo> out;
  for (const auto& v : model.proto.graph().output()) {
    ASSIGN_OR_RETURN(TensorInfo info, InfoFromValue(v, model.path));
    out.push_back(std::move(info));
  }
  return out;
}

std::string SequenceElementName(const std::string& name, int64_t i) { return absl::StrCat(name, "[", i, "]"); }

std::vector<UnsupportedOp> FindUnsupportedOps(const LoadedModel& model) {
  std::map<std::string, UnsupportedOp> found;
  CollectUnsupported(model.proto.graph(), model, found);
  std::vector<UnsupportedOp> out;
  for (auto& [k, v] : found) out.push_back(std::move(v));
  return out;
}

std::string DescribeUnsupported(const std::vector<UnsupportedOp>& ops) {
  const Registry& reg = Registry::Get();
  std::vector<std::string> parts;
  for (const auto& u : ops) {
    std::vector<std::string> quoted;
    for (size_t i = 0; i < u.nodes.size() && i < 5; ++i) quoted.push_back(absl::StrCat("'", u.nodes[i], "'"));
    if (u.nodes.size() > 5) quoted.push_back(absl::StrCat("and ", u.nodes.size() - 5, " more"));
    std::string what = u.domain.empty() ? u.op_type : absl::StrCat(u.domain, ".", u.op_type);
    if (reg.Knows(u.domain, u.op_type)) absl::StrAppend(&what, " at opset ", u.opset);
    parts.push_back(absl::StrCat(what, " (node", u.nodes.size() > 1 ? "s " : " ", absl::StrJoin(quoted, ", "), ")"));
  }
  return absl::StrJoin(parts, "; ");
}

namespace {

// The inputs ONNX's schema of the op requires (the leading single, not
// optional, ones; at least the minimum count) must be there and named:
// converters read them without asking. The checker says so for checked
// models; unchecked ones (newer opsets, ONNX Runtime's ops, unsupported ops
// allowed) come here as they are. Ops libonnx has no schema for are left
// to their converters.
absl::Status CheckRequiredInputs(const onnx::NodeProto& n, const std::string& domain, int64_t opset,
                                 const NodeContext& ctx) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(
      n.op_type(), static_cast<int>(std::min<int64_t>(opset, std::numeric_limits<int>::max())),
      domain == "ai.onnx" ? "" : domain);
  if (!schema) return absl::OkStatus();
  if (n.input_size() < schema->min_input())
    return ctx.Error(absl::StrCat("needs at least ", schema->min_input(), " inputs, not ", n.input_size()));
  const auto& formal = schema->inputs();
  for (size_t i = 0; i < formal.size(); ++i) {
    if (formal[i].GetOption() != onnx::OpSchema::Single) break;  // optional or variadic from here on
    if (static_cast<int>(i) >= n.input_size() || n.input(i).empty())
      return ctx.Error(absl::StrCat("input ", i, " ('", formal[i].GetName(), "') is required"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ConvertNodes(const onnx::GraphProto& g, const std::map<std::string, int64_t>& opsets, hlo::Builder& b,
                          GraphValues& values, std::set<std::string>* consumed, std::vector<std::string>* produced) {
  // Initializers are constants (an input of the same name overrides them).
  for (const auto& t : g.initializer()) {
    if (values.values.count(t.name()) || values.strings.count(t.name())) continue;
    if (t.data_type() == onnx::TensorProto::STRING) {
      values.strings[t.name()] = {{t.dims().begin(), t.dims().end()}, {t.string_data().begin(), t.string_data().end()}};
      continue;
    }
    auto lit = LiteralFromTensorProto(t);
    if (!lit.ok()) return Annotate(lit.status(), absl::StrCat("initializer '", t.name(), "'"));
    values.values[t.name()] = b.Constant(*std::move(lit));
  }
  const Registry& reg = Registry::Get();
  for (const auto& n : g.node()) {
    if (values.stop) RETURN_IF_ERROR((*values.stop)());
    auto [domain, opset] = OpsetOf(n, opsets);
    NodeContext ctx(b, values, n, opset, &opsets);
    Converter fn = reg.Find(domain, n.op_type(), opset);
    std::string node_name = n.name().empty() ? (n.output_size() ? n.output(0) : n.op_type()) : n.name();
    hlo::OpMetadata saved = b.metadata();
    b.set_metadata({.op_type = n.op_type(), .op_name = node_name});
    // Every input is defined before a converter looks at it (the checker
    // says so for checked models; unchecked ones, with unsupported ops
    // allowed, come here as they are).
    absl::Status st = CheckRequiredInputs(n, domain, opset, ctx);
    for (const std::string& in : n.input())
      if (!in.empty() && !values.Defines(in) && st.ok())
        st = ctx.Error(absl::StrCat("input '", in,
                                    "' is not defined (no graph input, initializer or earlier node has that name)"));
    if (st.ok()) st = fn ? fn(ctx) : ctx.Unsupported("no converter for this op");
    b.set_metadata(saved);
    if (st.ok()) st = b.status();
    if (st.ok()) {
      for (int o = 0; o < n.output_size(); ++o)
        if (!n.output(o).empty() && !values.Defines(n.output(o)))
          st = ctx.Error(absl::StrCat("output ", o, " ('", n.output(o), "') was not produced"));
    }
    if (!st.ok()) {
      // Messages from the builder lack the node; add it once.
      std::string msg(st.message());
      if (msg.find("node '") == std::string::npos)
        st = Annotate(st, absl::StrCat("node '", node_name, "' (", n.op_type(), ")"));
      return st;
    }
    if (consumed)
      for (const auto& in : n.input()) consumed->insert(in);
    if (produced)
      for (const auto& out : n.output())
        if (!out.empty()) produced->push_back(out);
  }
  return absl::OkStatus();
}

namespace {

// The graph's outputs, as roots of the entry and as the module's outputs
// (a sequence's elements one by one, an empty optional as a count only, a
// string as a host value).
absl::Status CollectGraphOutputs(const std::string& file, const onnx::GraphProto& g, const GraphValues& values,
                                 std::vector<hlo::Instruction*>* roots, ImportedModule* result) {
  for (const auto& o : g.output()) {
    if (auto seq = values.sequences.find(o.name()); seq != values.sequences.end()) {
      int64_t i = 0;
      for (hlo::Instruction* e : seq->second.elements) {
        roots->push_back(e);
        result->outputs.push_back({SequenceElementName(o.name(), i++), e->shape().element_type, e->shape().dims, {}});
      }
      result->output_counts.push_back(seq->second.elements.size());
      continue;
    }
    if (values.nones.count(o.name())) {
      result->output_counts.push_back(ImportedModule::kNoneOutput);
      continue;
    }
    result->output_counts.push_back(ImportedModule::kTensorOutput);
    if (auto sv = values.strings.find(o.name()); sv != values.strings.end()) {
      result->string_outputs[o.name()] = sv->second;
      TensorInfo info{o.name(), hlo::PRIMITIVE_TYPE_INVALID, sv->second.dims, {}};
      info.is_string = true;
      result->outputs.push_back(info);
      continue;
    }
    auto v = values.values.find(o.name());
    if (v == values.values.end()) return InvalidArgument("%s: graph output '%s' is never produced", file, o.name());
    if (!v->second->shape().IsArray()) return Unimplemented("%s: graph output '%s' is not a tensor", file, o.name());
    roots->push_back(v->second);
    result->outputs.push_back({o.name(), v->second->shape().element_type, v->second->shape().dims, {}});
  }
  return absl::OkStatus();
}

// Whether an initializer may be a weight parameter: floating point, or the
// 8- and 16-bit integers quantized weights are stored in (MatMulNBits'
// packed nibbles and zero points, QDQ weights). Wider integers are index
// and shape tables, whose values the importer folds.
bool WeightType(const onnx::TensorProto& t, hlo::PrimitiveType type) {
  switch (t.data_type()) {
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
      return true;
    default:
      return hlo::IsFloatingPoint(type);
  }
}

// Initializers of at least weight_min_elements elements (WeightType) as
// entry parameters numbered from `first`, marked as weights.
void AddWeightParameters(const onnx::GraphProto& g, const ImportOptions& options, size_t first, hlo::Builder& b,
                         GraphValues& values, ImportedModule* result) {
  for (const auto& t : g.initializer()) {
    if (values.values.count(t.name()) || values.strings.count(t.name()) || options.constant_weights.count(t.name()))
      continue;
    auto type = HloType(t.data_type());
    if (!type.ok() || !WeightType(t, *type)) continue;
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    if (n < options.weight_min_elements) continue;
    b.set_metadata({.op_type = hlo::kWeightParameterOpType, .op_name = t.name()});
    values.values[t.name()] =
        b.Parameter(static_cast<int64_t>(first + result->weights.size()), hlo::Shape(*type, dims), t.name());
    result->weights.push_back(t.name());
  }
}

// Every shape given names an input (or an element of a sequence input).
absl::Status CheckShapeNames(const std::string& file, const std::vector<TensorInfo>& inputs,
                             const ImportOptions& options) {
  for (const auto& [name, dims] : options.input_shapes) {
    bool known = false;
    for (const auto& in : inputs) {
      known |= in.name == name;
      if (in.is_sequence && name.size() > in.name.size() + 2 && name.compare(0, in.name.size() + 1, in.name + "[") == 0)
        known = true;
    }
    if (!known) return InvalidArgument("%s: the model has no input named '%s'", file, name);
  }
  return absl::OkStatus();
}

// The graph as HLO, before the module is optimized.
// The run-time checks' index ranges, as one more root after the outputs
// (ImportedModule::checks).
void AddCheckOutput(hlo::Builder& b, const std::vector<RuntimeCheck>& checks, std::vector<hlo::Instruction*>* roots,
                    ImportedModule* result) {
  if (checks.empty()) return;
  std::vector<hlo::Instruction*> ranges;
  for (const RuntimeCheck& c : checks) {
    ranges.push_back(c.range);
    result->checks.push_back({c.lo, c.hi, c.what});
  }
  roots->push_back(ranges.size() == 1 ? ranges[0] : b.Concatenate(ranges, 0));
}

absl::StatusOr<ImportedModule> ImportGraph(const LoadedModel& model, const ImportOptions& options) {
  const std::string& file = model.path;
  const onnx::GraphProto& g = model.proto.graph();
  std::vector<UnsupportedOp> unsupported = FindUnsupportedOps(model);
  if (!unsupported.empty() && !options.allow_partial)
    return Unimplemented("%s: %d unsupported op%s: %s", file, unsupported.size(), unsupported.size() > 1 ? "s" : "",
                         DescribeUnsupported(unsupported));

  ImportedModule result;
  std::string module_name = g.name().empty() ? "model" : g.name();
  result.module = std::make_unique<hlo::Module>(module_name);
  hlo::Builder b(result.module.get(), "main");
  int64_t cap = options.fold_max_elements;
  b.set_folder([cap](const hlo::Instruction& i) { return passes::FoldInstruction(i, cap); });
  GraphValues values;
  values.check_indices = options.check_indices;
  if (options.stop) values.stop = &options.stop;

  // Parameters: the graph inputs that are not initializers, with concrete shapes.
  ASSIGN_OR_RETURN(std::vector<TensorInfo> inputs, ModelInputs(model));
  RETURN_IF_ERROR(CheckShapeNames(file, inputs, options));
  std::vector<TensorInfo> params;
  // One parameter of concrete shape for `in` (or its sequence element
  // `name`): bound to a constant when its value is given.
  auto add_param = [&](TensorInfo in, const std::string& name) -> absl::StatusOr<hlo::Instruction*> {
    in.name = name;
    auto bound = options.bound_inputs.find(name);
    if (bound != options.bound_inputs.end()) {
      if (bound->second.shape().element_type != in.type)
        return InvalidArgument("%s: bound input '%s' has the wrong element type", file, name);
      return b.Constant(bound->second);
    }
    auto given = options.input_shapes.find(name);
    if (given != options.input_shapes.end()) {
      if (!in.dims.empty() && given->second.size() != in.dims.size())
        return InvalidArgument("%s: input '%s' has rank %d, the given shape has rank %d", file, name, in.dims.size(),
                               given->second.size());
      for (size_t d = 0; d < in.dims.size(); ++d)
        if (in.dims[d] >= 0 && in.dims[d] != given->second[d])
          return InvalidArgument("%s: input '%s' dimension %d is fixed at %d, got %d", file, name, d, in.dims[d],
                                 given->second[d]);
      in.dims = given->second;
    } else {
      for (size_t d = 0; d < in.dims.size(); ++d) {
        if (in.dims[d] >= 0) continue;
        if (options.default_dynamic_dim < 0)
          return InvalidArgument("%s: input '%s' dimension %d%s is dynamic; give its shape", file, name, d,
                                 in.dim_names[d].empty() ? "" : absl::StrCat(" ('", in.dim_names[d], "')"));
        in.dims[d] = options.default_dynamic_dim;
      }
    }
    // The metadata keeps the ONNX name (the HLO name may be sanitized).
    b.set_metadata({.op_type = "Input", .op_name = name});
    hlo::Instruction* p = b.Parameter(params.size(), hlo::Shape(in.type, in.dims), name);
    in.is_sequence = in.is_optional = false;
    params.push_back(in);
    return p;
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    TensorInfo& in = inputs[k];
    if (in.is_optional && options.absent_inputs.count(in.name)) {
      values.nones.insert(in.name);
      continue;
    }
    if (in.is_sequence) {
      auto len = options.sequence_lengths.find(in.name);
      if (len == options.sequence_lengths.end())
        return InvalidArgument("%s: sequence input '%s' needs its length", file, in.name);
      SequenceValue seq;
      seq.type = in.type;
      for (int64_t i = 0; i < len->second; ++i) {
        ASSIGN_OR_RETURN(hlo::Instruction * p, add_param(in, SequenceElementName(in.name, i)));
        seq.elements.push_back(p);
      }
      values.sequences[in.name] = std::move(seq);
      continue;
    }
    if (in.is_string) {
      auto given = options.string_inputs.find(in.name);
      if (given == options.string_inputs.end())
        return InvalidArgument("%s: string input '%s' needs its value at compile time", file, in.name);
      values.strings[in.name] = given->second;
      continue;
    }
    ASSIGN_OR_RETURN(values.values[in.name], add_param(in, in.name));
  }
  result.inputs = params;

  if (options.weights_as_parameters) AddWeightParameters(g, options, params.size(), b, values, &result);

  b.set_metadata({});
  std::set<std::string> consumed;
  std::vector<std::string> produced;
  absl::Status failure = ConvertNodes(g, model.opsets, b, values, &consumed, &produced);
  if (!failure.ok()) failure = Annotate(failure, file);

  std::vector<hlo::Instruction*> roots;
  if (!failure.ok()) {
    if (!options.allow_partial) return failure;
    result.partial_error = std::string(failure.message());
    if (!b.status().ok()) return failure;  // the builder cannot continue after its own error
    for (const auto& name : produced) {
      if (consumed.count(name) || !values.values.count(name)) continue;
      hlo::Instruction* v = values.values.at(name);
      result.output_counts.push_back(ImportedModule::kTensorOutput);
      roots.push_back(v);
      result.outputs.push_back({name, v->shape().element_type, v->shape().dims, {}});
    }
    if (roots.empty()) return failure;
  } else {
    RETURN_IF_ERROR(CollectGraphOutputs(file, g, values, &roots, &result));
  }
  AddCheckOutput(b, values.checks, &roots, &result);
  b.set_metadata({});
  ASSIGN_OR_RETURN(hlo::Computation * entry, b.Build(b.Tuple(roots)));
  result.module->set_entry(entry);
  return result;
}

}  // namespace

absl::StatusOr<ImportedModule> Import(const LoadedModel& model, const ImportOptions& options) {
  ASSIGN_OR_RETURN(ImportedModule imported, ImportGraph(model, options));
  hlo::Module* m = imported.module.get();
  std::unique_ptr<passes::Dumper> dumper;
  if (options.dump.enabled()) {
    dumper = std::make_unique<passes::Dumper>(options.dump, m->name());
    RETURN_IF_ERROR(dumper->status());
    dumper->Dump(*m, "imported", /*always=*/true);
  }
  auto dump = [&](absl::string_view step) {
    if (dumper) dumper->Dump(*m, step);
  };
  if (options.stop) RETURN_IF_ERROR(options.stop());
  if (options.optimize) {
    absl::Status st = passes::RunStandardPipeline(m, options.verify_passes, false, dumper.get());
    if (!st.ok()) return Annotate(st, model.path);
    if (options.stop) RETURN_IF_ERROR(options.stop());
  }
  // After the pipeline: constants fold in f32 first and are rounded once.
  // The converts this leaves around constants are folded by the plugin's
  // own pipeline, which runs once more on its side of the ABI anyway.
  if (options.compute_type != hlo::F32 || options.io_type != hlo::F32) {
    passes::ConvertPrecision precision(options.compute_type, options.io_type);
    absl::Status st = precision.Run(m).status();
    if (st.ok()) st = hlo::Verify(*m);
    if (!st.ok())
      return Annotate(st, absl::StrCat(model.path, ": computing in ", hlo::PrimitiveTypeName(options.compute_type)));
    for (auto& out : imported.outputs)
      if (!out.is_string && out.type == hlo::F32) out.type = options.io_type;
    dump(precision.name());
  }
  if (options.exact_f32_products) {
    RETURN_IF_ERROR(passes::ExactProducts().Run(m).status());
    dump(passes::ExactProducts().name());
  }
  if (options.xla_compatible) {
    absl::Status st = passes::XlaCompatibility().Run(m).status();
    if (st.ok()) st = hlo::Verify(*m);
    if (!st.ok()) return Annotate(st, absl::StrCat(model.path, ": rewriting for XLA's plugins"));
    dump(passes::XlaCompatibility().name());
  }
  if (dumper) {
    dumper->Dump(*m, "final", /*always=*/true);
    if (!dumper->status().ok()) LOG(WARNING) << dumper->status().message();
  }
  return imported;
}

}  // namespace xonnx::onnx_import
