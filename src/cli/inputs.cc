// Inputs of run and bench (files, or seeded random values), and the
// summary of an output.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "xonnx/float16.h"

namespace xonnx::cli {

namespace fs = std::filesystem;

namespace {

// Seeded random values that are never all zero: floats in [-1, 1), integers in
// [1, 10), bools half true.
Tensor RandomTensor(DataType t, const std::vector<int64_t>& dims, std::mt19937_64& rng) {
  Tensor out(t, dims);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> ui(1, 9);
  for (int64_t i = 0; i < out.element_count(); ++i) {
    switch (t) {
      case DataType::kFloat32:
        out.data_as<float>()[i] = static_cast<float>(u(rng));
        break;
      case DataType::kFloat64:
        out.data_as<double>()[i] = u(rng);
        break;
      case DataType::kBool:
        out.data_as<bool>()[i] = rng() & 1;
        break;
      case DataType::kInt8:
        out.data_as<int8_t>()[i] = ui(rng);
        break;
      case DataType::kUInt8:
        out.data_as<uint8_t>()[i] = ui(rng);
        break;
      case DataType::kInt16:
        out.data_as<int16_t>()[i] = ui(rng);
        break;
      case DataType::kUInt16:
        out.data_as<uint16_t>()[i] = ui(rng);
        break;
      case DataType::kInt32:
        out.data_as<int32_t>()[i] = ui(rng);
        break;
      case DataType::kUInt32:
        out.data_as<uint32_t>()[i] = ui(rng);
        break;
      case DataType::kInt64:
        out.data_as<int64_t>()[i] = ui(rng);
        break;
      case DataType::kUInt64:
        out.data_as<uint64_t>()[i] = ui(rng);
        break;
      case DataType::kString:
        break;  // refused by the caller
      case DataType::kFloat16:
        out.data_as<xonnx::Half>()[i] = xonnx::Half(u(rng));
        break;
      case DataType::kBFloat16:
        out.data_as<xonnx::BFloat16>()[i] = xonnx::BFloat16(u(rng));
        break;
    }
  }
  return out;
}

// Sizes of dynamic dims seen in the inputs given: by the dim's name, and
// (key "") the leading dim when it is dynamic and unnamed, a batch.
using DimSizes = std::map<std::string, int64_t>;

// The DimSizes key of `sp`'s dim d (dynamic): its name, "" for an unnamed
// leading dim, nothing for another unnamed one.
std::optional<std::string> DimKey(const xonnx::TensorSpec& sp, size_t d) {
  std::string name = d < sp.dim_names.size() ? sp.dim_names[d] : "";
  if (name.empty() && d != 0) return std::nullopt;
  return name;
}

DimSizes SizesGiven(const std::vector<xonnx::TensorSpec>& specs, const std::map<std::string, Tensor>& given) {
  DimSizes sizes;
  for (const auto& sp : specs) {
    auto it = given.find(sp.name);
    if (it == given.end() || it->second.dims().size() != sp.dims.size()) continue;
    for (size_t d = 0; d < sp.dims.size(); ++d)
      if (sp.dims[d] < 0)
        if (std::optional<std::string> key = DimKey(sp, d)) sizes.emplace(*key, it->second.dims()[d]);
  }
  return sizes;
}

// The value of a tensor input not given: random, of the --shape given or
// the declared dims; a dynamic dim takes the size the inputs given have for
// a dim of that name (or, leading and unnamed, their batch), else 1. Said
// on stderr.
Tensor RandomInput(const xonnx::TensorSpec& sp, const xonnx::ShapeMap& given, const DimSizes& sizes, uint64_t seed,
                   std::mt19937_64& rng) {
  std::vector<int64_t> dims = sp.dims;
  auto g = given.find(sp.name);
  if (g != given.end()) dims = g->second;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] >= 0) continue;
    std::optional<std::string> key = DimKey(sp, d);
    auto known = key ? sizes.find(*key) : sizes.end();
    dims[d] = known != sizes.end() ? known->second : 1;
  }
  if (sp.dtype == DataType::kString)
    throw CliError{absl::StrCat("string input '", sp.name, "' must be given with --input or --input-dir"), kExitInput};
  Tensor t = RandomTensor(sp.dtype, dims, rng);
  std::cerr << "xonnx: input '" << sp.name << "' not given: using random " << t.ShapeString() << " (seed " << seed
            << ")\n";
  return t;
}

// The spec of the input an --input names; refuses a name the model does
// not have, listing the ones it has.
const xonnx::TensorSpec& InputNamed(const std::vector<xonnx::TensorSpec>& specs, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& sp : specs) {
    if (sp.name == name) return sp;
    names.push_back(absl::StrCat("'", sp.name, "'"));
  }
  throw CliError{absl::StrCat("--input: the model has no input named '", name,
                              "'; its inputs: ", names.empty() ? "none" : absl::StrJoin(names, ", ")),
                 kExitInput};
}

}  // namespace

// Builds the input map: files first, then random values for the rest.
std::map<std::string, Tensor> LoadInputs(xonnx::Session& s, const InputArgs& a) {
  std::map<std::string, Tensor> m;
  const auto& specs = s.inputs();
  for (const auto& kv : a.inputs) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() != 2) throw CliError{absl::StrCat("--input '", kv, "': expected NAME=FILE")};
    InputNamed(specs, p[0]);
    m[p[0]] = Check(xonnx::ReadTensorFile(p[1]));
  }
  if (!a.input_dir.empty()) {
    if (!fs::is_directory(a.input_dir)) throw CliError{absl::StrCat(a.input_dir, ": not a directory"), kExitInput};
    for (size_t i = 0;; ++i) {
      fs::path pb = fs::path(a.input_dir) / absl::StrCat("input_", i, ".pb");
      fs::path npy = fs::path(a.input_dir) / absl::StrCat("input_", i, ".npy");
      fs::path f = fs::exists(pb) ? pb : npy;
      if (!fs::exists(f)) break;
      std::string name;
      Tensor t = Check(xonnx::ReadTensorFile(f.string(), &name));
      bool named = false;
      for (const auto& sp : specs) named |= sp.name == name;
      if (!named) {  // match by position
        if (i >= specs.size())
          throw CliError{absl::StrCat(f.string(), ": the model has only ", specs.size(), " inputs"), kExitInput};
        name = specs[i].name;
      }
      if (!m.count(name)) m[name] = std::move(t);
    }
    // A folder given is the inputs: none of them made up at random.
    std::vector<std::string> missing;
    for (const auto& sp : specs)
      if (!m.count(sp.name)) missing.push_back(absl::StrCat("'", sp.name, "'"));
    if (!missing.empty())
      throw CliError{absl::StrCat(a.input_dir, ": no input_<i>.pb or .npy for input", missing.size() > 1 ? "s " : " ",
                                  absl::StrJoin(missing, ", "), " (the model has ", specs.size(), " input",
                                  specs.size() > 1 ? "s" : "", ")"),
                     kExitInput};
  }
  // ONNX 1.12's test data stores bfloat16 tensors as uint16 of the same bits.
  for (const auto& sp : specs) {
    auto it = m.find(sp.name);
    if (it != m.end() && sp.dtype == DataType::kBFloat16 && it->second.dtype() == DataType::kUInt16)
      it->second = Tensor::FromData(DataType::kBFloat16, it->second.dims(), it->second.data());
  }
  // Float files meet a model whose host type is another float type (--io-data-type).
  auto is_float = [](DataType t) {
    return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
  };
  for (const auto& sp : specs) {
    auto it = m.find(sp.name);
    if (it == m.end() || it->second.dtype() == sp.dtype || !is_float(sp.dtype) || !is_float(it->second.dtype()))
      continue;
    Tensor c(sp.dtype, it->second.dims());
    for (int64_t i = 0; i < c.element_count(); ++i) {
      double v = it->second.GetAsDouble(i);
      if (sp.dtype == DataType::kFloat32)
        c.data_as<float>()[i] = static_cast<float>(v);
      else if (sp.dtype == DataType::kFloat16)
        c.data_as<xonnx::Half>()[i] = xonnx::Half(v);
      else
        c.data_as<xonnx::BFloat16>()[i] = xonnx::BFloat16(v);
    }
    it->second = std::move(c);
  }
  xonnx::ShapeMap given = ParseShapes(a.shapes);
  for (const auto& [name, dims] : given) {
    bool known = false;
    for (const auto& sp : specs) known |= sp.name == name;
    if (!known) throw CliError{absl::StrCat("--shape: the model has no input named '", name, "'"), kExitInput};
  }
  std::mt19937_64 rng(a.seed);
  const DimSizes sizes = SizesGiven(specs, m);
  for (const auto& sp : specs)
    if (!m.count(sp.name)) m[sp.name] = RandomInput(sp, given, sizes, a.seed, rng);
  return m;
}

bool TakesValues(const xonnx::Session& s) {
  for (const auto* specs : {&s.inputs(), &s.outputs()})
    for (const auto& spec : *specs)
      if (spec.sequence || spec.optional) return true;
  return false;
}

std::map<std::string, xonnx::Value> LoadValueInputs(xonnx::Session& s, const InputArgs& a) {
  std::map<std::string, xonnx::Value> m;
  const auto& specs = s.inputs();
  for (const auto& kv : a.inputs) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() != 2) throw CliError{absl::StrCat("--input '", kv, "': expected NAME=FILE")};
    m[p[0]] = Check(xonnx::ReadValueFile(p[1], InputNamed(specs, p[0])));
  }
  if (!a.input_dir.empty()) {
    if (!fs::is_directory(a.input_dir)) throw CliError{absl::StrCat(a.input_dir, ": not a directory"), kExitInput};
    // Files of sequences and optionals carry no reliable name: by position.
    for (size_t i = 0; i < specs.size(); ++i) {
      fs::path pb = fs::path(a.input_dir) / absl::StrCat("input_", i, ".pb");
      if (!fs::exists(pb)) break;
      if (!m.count(specs[i].name)) m[specs[i].name] = Check(xonnx::ReadValueFile(pb.string(), specs[i]));
    }
    if (m.empty()) throw CliError{absl::StrCat(a.input_dir, ": no input_<i>.pb files"), kExitInput};
  }
  // Tensors not given get random values, as in LoadInputs; an optional not
  // given is empty; a sequence must be given.
  xonnx::ShapeMap given = ParseShapes(a.shapes);
  std::mt19937_64 rng(a.seed);
  for (const auto& sp : specs) {
    if (m.count(sp.name)) continue;
    if (sp.optional) {
      std::cerr << "xonnx: optional input '" << sp.name << "' not given: empty\n";
      m[sp.name] = xonnx::Value::None();
    } else if (sp.sequence) {
      throw CliError{absl::StrCat("sequence input '", sp.name, "' must be given with --input or --input-dir"),
                     kExitInput};
    } else {
      m[sp.name] = xonnx::Value::Of(RandomInput(sp, given, {}, a.seed, rng));
    }
  }
  return m;
}

void PrintValueSummary(const xonnx::TensorSpec& spec, const xonnx::Value& v) {
  switch (v.kind) {
    case xonnx::Value::Kind::kTensor:
      PrintSummary(spec, v.tensor);
      return;
    case xonnx::Value::Kind::kNone:
      std::cout << spec.name << ": empty optional\n";
      return;
    case xonnx::Value::Kind::kSequence:
      std::cout << spec.name << ": sequence of " << v.elements.size() << "\n";
      for (size_t k = 0; k < v.elements.size(); ++k) {
        xonnx::TensorSpec element = spec;
        element.name = absl::StrCat("  [", k, "]");
        PrintSummary(element, v.elements[k]);
      }
      return;
  }
}

void PrintSummary(const xonnx::TensorSpec& spec, const Tensor& t) {
  int64_t n = t.element_count();
  if (t.dtype() == DataType::kString) {
    std::vector<std::string> first;
    for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) first.push_back(absl::StrCat("\"", t.strings()[i], "\""));
    std::cout << spec.name << ": " << t.ShapeString() << " [" << absl::StrJoin(first, ", ") << (n > 6 ? ", ..." : "")
              << "]\n";
    return;
  }
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.GetAsDouble(i);
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  std::vector<std::string> first;
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) first.push_back(absl::StrFormat("%.6g", t.GetAsDouble(i)));
  std::cout << spec.name << ": " << t.ShapeString();
  if (n) std::cout << absl::StrFormat(" min=%.6g max=%.6g mean=%.6g", mn, mx, sum / n);
  std::cout << " [" << absl::StrJoin(first, ", ") << (n > 6 ? ", ..." : "") << "]\n";
}

}  // namespace xonnx::cli
