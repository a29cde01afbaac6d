#include "xonnx/session.h"

#include <chrono>
#include <map>
#include <cstring>
#include <mutex>
#include <set>

#include "absl/strings/str_split.h"

#include "absl/strings/str_join.h"
#include "base/status.h"
#include "hlo/printer.h"
#include "hlo/proto_codec.h"
#include "onnx/importer.h"
#include "onnx/model.h"
#include "onnx/tensor_proto.h"
#include "passes/pipeline.h"
#include "pjrt/client.h"
#include "runtime/dtype.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

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

constexpr char kPluginFile[] = "libxonnx_pjrt_cpu.so";

// The folder of the running program.
std::filesystem::path ProgramDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

std::vector<pjrt::NamedValue> ToNamedValues(const std::vector<CreateOption>& options) {
  std::vector<pjrt::NamedValue> out;
  for (const auto& o : options) {
    pjrt::NamedValue nv;
    nv.name = o.name;
    std::visit([&](const auto& v) { nv.value = v; }, o.value);
    out.push_back(std::move(nv));
  }
  return out;
}

std::string OptionsKey(const std::vector<pjrt::NamedValue>& options) {
  std::string key;
  for (const auto& o : options) {
    absl::StrAppend(&key, o.name, "=", o.value.index(), ":");
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>)
            absl::StrAppend(&key, absl::StrJoin(v, ","));
          else
            absl::StrAppend(&key, v);
        },
        o.value);
    key += ";";
  }
  return key;
}

// One client per (plugin, create options), shared by the sessions using it:
// a client may own a whole device (XLA's GPU plugin preallocates memory).
StatusOr<std::shared_ptr<pjrt::Client>> GetClient(const SessionOptions& options) {
  std::string path = options.plugin.empty() ? DefaultPluginPath() : options.plugin;
  ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Plugin> plugin, pjrt::Plugin::Load(path));
  std::vector<pjrt::NamedValue> create = ToNamedValues(options.create_options);
  bool ours = std::filesystem::path(plugin->path()).filename() == kPluginFile;
  if (ours && !options.use_dnnl) create.push_back({"use_dnnl", false});
  if (ours && !options.fuse_elementwise) create.push_back({"fuse_elementwise", false});
  if (ours && !options.optimize) create.push_back({"optimize", false});
  if (ours && options.verify_passes) create.push_back({"verify_passes", true});
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<pjrt::Client>> clients;
  std::string key = absl::StrCat(plugin->path(), "|", OptionsKey(create));
  std::lock_guard<std::mutex> l(mu);
  if (auto it = clients.find(key); it != clients.end())
    if (auto c = it->second.lock()) return c;
  ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Client> client, pjrt::Client::Create(plugin, create));
  clients[key] = client;
  return client;
}

}  // namespace

std::string DefaultPluginPath() {
  if (const char* env = std::getenv("XONNX_PLUGIN"); env && *env) return env;
  std::vector<std::filesystem::path> candidates;
  std::filesystem::path dir = ProgramDir();
  if (!dir.empty()) {
    candidates.push_back(dir / kPluginFile);
    candidates.push_back(dir / ".." / "lib" / kPluginFile);
    candidates.push_back(dir / ".." / "lib" / "xonnx" / kPluginFile);
  }
#ifdef XONNX_BUILD_PLUGIN_DIR
  candidates.push_back(std::filesystem::path(XONNX_BUILD_PLUGIN_DIR) / kPluginFile);
#endif
#ifdef XONNX_INSTALL_PLUGIN_DIR
  candidates.push_back(std::filesystem::path(XONNX_INSTALL_PLUGIN_DIR) / kPluginFile);
#endif
  for (const auto& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(c, ec)) return std::filesystem::weakly_canonical(c, ec).string();
  }
  return kPluginFile;
}

StatusOr<PluginInfo> DescribePlugin(const SessionOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Client> client, GetClient(options));
  PluginInfo info;
  const auto& plugin = client->plugin();
  info.path = plugin->path();
  info.api_major = plugin->major_version();
  info.api_minor = plugin->minor_version();
  info.attributes = plugin->Attributes();
  info.platform_name = client->platform_name();
  info.platform_version = client->platform_version();
  for (size_t i = 0; i < client->devices().size(); ++i) {
    const auto& d = client->devices()[i];
    info.devices.push_back({static_cast<int>(i), d.id, d.local_hardware_id, d.kind, d.description, d.attributes});
  }
  return info;
}

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
    std::shared_ptr<pjrt::LoadedExecutable> exe;
    std::vector<std::string> params;                      // model inputs, in parameter order
    std::vector<std::shared_ptr<pjrt::Buffer>> weights;  // the parameters after them
    std::vector<onnx_import::TensorInfo> computed;        // what the program returns, in order
    std::vector<int> output_index;        // -1 for a string output
    std::vector<Tensor> string_outputs;   // by model output position (unused entries empty)
  };

  std::shared_ptr<pjrt::Client> client;
  const pjrt::Device* device = nullptr;
  // Weights on the device, uploaded on first use and shared by all programs.
  std::mutex weights_mu;
  std::map<std::string, std::shared_ptr<pjrt::Buffer>> weight_buffers;
  // Initializers that must stay constants (a converter needs their values).
  std::set<std::string> constant_weights;

  StatusOr<std::shared_ptr<pjrt::Buffer>> WeightBuffer(const std::string& name) {
    std::lock_guard<std::mutex> l(weights_mu);
    if (auto it = weight_buffers.find(name); it != weight_buffers.end()) return it->second;
    for (const auto& t : model->proto.graph().initializer()) {
      if (t.name() != name) continue;
      auto lit = onnx_import::LiteralFromTensorProto(t);
      if (!lit.ok()) return Annotate(lit.status(), absl::StrCat(model->path, ": initializer '", name, "'"));
      ASSIGN_OR_RETURN(std::unique_ptr<pjrt::Buffer> b,
                       client->BufferFromHost(lit->untyped_data(), lit->shape().element_type, lit->shape().dims, *device));
      std::shared_ptr<pjrt::Buffer> shared = std::move(b);
      weight_buffers[name] = shared;
      return shared;
    }
    return Internal("%s: no initializer named '%s'", model->path, name);
  }

  std::mutex mu;
  std::map<std::string, Program> cache;
  // Inputs whose values (not only shapes) the program depends on: they feed
  // shapes, axes or counts, and are bound as constants when compiling.
  std::set<std::string> value_inputs;
  double last_compile_ms = 0;
  std::string last_summary;

  StatusOr<onnx_import::ImportedModule> BuildModule(const ShapeMap& shapes, const std::map<std::string, hlo::Literal>& bound,
                                                   bool allow_partial, bool optimized,
                                                   const std::map<std::string, onnx_import::StringTensor>& strings = {},
                                                   const std::set<std::string>* constant_weights = nullptr) const {
    onnx_import::ImportOptions io;
    if (constant_weights) {
      io.weights_as_parameters = true;
      io.constant_weights = *constant_weights;
    }
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

  bool IsInitializer(const std::string& name) const {
    for (const auto& t : model->proto.graph().initializer())
      if (t.name() == name) return true;
    return false;
  }

  // The program for these inputs, compiled on first use.
  StatusOr<Program> Get(const std::map<std::string, Tensor>& values) {
    if (!unsupported.empty()) return absl::UnimplementedError(unsupported);
    ShapeMap shapes;
    for (const auto& [name, t] : values) shapes[name] = t.dims();
    for (int attempt = 0; attempt < 16; ++attempt) {
      std::set<std::string> bound_names, const_weights;
      {
        std::lock_guard<std::mutex> l(mu);
        bound_names = value_inputs;
        const_weights = constant_weights;
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
      auto imported = BuildModule(shapes, bound, false, options.optimize, strings,
                                  options.upload_weights ? &const_weights : nullptr);
      if (!imported.ok()) {
        // A shape-like value depends on inputs (or weights): bind them and try again.
        auto needs = imported.status().GetPayload(onnx_import::kNeedsInputValuesPayload);
        if (!needs) return imported.status();
        bool added = false;
        std::lock_guard<std::mutex> l(mu);
        for (absl::string_view part : absl::StrSplit(std::string(*needs), ',')) {
          std::string name(part);
          if (values.count(name)) {
            added |= value_inputs.insert(name).second;
          } else if (IsInitializer(name)) {
            added |= constant_weights.insert(name).second;
          } else {
            return imported.status();
          }
        }
        if (!added) return imported.status();
        continue;
      }
      Program prog;
      for (const auto& in : imported->inputs) prog.params.push_back(in.name);
      for (const auto& w : imported->weights) {
        ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Buffer> b, WeightBuffer(w));
        prog.weights.push_back(std::move(b));
      }
      int next = 0;
      for (const auto& out : imported->outputs) {
        if (out.is_string) {
          const auto& sv = imported->string_outputs.at(out.name);
          prog.output_index.push_back(-1);
          prog.string_outputs.push_back(Tensor::FromStrings(sv.dims, sv.values));
        } else {
          prog.output_index.push_back(next++);
          prog.string_outputs.emplace_back();
          prog.computed.push_back(out);
        }
      }
      std::string bytes = hlo::SerializeModule(*imported->module);
      auto exe = client->Compile(bytes, pjrt::CompileOptionsFor(*device));
      if (!exe.ok()) return Annotate(exe.status(), absl::StrCat(model->path, ": compiling on ", client->platform_name()));
      prog.exe = *std::move(exe);
      if (prog.exe->num_outputs() != prog.computed.size())
        return Internal("%s: the plugin reports %d outputs, the program has %d", model->path, prog.exe->num_outputs(),
                        prog.computed.size());
      std::lock_guard<std::mutex> l(mu);
      last_compile_ms = MsSince(start);
      auto fp = prog.exe->Fingerprint();
      last_summary = absl::StrFormat("%d inputs + %d weights -> %d outputs, %d KiB HloModuleProto%s", prog.params.size(),
                                     prog.weights.size(), prog.computed.size(), bytes.size() / 1024,
                                     fp.ok() && !fp->empty() ? absl::StrCat(", fingerprint ", *fp) : "");
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
  ASSIGN_OR_RETURN(impl->client, GetClient(options));
  ASSIGN_OR_RETURN(impl->device, impl->client->device(options.device));
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

std::string Session::DeviceSummary() const {
  const auto& c = impl_->client;
  return absl::StrFormat("%s (PjRT %d.%d), platform %s [%s], device %s", c->plugin()->path(),
                         c->plugin()->major_version(), c->plugin()->minor_version(), c->platform_name(),
                         c->platform_version(), impl_->device->description.empty() ? absl::StrCat("id ", impl_->device->id) : impl_->device->description);
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
  // Run checks the inputs, compiles on first use and finishes a plugin's lazy
  // compilation; the time of all of it is the compile time.
  auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(Run(inputs).status());
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->last_compile_ms = MsSince(start);
  return absl::OkStatus();
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
  const std::string& file = impl_->model->path;
  std::vector<std::unique_ptr<pjrt::Buffer>> uploaded;
  std::vector<pjrt::Buffer*> args;
  for (const std::string& name : prog.params) {
    const Tensor& t = inputs.at(name);
    auto b = impl_->client->BufferFromHost(t.data(), ToHlo(t.dtype()), t.dims(), *impl_->device);
    if (!b.ok()) return Annotate(b.status(), absl::StrCat(file, ": input '", name, "'"));
    args.push_back(b->get());
    uploaded.push_back(*std::move(b));
  }
  for (const auto& w : prog.weights) args.push_back(w.get());
  auto results = prog.exe->Execute(args);
  if (!results.ok()) return Annotate(results.status(), file);
  std::vector<Tensor> computed;
  for (size_t k = 0; k < prog.computed.size(); ++k) {
    const auto& info = prog.computed[k];
    ASSIGN_OR_RETURN(DataType t, FromHlo(info.type));
    Tensor out(t, info.dims);
    Status st = (*results)[k]->ToHost(out.data(), out.byte_size());
    if (!st.ok()) return Annotate(st, absl::StrCat(file, ": output '", info.name, "'"));
    computed.push_back(std::move(out));
  }
  std::vector<Tensor> outs;
  for (size_t k = 0; k < prog.output_index.size(); ++k)
    outs.push_back(prog.output_index[k] < 0 ? prog.string_outputs[k] : std::move(computed[prog.output_index[k]]));
  return outs;
}

}  // namespace xonnx
