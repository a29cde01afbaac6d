#include "xonnx/session.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <thread>
#include <cstring>
#include <mutex>
#include <set>

#include "absl/strings/str_split.h"

#include "absl/strings/str_join.h"
#include "absl/strings/numbers.h"
#include "base/fingerprint.h"
#include "base/status.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "hlo/proto_codec.h"
#include "onnx/graph_split.h"
#include "onnx/importer.h"
#include "onnx/model.h"
#include "onnx/tensor_proto.h"
#include "passes/convert_precision.h"
#include "passes/pipeline.h"
#include "pjrt/client.h"
#include "runtime/batching.h"
#include "runtime/compile_cache.h"
#include "runtime/dtype.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

namespace xonnx {

namespace {

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Runs fn(0..n-1) on up to `threads` threads (the caller's among them);
// fn returns false to stop the items not started yet.
void ParallelFor(int n, int threads, const std::function<bool(int)>& fn) {
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int k; (k = next++) < n;)
      if (!fn(k)) next = n;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min(threads, n); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

std::string ShapeKey(const ShapeMap& shapes) {
  std::string k;
  for (const auto& [name, dims] : shapes) absl::StrAppend(&k, name, ":", absl::StrJoin(dims, "x"), ";");
  return k;
}

StatusOr<TensorSpec> SpecOf(const onnx_import::TensorInfo& info) {
  if (info.is_string) return TensorSpec{info.name, DataType::kString, info.dims, info.dim_names};
  ASSIGN_OR_RETURN(DataType t, FromHlo(info.type));
  return TensorSpec{info.name, t, info.dims, info.dim_names, info.is_sequence, info.is_optional};
}

// The shape of a call with sequence or optional inputs that is not in the
// tensors: sequence lengths and empty optionals.
struct InputStructure {
  std::map<std::string, int64_t> lengths;
  std::set<std::string> absent;
  std::string Key() const {
    std::string k;
    for (const auto& [n, l] : lengths) absl::StrAppend(&k, "|", n, "#", l);
    for (const auto& n : absent) absl::StrAppend(&k, "|", n, "#none");
    return k;
  }
};

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

// The plugin's create options: the user's, and for our CPU plugin the
// session's switches that it implements.
std::vector<pjrt::NamedValue> CreateOptionsFor(const SessionOptions& options, const pjrt::Plugin& plugin) {
  std::vector<pjrt::NamedValue> create = ToNamedValues(options.create_options);
  bool ours = std::filesystem::path(plugin.path()).filename() == kPluginFile;
  if (ours && !options.use_dnnl) create.push_back({"use_dnnl", false});
  if (ours && !options.fuse_elementwise) create.push_back({"fuse_elementwise", false});
  if (ours && !options.optimize) create.push_back({"optimize", false});
  if (ours && options.verify_passes) create.push_back({"verify_passes", true});
  return create;
}

// One client per (plugin, create options), shared by the sessions using it:
// a client may own a whole device (XLA's GPU plugin preallocates memory).
StatusOr<std::shared_ptr<pjrt::Client>> GetClient(const SessionOptions& options) {
  std::string path = options.plugin.empty() ? DefaultPluginPath() : options.plugin;
  ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Plugin> plugin, pjrt::Plugin::Load(path));
  std::vector<pjrt::NamedValue> create = CreateOptionsFor(options, *plugin);
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

// A file's canonical path, size and modification time: what changes when it
// is rebuilt.
std::string FileIdentity(const std::string& path) {
  std::error_code ec;
  std::filesystem::path file = std::filesystem::canonical(path, ec);
  if (ec) return path;
  auto size = std::filesystem::file_size(file, ec);
  auto time = std::filesystem::last_write_time(file, ec).time_since_epoch().count();
  return absl::StrCat(file.string(), "|", ec ? 0 : size, "|", ec ? 0 : time);
}

// The file holding xonnx's converter (the program, or a shared library
// linking it): a rebuilt converter may emit other HLO for the same model, so
// cached descriptions of programs must not match.
// Found once per process: the code running is the code that was loaded,
// whatever happens to the file later.
const std::string& ConverterIdentity() {
  static const std::string identity = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void*>(&FileIdentity), &info) || !info.dli_fname) return std::string("unknown");
    return FileIdentity(info.dli_fname);
  }();
  return identity;
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
  // Shared so that values borrowed from its tensors can keep it alive.
  std::shared_ptr<onnx_import::LoadedModel> model;
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
    std::vector<std::string> weight_names;                // initializers, in parameter order
    std::vector<std::shared_ptr<pjrt::Buffer>> weights;  // their buffers, the parameters after the inputs
    std::vector<onnx_import::TensorInfo> computed;        // what the program returns, in order
    std::vector<int> output_index;        // -1 for a string output
    std::vector<Tensor> string_outputs;   // by model output position (unused entries empty)
    // Per model output: ImportedModule::kTensorOutput, a sequence's length,
    // or kNoneOutput (see onnx/importer.h).
    std::vector<int> output_counts;
    // The persistent cache entries it was loaded from (none when compiled
    // here): dropped if the plugin refuses the program when it first runs.
    std::vector<std::string> cache_keys;
  };

  std::shared_ptr<pjrt::Client> client;
  std::vector<const pjrt::Device*> devices;  // one, or all addressable ones
  // pjrt::CompileOptionsFor(*devices[k]), serialized once: every program
  // lookup puts them in its keys and every compile or load passes them.
  std::vector<std::string> compile_options;
  // Weights on each device, uploaded on first use and shared by all programs.
  // Each has its own once-flag, so that programs compiling in parallel wait
  // only for the weights they need, not for every upload in progress.
  struct WeightSlot {
    std::once_flag once;
    StatusOr<std::shared_ptr<pjrt::Buffer>> buffer = absl::UnknownError("not uploaded");
  };
  std::mutex weights_mu;
  std::map<std::pair<std::string, int>, std::shared_ptr<WeightSlot>> weight_buffers;
  // Initializers that must stay constants (a converter needs their values).
  std::set<std::string> constant_weights;

  // Buckets, checked at Open.
  std::vector<int64_t> batch_buckets;
  std::map<std::string, std::vector<int64_t>> dim_buckets;
  // Persistent cache; `plugin_identity` is part of every key.
  std::optional<CompileCache> disk_cache;
  std::string plugin_identity;
  // Entries whose program the plugin refused at its first run; never loaded
  // again by this session (LoadEntry), even when they could not be removed.
  std::set<std::string> distrusted;  // guarded by mu

  StatusOr<std::shared_ptr<pjrt::Buffer>> WeightBuffer(const std::string& name, int dev) {
    std::shared_ptr<WeightSlot> slot;
    {
      std::lock_guard<std::mutex> l(weights_mu);
      auto& s = weight_buffers[{name, dev}];
      if (!s) s = std::make_shared<WeightSlot>();
      slot = s;
    }
    std::call_once(slot->once, [&] { slot->buffer = UploadWeight(name, dev); });
    if (!slot->buffer.ok()) {
      // Not kept: a later call tries again (the device may have been short
      // of memory only for a while).
      std::lock_guard<std::mutex> l(weights_mu);
      auto it = weight_buffers.find({name, dev});
      if (it != weight_buffers.end() && it->second == slot) weight_buffers.erase(it);
    }
    return slot->buffer;
  }

  StatusOr<std::shared_ptr<pjrt::Buffer>> UploadWeight(const std::string& name, int dev) {
    const onnx::TensorProto* t = onnx_import::FindInitializer(model->proto.graph(), name);
    if (!t) return Internal("%s: no initializer named '%s'", model->path, name);
    // Borrowed from the model: raw bytes go to the device with no copy in between.
    auto lit = onnx_import::LiteralFromTensorProto(*t, std::shared_ptr<const void>(model, t));
    if (!lit.ok()) return Annotate(lit.status(), absl::StrCat(model->path, ": initializer '", name, "'"));
    // Converted once here; the program takes the weights in its compute type.
    if (lit->shape().element_type == hlo::F32 && options.data_type != DataType::kFloat32)
      lit = lit->Convert(ToHlo(options.data_type));
    // The device buffer may read these bytes in place (a CPU plugin does), so
    // they stay alive, unchanged, as long as the plugin uses them: the
    // model's bytes (never modified after loading) or the converted copy.
    auto value = std::make_shared<const hlo::Literal>(*std::move(lit));
    const void* data = value->untyped_data();  // const access: a borrowed literal is not copied
    ASSIGN_OR_RETURN(std::unique_ptr<pjrt::Buffer> b,
                     client->BufferFromHostZeroCopy(data, value->shape().element_type, value->shape().dims, *devices[dev], value));
    return std::shared_ptr<pjrt::Buffer>(std::move(b));
  }

  // The graph's segments when host nodes split it (see onnx/graph_split.h);
  // each device segment then runs as a child Impl over its own model, made
  // on first use (its input types are known then).
  onnx_import::GraphSplit split;
  // Some input or output is a sequence or an optional (RunValues).
  bool value_io = false;
  std::mutex stages_mu;
  std::map<int, std::unique_ptr<Impl>> stages;

  mutable std::mutex mu;
  std::map<std::string, Program> cache;
  // Inputs whose values (not only shapes) the program depends on: they feed
  // shapes, axes or counts, and are bound as constants when compiling.
  std::set<std::string> value_inputs;
  double last_compile_ms = 0;
  std::string last_summary;
  CompileStats stats;

  StatusOr<onnx_import::ImportedModule> BuildModule(const ShapeMap& shapes, const std::map<std::string, hlo::Literal>& bound,
                                                   bool allow_partial, bool optimized,
                                                   const std::map<std::string, onnx_import::StringTensor>& strings = {},
                                                   const std::set<std::string>* constant_weights = nullptr,
                                                   const InputStructure* structure = nullptr) const {
    onnx_import::ImportOptions io;
    if (structure) {
      io.sequence_lengths = structure->lengths;
      io.absent_inputs = structure->absent;
    }
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
    if (options.data_type != DataType::kFloat32 || options.io_data_type != DataType::kFloat32) {
      passes::ConvertPrecision precision(ToHlo(options.data_type), ToHlo(options.io_data_type));
      Status st = precision.Run(imported.module.get()).status();
      if (st.ok()) st = hlo::Verify(*imported.module);
      if (st.ok() && optimized) st = passes::RunStandardPipeline(imported.module.get(), options.verify_passes);
      if (!st.ok()) return Annotate(st, absl::StrCat(model->path, ": computing in ", DataTypeName(options.data_type)));
      for (auto& out : imported.outputs)
        if (!out.is_string && out.type == hlo::F32) out.type = ToHlo(options.io_data_type);
    }
    return imported;
  }

  bool IsInitializer(const std::string& name) const {
    return onnx_import::FindInitializer(model->proto.graph(), name) != nullptr;
  }

  // The plugin refused a program loaded from the persistent cache when it
  // first ran it (its module does not match what the entry says it takes):
  // forgets the program, removes its entries and never loads them again, so
  // that the next Get converts and compiles it afresh.
  void DropCachedProgram(const Program& bad, const Status& why) {
    {
      std::lock_guard<std::mutex> l(mu);
      for (auto it = cache.begin(); it != cache.end();)
        it = it->second.exe == bad.exe ? cache.erase(it) : std::next(it);
      distrusted.insert(bad.cache_keys.begin(), bad.cache_keys.end());
    }
    for (const auto& key : bad.cache_keys) disk_cache->Remove(key);
    NoteCacheProblem(absl::DataLossError(absl::StrCat(disk_cache->PathFor(bad.cache_keys.front()),
                                                      ": the plugin refused the cached program when it first ran it (",
                                                      why.message(), "); recompiling")));
  }

  void NoteCacheProblem(const Status& st) {
    std::lock_guard<std::mutex> l(mu);
    if (absl::IsDataLoss(st)) ++stats.cache_rejected;
    if (stats.cache_messages.size() < 16) stats.cache_messages.push_back(std::string(st.message()));
  }

  // The payload of the persistent cache's entry `key`; a distrusted one
  // (see DropCachedProgram) reads as missing. Every load goes through here.
  StatusOr<std::string> LoadEntry(const std::string& key) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (distrusted.count(key)) return absl::NotFoundError(absl::StrCat(key, ": refused earlier in this session"));
    }
    return disk_cache->Load(key);
  }

  // The executable stored under `key` for devices[dev]: NotFound when there
  // is none, DataLoss when the entry is damaged or the plugin refuses it.
  StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> LoadCachedExecutable(const std::string& key, int dev) {
    ASSIGN_OR_RETURN(std::string bytes, LoadEntry(key));
    auto exe = client->Deserialize(bytes, compile_options[dev]);
    if (!exe.ok())
      return absl::DataLossError(absl::StrCat(disk_cache->PathFor(key), ": the plugin refuses the cached executable (",
                                              exe.status().message(), "); recompiling"));
    return std::shared_ptr<pjrt::LoadedExecutable>(*std::move(exe));
  }

  // The executable for a serialized module: from the persistent cache when
  // it holds one for the same module, options and plugin; else compiled (and
  // stored).
  // `loaded` tells which.
  StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> CompileOrLoad(const std::string& module_bytes, int dev,
                                                                  std::string* exe_key, bool* loaded) {
    Fingerprinter f;
    f.UpdateField(module_bytes);
    f.UpdateField(compile_options[dev]);
    f.UpdateField(plugin_identity);
    *exe_key = absl::StrCat("executable ", f.Finish().Hex());
    *loaded = false;
    if (disk_cache) {
      auto exe = LoadCachedExecutable(*exe_key, dev);
      if (exe.ok()) {
        std::lock_guard<std::mutex> l(mu);
        ++stats.from_cache;
        *loaded = true;
        return exe;
      }
      if (!absl::IsNotFound(exe.status())) NoteCacheProblem(exe.status());
    }
    auto exe = client->Compile(module_bytes, compile_options[dev]);
    if (!exe.ok()) return Annotate(exe.status(), absl::StrCat(model->path, ": compiling on ", client->platform_name()));
    std::shared_ptr<pjrt::LoadedExecutable> shared = *std::move(exe);
    {
      std::lock_guard<std::mutex> l(mu);
      ++stats.compiled;
    }
    if (disk_cache) {
      auto serialized = shared->Serialize();
      Status st = serialized.ok() ? disk_cache->Store(*exe_key, *serialized) : serialized.status();
      if (!st.ok()) NoteCacheProblem(st);
    }
    return shared;
  }

  // A program's description without its executable and buffers, so that a
  // later process can skip converting the model: "exe KEY", then "param",
  // "weight" and "out TYPE DIMS" lines with a name each.
  static std::string DescribeProgram(const std::string& exe_key, const Program& p) {
    std::string s = absl::StrCat("exe ", exe_key, "\n");
    for (const auto& n : p.params) absl::StrAppend(&s, "param ", n, "\n");
    for (const auto& n : p.weight_names) absl::StrAppend(&s, "weight ", n, "\n");
    for (const auto& o : p.computed)
      absl::StrAppend(&s, "out ", static_cast<int>(o.type), " ", o.dims.empty() ? "-" : absl::StrJoin(o.dims, ","), " ", o.name, "\n");
    return s;
  }

  // The inverse of DescribeProgram, loading the executable it names (the
  // weights are attached by Complete).
  StatusOr<Program> ProgramFromDescription(absl::string_view text, int dev) {
    Program p;
    std::string exe_key;
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(' ', 1));
      if (f.size() != 2) return absl::DataLossError("bad program description line");
      if (f[0] == "exe") {
        exe_key = std::string(f[1]);
      } else if (f[0] == "param") {
        p.params.emplace_back(f[1]);
      } else if (f[0] == "weight") {
        p.weight_names.emplace_back(f[1]);
      } else if (f[0] == "out") {
        std::vector<absl::string_view> g = absl::StrSplit(f[1], absl::MaxSplits(' ', 2));
        int type;
        if (g.size() != 3 || !absl::SimpleAtoi(g[0], &type)) return absl::DataLossError("bad output line");
        onnx_import::TensorInfo info;
        info.type = static_cast<hlo::PrimitiveType>(type);
        if (g[1] != "-")
          for (absl::string_view d : absl::StrSplit(g[1], ',')) {
            int64_t v;
            if (!absl::SimpleAtoi(d, &v)) return absl::DataLossError("bad output dims");
            info.dims.push_back(v);
          }
        info.name = std::string(g[2]);
        p.output_index.push_back(static_cast<int>(p.computed.size()));
        p.string_outputs.emplace_back();
        p.computed.push_back(std::move(info));
      } else {
        return absl::DataLossError("unknown program description line");
      }
    }
    if (exe_key.empty() || p.computed.size() != outputs.size()) return absl::DataLossError("incomplete program description");
    p.output_counts.assign(p.computed.size(), onnx_import::ImportedModule::kTensorOutput);
    p.cache_keys.push_back(exe_key);
    ASSIGN_OR_RETURN(p.exe, LoadCachedExecutable(exe_key, dev));
    if (p.exe->num_outputs() != p.computed.size()) return absl::DataLossError("the cached executable has other outputs");
    return p;
  }

  // A program found by Prepare: `complete` when it came from the in-memory
  // cache, else it still lacks its weight buffers (see Complete).
  struct Prepared {
    std::string key;
    Program program;
    bool complete = false;
  };

  // The program for these inputs on devices[dev], compiled on first use.
  StatusOr<Program> Get(const std::map<std::string, Tensor>& values, int dev, const InputStructure* structure = nullptr) {
    ShapeMap shapes;
    for (const auto& [name, t] : values) shapes[name] = t.dims();
    ASSIGN_OR_RETURN(Prepared p, Prepare(shapes, &values, dev, /*eager=*/false, structure));
    return Complete(std::move(p), dev);
  }

  // Attaches a prepared program's weight buffers (uploading those not on
  // the device yet) and keeps it in the in-memory cache.
  StatusOr<Program> Complete(Prepared p, int dev) {
    if (p.complete) return std::move(p.program);
    for (const auto& w : p.program.weight_names) {
      ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Buffer> b, WeightBuffer(w, dev));
      p.program.weights.push_back(std::move(b));
    }
    std::lock_guard<std::mutex> l(mu);
    return cache.emplace(p.key, std::move(p.program)).first->second;  // a concurrent twin wins
  }

  // The program for inputs of these shapes (and, with `values`, these
  // values) on devices[dev]: from the in-memory cache, the persistent cache,
  // or converted and compiled. With `eager` (and no values), a model whose
  // program depends on input values (not only shapes) is refused with
  // FailedPrecondition instead of binding them.
  StatusOr<Prepared> Prepare(const ShapeMap& shapes, const std::map<std::string, Tensor>* values, int dev, bool eager,
                             const InputStructure* structure) {
    if (!unsupported.empty()) return absl::UnimplementedError(unsupported);
    static const std::map<std::string, Tensor> kNoValues;
    if (!values) values = &kNoValues;
    for (int attempt = 0; attempt < 16; ++attempt) {
      std::set<std::string> bound_names, const_weights;
      {
        std::lock_guard<std::mutex> l(mu);
        bound_names = value_inputs;
        const_weights = constant_weights;
      }
      std::string key = absl::StrCat(dev, "@", ShapeKey(shapes), structure ? structure->Key() : "");
      // String inputs never reach the program: their values are compiled in.
      std::map<std::string, onnx_import::StringTensor> strings;
      for (const auto& [name, t] : *values) {
        if (t.dtype() != DataType::kString) continue;
        strings[name] = {t.dims(), t.strings()};
        absl::StrAppend(&key, "|", name, "=");
        for (const auto& v : t.strings()) absl::StrAppend(&key, v.size(), ":", v);
      }
      if (eager && (!bound_names.empty() || !strings.empty()))
        return absl::FailedPreconditionError("the program depends on input values");
      std::map<std::string, hlo::Literal> bound;
      for (const std::string& name : bound_names) {
        auto given = values->find(name);
        if (given == values->end()) return Internal("%s: input '%s' needs its value at compile time", model->path, name);
        const Tensor& t = given->second;
        absl::StrAppend(&key, "|", name, "=", absl::string_view(static_cast<const char*>(t.data()), t.byte_size()));
        bound.emplace(name, LiteralOf(t));
      }
      {
        std::lock_guard<std::mutex> l(mu);
        auto it = cache.find(key);
        if (it != cache.end()) return Prepared{key, it->second, true};
      }
      auto start = std::chrono::steady_clock::now();
      // A program that depends only on shapes is described in the persistent
      // cache under the model's fingerprint and the shapes, so a later
      // process need not convert the model at all.
      std::string description_key;
      if (disk_cache && bound.empty() && strings.empty()) {
        Fingerprinter f;
        f.UpdateField(model->content_fingerprint);
        f.UpdateField(key);
        f.UpdateField(absl::StrJoin(const_weights, "\n"));
        f.UpdateField(absl::StrCat(options.upload_weights, options.optimize, DataTypeName(options.data_type),
                                   DataTypeName(options.io_data_type), XONNX_VERSION));
        f.UpdateField(compile_options[dev]);
        f.UpdateField(plugin_identity);
        f.UpdateField(ConverterIdentity());
        description_key = absl::StrCat("program ", f.Finish().Hex());
        auto text = LoadEntry(description_key);
        if (text.ok()) {
          auto prog = ProgramFromDescription(*text, dev);
          if (prog.ok()) {
            prog->cache_keys.push_back(description_key);
            std::lock_guard<std::mutex> l(mu);
            ++stats.from_cache;
            last_compile_ms = MsSince(start);
            last_summary = absl::StrFormat("%d inputs + %d weights -> %d outputs, loaded from the compile cache",
                                           prog->params.size(), prog->weight_names.size(), prog->computed.size());
            return Prepared{key, *std::move(prog), false};
          }
          // An executable removed on its own (`xonnx cache --max-size`) is a
          // miss, not damage.
          if (!absl::IsNotFound(prog.status()))
            NoteCacheProblem(absl::DataLossError(absl::StrCat(disk_cache->PathFor(description_key), ": ",
                                                             prog.status().message(), "; converting the model again")));
        } else if (!absl::IsNotFound(text.status())) {
          NoteCacheProblem(text.status());
        }
      }
      auto imported = BuildModule(shapes, bound, false, options.optimize, strings,
                                  options.upload_weights ? &const_weights : nullptr, structure);
      if (!imported.ok()) {
        // A shape-like value depends on inputs (or weights): bind them and try again.
        auto needs = imported.status().GetPayload(onnx_import::kNeedsInputValuesPayload);
        if (!needs) return imported.status();
        bool added = false;
        std::lock_guard<std::mutex> l(mu);
        for (absl::string_view part : absl::StrSplit(std::string(*needs), ',')) {
          std::string name(part);
          if (values->count(name)) {
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
      prog.weight_names = imported->weights;
      int next = 0;
      prog.output_counts = imported->output_counts;
      bool describable = std::all_of(prog.output_counts.begin(), prog.output_counts.end(),
                                     [](int c) { return c == onnx_import::ImportedModule::kTensorOutput; });
      for (const auto& out : imported->outputs) {
        describable &= out.name.find('\n') == std::string::npos;
        if (out.is_string) {
          describable = false;
          const auto& sv = imported->string_outputs.at(out.name);
          prog.output_index.push_back(-1);
          prog.string_outputs.push_back(Tensor::FromStrings(sv.dims, sv.values));
        } else {
          prog.output_index.push_back(next++);
          prog.string_outputs.emplace_back();
          prog.computed.push_back(out);
        }
      }
      for (const auto& n : prog.params) describable &= n.find('\n') == std::string::npos;
      for (const auto& n : prog.weight_names) describable &= n.find('\n') == std::string::npos;
      std::string bytes = hlo::SerializeModule(*imported->module);
      std::string exe_key;
      bool loaded = false;
      ASSIGN_OR_RETURN(prog.exe, CompileOrLoad(bytes, dev, &exe_key, &loaded));
      if (loaded) prog.cache_keys.push_back(exe_key);
      if (prog.exe->num_outputs() != prog.computed.size())
        return Internal("%s: the plugin reports %d outputs, the program has %d", model->path, prog.exe->num_outputs(),
                        prog.computed.size());
      if (!description_key.empty() && describable) {
        Status st = disk_cache->Store(description_key, DescribeProgram(exe_key, prog));
        if (!st.ok()) NoteCacheProblem(st);
      }
      std::lock_guard<std::mutex> l(mu);
      last_compile_ms = MsSince(start);
      auto fp = prog.exe->Fingerprint();
      last_summary = absl::StrFormat("%d inputs + %d weights -> %d outputs, %d KiB HloModuleProto%s", prog.params.size(),
                                     prog.weight_names.size(), prog.computed.size(), bytes.size() / 1024,
                                     fp.ok() && !fp->empty() ? absl::StrCat(", fingerprint ", *fp) : "");
      return Prepared{key, std::move(prog), false};
    }
    return Internal("%s: input value binding did not converge", model->path);
  }

  // Runs one program on devices[dev] with inputs of exactly its shapes.
  // With `structure`, also the sequence lengths and empty optionals of the
  // call; `counts` receives how the outputs group into model outputs.
  StatusOr<std::vector<Tensor>> RunExact(const std::map<std::string, Tensor>& inputs, int dev,
                                         const InputStructure* structure = nullptr, std::vector<int>* counts = nullptr) {
    const std::string& file = model->path;
    Program prog;
    StatusOr<std::vector<std::unique_ptr<pjrt::Buffer>>> results = absl::UnknownError("not run");
    // Kept until the outputs are read: the plugin may still be reading them.
    std::vector<std::unique_ptr<pjrt::Buffer>> uploaded;
    // A second attempt only after dropping a program from the cache.
    for (int attempt = 0; attempt < 2; ++attempt) {
      ASSIGN_OR_RETURN(prog, Get(inputs, dev, structure));
      uploaded.clear();
      std::vector<pjrt::Buffer*> args;
      for (const std::string& name : prog.params) {
        const Tensor& t = inputs.at(name);
        auto b = client->BufferFromHost(t.data(), ToHlo(t.dtype()), t.dims(), *devices[dev]);
        if (!b.ok()) return Annotate(b.status(), absl::StrCat(file, ": input '", name, "'"));
        args.push_back(b->get());
        uploaded.push_back(*std::move(b));
      }
      for (const auto& w : prog.weights) args.push_back(w.get());
      results = prog.exe->Execute(args);
      if (results.ok() || !absl::IsDataLoss(results.status()) || prog.cache_keys.empty()) break;
      DropCachedProgram(prog, results.status());
    }
    if (!results.ok()) return Annotate(results.status(), file);
    if (counts) *counts = prog.output_counts;
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

  // Every name given to a call is one of the model's inputs.
  template <typename V>
  Status CheckInputNames(const std::map<std::string, V>& given) const {
    for (const auto& [name, v] : given) {
      bool known = false;
      for (const auto& s : inputs) known |= s.name == name;
      if (!known) return InvalidArgument("%s: the model has no input named '%s'", model->path, name);
    }
    return absl::OkStatus();
  }

  // Inputs whose dimension 0 is the batch (declared dynamic).
  bool IsBatched(const TensorSpec& s) const { return !s.dims.empty() && s.dims[0] < 0; }

  // Pads the dimensions named in dim_buckets up to their bucket; returns the
  // actual size of each name (to cut the outputs back).
  StatusOr<std::map<std::string, int64_t>> PadDims(std::map<std::string, Tensor>& values) const {
    std::map<std::string, int64_t> actual;
    for (const auto& s : inputs) {
      Tensor& t = values.at(s.name);
      for (size_t a = 0; a < s.dims.size(); ++a) {
        if (s.dims[a] >= 0) continue;
        auto it = dim_buckets.find(s.dim_names[a]);
        if (it == dim_buckets.end()) continue;
        int64_t v = t.dims()[a];
        auto [seen, fresh] = actual.emplace(it->first, v);
        if (!fresh && seen->second != v)
          return InvalidArgument("%s: dimension '%s' is %d in input '%s' but %d in another input", model->path, it->first, v,
                                 s.name, seen->second);
        int64_t b = PickBucket(it->second, v);
        if (b < 0)
          return InvalidArgument("%s: input '%s': dimension '%s' is %d, larger than its largest bucket %d", model->path, s.name,
                                 it->first, v, it->second.back());
        if (b != v) {
          ASSIGN_OR_RETURN(t, ResizeAxis(t, a, b));
        }
      }
    }
    return actual;
  }

  // Cuts the outputs' named dimensions back from their bucket to the sizes
  // of the call.
  Status CutDims(std::vector<Tensor>& outs, const std::map<std::string, int64_t>& actual) const {
    for (size_t k = 0; k < outs.size() && k < outputs.size(); ++k) {
      const auto& s = outputs[k];
      for (size_t a = 0; a < s.dims.size() && a < outs[k].dims().size(); ++a) {
        auto it = actual.find(s.dim_names[a]);
        if (s.dims[a] >= 0 || it == actual.end()) continue;
        if (outs[k].dims()[a] != it->second) {
          ASSIGN_OR_RETURN(outs[k], ResizeAxis(outs[k], a, it->second));
        }
      }
    }
    return absl::OkStatus();
  }

  // Rows [begin, begin + rows) of the batched inputs, padded to a bucket,
  // run on devices[dev]; the outputs cut back to `rows`.
  StatusOr<std::vector<Tensor>> RunRows(const std::map<std::string, Tensor>& all, int64_t begin, int64_t rows, int64_t total,
                                        int dev) {
    int64_t padded = batch_buckets.empty() ? rows : PickBucket(batch_buckets, rows);
    bool whole_batch = begin == 0 && rows == total && padded == rows;
    if (whole_batch && dim_buckets.empty()) return RunExact(all, dev);
    std::map<std::string, Tensor> part;
    for (const auto& s : inputs) {
      const Tensor& t = all.at(s.name);
      if (!IsBatched(s) || whole_batch) {
        part[s.name] = t;
        continue;
      }
      ASSIGN_OR_RETURN(Tensor p, SliceRows(t, begin, rows));
      if (padded != rows) {
        ASSIGN_OR_RETURN(p, ResizeAxis(p, 0, padded));
      }
      part[s.name] = std::move(p);
    }
    auto actual_or = PadDims(part);
    if (!actual_or.ok()) return actual_or.status();
    const std::map<std::string, int64_t>& actual = *actual_or;
    ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunExact(part, dev));
    RETURN_IF_ERROR(CutDims(outs, actual));
    if (padded != rows)
      for (size_t k = 0; k < outs.size(); ++k)
        if (BatchedOutput(k, outs[k], padded)) {
          ASSIGN_OR_RETURN(outs[k], ResizeAxis(outs[k], 0, rows));
        }
    return outs;
  }

  Status SetUpBuckets() {
    ASSIGN_OR_RETURN(batch_buckets, BatchBuckets(options.max_batch, options.steps, options.batch_buckets));
    std::set<std::string> batch_names, dim_names;
    bool any_batched = false;
    for (const auto& s : inputs) {
      any_batched |= IsBatched(s);
      for (size_t a = 0; a < s.dims.size(); ++a)
        if (s.dims[a] < 0 && !s.dim_names[a].empty()) (a == 0 ? batch_names : dim_names).insert(s.dim_names[a]);
    }
    if (!batch_buckets.empty() && !any_batched)
      return InvalidArgument("%s: batch buckets were given, but no input has a dynamic dimension 0 (a batch)", model->path);
    for (const auto& [name, sizes] : options.dim_buckets) {
      if (batch_names.count(name) && any_batched)
        return InvalidArgument("%s: dim_buckets '%s' names the batch dimension; give batch buckets (max_batch/steps or batch_buckets) instead",
                               model->path, name);
      if (!dim_names.count(name))
        return InvalidArgument("%s: dim_buckets: no input has a dynamic dimension named '%s' (dynamic dimensions: %s)",
                               model->path, name, dim_names.empty() ? "none" : absl::StrJoin(dim_names, ", "));
      ASSIGN_OR_RETURN(dim_buckets[name], SortedBuckets(sizes, absl::StrCat("dim_buckets ", name)));
    }
    return absl::OkStatus();
  }

  void SetUpCache() {
    if (!options.use_cache) return;
    std::string dir = options.cache_dir.empty() ? CompileCache::DefaultDir() : options.cache_dir;
    auto c = CompileCache::Open(dir);
    if (!c.ok()) {
      stats.cache_messages.push_back(absl::StrCat("compile cache off: ", c.status().message()));
      return;
    }
    disk_cache = *std::move(c);
    // A cached executable is only valid for the same build of the plugin:
    // its file (size and time) and what it says about itself, and for the
    // same create options (they may choose kernels or numerics). (Program
    // descriptions also depend on the converter; see Get.)
    const auto& plugin = client->plugin();
    plugin_identity = absl::StrCat(FileIdentity(plugin->path()), "|", plugin->major_version(), ".", plugin->minor_version(), "|",
                                   client->platform_name(), "|", client->platform_version(), "|", XONNX_VERSION, "|",
                                   OptionsKey(CreateOptionsFor(options, *plugin)));
  }

  // With buckets covering every dynamic dimension, compiles (or loads) every
  // bucket on every device now, in parallel.
  Status CompileBuckets() {
    if (batch_buckets.empty() && dim_buckets.empty()) return absl::OkStatus();
    if (!unsupported.empty()) return absl::OkStatus();
    // Every combination of bucket sizes.
    std::vector<std::map<std::string, int64_t>> combos{{}};
    auto expand = [&](const std::string& name, const std::vector<int64_t>& sizes) {
      std::vector<std::map<std::string, int64_t>> next;
      for (const auto& c : combos)
        for (int64_t v : sizes) {
          auto n = c;
          n[name] = v;
          next.push_back(std::move(n));
        }
      combos = std::move(next);
    };
    const std::string kBatch = "\n batch";  // cannot clash with a dimension name from a model
    if (!batch_buckets.empty()) expand(kBatch, batch_buckets);
    for (const auto& [name, sizes] : dim_buckets) expand(name, sizes);
    // Shapes only: a bucket is converted and compiled without input values.
    std::vector<ShapeMap> shapes;
    for (const auto& c : combos) {
      ShapeMap bucket;
      for (const auto& s : inputs) {
        if (s.dtype == DataType::kString) return absl::OkStatus();  // needs values: compiled on first use
        std::vector<int64_t> dims = s.dims;
        for (size_t a = 0; a < dims.size(); ++a) {
          if (dims[a] >= 0) continue;
          auto it = c.find(a == 0 && IsBatched(s) && !batch_buckets.empty() ? kBatch : s.dim_names[a]);
          if (it == c.end()) return absl::OkStatus();  // a dynamic dimension without buckets: compiled on first use
          dims[a] = it->second;
        }
        bucket[s.name] = std::move(dims);
      }
      shapes.push_back(std::move(bucket));
    }
    int total = shapes.size() * devices.size();
    int threads = options.compile_threads > 0 ? options.compile_threads : std::max(1u, std::thread::hardware_concurrency());
    // Programs first (converted and compiled, or loaded from the cache), then
    // the weights they take, uploaded once for all of them: the two phases
    // are timed apart, since only the first depends on the compiler.
    auto start = std::chrono::steady_clock::now();
    std::vector<std::optional<Prepared>> prepared(total);
    std::mutex progress_mu;
    int done = 0;
    // A program that depends on input values (FailedPrecondition) stops the
    // eager compile without an error: it compiles on first use, for the
    // values given.
    Status first_error;
    ParallelFor(total, threads, [&](int k) {
      auto p = Prepare(shapes[k / devices.size()], nullptr, k % devices.size(), /*eager=*/true, nullptr);
      std::lock_guard<std::mutex> l(progress_mu);
      if (!p.ok()) {
        if (!absl::IsFailedPrecondition(p.status()) && first_error.ok()) first_error = p.status();
        return false;
      }
      prepared[k] = *std::move(p);
      ++done;
      if (options.compile_progress) options.compile_progress(done, total);
      return true;
    });
    if (!first_error.ok()) return first_error;
    double buckets_ms = MsSince(start);
    start = std::chrono::steady_clock::now();
    std::vector<std::pair<std::string, int>> wanted;
    {
      std::set<std::pair<std::string, int>> seen;
      for (int k = 0; k < total; ++k)
        if (prepared[k] && !prepared[k]->complete)
          for (const auto& w : prepared[k]->program.weight_names)
            if (seen.insert({w, k % devices.size()}).second) wanted.emplace_back(w, k % devices.size());
    }
    ParallelFor(wanted.size(), threads, [&](int k) {
      auto b = WeightBuffer(wanted[k].first, wanted[k].second);
      std::lock_guard<std::mutex> l(progress_mu);
      if (!b.ok() && first_error.ok()) first_error = b.status();
      return b.ok();
    });
    if (!first_error.ok()) return first_error;
    for (int k = 0; k < total; ++k)
      if (prepared[k]) RETURN_IF_ERROR(Complete(*std::move(prepared[k]), k % devices.size()).status());
    std::lock_guard<std::mutex> l(mu);
    stats.buckets_ms = buckets_ms;
    stats.weights_ms = MsSince(start);
    return absl::OkStatus();
  }

  // Whether output k carries the batch in dimension 0 (declared dynamic, or
  // undeclared, and as long as the batch that produced it).
  bool BatchedOutput(size_t k, const Tensor& t, int64_t rows) const {
    bool declared = k < outputs.size() && (outputs[k].dims.empty() || outputs[k].dims[0] < 0);
    return declared && !t.dims().empty() && t.dims()[0] == rows;
  }

  // The child that runs device segment k, made on first use from the
  // element types of its inputs.
  StatusOr<Impl*> Stage(int k, const std::map<std::string, DataType>& types) {
    std::lock_guard<std::mutex> l(stages_mu);
    if (auto it = stages.find(k); it != stages.end()) return it->second.get();
    const onnx_import::Segment& seg = split.segments[k];
    std::map<std::string, int> onnx_types;
    for (const auto& name : seg.inputs) {
      DataType t = types.at(name);
      onnx_types[name] = t == DataType::kString ? onnx::TensorProto::STRING : onnx_import::OnnxType(ToHlo(t));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<onnx_import::LoadedModel> sub, onnx_import::SegmentModel(*model, seg, k, onnx_types));
    auto child = std::make_unique<Impl>();
    child->model = std::move(sub);
    child->options = options;
    child->client = client;
    child->devices = devices;
    child->compile_options = compile_options;
    child->disk_cache = disk_cache;
    child->plugin_identity = plugin_identity;
    for (const auto& name : seg.outputs) child->outputs.push_back(TensorSpec{name, DataType::kFloat32, {}, {}});
    Impl* raw = child.get();
    stages[k] = std::move(child);
    return raw;
  }

  // Runs a split graph: device segments as programs for the shapes they
  // meet, host nodes on the host in between.
  StatusOr<std::vector<Tensor>> RunSplit(const std::map<std::string, Tensor>& inputs) {
    const onnx::GraphProto& g = model->proto.graph();
    std::map<std::string, Tensor> values = inputs;
    for (size_t k = 0; k < split.segments.size(); ++k) {
      const onnx_import::Segment& seg = split.segments[k];
      if (seg.on_host) {
        std::map<std::string, hlo::Literal> args;
        for (const auto& name : seg.inputs) {
          const Tensor& t = values.at(name);
          if (t.dtype() == DataType::kString)
            return Unimplemented("%s: node %s on the host: string input '%s' is not supported", model->path,
                                 onnx_import::NodeLabel(g.node(seg.nodes[0])), name);
          args.emplace(name, LiteralOf(t));
        }
        ASSIGN_OR_RETURN(std::vector<hlo::Literal> outs, onnx_import::RunNodeOnHost(*model, seg.nodes[0], args));
        const onnx::NodeProto& n = g.node(seg.nodes[0]);
        for (int o = 0; o < n.output_size(); ++o) {
          if (n.output(o).empty()) continue;
          ASSIGN_OR_RETURN(values[n.output(o)], TensorOf(outs[o]));
        }
        continue;
      }
      std::map<std::string, DataType> types;
      std::map<std::string, Tensor> args;
      for (const auto& name : seg.inputs) {
        types[name] = values.at(name).dtype();
        args[name] = values.at(name);
      }
      ASSIGN_OR_RETURN(Impl * stage, Stage(k, types));
      ASSIGN_OR_RETURN(std::vector<Tensor> outs, stage->RunExact(args, 0));
      for (size_t o = 0; o < outs.size() && o < seg.outputs.size(); ++o) values[seg.outputs[o]] = std::move(outs[o]);
    }
    std::vector<Tensor> outs;
    for (const auto& spec : outputs) {
      if (auto it = values.find(spec.name); it != values.end()) {
        outs.push_back(std::move(it->second));
        continue;
      }
      const onnx::TensorProto* init = onnx_import::FindInitializer(g, spec.name);
      if (!init) return Internal("%s: graph output '%s' was not computed", model->path, spec.name);
      ASSIGN_OR_RETURN(Tensor t, TensorFromProto(*init));
      outs.push_back(std::move(t));
    }
    return outs;
  }

  // The labels of the host nodes, or of the value nodes, for messages and
  // Info().
  std::vector<std::string> NodeLabels(const std::vector<int>& nodes) const {
    std::vector<std::string> labels;
    for (int i : nodes) labels.push_back(onnx_import::NodeLabel(model->proto.graph().node(i)));
    return labels;
  }
  // Where the graph is split, for messages.
  std::string SplitDescription() const {
    std::vector<std::string> parts;
    if (!split.host_nodes.empty())
      parts.push_back(absl::StrCat("runs partly on the host (", absl::StrJoin(NodeLabels(split.host_nodes), ", "), ")"));
    if (!split.value_nodes.empty())
      parts.push_back(absl::StrCat("compiles parts for values computed at run time (",
                                   absl::StrJoin(NodeLabels(split.value_nodes), ", "), ")"));
    return absl::StrJoin(parts, " and ");
  }

  // Options a split graph cannot honour: padding or splitting the batch
  // would reach the host nodes, or the values computed at run time, and
  // change what they are.
  Status CheckSplitOptions() const {
    if (!split.split()) return absl::OkStatus();
    std::string what, why;
    if (!batch_buckets.empty() || !dim_buckets.empty()) {
      what = "batch or dimension buckets";
      why = "padding rows would reach what is computed there and change it";
    } else if (devices.size() > 1) {
      what = "running on all devices";
      why = "each device's share of the batch would reach what is computed there alone and change it";
    } else if (options.io_data_type != DataType::kFloat32) {
      what = absl::StrCat("io_data_type ", DataTypeName(options.io_data_type));
      why = "the values passed between its parts are float32 (data_type still applies)";
    }
    if (what.empty()) return absl::OkStatus();
    return InvalidArgument("%s: %s cannot be used with this model: its graph %s; %s", model->path, what,
                           SplitDescription(), why);
  }

  // Buckets and device splits work on tensors with a batch dimension.
  Status CheckValueOptions() const {
    if (!value_io) return absl::OkStatus();
    if (!batch_buckets.empty() || !dim_buckets.empty() || devices.size() > 1)
      return InvalidArgument("%s: buckets and all devices cannot be used with a model whose inputs or outputs are "
                             "sequences or optionals",
                             model->path);
    if (split.split())
      return Unimplemented("%s: a model with sequence or optional inputs or outputs whose graph %s is not supported",
                           model->path, SplitDescription());
    return absl::OkStatus();
  }

  // RunAsync's workers: started as calls arrive, up to a maximum; more calls
  // wait in the queue instead of each getting a thread. The session's
  // destructor destroys it first, which drains the queue.
  class AsyncWorkers {
   public:
    explicit AsyncWorkers(size_t max_workers) : max_workers_(max_workers) {}
    ~AsyncWorkers() {
      {
        std::lock_guard<std::mutex> l(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      for (auto& t : threads_) t.join();
    }
    void Submit(std::function<void()> task) {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(std::move(task));
      if (idle_ == 0 && threads_.size() < max_workers_) threads_.emplace_back([this] { Work(); });
      cv_.notify_one();
    }

   private:
    void Work() {
      std::unique_lock<std::mutex> l(mu_);
      for (;;) {
        ++idle_;
        cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
        --idle_;
        if (queue_.empty()) return;  // stopping, and nothing left
        std::function<void()> task = std::move(queue_.front());
        queue_.pop_front();
        l.unlock();
        task();
        l.lock();
      }
    }
    const size_t max_workers_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    std::vector<std::thread> threads_;
    size_t idle_ = 0;
    bool stop_ = false;
  };
  std::once_flag workers_once;
  std::unique_ptr<AsyncWorkers> workers;
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() {
  // Queued RunAsync calls finish while the session is whole.
  if (impl_) impl_->workers.reset();
}

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
    ASSIGN_OR_RETURN(impl->split, onnx_import::SplitGraph(*impl->model));
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
  for (DataType t : {options.data_type, options.io_data_type})
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return InvalidArgument("%s: data types must be float32, float16 or bfloat16, not %s", model_path, DataTypeName(t));
  // The host sees float32 inputs and outputs in the io type.
  for (auto* specs : {&impl->inputs, &impl->outputs})
    for (auto& s : *specs)
      if (s.dtype == DataType::kFloat32) s.dtype = options.io_data_type;
  ASSIGN_OR_RETURN(impl->client, GetClient(options));
  if (options.device == SessionOptions::kAllDevices) {
    for (const auto& d : impl->client->devices()) impl->devices.push_back(&d);
    if (impl->devices.empty()) return absl::NotFoundError(absl::StrCat(impl->client->plugin()->path(), ": the plugin has no addressable devices"));
  } else {
    ASSIGN_OR_RETURN(const pjrt::Device* d, impl->client->device(options.device));
    impl->devices.push_back(d);
  }
  for (const pjrt::Device* d : impl->devices) impl->compile_options.push_back(pjrt::CompileOptionsFor(*d));
  RETURN_IF_ERROR(impl->SetUpBuckets());
  RETURN_IF_ERROR(impl->CheckSplitOptions());
  for (const auto* specs : {&impl->inputs, &impl->outputs})
    for (const auto& s : *specs) impl->value_io |= s.sequence || s.optional;
  RETURN_IF_ERROR(impl->CheckValueOptions());
  impl->SetUpCache();
  RETURN_IF_ERROR(impl->CompileBuckets());
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
  if (impl_->split.split()) {
    std::lock_guard<std::mutex> l(impl_->stages_mu);
    std::vector<std::string> parts;
    for (const auto& [k, stage] : impl_->stages) {
      std::lock_guard<std::mutex> sl(stage->mu);
      parts.push_back(absl::StrCat("part ", k, ": ", stage->last_summary));
    }
    return absl::StrCat(impl_->split.host_nodes.size(), " host node(s), ", parts.size(), " device program(s) compiled",
                        parts.empty() ? "" : "; ", absl::StrJoin(parts, "; "));
  }
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->last_summary;
}

std::string Session::DevicesText() const {
  std::vector<std::string> names;
  for (const pjrt::Device* d : impl_->devices)
    names.push_back(d->description.empty() ? absl::StrCat("id ", d->id) : d->description);
  return absl::StrCat(names.size() > 1 ? "devices " : "device ", absl::StrJoin(names, ", "));
}

std::string Session::DeviceSummary() const {
  const auto& c = impl_->client;
  return absl::StrFormat("%s (PjRT %d.%d), platform %s [%s], %s", c->plugin()->path(),
                         c->plugin()->major_version(), c->plugin()->minor_version(), c->platform_name(),
                         c->platform_version(), DevicesText());
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
  info.host_nodes = impl_->NodeLabels(impl_->split.host_nodes);
  info.value_nodes = impl_->NodeLabels(impl_->split.value_nodes);
  if (impl_->split.split()) {
    info.device_programs = 0;
    for (const auto& s : impl_->split.segments) info.device_programs += !s.on_host;
  }
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
  const Impl* source = impl_.get();
  if (impl_->split.split()) {
    // Only the program before the first split has shapes known now.
    const auto& first = impl_->split.segments[0];
    const auto& second = impl_->split.segments[first.on_host ? 0 : 1];
    const onnx::NodeProto& next = impl_->model->proto.graph().node(second.nodes[0]);
    if (first.on_host)
      return Unimplemented("%s: the graph starts on the host (node %s): its programs are compiled when it runs",
                           impl_->model->path, onnx_import::NodeLabel(next));
    std::map<std::string, DataType> types;
    for (const auto& s : impl_->inputs) types[s.name] = s.dtype;
    ASSIGN_OR_RETURN(source, impl_->Stage(0, types));
    for (auto it = all.begin(); it != all.end();)
      it = std::find(first.inputs.begin(), first.inputs.end(), it->first) == first.inputs.end() ? all.erase(it) : std::next(it);
    dump.partial_error = absl::StrCat("node ", onnx_import::NodeLabel(next),
                                      second.on_host ? " runs on the host" : " needs a value computed at run time",
                                      "; this is the program before it (the later ones are compiled "
                                      "for the shapes and values met when the model runs)");
  }
  ASSIGN_OR_RETURN(onnx_import::ImportedModule imported, source->BuildModule(all, {}, allow_partial, optimized));
  if (dump.partial_error.empty()) dump.partial_error = imported.partial_error;
  const hlo::Module* m = imported.module.get();
  hlo::PrintOptions po;
  po.max_constant_elements = 16;
  dump.text = hlo::ToText(*m, po);
  dump.proto = hlo::SerializeModule(*m);
  return dump;
}

Status Session::CheckInputs(const std::map<std::string, Tensor>& inputs) const {
  const std::string& file = impl_->model->path;
  RETURN_IF_ERROR(impl_->CheckInputNames(inputs));
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
  Impl& m = *impl_;
  if (m.value_io) {
    for (const auto* specs : {&m.inputs, &m.outputs})
      for (const auto& s : *specs)
        if (s.sequence || s.optional)
          return InvalidArgument("%s: '%s' is a%s; run this model with Session::RunValues", m.model->path, s.name,
                                 s.optional ? "n optional" : " sequence");
  }
  RETURN_IF_ERROR(CheckInputs(inputs));
  if (m.split.split()) return m.RunSplit(inputs);
  // The batch: dimension 0 of the inputs declaring it dynamic.
  int64_t rows = -1;
  for (const auto& s : m.inputs) {
    if (!m.IsBatched(s)) continue;
    int64_t r = inputs.at(s.name).dims()[0];
    if (rows >= 0 && r != rows)
      return InvalidArgument("%s: input '%s' has batch %d, another input has %d", m.model->path, s.name, r, rows);
    rows = r;
  }
  if (rows <= 0) return m.RunRows(inputs, 0, std::max<int64_t>(rows, 0), std::max<int64_t>(rows, 0), 0);
  // Contiguous shares of the batch per device, each cut into runs no larger
  // than the largest bucket.
  int64_t devices = std::min<int64_t>(m.devices.size(), rows);
  int64_t share = (rows + devices - 1) / devices;
  int64_t cap = m.batch_buckets.empty() ? rows : m.batch_buckets.back();
  struct Part {
    int64_t begin, rows;
  };
  std::vector<std::vector<Part>> per_device(devices);
  for (int64_t d = 0, begin = 0; d < devices && begin < rows; ++d) {
    int64_t end = std::min(rows, begin + share);
    for (int64_t b = begin; b < end; b += cap) per_device[d].push_back({b, std::min(cap, end - b)});
    begin = end;
  }
  auto run_device = [&](int d) -> StatusOr<std::vector<std::vector<Tensor>>> {
    std::vector<std::vector<Tensor>> outs;
    for (const Part& p : per_device[d]) {
      ASSIGN_OR_RETURN(std::vector<Tensor> o, m.RunRows(inputs, p.begin, p.rows, rows, d));
      outs.push_back(std::move(o));
    }
    return outs;
  };
  std::vector<std::future<StatusOr<std::vector<std::vector<Tensor>>>>> others;
  for (int d = 1; d < devices; ++d) others.push_back(std::async(std::launch::async, run_device, d));
  std::vector<StatusOr<std::vector<std::vector<Tensor>>>> results;
  results.push_back(run_device(0));
  for (auto& f : others) results.push_back(f.get());
  std::vector<std::vector<Tensor>> parts;  // per run, in batch order
  std::vector<int64_t> part_rows;
  for (int d = 0; d < devices; ++d) {
    if (!results[d].ok()) return results[d].status();
    for (size_t k = 0; k < results[d]->size(); ++k) {
      parts.push_back(std::move((*results[d])[k]));
      part_rows.push_back(per_device[d][k].rows);
    }
  }
  if (parts.size() == 1) return std::move(parts[0]);
  std::vector<Tensor> outs;
  for (size_t k = 0; k < parts[0].size(); ++k) {
    std::vector<Tensor> pieces;
    for (size_t p = 0; p < parts.size(); ++p) {
      if (!m.BatchedOutput(k, parts[p][k], part_rows[p]))
        return InvalidArgument("%s: output '%s' has no batch dimension, so a batch of %d cannot be split into runs "
                               "(largest bucket %d, %d devices); use a larger bucket",
                               m.model->path, k < m.outputs.size() ? m.outputs[k].name : "?", rows, cap, devices);
      pieces.push_back(std::move(parts[p][k]));
    }
    ASSIGN_OR_RETURN(Tensor joined, ConcatRows(pieces));
    outs.push_back(std::move(joined));
  }
  return outs;
}

StatusOr<std::vector<Value>> Session::RunValues(const std::map<std::string, Value>& inputs) {
  Impl& m = *impl_;
  const std::string& file = m.model->path;
  if (!m.value_io) {
    std::map<std::string, Tensor> tensors;
    for (const auto& [name, v] : inputs) {
      if (v.kind != Value::Kind::kTensor)
        return InvalidArgument("%s: input '%s' is given as a %s, the model takes a tensor", file, name,
                               v.kind == Value::Kind::kNone ? "empty optional" : "sequence");
      tensors[name] = v.tensor;
    }
    ASSIGN_OR_RETURN(std::vector<Tensor> outs, Run(tensors));
    std::vector<Value> values;
    for (auto& t : outs) values.push_back(Value::Of(std::move(t)));
    return values;
  }
  RETURN_IF_ERROR(m.CheckInputNames(inputs));
  InputStructure structure;
  std::map<std::string, Tensor> flat;
  auto check_type = [&](const TensorSpec& s, const Tensor& t, const std::string& what) -> Status {
    if (t.dtype() != s.dtype)
      return InvalidArgument("%s: %s has type %s, the model expects %s", file, what, DataTypeName(t.dtype()),
                             DataTypeName(s.dtype));
    if (!s.dims.empty() && t.dims().size() != s.dims.size())
      return InvalidArgument("%s: %s has rank %d, the model expects %d", file, what, t.dims().size(), s.dims.size());
    return absl::OkStatus();
  };
  for (const auto& s : m.inputs) {
    auto it = inputs.find(s.name);
    if (it == inputs.end() || it->second.kind == Value::Kind::kNone) {
      if (!s.optional)
        return InvalidArgument("%s: input '%s' is %s, but it is not optional", file, s.name,
                               it == inputs.end() ? "missing from the call" : "empty");
      structure.absent.insert(s.name);
      continue;
    }
    const Value& v = it->second;
    if (s.sequence != (v.kind == Value::Kind::kSequence))
      return InvalidArgument("%s: input '%s' must be a %s", file, s.name, s.sequence ? "sequence" : "tensor");
    if (!s.sequence) {
      RETURN_IF_ERROR(check_type(s, v.tensor, absl::StrCat("input '", s.name, "'")));
      flat[s.name] = v.tensor;
      continue;
    }
    structure.lengths[s.name] = v.elements.size();
    for (size_t i = 0; i < v.elements.size(); ++i) {
      std::string name = onnx_import::SequenceElementName(s.name, i);
      RETURN_IF_ERROR(check_type(s, v.elements[i], absl::StrCat("input '", s.name, "' element ", i)));
      flat[name] = v.elements[i];
    }
  }
  std::vector<int> counts;
  ASSIGN_OR_RETURN(std::vector<Tensor> outs, m.RunExact(flat, 0, &structure, &counts));
  std::vector<Value> values;
  size_t k = 0;
  for (int c : counts) {
    if (c == onnx_import::ImportedModule::kNoneOutput) {
      values.push_back(Value::None());
    } else if (c == onnx_import::ImportedModule::kTensorOutput) {
      values.push_back(Value::Of(std::move(outs.at(k++))));
    } else {
      std::vector<Tensor> elements;
      for (int i = 0; i < c; ++i) elements.push_back(std::move(outs.at(k++)));
      values.push_back(Value::Sequence(std::move(elements)));
    }
  }
  return values;
}

std::future<StatusOr<std::vector<Tensor>>> Session::RunAsync(std::map<std::string, Tensor> inputs) {
  // Two calls per device keep one call's transfers beside another's compute.
  std::call_once(impl_->workers_once, [&] {
    impl_->workers = std::make_unique<Impl::AsyncWorkers>(std::max<size_t>(4, 2 * impl_->devices.size()));
  });
  auto done = std::make_shared<std::promise<StatusOr<std::vector<Tensor>>>>();
  std::future<StatusOr<std::vector<Tensor>>> result = done->get_future();
  impl_->workers->Submit([this, done, in = std::move(inputs)] { done->set_value(Run(in)); });
  return result;
}

const std::vector<int64_t>& Session::batch_buckets() const { return impl_->batch_buckets; }
int Session::num_devices() const { return impl_->devices.size(); }
std::string Session::cache_dir() const { return impl_->disk_cache ? impl_->disk_cache->dir() : ""; }
CompileStats Session::compile_stats() const {
  CompileStats total;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    total = impl_->stats;
  }
  // A split graph's programs belong to its segments.
  std::lock_guard<std::mutex> l(impl_->stages_mu);
  for (const auto& [k, stage] : impl_->stages) {
    std::lock_guard<std::mutex> sl(stage->mu);
    total.compiled += stage->stats.compiled;
    total.from_cache += stage->stats.from_cache;
    total.cache_rejected += stage->stats.cache_rejected;
    for (const auto& msg : stage->stats.cache_messages) total.cache_messages.push_back(msg);
  }
  return total;
}

}  // namespace xonnx
