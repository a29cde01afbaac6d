#include "test_data.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "onnx/onnx_pb.h"
// After onnx_pb.h, which defines the export macro the generated header uses.
#include "base/status.h"
#include "onnx/onnx-data.pb.h"
#include "runtime/dtype.h"

namespace xonnx::testing {

namespace fs = std::filesystem;

std::vector<fs::path> NumberedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) v.push_back(e.path());
  auto num = [](const fs::path& p) {
    std::string s = p.stem().string();
    size_t u = s.rfind('_');
    return u == std::string::npos ? 0 : std::atoi(s.c_str() + u + 1);
  };
  std::sort(v.begin(), v.end(), [&](const fs::path& a, const fs::path& b) { return num(a) < num(b); });
  return v;
}

StatusOr<std::map<std::string, Tensor>> ReadInputs(const Session& s, const fs::path& data_set) {
  std::map<std::string, Tensor> inputs;
  std::vector<fs::path> files = NumberedFiles(data_set, "input_");
  for (size_t i = 0; i < files.size(); ++i) {
    std::string name;
    auto t = ReadTensorFile(files[i].string(), &name);
    if (!t.ok()) return t.status();
    bool known = false;
    for (const auto& sp : s.inputs()) known |= sp.name == name;
    if (!known && i < s.inputs().size()) name = s.inputs()[i].name;
    // ONNX 1.12 stores bfloat16 test data as uint16 tensors of the same bits.
    for (const auto& sp : s.inputs())
      if (sp.name == name && sp.dtype == DataType::kBFloat16 && t->dtype() == DataType::kUInt16)
        t = Tensor::FromData(DataType::kBFloat16, t->dims(), t->data());
    inputs[name] = *std::move(t);
  }
  return inputs;
}

StatusOr<std::vector<Tensor>> ReadOutputs(const fs::path& data_set) {
  std::vector<Tensor> outs;
  for (const fs::path& f : NumberedFiles(data_set, "output_")) {
    auto t = ReadTensorFile(f.string());
    if (!t.ok()) return t.status();
    outs.push_back(*std::move(t));
  }
  return outs;
}

namespace {

StatusOr<Tensor> FromProto(const onnx::TensorProto& p, const TensorSpec& spec) {
  ASSIGN_OR_RETURN(Tensor t, TensorFromProto(p));
  // ONNX 1.12 stores bfloat16 test data as uint16 tensors of the same bits.
  if (t.dtype() == DataType::kUInt16 && spec.dtype == DataType::kBFloat16)
    return Tensor::FromData(DataType::kBFloat16, t.dims(), t.data());
  return t;
}

StatusOr<Value> ReadValue(const fs::path& file, const TensorSpec& spec) {
  std::ifstream f(file, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  auto sequence = [&](const onnx::SequenceProto& p) -> StatusOr<Value> {
    std::vector<Tensor> elements;
    for (const auto& t : p.tensor_values()) {
      ASSIGN_OR_RETURN(Tensor e, FromProto(t, spec));
      elements.push_back(std::move(e));
    }
    return Value::Sequence(std::move(elements));
  };
  if (spec.optional) {
    onnx::OptionalProto p;
    if (!p.ParseFromString(bytes)) return absl::InvalidArgumentError(file.string() + ": not an OptionalProto");
    if (p.has_sequence_value()) return sequence(p.sequence_value());
    if (p.has_tensor_value()) {
      ASSIGN_OR_RETURN(Tensor t, FromProto(p.tensor_value(), spec));
      return Value::Of(std::move(t));
    }
    return Value::None();
  }
  if (spec.sequence) {
    onnx::SequenceProto p;
    if (!p.ParseFromString(bytes)) return absl::InvalidArgumentError(file.string() + ": not a SequenceProto");
    return sequence(p);
  }
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) return absl::InvalidArgumentError(file.string() + ": not a TensorProto");
  ASSIGN_OR_RETURN(Tensor t, FromProto(p, spec));
  return Value::Of(std::move(t));
}

}  // namespace

StatusOr<std::map<std::string, Value>> ReadInputValues(const Session& s, const fs::path& data_set) {
  std::map<std::string, Value> inputs;
  std::vector<fs::path> files = NumberedFiles(data_set, "input_");
  for (size_t i = 0; i < files.size() && i < s.inputs().size(); ++i) {
    ASSIGN_OR_RETURN(Value v, ReadValue(files[i], s.inputs()[i]));
    inputs[s.inputs()[i].name] = std::move(v);
  }
  return inputs;
}

StatusOr<std::vector<Value>> ReadOutputValues(const Session& s, const fs::path& data_set) {
  std::vector<Value> outs;
  std::vector<fs::path> files = NumberedFiles(data_set, "output_");
  for (size_t i = 0; i < files.size() && i < s.outputs().size(); ++i) {
    ASSIGN_OR_RETURN(Value v, ReadValue(files[i], s.outputs()[i]));
    outs.push_back(std::move(v));
  }
  return outs;
}

const char kDeviceFlagsUsage[] = "[--plugin PATH] [--data-type f32|f16|bf16] [--create-option NAME=VALUE]...";

StatusOr<bool> ParseDeviceFlag(int argc, char** argv, int* i, SessionOptions* options) {
  std::string flag = argv[*i];
  if (flag != "--plugin" && flag != "--data-type" && flag != "--create-option") return false;
  if (*i + 1 >= argc) return InvalidArgument("%s needs a value", flag);
  std::string value = argv[++*i];
  if (flag == "--plugin") {
    options->plugin = value;
  } else if (flag == "--data-type") {
    if (value == "f32") {
      options->data_type = DataType::kFloat32;
    } else if (value == "f16") {
      options->data_type = DataType::kFloat16;
    } else if (value == "bf16") {
      options->data_type = DataType::kBFloat16;
    } else {
      return InvalidArgument("--data-type takes f32, f16 or bf16, not '%s'", value);
    }
  } else {
    ASSIGN_OR_RETURN(CreateOption o, ParseCreateOption(value));
    options->create_options.push_back(std::move(o));
  }
  return true;
}

}  // namespace xonnx::testing
