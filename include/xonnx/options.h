// Options for opening a model.
#ifndef XONNX_OPTIONS_H_
#define XONNX_OPTIONS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "xonnx/export.h"
#include "xonnx/tensor.h"

namespace xonnx {

// An option for the plugin's PJRT_Client_Create, e.g. {"cpu_device_count", 4}
// for xonnx's CPU plugin or {"memory_fraction", 0.5f} for XLA's GPU plugin.
struct CreateOption {
  std::string name;
  std::variant<std::string, int64_t, std::vector<int64_t>, float, bool> value;
};

// Parses "name=value" as `xonnx --create-option` takes it: true/false, an
// integer, a float, a comma list of integers, or else a string.
XONNX_API StatusOr<CreateOption> ParseCreateOption(const std::string& text);

// What a session writes to look inside it, in XLA's --xla_dump_to spirit
// (SessionOptions::dump; the environment variable XONNX_FLAGS takes the same
// as flags, e.g. XONNX_FLAGS="--dump_to=/tmp/d --dump_pass_re=.* --dump_as_dot").
struct DumpOptions {
  // The folder written to; empty: nothing is dumped. Each program's module
  // is written as imported, after every pass of the importer's pipeline
  // whose name matches pass_re, and as it goes to the plugin, numbered in
  // order: <module>.<import>.<NN>.<step>.txt (.pb, .dot). A session that
  // dumps does not read the compile cache (a program loaded from it was
  // never imported or compiled, so there would be nothing to dump); it
  // still writes it.
  std::string to;
  std::string pass_re;        // ECMAScript regular expression; empty: no per-pass dumps
  bool as_text = true;        // HLO text
  bool as_proto = false;      // serialized HloModuleProto
  bool as_dot = false;        // Graphviz, one node per instruction with its ONNX node
  bool as_html = false;       // a self-contained page with each computation's graph drawn
  bool onnx = false;          // the model as imported (nodes sorted), <model>.onnx
  bool as_stablehlo = false;  // StableHLO MLIR text, as --program-format stablehlo sends it (.mlir)
};

// Parses XONNX_FLAGS' syntax into `base`: whitespace-separated
// --dump_to=DIR, --dump_pass_re=REGEX, --dump_as_text, --dump_as_proto,
// --dump_as_dot, --dump_as_html, --dump_as_stablehlo, --dump_onnx (booleans
// also take =true or =false). An
// unknown flag is an error listing the known ones.
XONNX_API StatusOr<DumpOptions> ParseXonnxFlags(const std::string& flags, DumpOptions base = {});

struct SessionOptions {
  // The PjRT plugin that compiles and runs the model: a file path (anything
  // with a '/'), a library file name found through the loader's search path
  // (anything with ".so"), or a short name such as "cuda" or "tpu", looked
  // up in XONNX_PLUGINS ("name:path,..."), then JAX's
  // PJRT_NAMES_AND_LIBRARY_PATHS, then ~/.local/lib/xonnx/plugins and
  // <prefix>/lib/xonnx/plugins, then JAX's installed plugins in Python's
  // package folders (FindPlugins() lists what is found).
  // Empty or "cpu": xonnx's CPU plugin, libxonnx_pjrt_cpu.so, looked for in
  // xonnx/ beside libxonnx.so (where `cmake --install` puts it) or beside it,
  // then next to the program and in ../lib and ../lib/xonnx from there, then
  // in the build tree and the configured install directory; the environment
  // variable XONNX_PLUGIN overrides that default.
  // kNoPlugin ("none"): no plugin at all; the session describes the model
  // and converts it (Info, DumpHlo, as for xonnx's CPU plugin) but every
  // call fails with FAILED_PRECONDITION.
  std::string plugin;
  static constexpr char kNoPlugin[] = "none";
  // Index of the plugin's addressable device to run on, or kAllDevices: a
  // call's batch is then split across all of them and run concurrently.
  static constexpr int kAllDevices = -1;
  int device = 0;

  // Batch buckets. The batch is dimension 0 of the inputs whose dimension 0
  // is dynamic. With buckets, Open() compiles every bucket (in parallel) and a
  // call with batch b runs on the smallest bucket >= b: padding rows are
  // zeros and the outputs are cut back to b; a larger batch is split into
  // runs of the largest bucket. lc0's rule: max_batch * i / steps (rounded
  // up), i = 1..steps; or an explicit list in batch_buckets. Without buckets
  // each new input shape compiles once, on first use.
  int64_t max_batch = 0;
  int64_t steps = 1;
  std::vector<int64_t> batch_buckets;
  // The same for other dynamic dimensions, by their symbolic name in the
  // model, e.g. {"sequence", {16, 32, 64}}. A size larger than the largest
  // bucket is an error (a sequence cannot be split). Padding is zeros: the
  // model must tolerate it (mask inputs, causal attention), as with lc0.
  std::map<std::string, std::vector<int64_t>> dim_buckets;

  // The type the model computes in: kFloat32, kFloat16 or kBFloat16. With a
  // 16-bit type, float32 weights are converted once when uploaded and every
  // float32 operation runs in that type, except reductions (sums, means,
  // softmax denominators, normalization statistics), which accumulate in
  // float32.
  DataType data_type = DataType::kFloat32;
  // The host-side type of the model's float32 inputs and outputs: Run()
  // takes and returns tensors of this type, and transfers them as such.
  DataType io_data_type = DataType::kFloat32;
  // Let the plugin round the inputs of float32 matrix products and
  // convolutions, as XLA does by default (TF32 on NVIDIA GPUs: about 3
  // significant digits, several times faster; PyTorch's
  // torch.backends.cuda.matmul.allow_tf32). Off: they are exact float32, as
  // ONNX specifies (HLO precision HIGHEST). xonnx's CPU plugin is always exact.
  bool allow_tf32 = false;

  // How a call's inputs and outputs cross to the device: kMapped through
  // host memory registered for the device's direct memory access
  // (PJRT_Client_DmaMap; mapped once, reused by later calls, shared by the
  // sessions of a client), kPlugin through the plugin's own staging copy.
  // kAuto: kMapped on plugins that can map memory, except xonnx's CPU
  // plugin, which reads and writes host memory in place. On XLA's GPU
  // plugin mapping took the Transformer encoder's batch-64 copy of its
  // output back from 0.55 to 0.18 ms.
  enum class IoStaging { kAuto, kMapped, kPlugin };
  IoStaging io_staging = IoStaging::kAuto;
  // How long a call polls for its results before its thread sleeps, in
  // microseconds (waking a sleeping thread costs tens of microseconds, which
  // a sub-millisecond GPU call notices; polling keeps a core busy, yielding
  // it to any other thread that wants it). kAutoSpin: kGpuSpinUs on plugins
  // other than xonnx's CPU plugin, whose calls keep every core busy, 0 there.
  static constexpr int kAutoSpin = -1;
  static constexpr int kGpuSpinUs = 2000;
  int spin_wait_us = kAutoSpin;

  // The form programs go to the plugin in: kHlo a serialized HloModuleProto
  // (format "hlo"), kStableHlo StableHLO MLIR text (format "mlir"), which
  // plugins that take only MLIR programs need; XLA's own take both, and so
  // does xonnx's CPU plugin. kAuto: HLO, and StableHLO when the plugin
  // refuses the format.
  enum class ProgramFormat { kAuto, kHlo, kStableHlo };
  ProgramFormat program_format = ProgramFormat::kAuto;

  // Dumps of the programs' modules (see DumpOptions). When `dump.to` is
  // empty, XONNX_FLAGS' --dump_* flags apply, if set.
  DumpOptions dump;

  // Records a profile of the session as a Chrome/Perfetto trace JSON file,
  // written here when the session is destroyed (or on WriteProfile()): a
  // slice per call and per phase of it, per program compiled or loaded, per
  // host node of a split model, and on xonnx's CPU plugin per kernel, named
  // by the ONNX node it computes. Empty: no profile.
  std::string profile_file;

  // Milliseconds a call may take from its start, for every call (0: no
  // limit; RunOptions::deadline_ms overrides it per call). See RunOptions.
  int64_t deadline_ms = 0;

  // Persistent compile cache: executables are serialized by the plugin and
  // reloaded by later processes. Empty cache_dir: $XONNX_CACHE_DIR, else
  // $XDG_CACHE_HOME/xonnx, else ~/.cache/xonnx.
  bool use_cache = true;
  std::string cache_dir;
  // Threads compiling buckets at Open() (0: one per hardware thread, at most
  // the number of buckets). Plugins that compile serially are not harmed.
  int compile_threads = 0;
  // Called after each bucket is ready during Open() (done of total), from
  // the thread that finished it, one call at a time.
  std::function<void(int done, int total)> compile_progress;

  // Options for the plugin's client. Sessions with the same plugin and
  // options share one client.
  std::vector<CreateOption> create_options;
  // Pass floating-point initializers as device buffers uploaded once (and
  // shared by every compiled shape) instead of compiling them into each
  // program.
  bool upload_weights = true;
  // Succeed in Open() even when the model uses ops xonnx cannot convert
  // (for `xonnx info` and partial conversion); Run() then fails.
  bool allow_unsupported = false;
  // Every value the model's main graph computes becomes an output too,
  // after the model's own, in node order (tensors whose type ONNX shape
  // inference knows): to find where two devices start to differ (`xonnx
  // run --compare`). Slower: nothing is fused across them.
  bool expose_intermediates = false;
  // Run the HLO optimization pipeline (simplify, fold, CSE, DCE).
  bool optimize = true;
  // Index inputs known only when the model runs (Gather's, GatherElements',
  // GatherND's, the Scatter ops', an embedding's token ids) are checked
  // against the dimension they index, on every plugin: a value out of range
  // fails the call with InvalidArgument naming the node, as ONNX Runtime
  // does, instead of being clamped or dropped (XLA's semantics). Off saves
  // one pass over the indices per such node.
  bool check_indices = true;
  // Verify the module after every pass (slower; for debugging).
  bool verify_passes = false;
  // xonnx's CPU plugin only (sent as its create options use_dnnl and
  // fuse_elementwise when they differ from these defaults): oneDNN kernels
  // for convolutions and matrix products, and fused elementwise loops.
  bool use_dnnl = true;
  bool fuse_elementwise = true;
};

// Stops calls from another thread: give it to calls in RunOptions::cancel,
// then Cancel(). One token may serve any number of calls; it stays set.
class CancelToken {
 public:
  void Cancel() { flag_.store(1); }
  bool cancelled() const { return flag_.load() != 0; }
  // The flag itself (nonzero once cancelled), which the plugin reads.
  const std::atomic<int32_t>* flag() const { return &flag_; }

 private:
  std::atomic<int32_t> flag_{0};
};

// Bounds on one call. A call past its deadline fails with
// DEADLINE_EXCEEDED, a cancelled one with CANCELLED. xonnx's CPU plugin
// checks both between kernels and at every loop iteration, so a long or
// endless Loop stops; on other plugins a program runs to its end once
// started, and the bounds are checked before it starts and between the
// parts of a split model. Compiling a new shape is not interrupted.
struct RunOptions {
  // Milliseconds from the call's start; -1: SessionOptions::deadline_ms;
  // 0: no limit.
  int64_t deadline_ms = -1;
  std::shared_ptr<CancelToken> cancel;
};

// Shapes per input name, e.g. {"input": {1, 3, 224, 224}}.
using ShapeMap = std::map<std::string, std::vector<int64_t>>;

}  // namespace xonnx

#endif  // XONNX_OPTIONS_H_
