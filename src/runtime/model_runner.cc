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

namespace {

// When the steps of one call were done, from the plugin's events: each
// slot holds the steady clock's reading (ns) when the last event of its
// kind became ready, 0 until then.
struct CallTimeline : std::enable_shared_from_this<CallTimeline> {
  int64_t start = Now();
  std::atomic<int64_t> uploaded{0}, executed{0}, downloaded{0};

  static int64_t Now() { return MonotonicNs(); }
  // Marks `slot` when `event` is ready (from the plugin's thread; the
  // callback keeps the timeline alive). A plugin without callbacks leaves
  // the slot unmarked.
  void Note(pjrt::Event& event, std::atomic<int64_t> CallTimeline::*slot) {
    (void)event.OnReady([self = shared_from_this(), slot] {
      std::atomic<int64_t>& s = self.get()->*slot;
      int64_t now = Now(), seen = s.load();
      while (seen < now && !s.compare_exchange_weak(seen, now)) {
      }
    });
  }
  // The call and its phases as slices of `trace`, once every event was
  // waited for.
  void TraceTo(TraceRecorder& trace, const std::string& program) const {
    int64_t end = std::max(Now(), downloaded.load()), tid = TraceRecorder::ThreadId();
    int64_t up = std::max(start, uploaded.load()), ex = std::max(up, executed.load() ? executed.load() : end);
    int64_t down = std::max(ex, downloaded.load() ? downloaded.load() : end);
    trace.Slice("call", "call", start, end, tid, {{"program", program}});
    trace.Slice("upload", "phase", start, up, tid);
    trace.Slice("execute", "phase", up, ex, tid);
    trace.Slice("download", "phase", ex, down, tid);
  }
  // Adds this call's phases to `total`, once every event was waited for.
  // An unmarked slot counts its phase's time in the one after it.
  void AddTo(std::mutex& mu, RunPhases& total) const {
    int64_t down = downloaded.load(), ex = executed.load();
    if (!down) down = Now();
    if (!ex) ex = down;
    int64_t up = std::max(start, uploaded.load());
    ex = std::max(ex, up);
    down = std::max(down, ex);
    std::lock_guard<std::mutex> lock(mu);
    total.calls++;
    total.upload_ms += (up - start) * 1e-6;
    total.execute_ms += (ex - up) * 1e-6;
    total.download_ms += (down - ex) * 1e-6;
  }
};

// A call its bounds stopped (CANCELLED or DEADLINE_EXCEEDED from the
// plugin while they hold): the call's own message, and where the plugin
// stopped it (its message less the reason, which the call's repeats). OK
// for any other outcome.
absl::Status StoppedByBounds(const absl::Status& run, const CallBounds& bounds, const std::string& file) {
  if (!absl::IsCancelled(run) && !absl::IsDeadlineExceeded(run)) return absl::OkStatus();
  absl::Status b = bounds.Check(file);
  if (b.ok()) return b;
  absl::string_view where = run.message();
  where = where.substr(0, std::min(where.size(), where.rfind(": ")));
  return absl::Status(b.code(), absl::StrCat(b.message(), " (stopped at ", where, ")"));
}

std::string ShapeKey(const ShapeMap& shapes) {
  std::string k;
  for (const auto& [name, dims] : shapes) absl::StrAppend(&k, name, ":", absl::StrJoin(dims, "x"), ";");
  return k;
}

}  // namespace

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
    std::string key = absl::StrCat(dev, "@", ShapeKey(shapes), structure ? structure->Key() : "");
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
    if (std::optional<Program> p = programs_.Find(key)) return Prepared{key, *std::move(p), true};
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
        return Prepared{key, *std::move(prog), false};
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
  return Prepared{key, std::move(prog), false};
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

absl::StatusOr<Program> ModelRunner::Get(const std::map<std::string, Tensor>& values, int dev,
                                         const InputStructure* structure, const CallBounds* bounds) {
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

absl::StatusOr<Program> ModelRunner::Complete(Prepared p, int dev) {
  if (p.complete) return std::move(p.program);
  for (const auto& w : p.program.weight_names) {
    ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Buffer> b, weights_.Get(w, dev));
    p.program.weights.push_back(std::move(b));
  }
  return programs_.Keep(p.key, std::move(p.program));
}

namespace {

// The public types of a program's computed outputs.
absl::StatusOr<std::vector<DataType>> OutputTypes(const Program& prog) {
  std::vector<DataType> types;
  for (const auto& info : prog.computed) {
    ASSIGN_OR_RETURN(DataType t, FromHlo(info.type));
    types.push_back(t);
  }
  return types;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> ModelRunner::RunExact(const std::map<std::string, Tensor>& inputs, int dev,
                                                          const InputStructure* structure, std::vector<int>* counts,
                                                          const CallBounds* bounds) {
  const std::string& file = path();
  // One call is put to the plugin whole (uploads, the run, the copies back)
  // and waited for once at the end: the plugin orders the steps on the
  // device, and each wait in between would cost a round trip through the
  // host while the device idles.
  for (int attempt = 0;; ++attempt) {
    auto timeline = std::make_shared<CallTimeline>();
    // Waits poll until this deadline, then sleep (SessionOptions::spin_wait_us).
    auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_wait_us_);
    auto spin_left = [&] {
      auto left = std::chrono::duration_cast<std::chrono::microseconds>(spin_until - std::chrono::steady_clock::now());
      return static_cast<int>(std::max<int64_t>(0, left.count()));
    };
    // Leased staging blocks outlive every wait below (declared first, gone last).
    std::vector<MappedStaging::Lease> leases;
    ASSIGN_OR_RETURN(Program prog, Get(inputs, dev, structure, bounds));
    if (bounds) RETURN_IF_ERROR(bounds->Check(file));
    ASSIGN_OR_RETURN(std::vector<DataType> output_types, OutputTypes(prog));
    std::vector<std::unique_ptr<pjrt::Buffer>> uploaded;  // kept until the run is over
    std::vector<pjrt::Event> released;                    // the inputs' host memory, let go of
    // Every started step is waited for before returning, whatever fails:
    // the plugin may still be reading the caller's inputs.
    auto finish_uploads = [&](absl::Status st) {
      for (auto& e : released) st.Update(e.Await(spin_left()));
      return st;
    };
    std::vector<pjrt::Buffer*> args;
    for (const std::string& name : prog.params) {
      const Tensor& t = inputs.at(name);
      auto type = ToPjrt(t.dtype());
      if (!type.ok()) return finish_uploads(Annotate(type.status(), absl::StrCat(file, ": input '", name, "'")));
      const void* src = t.data();
      if (auto lease = Stage(t.byte_size())) {
        std::memcpy(lease.data(), src, t.byte_size());
        src = lease.data();
        leases.push_back(std::move(lease));
      } else if (!xla_plugin_) {  // read in place: see RunExact in model_runner.h
        auto in_place = client_->BufferFromHostZeroCopy(src, *type, t.dims(), *devices_[dev], nullptr);
        if (!in_place.ok())
          return finish_uploads(Annotate(in_place.status(), absl::StrCat(file, ": input '", name, "'")));
        args.push_back(in_place->get());
        uploaded.push_back(*std::move(in_place));
        continue;
      }
      auto up = client_->StartBufferFromHost(src, *type, t.dims(), *devices_[dev]);
      if (!up.ok()) return finish_uploads(Annotate(up.status(), absl::StrCat(file, ": input '", name, "'")));
      timeline->Note(up->host_released, &CallTimeline::uploaded);
      args.push_back(up->buffer.get());
      uploaded.push_back(std::move(up->buffer));
      released.push_back(std::move(up->host_released));
    }
    for (const auto& w : prog.weights) args.push_back(w.get());
    auto launch = Launch(prog, args, bounds);
    std::vector<Tensor> computed;
    std::vector<pjrt::Event> copies;
    std::vector<void*> staged_out;  // per output: its leased block, or null
    absl::Status run, copy_status;
    if (launch.ok()) {
      timeline->Note(launch->done, &CallTimeline::executed);
      for (size_t k = 0; k < prog.computed.size(); ++k) {
        const auto& info = prog.computed[k];
        computed.push_back(Tensor::ForOverwrite(output_types[k], info.dims));
        void* dst = computed.back().data();
        staged_out.push_back(nullptr);
        if (auto lease = Stage(computed.back().byte_size())) {
          dst = staged_out.back() = lease.data();
          leases.push_back(std::move(lease));
        }
        auto copy = launch->outputs[k]->StartToHost(dst, computed.back().byte_size());
        if (!copy.ok()) {
          copy_status = Annotate(copy.status(), absl::StrCat(file, ": output '", info.name, "'"));
          break;
        }
        timeline->Note(*copy, &CallTimeline::downloaded);
        copies.push_back(*std::move(copy));
      }
      // A failed run fails its copies too: its own error is the one to report.
      run = launch->done.Await(spin_left());
      for (size_t k = 0; k < copies.size(); ++k)
        if (absl::Status st = copies[k].Await(spin_left()); !st.ok() && copy_status.ok())
          copy_status = Annotate(st, absl::StrCat(file, ": output '", prog.computed[k].name, "'"));
    } else {
      run = launch.status();
    }
    run = finish_uploads(run);
    if (bounds)
      if (absl::Status stopped = StoppedByBounds(run, *bounds, file); !stopped.ok()) return stopped;
    if (!run.ok()) {
      if (absl::IsDataLoss(run) && !prog.cache_keys.empty() && attempt == 0) {
        programs_.Drop(prog, run);  // a damaged cache entry: compile afresh, once
        continue;
      }
      return Annotate(run, file);
    }
    RETURN_IF_ERROR(copy_status);
    for (size_t k = 0; k < staged_out.size(); ++k)
      if (staged_out[k]) std::memcpy(computed[k].data(), staged_out[k], computed[k].byte_size());
    if (!prog.checks.empty()) {
      RETURN_IF_ERROR(CheckIndexRanges(prog.checks, computed.back(), file));
      computed.pop_back();
    }
    timeline->AddTo(phases_mu_, phases_);
    if (trace_) {
      ShapeMap shapes;
      for (const auto& [name, t] : inputs) shapes[name] = t.dims();
      timeline->TraceTo(*trace_, ShapeKey(shapes));
    }
    if (counts) *counts = prog.output_counts;
    std::vector<Tensor> outs;
    for (size_t k = 0; k < prog.output_index.size(); ++k)
      outs.push_back(prog.output_index[k] < 0 ? prog.string_outputs[k] : std::move(computed[prog.output_index[k]]));
    return outs;
  }
}

absl::Status CheckIndexRanges(const std::vector<onnx_import::IndexCheck>& checks, const Tensor& ranges,
                              const std::string& file) {
  if (ranges.element_count() != 2 * static_cast<int64_t>(checks.size()))
    return Internal("%s: the program returned %d index bounds for %d checks", file, ranges.element_count(),
                    checks.size());
  const int64_t* r = ranges.data_as<int64_t>();
  for (size_t k = 0; k < checks.size(); ++k) {
    const int64_t lo = r[2 * k], hi = r[2 * k + 1];
    if (lo > hi) continue;  // no index was read (a loop that ran no iteration)
    const auto& c = checks[k];
    if (lo < c.lo || hi > c.hi)
      return InvalidArgument("%s: %s: %d is outside [%d, %d]", file, c.what, lo < c.lo ? lo : hi, c.lo, c.hi);
  }
  return absl::OkStatus();
}

absl::StatusOr<pjrt::LoadedExecutable::Launch> ModelRunner::Launch(const Program& prog,
                                                                   absl::Span<pjrt::Buffer* const> args,
                                                                   const CallBounds* bounds) {
  // Only xonnx's CPU plugin knows xonnx's extensions: the bounds, and a
  // trace of its kernels when the session records one.
  PJRT_XonnxRunBounds_Extension bounds_ext;
  PJRT_XonnxKernelTrace_Extension trace_ext;
  PJRT_Extension_Base* chain = nullptr;
  if (!xla_plugin_ && bounds && bounds->bounded()) {
    bounds_ext = bounds->Extension();
    bounds_ext.base.next = chain;
    chain = &bounds_ext.base;
  }
  if (!xla_plugin_ && trace_) {
    trace_ext = trace_->KernelExtension();
    trace_ext.base.next = chain;
    chain = &trace_ext.base;
  }
  return prog.exe->Start(args, chain);
}

void ModelRunner::TraceProgram(const char* what, std::chrono::steady_clock::time_point start,
                               const ShapeMap& shapes) const {
  if (!trace_) return;
  int64_t end = MonotonicNs();
  trace_->Slice(what, "compile", end - static_cast<int64_t>(MsSince(start) * 1e6), end, TraceRecorder::ThreadId(),
                {{"shapes", ShapeKey(shapes)}});
}

MappedStaging::Lease ModelRunner::Stage(size_t bytes) {
  if (!staging_ || bytes == 0) return {};
  return staging_->Acquire(bytes);
}

RunPhases ModelRunner::phases() const {
  std::lock_guard<std::mutex> lock(phases_mu_);
  return phases_;
}

}  // namespace xonnx
