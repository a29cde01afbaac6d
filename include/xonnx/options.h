// Options for opening a model.
#ifndef XONNX_OPTIONS_H_
#define XONNX_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace xonnx {

struct SessionOptions {
  // Succeed in Open() even when the model uses ops xonnx cannot convert
  // (for `xonnx info` and partial conversion); Run() then fails.
  bool allow_unsupported = false;
  // Run the HLO optimization pipeline (simplify, fold, CSE, DCE).
  bool optimize = true;
  // Verify the module after every pass (slower; for debugging).
  bool verify_passes = false;
  // CPU backend: oneDNN kernels for convolutions and matrix products.
  bool use_dnnl = true;
  // CPU backend: fuse elementwise chains into single loops.
  bool fuse_elementwise = true;
};

// Shapes per input name, e.g. {"input": {1, 3, 224, 224}}.
using ShapeMap = std::map<std::string, std::vector<int64_t>>;

}  // namespace xonnx

#endif  // XONNX_OPTIONS_H_
