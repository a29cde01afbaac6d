// Reading ONNX-style test data folders (input_<i>.pb / output_<i>.pb), shared
// by the conformance and real-model runners.
#ifndef XONNX_TESTS_TEST_DATA_H_
#define XONNX_TESTS_TEST_DATA_H_

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "xonnx/session.h"

namespace xonnx::testing {

// Files in `dir` starting with `prefix`, ordered by their numeric suffix.
std::vector<std::filesystem::path> NumberedFiles(const std::filesystem::path& dir, const std::string& prefix);

// Reads input_<i>.pb of a data set, keyed by tensor name when it names a
// model input, else by position.
StatusOr<std::map<std::string, Tensor>> ReadInputs(const Session& s, const std::filesystem::path& data_set);

// Reads output_<i>.pb of a data set in order.
StatusOr<std::vector<Tensor>> ReadOutputs(const std::filesystem::path& data_set);
// The same for models with sequence or optional inputs or outputs: each
// file is a TensorProto, SequenceProto or OptionalProto, as the model
// declares that input or output (inputs by position).
StatusOr<std::map<std::string, Value>> ReadInputValues(const Session& s, const std::filesystem::path& data_set);
StatusOr<std::vector<Value>> ReadOutputValues(const Session& s, const std::filesystem::path& data_set);

// The runners' device flags, so that the same tests run on any plugin:
//   --plugin PATH           the PjRT plugin (default: XONNX_PLUGIN, else the CPU plugin)
//   --data-type f32|f16|bf16 the type the model computes in
//   --create-option k=v     an option of the plugin's client (repeatable)
// When argv[*i] is one of them, applies it to `options`, advances *i past its
// value and returns true; a bad value is an error; anything else returns false.
StatusOr<bool> ParseDeviceFlag(int argc, char** argv, int* i, SessionOptions* options);
extern const char kDeviceFlagsUsage[];

}  // namespace xonnx::testing

#endif  // XONNX_TESTS_TEST_DATA_H_
