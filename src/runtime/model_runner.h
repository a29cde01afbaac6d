// Runs one ONNX model (or one device segment of a split graph) on a
// plugin's devices: converts it for the shapes (and, where they decide
// shapes, the values) of a call, finds or compiles the program, attaches
// its weights and executes it. Session adds buckets, device splits, graph
// stages and asynchronous calls on top.
#ifndef XONNX_RUNTIME_MODEL_RUNNER_H_
#define XONNX_RUNTIME_MODEL_RUNNER_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hlo/literal.h"
#include "onnx/importer.h"
#include "onnx/model.h"
#include "pjrt/client.h"
#include "runtime/call_bounds.h"
#include "runtime/mapped_staging.h"
#include "runtime/program_cache.h"
#include "runtime/trace.h"
#include "runtime/weight_store.h"
#include "xonnx/options.h"
#include "xonnx/session.h"

namespace xonnx {

// The shape of a call with sequence or optional inputs that is not in the
// tensors: sequence lengths and empty optionals.
struct InputStructure {
  std::map<std::string, int64_t> lengths;
  std::set<std::string> absent;
  std::string Key() const;
};

// A canonical text of named shapes, for program keys and traces.
std::string ShapeKey(const ShapeMap& shapes);

// OK when every index range a program returned (smallest and largest, one
// pair per check) lies within its check's bounds; else InvalidArgument
// naming the file, the node and an index out of range.
absl::Status CheckIndexRanges(const std::vector<onnx_import::IndexCheck>& checks, const Tensor& ranges,
                              const std::string& file);

class ModelRunner {
 public:
  // A runner for `model` on `devices` of `client`; `num_outputs` is the
  // model's output count (a cached program must have as many).
  ModelRunner(std::shared_ptr<onnx_import::LoadedModel> model, const SessionOptions& options,
              std::shared_ptr<pjrt::Client> client, std::vector<const pjrt::Device*> devices, size_t num_outputs);

  // A runner for another model (a graph segment) on the same client and
  // devices, sharing this one's persistent cache.
  std::unique_ptr<ModelRunner> ForSegment(std::shared_ptr<onnx_import::LoadedModel> segment, size_t num_outputs) const;

  const onnx_import::LoadedModel& model() const { return *model_; }
  const std::string& path() const { return model_->path; }
  const std::vector<const pjrt::Device*>& devices() const { return devices_; }
  const std::shared_ptr<pjrt::Client>& client() const { return client_; }
  ProgramCache& programs() { return programs_; }
  const ProgramCache& programs() const { return programs_; }
  // Makes every program lookup fail with this message (a model with
  // unsupported ops opened with allow_unsupported).
  void set_unsupported(std::string message) { unsupported_ = std::move(message); }

  // The HLO module for inputs of these shapes, with `bound` inputs' values
  // compiled in; `optimized` runs the standard pipeline (and precision
  // conversion) as the session's options say. `constant_weights`, when
  // given, keeps initializers parameters except those named. With
  // `bounds`, a deadline or cancellation stops the conversion between nodes.
  absl::StatusOr<onnx_import::ImportedModule> BuildModule(
      const ShapeMap& shapes, const std::map<std::string, hlo::Literal>& bound, bool allow_partial, bool optimized,
      const std::map<std::string, onnx_import::StringTensor>& strings = {},
      const std::set<std::string>* constant_weights = nullptr, const InputStructure* structure = nullptr,
      const CallBounds* bounds = nullptr) const;

  // A program found by Prepare: `kept` when it came from the in-memory
  // cache, else `program`, which still lacks its weight buffers (see
  // Complete).
  struct Prepared {
    std::string key;
    Program program;
    std::shared_ptr<const Program> kept;
  };
  // The program for inputs of these shapes (and, with `values`, these
  // values) on devices[dev]: from the in-memory cache, the persistent cache,
  // or converted and compiled. With `eager` (and no values), a model whose
  // program depends on input values (not only shapes) is refused with
  // FailedPrecondition instead of binding them.
  // `bounds` (may be null) bound the conversion, as they bound a run.
  absl::StatusOr<Prepared> Prepare(const ShapeMap& shapes, const std::map<std::string, Tensor>* values, int dev,
                                   bool eager, const InputStructure* structure, const CallBounds* bounds = nullptr);
  // Attaches a prepared program's weight buffers (uploading those not on
  // the device yet) and keeps it in the in-memory cache.
  absl::StatusOr<std::shared_ptr<const Program>> Complete(Prepared p, int dev);
  // Uploads a weight to devices[dev] now (Open does it for all buckets).
  absl::Status UploadWeight(const std::string& name, int dev) { return weights_.Get(name, dev).status(); }

  // Runs one program on devices[dev] with inputs of exactly its shapes.
  // With `structure`, also the sequence lengths and empty optionals of the
  // call; `counts` receives how the outputs group into model outputs.
  // `bounds` (may be null) is checked before the program starts and, on
  // xonnx's CPU plugin, while it runs. On xonnx's CPU plugin the inputs'
  // bytes are read in place (when 64-byte aligned, as a Tensor's own are;
  // else the plugin copies them): they outlive the call, which returns only
  // after the run and the copies of its results are over, and the plugin
  // never writes a program's parameters. (Copying a 3 MB input cost more
  // than the reduction reading it.)
  //
  // With `io`, inputs may be buffers already on the device and outputs may
  // stay there (see DeviceIo): a caller that feeds a program's results back
  // to it (the generator's key/value cache) then copies nothing through the
  // host between calls.
  struct DeviceIo {
    // Buffers on devices[dev], by input name, used instead of the host
    // tensors of those names (which still give the shapes; their bytes are
    // not read). Cleared when the call returns: a buffer that an alias
    // names (set_aliases) was donated to the program and is gone.
    std::map<std::string, std::unique_ptr<pjrt::Buffer>> inputs;
    // Outputs left on the device: moved to `kept`, their host tensors in
    // the result left empty.
    std::set<std::string> keep;
    std::map<std::string, std::unique_ptr<pjrt::Buffer>> kept;
  };
  absl::StatusOr<std::vector<Tensor>> RunExact(const std::map<std::string, Tensor>& inputs, int dev,
                                               const InputStructure* structure = nullptr,
                                               std::vector<int>* counts = nullptr, const CallBounds* bounds = nullptr,
                                               DeviceIo* io = nullptr);
  // Compiles every later program with each input named here aliased to the
  // output it names when their shapes and types are equal: a plugin that
  // honours aliases (XLA's) writes that output into the input's buffer,
  // which the call donates. Set before the first call. (xonnx's CPU plugin
  // ignores aliases: it reads host inputs in place and never writes them.)
  void set_aliases(std::map<std::string, std::string> input_to_output);

  // Records this runner's calls, compiles and kernels (xonnx's CPU plugin)
  // in `trace` from now on; its segments' runners share it.
  void SetTrace(std::shared_ptr<TraceRecorder> trace) { trace_ = std::move(trace); }
  TraceRecorder* trace() const { return trace_.get(); }
  // The phases of the calls RunExact made so far.
  RunPhases phases() const;

 private:
  // What a program lookup binds: inputs whose values decide shapes, and
  // initializers that must stay constants (a converter needs their values).
  struct Bindings {
    std::set<std::string> inputs, weights;
  };
  Bindings CurrentBindings() const;
  // After an import failed because shape-like values depend on inputs or
  // weights (the importer names them), binds those; false when the error is
  // another one or names nothing new.
  bool BindValuesFor(const absl::Status& import_error, const std::map<std::string, Tensor>& values);
  // Converts and compiles the program under `key` (see Prepare).
  absl::StatusOr<Prepared> Convert(const std::string& key, const ShapeMap& shapes,
                                   const std::map<std::string, hlo::Literal>& bound,
                                   const std::map<std::string, onnx_import::StringTensor>& strings,
                                   const Bindings& bindings, const std::string& description_key, int dev,
                                   const InputStructure* structure, std::chrono::steady_clock::time_point start,
                                   const CallBounds* bounds);
  // The persistent cache's key for the description of a program that
  // depends only on shapes.
  std::string DescriptionKey(const std::string& key, const Bindings& bindings, int dev) const;
  // Gives `module` the aliases of set_aliases that its parameters and
  // results allow.
  void SetAliases(const Program& prog, hlo::Module& module) const;
  absl::StatusOr<std::shared_ptr<const Program>> Get(const std::map<std::string, Tensor>& values, int dev,
                                                     const InputStructure* structure, const CallBounds* bounds);

  std::shared_ptr<onnx_import::LoadedModel> model_;
  SessionOptions options_;
  std::shared_ptr<pjrt::Client> client_;
  bool xla_plugin_ = true;  // not xonnx's CPU plugin: import with ImportOptions::xla_compatible
  std::vector<const pjrt::Device*> devices_;
  // pjrt::CompileOptionsFor(*devices_[k]), serialized once: every program
  // lookup puts them in its keys and every compile or load passes them.
  std::vector<std::string> compile_options_;
  size_t num_outputs_;
  std::string unsupported_;
  std::map<std::string, std::string> aliases_;  // set_aliases
  std::string alias_key_;                       // part of every program's key when there are aliases
  WeightStore weights_;
  ProgramCache programs_;
  mutable std::mutex bindings_mu_;
  Bindings bindings_;  // guarded by bindings_mu_
  // Starts `prog` on `args`, with xonnx's execute-options extensions (the
  // call's bounds, the kernel trace) where the plugin is xonnx's own.
  absl::StatusOr<pjrt::LoadedExecutable::Launch> Launch(const Program& prog, absl::Span<pjrt::Buffer* const> args,
                                                        const CallBounds* bounds);
  // One call's transfers in flight (program_call.cc).
  struct Call;
  // Starts the uploads of `prog`'s inputs (or takes their device buffers
  // from `io`) and lists the call's arguments.
  absl::Status StartInputs(Call& c, const Program& prog, const std::map<std::string, Tensor>& inputs, int dev,
                           DeviceIo* io);
  // Starts the copies of the launched program's results to the host (or
  // keeps those `io` asks for on the device).
  absl::Status StartOutputs(Call& c, const Program& prog, pjrt::LoadedExecutable::Launch& launch, DeviceIo* io);
  // A slice of the trace, if any, for a program compiled or loaded since
  // `start`, for `shapes`.
  void TraceProgram(const char* what, std::chrono::steady_clock::time_point start, const ShapeMap& shapes) const;
  // A leased block for `bytes` of a call's input or output, when
  // SessionOptions::io_staging asks for one and the plugin can map memory.
  MappedStaging::Lease Stage(size_t bytes);
  std::shared_ptr<MappedStaging> staging_;  // the client's
  int spin_wait_us_ = 0;                    // SessionOptions::spin_wait_us resolved
  bool mlir_only_ = false;                  // the plugin lists its program formats: "mlir", not "hlo"
  std::atomic<bool> hlo_refused_{false};    // the plugin refused an HLO program as a format (kAuto)
  std::shared_ptr<TraceRecorder> trace_;    // null: no profile
  // One lock per shape key (device, shapes, sequence structure): the first
  // call of a shape compiles while concurrent ones wait and then find its
  // program, instead of each compiling it too.
  std::shared_ptr<std::mutex> ShapeLock(const std::string& key);
  // Compiles (or loads from the cache) `module` for device `dev` in the
  // program format SessionOptions::program_format asks for; `bytes`
  // receives the program as sent.
  absl::StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> CompileProgram(const hlo::Module& module, int dev,
                                                                         std::string* bytes, std::string* exe_key,
                                                                         bool* loaded);
  std::mutex shape_locks_mu_;
  std::map<std::string, std::shared_ptr<std::mutex>> shape_locks_;  // guarded by shape_locks_mu_
  mutable std::mutex phases_mu_;
  RunPhases phases_;  // guarded by phases_mu_
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_MODEL_RUNNER_H_
