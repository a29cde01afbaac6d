#include "runtime/model_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/fingerprint.h"
#include "base/logging.h"
#include "base/monotonic_clock.h"
#include "base/status.h"
#include "hlo/proto_codec.h"
#include "hlo/stablehlo.h"
#include "onnx/tensor_proto.h"
#include "runtime/clients.h"
#include "runtime/dtype.h"
#include "runtime/xonnx_flags.h"

#ifndef XONNX_VERSION
#define XONNX_VERSION "0.0.0"
#endif

namespace xonnx {

std::string ShapeKey(const ShapeMap& shapes) {
  std::string k;
  for (const auto& [name, dims] : shapes) absl::StrAppend(&k, name, ":", absl::StrJoin(dims, "x"), ";");
  return k;
}

std::string InputStructure::Key() const {
  std::string k;
  for (const auto& [n, l] : lengths) absl::StrAppend(&k, "|", n, "#", l);
  for (const auto& n : absent) absl::StrAppend(&k, "|", n, "#none");
  return k;
}

ModelRunner::ModelRunner(std::shared_ptr<onnx_import::LoadedModel> model, const SessionOptions& options,
                         std::shared_ptr<pjrt::Client> client, std::vector<const pjrt::Device*> devices,
                         size_t num_outputs)
    : model_(std::move(model)),
      options_(options),
      client_(std::move(client)),
      devices_(std::move(devices)),
      num_outputs_(num_outputs),
      weights_(model_, options.data_type, client_, devices_),
      programs_(client_) {
  for (const pjrt::Device* d : devices_) compile_options_.push_back(pjrt::CompileOptionsFor(*d));
  // Without a plugin (SessionOptions::kNoPlugin), HLO is converted as for
  // xonnx's own.
  xla_plugin_ = client_ != nullptr;
  if (client_) {
    PluginTraits traits = TraitsOf(*client_->plugin());
    xla_plugin_ = traits.xla;
    mlir_only_ = traits.mlir_only;
  }
  using Staging = SessionOptions::IoStaging;
  if (options_.io_staging == Staging::kMapped || (options_.io_staging == Staging::kAuto && xla_plugin_))
    staging_ = StagingFor(client_);
  spin_wait_us_ = options_.spin_wait_us;
  if (spin_wait_us_ == SessionOptions::kAutoSpin) spin_wait_us_ = xla_plugin_ ? SessionOptions::kGpuSpinUs : 0;
}

std::unique_ptr<ModelRunner> ModelRunner::ForSegment(std::shared_ptr<onnx_import::LoadedModel> segment,
                                                     size_t num_outputs) const {
  auto child = std::make_unique<ModelRunner>(std::move(segment), options_, client_, devices_, num_outputs);
  child->programs_.SharePersistent(programs_);
  child->staging_ = staging_;
  child->spin_wait_us_ = spin_wait_us_;
  child->mlir_only_ = mlir_only_;
  child->hlo_refused_ = hlo_refused_.load();
  child->trace_ = trace_;
  return child;
}

absl::StatusOr<onnx_import::ImportedModule> ModelRunner::BuildModule(
    const ShapeMap& shapes, const std::map<std::string, hlo::Literal>& bound, bool allow_partial, bool optimized,
    const std::map<std::string, onnx_import::StringTensor>& strings, const std::set<std::string>* constant_weights,
    const InputStructure* structure, const CallBounds* bounds) const {
  onnx_import::ImportOptions io;
  if (bounds && bounds->bounded()) io.stop = [bounds, file = path()] { return bounds->Check(file); };
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
  io.optimize = optimized;
  io.verify_passes = options_.verify_passes;
  io.dump = ToDumpSettings(options_.dump);
  io.compute_type = ToHlo(options_.data_type);
  io.io_type = ToHlo(options_.io_data_type);
  io.exact_f32_products = !options_.allow_tf32;
  io.xla_compatible = xla_plugin_;
  io.check_indices = options_.check_indices;
  return onnx_import::Import(*model_, io);
}

ModelRunner::Bindings ModelRunner::CurrentBindings() const {
  std::lock_guard<std::mutex> l(bindings_mu_);
  return bindings_;
}

bool ModelRunner::BindValuesFor(const absl::Status& import_error, const std::map<std::string, Tensor>& values) {
  auto needs = import_error.GetPayload(onnx_import::kNeedsInputValuesPayload);
  if (!needs) return false;
  bool added = false;
  std::lock_guard<std::mutex> l(bindings_mu_);
  for (absl::string_view part : absl::StrSplit(std::string(*needs), ',')) {
    std::string name(part);
    if (values.count(name)) {
      added |= bindings_.inputs.insert(name).second;
    } else if (onnx_import::FindInitializer(model_->proto.graph(), name)) {
      added |= bindings_.weights.insert(name).second;
    } else {
      return false;
    }
  }
  return added;
}

std::string ModelRunner::DescriptionKey(const std::string& key, const Bindings& bindings, int dev) const {
  Fingerprinter f;
  f.UpdateField(model_->content_fingerprint);
  f.UpdateField(key);
  f.UpdateField(absl::StrJoin(bindings.weights, "\n"));
  f.UpdateField(absl::StrCat(options_.upload_weights, options_.optimize, DataTypeName(options_.data_type),
                             DataTypeName(options_.io_data_type), options_.allow_tf32, options_.check_indices,
                             XONNX_VERSION));
  f.UpdateField(compile_options_[dev]);
  f.UpdateField(programs_.plugin_identity());
  f.UpdateField(ConverterIdentity());
  return absl::StrCat("program ", f.Finish().Hex());
}

// Converting may find that a shape-like value (a Reshape's shape, a
// TopK's k, a Range's limits) depends on inputs or weights: the importer
// names them, they are bound as constants, and the lookup starts again
// under the key the bound values make. Each round binds at least one more
// of the model's inputs and initializers, so there are at most that many
// rounds; a round that binds nothing returns the importer's error, which
// names the node.
absl::StatusOr<ModelRunner::Prepared> ModelRunner::Prepare(const ShapeMap& shapes,
                                                           const std::map<std::string, Tensor>* values, int dev,
                                                           bool eager, const InputStructure* structure,
                                                           const CallBounds* bounds) {
  if (!unsupported_.empty()) return absl::UnimplementedError(unsupported_);
  static const std::map<std::string, Tensor> kNoValues;
  if (!values) values = &kNoValues;
  const int max_rounds = model_->proto.graph().input_size() + model_->proto.graph().initializer_size() + 1;
  absl::Status last;  // the conversion error that asked for the last binding
  for (int round = 0; round < max_rounds; ++round) {
    Bindings bindings = CurrentBindings();
    std::string key = absl::StrCat(dev, "@", ShapeKey(shapes), structure ? structure->Key() : "", alias_key_);
    // String inputs never reach the program: their values are compiled in.
    std::map<std::string, onnx_import::StringTensor> strings;
    for (const auto& [name, t] : *values) {
      if (t.dtype() != DataType::kString) continue;
      strings[name] = {t.dims(), t.strings()};
      absl::StrAppend(&key, "|", name, "=");
      for (const auto& v : t.strings()) absl::StrAppend(&key, v.size(), ":", v);
    }
    if (eager && (!bindings.inputs.empty() || !strings.empty()))
      return absl::FailedPreconditionError("the program depends on input values");
    std::map<std::string, hlo::Literal> bound;
    for (const std::string& name : bindings.inputs) {
      auto given = values->find(name);
      if (given == values->end()) return Internal("%s: input '%s' needs its value at compile time", path(), name);
      const Tensor& t = given->second;
      absl::StrAppend(&key, "|", name, "=", absl::string_view(static_cast<const char*>(t.data()), t.byte_size()));
      bound.emplace(name, LiteralOf(t));
    }
    if (std::shared_ptr<const Program> p = programs_.Find(key)) return Prepared{key, {}, std::move(p)};
    auto start = std::chrono::steady_clock::now();
    // A program that depends only on shapes is described in the persistent
    // cache under the model's fingerprint and the shapes, so a later
    // process need not convert the model at all.
    std::string description_key;
    if (programs_.persistent() && bound.empty() && strings.empty()) {
      description_key = DescriptionKey(key, bindings, dev);
      auto prog = programs_.LoadDescribed(description_key, compile_options_[dev], num_outputs_);
      if (prog.ok()) {
        TraceProgram("load program", start, shapes);
        programs_.NoteProgram(/*from_cache=*/true, MsSince(start),
                              absl::StrFormat("%d inputs + %d weights -> %d outputs, loaded from the compile cache",
                                              prog->params.size(), prog->weight_names.size(), prog->computed.size()));
        return Prepared{key, *std::move(prog), nullptr};
      }
      if (!absl::IsNotFound(prog.status())) programs_.NoteProblem(prog.status());
    }
    auto prepared = Convert(key, shapes, bound, strings, bindings, description_key, dev, structure, start, bounds);
    if (prepared.ok() || !BindValuesFor(prepared.status(), *values)) return prepared;
    last = prepared.status();
  }
  // The last conversion error names the node that still wanted a value.
  return Internal(
      "%s: binding the input values that decide shapes did not end after %d rounds (bound: %s); the "
      "last conversion said: %s",
      path(), max_rounds, absl::StrJoin(CurrentBindings().inputs, ", "), last.message());
}

absl::StatusOr<ModelRunner::Prepared> ModelRunner::Convert(
    const std::string& key, const ShapeMap& shapes, const std::map<std::string, hlo::Literal>& bound,
    const std::map<std::string, onnx_import::StringTensor>& strings, const Bindings& bindings,
    const std::string& description_key, int dev, const InputStructure* structure,
    std::chrono::steady_clock::time_point start, const CallBounds* bounds) {
  ASSIGN_OR_RETURN(onnx_import::ImportedModule imported,
                   BuildModule(shapes, bound, false, options_.optimize, strings,
                               options_.upload_weights ? &bindings.weights : nullptr, structure, bounds));
  Program prog;
  for (const auto& in : imported.inputs) prog.params.push_back(in.name);
  prog.weight_names = imported.weights;
  int next = 0;
  prog.output_counts = imported.output_counts;
  bool describable = std::all_of(prog.output_counts.begin(), prog.output_counts.end(),
                                 [](int c) { return c == onnx_import::ImportedModule::kTensorOutput; });
  for (const auto& out : imported.outputs) {
    describable &= out.name.find('\n') == std::string::npos;
    if (out.is_string) {
      describable = false;
      const auto& sv = imported.string_outputs.at(out.name);
      prog.output_index.push_back(-1);
      prog.string_outputs.push_back(Tensor::FromStrings(sv.dims, sv.values));
    } else {
      prog.output_index.push_back(next++);
      prog.string_outputs.emplace_back();
      prog.computed.push_back(out);
    }
  }
  if (!imported.checks.empty()) {
    // The module's last output: each check's smallest and largest index.
    prog.checks = imported.checks;
    prog.computed.push_back({"xonnx.index_checks", hlo::S64, {2 * static_cast<int64_t>(imported.checks.size())}, {}});
    for (const auto& c : prog.checks) describable &= c.what.find('\n') == std::string::npos;
  }
  for (const auto& n : prog.params) describable &= n.find('\n') == std::string::npos;
  SetAliases(prog, *imported.module);
  for (const auto& n : prog.weight_names) describable &= n.find('\n') == std::string::npos;
  std::string bytes, exe_key;
  bool loaded = false;
  ASSIGN_OR_RETURN(prog.exe, CompileProgram(*imported.module, dev, &bytes, &exe_key, &loaded));
  if (loaded) prog.cache_keys.push_back(exe_key);
  if (prog.exe->num_outputs() != prog.computed.size())
    return Internal("%s: the plugin reports %d outputs, the program has %d", path(), prog.exe->num_outputs(),
                    prog.computed.size());
  if (!description_key.empty() && describable) programs_.StoreDescription(description_key, exe_key, prog);
  auto fp = prog.exe->Fingerprint();
  TraceProgram(loaded ? "load program" : "compile", start, shapes);
  programs_.NoteProgram(loaded, MsSince(start),
                        absl::StrFormat("%d inputs + %d weights -> %d outputs, %d KiB program%s", prog.params.size(),
                                        prog.weight_names.size(), prog.computed.size(), bytes.size() / 1024,
                                        fp.ok() && !fp->empty() ? absl::StrCat(", fingerprint ", *fp) : ""));
  return Prepared{key, std::move(prog), nullptr};
}

void ModelRunner::set_aliases(std::map<std::string, std::string> input_to_output) {
  aliases_ = std::move(input_to_output);
  alias_key_.clear();
  for (const auto& [in, out] : aliases_) absl::StrAppend(&alias_key_, "|alias ", in, "->", out);
}

void ModelRunner::SetAliases(const Program& prog, hlo::Module& module) const {
  std::vector<hlo::Module::Alias> list;
  const hlo::Computation& entry = *module.entry();
  const hlo::Shape& result = entry.root()->shape();
  for (const auto& [in, out] : aliases_) {
    auto p = std::find(prog.params.begin(), prog.params.end(), in);
    int64_t o = -1;
    for (size_t k = 0; k < prog.computed.size(); ++k)
      if (prog.computed[k].name == out) o = static_cast<int64_t>(k);
    if (p == prog.params.end() || o < 0) continue;
    const int64_t param = p - prog.params.begin();
    const hlo::Shape& shape = result.IsTuple() ? result.tuple_shapes[o] : result;
    if (param < entry.num_parameters() && shape == entry.parameter(param)->shape()) list.push_back({o, param});
  }
  module.set_aliases(std::move(list));
}

absl::StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> ModelRunner::CompileProgram(const hlo::Module& module, int dev,
                                                                                    std::string* bytes,
                                                                                    std::string* exe_key,
                                                                                    bool* loaded) {
  using Format = SessionOptions::ProgramFormat;
  auto compile = [&](bool stablehlo) -> absl::StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> {
    if (stablehlo) {
      ASSIGN_OR_RETURN(*bytes, hlo::ToStableHlo(module));
    } else {
      *bytes = hlo::SerializeModule(module);
    }
    return programs_.CompileOrLoad(*bytes, compile_options_[dev], path(), exe_key, loaded, stablehlo ? "mlir" : "hlo");
  };
  if (options_.program_format != Format::kAuto) return compile(options_.program_format == Format::kStableHlo);
  if (mlir_only_ || hlo_refused_) return compile(true);
  // kAuto: HLO, then StableHLO when the plugin refuses HLO as a format (and
  // from then on, without asking again).
  auto exe = compile(false);
  if (exe.ok() || !(absl::IsInvalidArgument(exe.status()) || absl::IsUnimplemented(exe.status())) ||
      !absl::StrContains(absl::AsciiStrToLower(exe.status().message()), "format"))
    return exe;
  LOG(WARNING) << path() << ": the plugin refused the program as HLO (" << exe.status().message()
               << "); sending StableHLO";
  hlo_refused_ = true;
  return compile(true);
}

absl::StatusOr<std::shared_ptr<const Program>> ModelRunner::Get(const std::map<std::string, Tensor>& values, int dev,
                                                                const InputStructure* structure,
                                                                const CallBounds* bounds) {
  ShapeMap shapes;
  for (const auto& [name, t] : values) shapes[name] = t.dims();
  std::shared_ptr<std::mutex> lock =
      ShapeLock(absl::StrCat(dev, "@", ShapeKey(shapes), structure ? structure->Key() : ""));
  std::lock_guard<std::mutex> l(*lock);
  ASSIGN_OR_RETURN(Prepared p, Prepare(shapes, &values, dev, /*eager=*/false, structure, bounds));
  return Complete(std::move(p), dev);
}

std::shared_ptr<std::mutex> ModelRunner::ShapeLock(const std::string& key) {
  std::lock_guard<std::mutex> l(shape_locks_mu_);
  auto& slot = shape_locks_[key];
  if (!slot) slot = std::make_shared<std::mutex>();
  return slot;
}

absl::StatusOr<std::shared_ptr<const Program>> ModelRunner::Complete(Prepared p, int dev) {
  if (p.kept) return std::move(p.kept);
  for (const auto& w : p.program.weight_names) {
    ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Buffer> b, weights_.Get(w, dev));
    p.program.weights.push_back(std::move(b));
  }
  return programs_.Keep(p.key, std::move(p.program));
}

void ModelRunner::TraceProgram(const char* what, std::chrono::steady_clock::time_point start,
                               const ShapeMap& shapes) const {
  if (!trace_) return;
  int64_t end = MonotonicNs();
  trace_->Slice(what, "compile", end - static_cast<int64_t>(MsSince(start) * 1e6), end, TraceRecorder::ThreadId(),
                {{"shapes", ShapeKey(shapes)}});
}

}  // namespace xonnx
