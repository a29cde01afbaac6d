// Options for opening a model.
#ifndef XONNX_OPTIONS_H_
#define XONNX_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace xonnx {

// An option for the plugin's PJRT_Client_Create, e.g. {"cpu_device_count", 4}
// for xonnx's CPU plugin or {"memory_fraction", 0.5f} for XLA's GPU plugin.
struct CreateOption {
  std::string name;
  std::variant<std::string, int64_t, std::vector<int64_t>, float, bool> value;
};

struct SessionOptions {
  // The PjRT plugin that compiles and runs the model: a file path (anything
  // with a '/'), or a library name found through the loader's search path.
  // Empty: xonnx's CPU plugin, libxonnx_pjrt_cpu.so, looked for next to the
  // program, in ../lib and ../lib/xonnx beside it, and in the install
  // directory; the environment variable XONNX_PLUGIN overrides that default.
  std::string plugin;
  // Index of the plugin's addressable device to run on.
  int device = 0;
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
  // Run the HLO optimization pipeline (simplify, fold, CSE, DCE).
  bool optimize = true;
  // Verify the module after every pass (slower; for debugging).
  bool verify_passes = false;
  // xonnx's CPU plugin only (sent as its create options use_dnnl and
  // fuse_elementwise when they differ from these defaults): oneDNN kernels
  // for convolutions and matrix products, and fused elementwise loops.
  bool use_dnnl = true;
  bool fuse_elementwise = true;
};

// Shapes per input name, e.g. {"input": {1, 3, 224, 224}}.
using ShapeMap = std::map<std::string, std::vector<int64_t>>;

}  // namespace xonnx

#endif  // XONNX_OPTIONS_H_
