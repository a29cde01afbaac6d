#include "xonnx/session.h"

#include <chrono>
#include <map>
#include <cstring>
#include <mutex>
#include <set>

#include "absl/strings/str_split.h"

#include "absl/strings/str_join.h"
#include "backends/cpu/executable.h"
#include "base/status.h"
#include "hlo/printer.h"
#include "hlo/proto_codec.h"
#include "onnx/importer.h"
#include "onnx/model.h"
#include "onnx/tensor_proto.h"
#include "passes/pipeline.h"
#include "runtime/dtype.h"

namespace xonnx {

namespace {

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

std::string ShapeKey(const ShapeMap& shapes) {
  std::string k;
  for (const auto& [name, dims] : shapes) absl::StrAppend(&k, name, ":", absl::StrJoin(dims, "x"), ";");
  return k;
}

StatusOr<TensorSpec> SpecOf(const onnx_import::TensorInfo& info) {
  if (info.is_string) return TensorSpec{info.name, DataType::kString, info.dims, info.dim_names};
  ASSIGN_OR_RETURN(DataType t, FromHlo(info.type));
  return TensorSpec{info.name, t, info.dims, info.dim_names};
}

}  // namespace

struct Session::Impl {
  std::unique_ptr<onnx_import::LoadedModel> model;
  SessionOptions options;
  std::vector<TensorSpec> inputs, outputs;
  std::string unsupported;  // non-empty when allow_unsupported let Open pass
  double load_ms = 0;

  // A compiled program, the model inputs its parameters take (in order), and
  // for each model output either the program output it is or, for string
  // outputs computed while converting, its value.
  struct Program {
    std::shared_ptr<cpu::Executable> exe;
    std::vector<std::string> params;
    std::vector<int> output_index;        // -1 for a string output
    std::vector<Tensor> string_outputs;   // by model output position (unused entries empty)
  };

  std::mutex mu;
  std::map<std::string, Program> cache;
  // Inputs whose values (not only shapes) the program depends on: they feed
  // shapes, axes or counts, and are bound as constants when compiling.
  std::set<std::string> value_inputs;
  double last_compile_ms = 0;
  std::string last_summary;

  StatusOr<onnx_import::ImportedModule> BuildModule(const ShapeMap& shapes, const std::map<std::string, hlo::Literal>& bound,
                                                   bool allow_partial, bool optimized,
                                                   const std::map<std::string, onnx_import::StringTensor>& strings = {}) const {
    onnx_import::ImportOptions io;
    for (const auto& [name, dims] : shapes)
      if (!bound.count(name) && !strings.count(name)) io.input_shapes[name] = dims;
    io.bound_inputs = bound;
    io.string_inputs = strings;
    io.allow_partial = allow_partial;
    ASSIGN_OR_RETURN(onnx_import::ImportedModule imported, onnx_import::Import(*model, io));
    if (optimized) {
      Status st = passes::RunStandardPipeline(imported.module.get(), options.verify_passes);
      if (!st.ok()) return Annotate(st, model->path);
    }
    return imported;
  }

  // The program for these inputs, compiled on first use.
  StatusOr<Program> Get(const std::map<std::string, Tensor>& values) {
    if (!unsupported.empty()) return absl::UnimplementedError(unsupported);
    ShapeMap shapes;
    for (const auto& [name, t] : values) shapes[name] = t.dims();
    for (int attempt = 0; attempt < 8; ++attempt) {
      std::set<std::string> bound_names;
      {
        std::lock_guard<std::mutex> l(mu);
        bound_names = value_inputs;
      }
      std::string key = ShapeKey(shapes);
      // String inputs never reach the program: their values are compiled in.
      std::map<std::string, onnx_import::StringTensor> strings;
      for (const auto& [name, t] : values) {
        if (t.dtype() != DataType::kString) continue;
        strings[name] = {t.dims(), t.strings()};
        absl::StrAppend(&key, "|", name, "=");
        for (const auto& v : t.strings()) absl::StrAppend(&key, v.size(), ":", v);
      }
      std::map<std::string, hlo::Literal> bound;
      for (const std::string& name : bound_names) {
        const Tensor& t = values.at(name);
        absl::StrAppend(&key, "|", name, "=", absl::string_view(static_cast<const char*>(t.data()), t.byte_size()));
        hlo::Literal lit(hlo::Shape(ToHlo(t.dtype()), t.dims()));
        if (t.byte_size()) std::memcpy(lit.untyped_data(), t.data(), t.byte_size());
        bound.emplace(name, std::move(lit));
      }
      {
        std::lock_guard<std::mutex> l(mu);
        auto it = cache.find(key);
        if (it != cache.end()) return it->second;
      }
      auto start = std::chrono::steady_clock::now();
      auto imported = BuildModule(shapes, bound, false, options.optimize, strings);
      if (!imported.ok()) {
        // A shape-like value depends on inputs: bind them and try again.
        auto needs = imported.status().GetPayload(onnx_import::kNeedsInputValuesPayload);
        if (!needs) return imported.status();
        bool added = false;
        std::lock_guard<std::mutex> l(mu);
        for (absl::string_view name : absl::StrSplit(std::string(*needs), ',')) {
          if (!values.count(std::string(name))) return imported.status();
          added |= value_inputs.insert(std::string(name)).second;
        }
        if (!added) return imported.status();
        continue;
      }
      Program prog;
      for (const auto& in : imported->inputs) prog.params.push_back(in.name);
      int next = 0;
      for (const auto& out : imported->outputs) {
        if (out.is_string) {
          const auto& sv = imported->string_outputs.at(out.name);
          prog.output_index.push_back(-1);
          prog.string_outputs.push_back(Tensor::FromStrings(sv.dims, sv.values));
        } else {
          prog.output_index.push_back(next++);
          prog.string_outputs.emplace_back();
        }
      }
      cpu::CompileOptions co;
      co.use_dnnl = options.use_dnnl;
      co.fuse_elementwise = options.fuse_elementwise;
      auto exe = cpu::Executable::Compile(std::move(imported->module), co);
      if (!exe.ok()) return Annotate(exe.status(), model->path);
      prog.exe = *std::move(exe);
      std::lock_guard<std::mutex> l(mu);
      last_compile_ms = MsSince(start);
      std::vector<std::string> parts;
      for (const auto& [kind, n] : prog.exe->ThunkSummary()) parts.push_back(absl::StrCat(kind, "=", n));
      last_summary = absl::StrCat(absl::StrJoin(parts, " "), " arena=", prog.exe->arena_bytes() / 1024, "KiB");
      return cache.emplace(key, prog).first->second;
    }
    return Internal("%s: input value binding did not converge", model->path);
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::Open(const std::string& model_path, const SessionOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  ASSIGN_OR_RETURN(impl->model, onnx_import::LoadModel(model_path));
  std::vector<onnx_import::UnsupportedOp> unsupported = onnx_import::FindUnsupportedOps(*impl->model);
  if (!unsupported.empty()) {
    impl->unsupported = absl::StrFormat("%s: %d unsupported op%s: %s", model_path, unsupported.size(),
                                        unsupported.size() > 1 ? "s" : "", onnx_import::DescribeUnsupported(unsupported));
    if (!options.allow_unsupported) return absl::UnimplementedError(impl->unsupported);
  } else {
    RETURN_IF_ERROR(onnx_import::CheckModel(*impl->model));
  }
  ASSIGN_OR_RETURN(auto ins, onnx_import::ModelInputs(*impl->model));
  ASSIGN_OR_RETURN(auto outs, onnx_import::ModelOutputs(*impl->model));
  for (const auto& i : ins) {
    auto s = SpecOf(i);
    if (!s.ok()) return Annotate(s.status(), absl::StrCat(model_path, ": input '", i.name, "'"));
    impl->inputs.push_back(*s);
  }
  for (const auto& o : outs) {
    auto s = SpecOf(o);
    if (!s.ok()) return Annotate(s.status(), absl::StrCat(model_path, ": output '", o.name, "'"));
    impl->outputs.push_back(*s);
  }
  impl->load_ms = MsSince(start);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::vector<TensorSpec>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorSpec>& Session::outputs() const { return impl_->outputs; }
double Session::load_ms() const { return impl_->load_ms; }
double Session::last_compile_ms() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->last_compile_ms;
}
std::string Session::LastProgramSummary() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->last_summary;
}

ModelInfo Session::Info() const {
  ModelInfo info;
  const auto& p = impl_->model->proto;
  info.producer = absl::StrCat(p.producer_name(), p.producer_version().empty() ? "" : " ", p.producer_version());
  info.ir_version = p.ir_version();
  info.opsets = impl_->model->opsets;
  for (const auto& n : p.graph().node()) ++info.op_counts[n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type()];
  for (const auto& t : p.graph().initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    auto type = onnx_import::HloType(t.data_type());
    info.initializer_bytes += n * (type.ok() ? hlo::ByteWidth(*type) : 0);
  }
  for (const auto& u : onnx_import::FindUnsupportedOps(*impl_->model))
    info.unsupported.push_back(onnx_import::DescribeUnsupported({u}));
  static const char* kHostOps[] = {"NonZero", "Unique", "NonMaxSuppression", "Compress", "StringNormalizer"};
  for (const auto& n : p.graph().node())
    for (const char* op : kHostOps)
      if (n.op_type() == op) info.host_nodes.push_back(absl::StrCat(op, " '", n.name().empty() ? n.output(0) : n.name(), "'"));
  return info;
}

StatusOr<ShapeMap> Session::ResolveShapes(const ShapeMap& given, int64_t dynamic_default) const {
  ShapeMap out;
  for (const auto& [name, dims] : given) {
    bool known = false;
    for (const auto& s : impl_->inputs) known |= s.name == name;
    if (!known) return InvalidArgument("%s: the model has no input named '%s'", impl_->model->path, name);
  }
  for (const auto& s : impl_->inputs) {
    auto it = given.find(s.name);
    if (it != given.end()) {
      out[s.name] = it->second;
      continue;
    }
    std::vector<int64_t> d = s.dims;
    for (auto& x : d)
      if (x < 0) x = dynamic_default;
    out[s.name] = d;
  }
  return out;
}

Status Session::Prepare(const std::map<std::string, Tensor>& inputs) {
  RETURN_IF_ERROR(CheckInputs(inputs));
  return impl_->Get(inputs).status();
}

StatusOr<HloDump> Session::DumpHlo(const ShapeMap& shapes, int64_t batch, bool allow_partial, bool optimized) const {
  ASSIGN_OR_RETURN(ShapeMap all, ResolveShapes(shapes, batch));
  HloDump dump;
  ASSIGN_OR_RETURN(onnx_import::ImportedModule imported, impl_->BuildModule(all, {}, allow_partial, optimized));
  dump.partial_error = imported.partial_error;
  const hlo::Module* m = imported.module.get();
  hlo::PrintOptions po;
  po.max_constant_elements = 16;
  dump.text = hlo::ToText(*m, po);
  dump.proto = hlo::SerializeModule(*m);
  return dump;
}

Status Session::CheckInputs(const std::map<std::string, Tensor>& inputs) const {
  const std::string& file = impl_->model->path;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const auto& s : impl_->inputs) known |= s.name == name;
    if (!known) return InvalidArgument("%s: the model has no input named '%s'", file, name);
  }
  for (const auto& s : impl_->inputs) {
    auto it = inputs.find(s.name);
    if (it == inputs.end()) return InvalidArgument("%s: input '%s' is missing from the call", file, s.name);
    const Tensor& t = it->second;
    if (t.dtype() != s.dtype)
      return InvalidArgument("%s: input '%s' has type %s, the model expects %s", file, s.name, DataTypeName(t.dtype()),
                             DataTypeName(s.dtype));
    bool dims_ok = s.dims.empty() || t.dims().size() == s.dims.size();
    for (size_t d = 0; dims_ok && !s.dims.empty() && d < s.dims.size(); ++d) dims_ok = s.dims[d] < 0 || s.dims[d] == t.dims()[d];
    if (!dims_ok) {
      std::vector<std::string> want;
      for (size_t d = 0; d < s.dims.size(); ++d)
        want.push_back(s.dims[d] >= 0 ? absl::StrCat(s.dims[d]) : (s.dim_names[d].empty() ? "?" : s.dim_names[d]));
      return InvalidArgument("%s: input '%s' has shape [%s], the model expects [%s]", file, s.name,
                             absl::StrJoin(t.dims(), ","), absl::StrJoin(want, ","));
    }
  }
  return absl::OkStatus();
}

StatusOr<std::vector<Tensor>> Session::Run(const std::map<std::string, Tensor>& inputs) {
  RETURN_IF_ERROR(CheckInputs(inputs));
  ASSIGN_OR_RETURN(Impl::Program prog, impl_->Get(inputs));
  std::vector<const void*> args;
  for (const std::string& name : prog.params) args.push_back(inputs.at(name).data());
  std::vector<Tensor> computed;
  std::vector<void*> ptrs;
  for (const hlo::Shape& s : prog.exe->output_shapes()) {
    ASSIGN_OR_RETURN(DataType t, FromHlo(s.element_type));
    computed.emplace_back(t, s.dims);
  }
  for (auto& o : computed) ptrs.push_back(o.data());
  Status st = prog.exe->Execute(args, ptrs);
  if (!st.ok()) return Annotate(st, impl_->model->path);
  std::vector<Tensor> outs;
  for (size_t k = 0; k < prog.output_index.size(); ++k)
    outs.push_back(prog.output_index[k] < 0 ? prog.string_outputs[k] : std::move(computed[prog.output_index[k]]));
  return outs;
}

}  // namespace xonnx
