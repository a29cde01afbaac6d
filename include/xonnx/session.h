// xonnx::Session: opens an ONNX model and runs it. The public entry point of
// the library; the `xonnx` command uses nothing else.
//
//   auto session = xonnx::Session::Open("model.onnx");
//   if (!session.ok()) { ... session.status().message() ... }
//   xonnx::Tensor x(xonnx::DataType::kFloat32, {1, 3, 224, 224});
//   auto outputs = (*session)->Run({{"input", x}});
//
// A model is converted and compiled once per distinct set of input shapes;
// later calls with the same shapes reuse the compiled program. Run() may be
// called from several threads at once.
#ifndef XONNX_SESSION_H_
#define XONNX_SESSION_H_

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xonnx/export.h"
#include "xonnx/options.h"
#include "xonnx/status.h"
#include "xonnx/tensor.h"

namespace xonnx {

// A model input or output as declared in the model: -1 marks a dynamic
// dimension, whose symbolic name (if any) is in dim_names.
struct TensorSpec {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
  // A sequence of tensors (dtype and dims describe its elements), and/or an
  // optional value (which may be empty). Such models run with RunValues().
  bool sequence = false;
  bool optional = false;
};

// A model input or output of any kind: a tensor, a sequence of tensors, or
// an empty optional.
struct Value {
  enum class Kind { kTensor, kSequence, kNone };
  Kind kind = Kind::kTensor;
  Tensor tensor;                 // kTensor
  std::vector<Tensor> elements;  // kSequence
  static Value Of(Tensor t) { return {Kind::kTensor, std::move(t), {}}; }
  static Value Sequence(std::vector<Tensor> e) { return {Kind::kSequence, {}, std::move(e)}; }
  static Value None() { return {Kind::kNone, {}, {}}; }
};

// Reads a model input or output of `spec`'s kind from a file as the ONNX
// test data stores it: a TensorProto (or a .npy) for a tensor, a
// SequenceProto for a sequence, an OptionalProto for an optional (which may
// hold nothing). Errors name the file.
XONNX_API StatusOr<Value> ReadValueFile(const std::string& path, const TensorSpec& spec);
// Writes `v` in the same form, named after `spec`.
XONNX_API Status WriteValueFile(const std::string& path, const Value& v, const TensorSpec& spec);

// The library's version, e.g. "0.1.0".
XONNX_API std::string Version();

// What `xonnx info` prints.
struct ModelInfo {
  std::string producer;  // producer_name and producer_version, in one line
  // The ModelProto's metadata, as stored (ONNX Runtime's ModelMetadata).
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  std::string graph_name, graph_doc_string;
  std::map<std::string, std::string> metadata_props;  // the custom metadata map
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;     // domain ("" = ai.onnx) -> version
  std::map<std::string, int64_t> op_counts;  // op type -> nodes
  std::vector<std::string> unsupported;      // "Op (nodes 'a', 'b')" per unsupported op
  // Nodes whose output shapes depend on values only known when the model
  // runs (NonZero, Unique, NonMaxSuppression, Compress with a computed
  // condition): the graph is split around them, they run on the host, and
  // the device programs between them compile for the shapes they meet.
  // "Op 'node'" each, in execution order; an If, Loop or Scan says which
  // node inside it needs the host.
  std::vector<std::string> host_nodes;
  // Nodes with a shape-like input (a Reshape's shape, TopK's k) computed from
  // runtime data: each starts a device program that receives the value and
  // compiles for it.
  std::vector<std::string> value_nodes;  // "Op 'node'" each, in execution order
  int device_programs = 1;               // device segments of the graph
  int64_t initializer_bytes = 0;
};

// The HLO of a model for given shapes (`xonnx convert`).
struct HloDump {
  std::string text;           // XLA HLO text
  std::string proto;          // serialized HloModuleProto
  std::string partial_error;  // set when only a prefix of the graph converted
  std::string stablehlo;      // the same program as StableHLO (MLIR text)
  // The program's run-time index checks (SessionOptions::check_indices),
  // what each checks and its bounds, as "node 'x' (Gather, opset 13):
  // indices in [-1000, 999]". When there are any, the program has one more
  // output after the model's: an s64 vector with the smallest and the
  // largest value each check saw, in this order, which whoever runs the
  // program compares with the bounds (XLA itself clamps out-of-range
  // indices). Empty when there are none.
  std::vector<std::string> index_checks;
};

// A PjRT plugin and its addressable devices (`xonnx devices`).
struct DeviceInfo {
  int index = 0;  // what SessionOptions::device takes
  int id = 0;     // the plugin's device id
  int local_hardware_id = -1;
  std::string kind, description;
  std::vector<std::pair<std::string, std::string>> attributes;
};
struct PluginInfo {
  std::string path;  // the file loaded
  int api_major = 0, api_minor = 0;
  std::string platform_name, platform_version;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<DeviceInfo> devices;
};
// Loads the plugin named by options.plugin (default: ours) with
// options.create_options and describes it.
XONNX_API StatusOr<PluginInfo> DescribePlugin(const SessionOptions& options = {});
// Where xonnx's CPU plugin was found (see SessionOptions::plugin), or its bare
// file name when no candidate exists (the loader's search path is then used).
XONNX_API std::string DefaultPluginPath();

// A plugin found by name (`xonnx devices --all`): where, and whether it
// loads (`refused` says why not: the loader's error, no GetPjrtApi, another
// API major version, a failed initialization).
struct FoundPlugin {
  std::string name, path, source;
  int api_major = 0, api_minor = 0;
  std::string refused;  // empty when it loads
};
// Every plugin SessionOptions::plugin can name (see its comment), xonnx's
// CPU plugin first, each loaded to see whether it can be used.
XONNX_API std::vector<FoundPlugin> FindPlugins();

// Where a session's programs came from (one program per input shape and
// device).
struct CompileStats {
  int compiled = 0;        // compiled by the plugin
  int from_cache = 0;      // loaded from the persistent compile cache
  int cache_rejected = 0;  // damaged or unreadable entries, recompiled and replaced
  // Wall time Open() spent making the buckets' programs (converting and
  // compiling them, or loading them from the cache); 0 without buckets.
  double buckets_ms = 0;
  // Wall time Open() then spent putting the weights those programs take on
  // the device (once for all buckets); 0 without buckets.
  double weights_ms = 0;
  // Why entries were rejected, or why the cache could not be used at all.
  std::vector<std::string> cache_messages;
};

// Where the time of a session's calls on the plugin went, summed over the
// calls so far (each graph stage and each device's part of a split batch
// counts as one). The phases are timed by the plugin's completion events,
// not by waiting for each in turn, so measuring them changes nothing; they
// add up to the calls' wall time less the host work around them.
struct RunPhases {
  int64_t calls = 0;
  // From a call's start until the plugin let go of the last input's host
  // memory (copied it to the device or to its own staging memory).
  double upload_ms = 0;
  // From then until the device had finished the program.
  double execute_ms = 0;
  // From then until the last output was in host memory.
  double download_ms = 0;
};

class XONNX_API Session {
 public:
  // Loads and checks a model. Fails with a message naming the file (and the
  // nodes) when it cannot be read or uses unsupported ops.
  static StatusOr<std::unique_ptr<Session>> Open(const std::string& model_path, const SessionOptions& options = {});
  // The same for a model already in memory (a serialized ModelProto; the
  // bytes are not kept). `name` stands for the file in messages; tensors
  // stored as external data are read relative to `external_data_dir`
  // (empty: the current folder).
  static StatusOr<std::unique_ptr<Session>> OpenFromMemory(const void* bytes, size_t size,
                                                           const std::string& name = "model",
                                                           const SessionOptions& options = {},
                                                           const std::string& external_data_dir = "");
  ~Session();

  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  ModelInfo Info() const;

  // Runs the model on named inputs; returns the outputs in model order.
  // With buckets, pads to a bucket (or splits), and with all devices, splits
  // the batch across them (see SessionOptions).
  StatusOr<std::vector<Tensor>> Run(const std::map<std::string, Tensor>& inputs, const RunOptions& run = {});
  // Run() for models with sequence or optional inputs or outputs (it takes
  // any model). An optional input may be left out or given as
  // Value::None(). A sequence's length is part of its shape: each distinct
  // length compiles once. Buckets and all devices do not apply.
  StatusOr<std::vector<Value>> RunValues(const std::map<std::string, Value>& inputs, const RunOptions& run = {});
  // Run() on one of the session's worker threads (at most max(4, 2 x
  // devices), started as calls arrive; further calls queue): several calls
  // may be in flight at once, so one call's transfers overlap another's
  // compute. Destroying the session cancels its calls in flight and the
  // queued ones (they fail with CANCELLED) and waits for them.
  std::future<StatusOr<std::vector<Tensor>>> RunAsync(std::map<std::string, Tensor> inputs, RunOptions run = {});
  // The same, calling `done` with the outcome on the worker thread when the
  // call ends (also when it fails or is cancelled) instead of returning a
  // future. `done` must not destroy the session.
  void RunAsync(std::map<std::string, Tensor> inputs, RunOptions run,
                std::function<void(StatusOr<std::vector<Tensor>>)> done);
  // Writes the profile recorded so far (SessionOptions::profile_file) to
  // its file; the session also writes it when it is destroyed.
  Status WriteProfile() const;
  // Converts and compiles for these inputs now (Run would do it lazily), and
  // runs the program once so that plugins that finish compiling on the first
  // execution (ours binds weights then) have done so. Only the shapes
  // matter, except for inputs that feed shapes, axes or counts: their values
  // are compiled in.
  Status Prepare(const std::map<std::string, Tensor>& inputs);
  // The HLO for these shapes (dynamic dims not given default to `batch`).
  StatusOr<HloDump> DumpHlo(const ShapeMap& shapes, int64_t batch, bool allow_partial, bool optimized = true) const;
  // Concrete shapes for all inputs: `given` where present, else the declared
  // dims with dynamic ones set to `dynamic_default`.
  StatusOr<ShapeMap> ResolveShapes(const ShapeMap& given, int64_t dynamic_default) const;

  // Milliseconds spent loading the model, and compiling the last new shape.
  double load_ms() const;
  double last_compile_ms() const;
  // A one-line description of the last compiled program.
  std::string LastProgramSummary() const;
  // The plugin, platform and device this session runs on, in one line.
  std::string DeviceSummary() const;
  // The batch sizes compiled (empty without batch buckets), and the devices
  // a call runs on.
  const std::vector<int64_t>& batch_buckets() const;
  int num_devices() const;
  // The persistent cache folder in use (empty when off), and what it did.
  std::string cache_dir() const;
  CompileStats compile_stats() const;
  // Where the calls' time went so far (see RunPhases).
  RunPhases run_phases() const;

 private:
  struct Impl;
  // The generator keeps a decoder's key/value cache on the device between
  // its calls, through the session's runner.
  friend class Generator;
  std::string DevicesText() const;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xonnx

#endif  // XONNX_SESSION_H_
