#include "test_data.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/status.h"
#include "runtime/dtype.h"
#include "runtime/public_status.h"

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

StatusOr<std::map<std::string, Value>> ReadInputValues(const Session& s, const fs::path& data_set) {
  std::map<std::string, Value> inputs;
  std::vector<fs::path> files = NumberedFiles(data_set, "input_");
  for (size_t i = 0; i < files.size() && i < s.inputs().size(); ++i) {
    ASSIGN_OR_RETURN(Value v, ReadValueFile(files[i].string(), s.inputs()[i]));
    inputs[s.inputs()[i].name] = std::move(v);
  }
  return inputs;
}

StatusOr<std::vector<Value>> ReadOutputValues(const Session& s, const fs::path& data_set) {
  std::vector<Value> outs;
  std::vector<fs::path> files = NumberedFiles(data_set, "output_");
  for (size_t i = 0; i < files.size() && i < s.outputs().size(); ++i) {
    ASSIGN_OR_RETURN(Value v, ReadValueFile(files[i].string(), s.outputs()[i]));
    outs.push_back(std::move(v));
  }
  return outs;
}

const char kDeviceFlagsUsage[] =
    "[--plugin PATH] [--data-type f32|f16|bf16] [--program-format hlo|stablehlo|auto] [--create-option NAME=VALUE]...";

StatusOr<bool> ParseDeviceFlag(int argc, char** argv, int* i, SessionOptions* options) {
  std::string flag = argv[*i];
  if (flag != "--plugin" && flag != "--data-type" && flag != "--create-option" && flag != "--program-format")
    return false;
  if (*i + 1 >= argc) return ToPublic(InvalidArgument("%s needs a value", flag));
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
      return ToPublic(InvalidArgument("--data-type takes f32, f16 or bf16, not '%s'", value));
    }
  } else if (flag == "--program-format") {
    using Format = SessionOptions::ProgramFormat;
    if (value != "hlo" && value != "stablehlo" && value != "auto")
      return ToPublic(InvalidArgument("--program-format takes hlo, stablehlo or auto, not '%s'", value));
    options->program_format = value == "hlo" ? Format::kHlo : value == "stablehlo" ? Format::kStableHlo : Format::kAuto;
  } else {
    ASSIGN_OR_RETURN(CreateOption o, ParseCreateOption(value));
    options->create_options.push_back(std::move(o));
  }
  return true;
}

}  // namespace xonnx::testing
