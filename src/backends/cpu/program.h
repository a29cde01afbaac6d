// A program as the CPU plugin holds it: an HLO module decoded, checked and
// optimized once, its signature, and the executables compiled from it. The
// PjRT plugin is a thin shim over this class; the policy of what is
// compiled when lives here.
//
// Weights. Parameters whose metadata op_type is hlo::kWeightParameterOpType
// (the importer marks model initializers so) are weights: the same device
// buffer is passed on every call. The backend is fastest when weights are
// compile-time constants (oneDNN packs and reorders them once, the layout
// pass transposes them once, batch norms fold into convolutions), so such a
// program is compiled on its first execution with the weight buffers'
// values bound as constants, and cached by the identities of those buffers
// (device buffers are immutable, so identity implies value). Programs
// without weights compile when they are built.
#ifndef XONNX_BACKENDS_CPU_PROGRAM_H_
#define XONNX_BACKENDS_CPU_PROGRAM_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "backends/cpu/runtime/executable.h"
#include "hlo/ir.h"

namespace xonnx::cpu {

struct ProgramOptions {
  // Run the standard pass pipeline on modules as they arrive, and again
  // after weights are bound as constants.
  bool optimize = true;
  // Verify the module after every pass (slow; for debugging).
  bool verify_passes = false;
  CompileOptions compile;
};

// A weight argument: its buffer's identity (never reused for other bytes),
// its bytes, and what keeps them alive while an executable reads them.
struct WeightArg {
  uint64_t id = 0;
  const void* data = nullptr;
  std::shared_ptr<const void> owner;
};

class Program {
 public:
  // Decodes, checks and optimizes a serialized HloModuleProto; compiles it
  // now when it has no weights.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<Program>> Build(absl::string_view module_bytes,
                                                                      const ProgramOptions& options);
  // Reads a program written by Serialize. The header and signature are
  // checked now and the module's fingerprint verified, so a damaged entry is
  // refused at once; the module itself is decoded at the first run.
  // `device_id` receives the device it was compiled for.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<Program>> Deserialize(absl::string_view bytes,
                                                                            const ProgramOptions& defaults,
                                                                            int* device_id);
  // The program's bytes for Deserialize; `device_id` is recorded with it.
  std::string Serialize(int device_id) const;

  const std::string& name() const { return name_; }
  // Identifies the module and the options it was compiled with.
  std::string Fingerprint(int device_id) const;
  const std::vector<hlo::Shape>& parameter_shapes() const { return param_shapes_; }
  const std::vector<hlo::Shape>& output_shapes() const { return output_shapes_; }
  // Parameter numbers of the weights, and of the other parameters, ascending.
  const std::vector<int>& weight_params() const { return weight_params_; }
  const std::vector<int>& other_params() const { return other_params_; }

  // The executable to run with these weights (one per entry of
  // weight_params(), in order): compiled with their values as constants on
  // first use, then cached. It takes the other parameters, in order.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<Executable>> ExecutableFor(absl::Span<const WeightArg> weights);

 private:
  Program() = default;
  absl::Status SetSignature(std::vector<hlo::Shape> params, const std::vector<int>& weights, const hlo::Shape& result);
  absl::Status InstallModule(std::unique_ptr<hlo::Module> m);
  absl::Status DecodeModule();
  absl::StatusOr<std::shared_ptr<Executable>> Specialize(absl::Span<const WeightArg> weights);

  std::string name_;
  // The serialized HloModuleProto: optimized when the program has no
  // weights; as received when it has (it is optimized once bound).
  std::string module_bytes_;
  std::vector<hlo::Shape> param_shapes_, output_shapes_;
  bool tuple_result_ = false;  // the entry returns a tuple (of output_shapes_)
  std::vector<int> weight_params_, other_params_;
  ProgramOptions options_;

  std::mutex mu_;                        // guards what follows, and module_ while it is null
  std::unique_ptr<hlo::Module> module_;  // decoded (null until the first run when deserialized)
  std::shared_ptr<Executable> generic_;  // when there are no weights
  std::list<std::pair<std::vector<uint64_t>, std::shared_ptr<Executable>>> specialized_;  // most recent first
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_PROGRAM_H_
