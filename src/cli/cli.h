// The `xonnx` command's pieces (internal header): errors, the options every
// command shares, inputs, and one function per subcommand.
#ifndef XONNX_CLI_CLI_H_
#define XONNX_CLI_CLI_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xonnx/session.h"

namespace xonnx::cli {

// The command's exit codes (documented in `xonnx --help` and the user
// guide, checked by tests/cli).
enum ExitCode {
  kExitOk = 0,
  kExitDiffers = 1,  // --compare or --expect found an output beyond the tolerance
  kExitUsage = 2,    // the command line is malformed or inconsistent
  kExitInput = 3,    // the model, an input file or a name in the command is wrong or unsupported
  kExitRuntime = 4,  // the run, the plugin or writing a result failed
};

// Thrown inside the CLI only, turned into a one-line message and `code`.
struct CliError {
  std::string message;
  int code = kExitUsage;
};

// The exit code of a failed status: its code says whether the input or the
// run was at fault.
inline int ExitCodeOf(const xonnx::Status& s) {
  switch (s.code()) {
    case xonnx::StatusCode::kInvalidArgument:
    case xonnx::StatusCode::kNotFound:
    case xonnx::StatusCode::kUnimplemented:
    case xonnx::StatusCode::kDataLoss:
    case xonnx::StatusCode::kOutOfRange:
    case xonnx::StatusCode::kFailedPrecondition:
    case xonnx::StatusCode::kAlreadyExists:
      return kExitInput;
    default:
      return kExitRuntime;
  }
}

// The value, or a CliError with the status's message.
template <typename T>
T Check(xonnx::StatusOr<T> s) {
  if (!s.ok()) throw CliError{std::string(s.status().message()), ExitCodeOf(s.status())};
  return *std::move(s);
}
inline void Check(const xonnx::Status& s) {
  if (!s.ok()) throw CliError{std::string(s.message()), ExitCodeOf(s)};
}

// Where DefaultCacheDir looks, for --help.
inline constexpr char kCacheDirDefault[] =
    "(default: $XONNX_CACHE_DIR, else $XDG_CACHE_HOME/xonnx, else ~/.cache/xonnx)";

// Where and how a model runs: --plugin, --device, --create-option, buckets,
// data types and the compile cache.
struct DeviceArgs {
  std::string plugin;
  std::string device = "0";
  std::vector<std::string> create_options;
  int64_t max_batch = 0, steps = 1;
  std::string batch_buckets;
  std::vector<std::string> dim_buckets;
  std::string cache_dir;
  bool no_cache = false;
  std::string data_type = "f32", io_data_type = "f32";
  bool allow_tf32 = false;
  bool no_check_indices = false;
  int compile_threads = 0;
  std::string io_staging = "auto";
  std::string program_format = "auto";
  int spin_wait_us = -1;
  int64_t deadline_ms = 0;
  std::string profile;
  std::string dump_to, dump_pass_re, dump_as;
  bool dump_onnx = false;
};
// The options of the running command (AddDeviceOptions fills them).
extern DeviceArgs g_device;

// The inputs of run and bench: files, shapes and a seed for the rest.
struct InputArgs {
  std::vector<std::string> inputs;  // NAME=FILE
  std::string input_dir;
  std::vector<std::string> shapes;
  uint64_t seed = 0;
};

// "name=1x3x224x224" specs as a shape map.
xonnx::ShapeMap ParseShapes(const std::vector<std::string>& specs);
// The session options g_device describes.
xonnx::SessionOptions BaseOptions();
// Opens a model with BaseOptions(); `plugin_needed` false opens it without
// a plugin unless --plugin names one (info and convert).
std::unique_ptr<xonnx::Session> Open(const std::string& path, bool allow_unsupported = false,
                                     bool plugin_needed = true);
// Builds the input map: files first, then random values for the rest.
std::map<std::string, Tensor> LoadInputs(xonnx::Session& s, const InputArgs& a);
// One line about an output: shape, min, max, mean, first values.
void PrintSummary(const xonnx::TensorSpec& spec, const Tensor& t);
// Whether the model has sequence or optional inputs or outputs (it runs
// through Session::RunValues).
bool TakesValues(const xonnx::Session& s);
// LoadInputs for such models: files hold TensorProtos, SequenceProtos or
// OptionalProtos by each input's kind (input_dir: by position); an optional
// not given is empty, a tensor not given random, a sequence must be given.
std::map<std::string, xonnx::Value> LoadValueInputs(xonnx::Session& s, const InputArgs& a);
// PrintSummary for any value: a sequence one line per element.
void PrintValueSummary(const xonnx::TensorSpec& spec, const xonnx::Value& v);
// Helpers the subcommands share (commands.cc).
std::string StartupLine(const xonnx::Session& s);
void WriteProfile(const xonnx::Session& s);
void PrintCacheMessages(const xonnx::Session& s);
void RequireTensors(const std::string& model, const xonnx::Session& s);
double PeakRssMb();
// Adds the input options (with_files: --input and --input-dir too).
void AddInputOptions(CLI::App* cmd, InputArgs& a, bool with_files);
// Adds the plugin, device and (with serving) bucket, type and cache options.
void AddDeviceOptions(CLI::App* cmd, bool serving);

// What `run` does besides running: where outputs go, which, and what they
// are compared with.
struct RunArgs {
  std::string output_dir;
  std::string output_format = "pb";  // pb, npy or both
  std::vector<std::string> outputs;  // names to print or write; empty: all
  std::string compare;               // "reference" or empty
  std::string expect_dir;            // output_<i>.pb/.npy to compare with
  double tolerance = 1e-5;
};
// How `bench` times.
struct BenchArgs {
  int warmup = 5, iterations = 50;
  double duration_s = 0;  // > 0: run for this long instead of `iterations`
  bool json = false;
  int in_flight = 1;
  bool every_bucket = false;
  std::string export_times;  // CSV of every timed call
};

// The subcommands; each returns the process's exit code.
int Run(const std::string& model, const InputArgs& in, const RunArgs& args);
// Runs `inputs` on xonnx's CPU plugin as the reference device (every
// instruction on the reference evaluator); its outputs (with every
// intermediate value after them when `expose_intermediates`).
std::vector<xonnx::Tensor> RunOnReference(const std::string& model, const std::map<std::string, xonnx::Tensor>& inputs,
                                          bool expose_intermediates = false);
// Runs `inputs` with the session's options on xonnx's CPU plugin with every
// value in memory of its own (create option distinct_buffers): `--compare
// buffers`.
std::vector<xonnx::Tensor> RunWithDistinctBuffers(const std::string& model,
                                                  const std::map<std::string, xonnx::Tensor>& inputs);
// After --compare found a difference: runs the model on both devices with
// every intermediate value as an output and prints the first value, in
// node order, that differs beyond `tolerance`.
void ReportFirstDifference(const std::string& model, const std::map<std::string, xonnx::Tensor>& inputs,
                           size_t model_outputs, double tolerance);
// Compares `outs` with `expected` (by position), prints a line per output
// naming `against`, and returns how many differ beyond `tolerance`
// (relative L2 error; shapes, and the bytes of strings, must match).
int CompareOutputs(const std::vector<xonnx::Tensor>& outs, const std::vector<xonnx::Tensor>& expected,
                   const std::vector<xonnx::TensorSpec>& specs, double tolerance, const std::string& against);
int Bench(const std::string& model, const InputArgs& in, const BenchArgs& args);
int Convert(const std::string& model, const std::vector<std::string>& shape_specs, const std::string& text_out,
            const std::string& proto_out, const std::string& stablehlo_out, int64_t batch, bool allow_partial);
int Info(const std::string& model, bool json);
int Devices(bool json);
// `xonnx devices --all`: every plugin found by name, and whether it loads.
int AllPlugins();
int Cache(std::string dir, const std::string& max_size, bool clear, bool json);
// `xonnx serve`'s options (Triton's names where they overlap).
struct ServeArgs {
  std::vector<std::string> repositories;
  int http_port = 8000, grpc_port = 8001, metrics_port = 8002;
  std::string http_address = "0.0.0.0", grpc_address = "0.0.0.0", metrics_address = "0.0.0.0";
  std::string allow_http = "true", allow_grpc = "true", allow_metrics = "true";
  std::string control_mode = "none";
  int poll_secs = 15;
  std::vector<std::string> load_models;
  std::string strict_config = "false";
  int exit_timeout_s = 30;
  int default_max_batch = 4;
  int64_t max_queue = 256;
  int http_threads = 256;
  int64_t max_input_bytes = int64_t{1} << 30;
  std::string access_log;
  std::string devices = "0";
  bool no_warmup = false;
  std::string profile_dir;
};
CLI::App* AddServe(CLI::App& app, ServeArgs& a);
int Serve(const ServeArgs& a);
// `xonnx generate`'s options.
struct GenerateArgs {
  std::string model;
  std::vector<std::string> prompts;  // comma-separated ids, one per prompt
  std::vector<std::string> texts;    // prompts as text (with a tokenizer)
  std::string tokenizer;             // a SentencePiece .model file
  bool add_bos = false;
  int64_t max_new_tokens = 32;
  bool greedy = false, quiet = false;
  float temperature = 1.0f, top_p = 1.0f;
  int64_t top_k = 0;
  bool sampling = false;  // a sampling option was given
  uint64_t seed = 0;
  float repetition_penalty = 1.0f;
  std::string stop_ids;
  std::string kv_cache = "auto";  // auto | host | device
  bool timings = false;
};
CLI::App* AddGenerate(CLI::App& app, GenerateArgs& a);
int Generate(const GenerateArgs& a);
// `xonnx profile FILE`: a --profile trace summed by ONNX op type, and the
// `top` slowest nodes.
int Profile(const std::string& file, int top);

}  // namespace xonnx::cli

#endif  // XONNX_CLI_CLI_H_
