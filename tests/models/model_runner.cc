// Runs exported real models (see export_models.py) through xonnx::Session
// and checks ||out - ref|| / ||ref|| <= --tolerance for every data set.
// With --native-only, a model also fails when any instruction of its
// programs runs on a reference-evaluator kernel (the CPU plugin's kernel
// listing, written with XONNX_DUMP_TO, names such kernels "kernel:<op>",
// and "control-flow" for computations it could not compile) or on oneDNN's
// reference implementation (kinds ending in "-ref").
//
//   model_runner --models DIR [--tolerance 1e-4] [--native-only]
//                [--plugin PATH] [--data-type f32|f16|bf16] [--create-option K=V]
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "test_data.h"

namespace fs = std::filesystem;

namespace {

// The kernels of the listings in `dir` that run on the reference evaluator
// or oneDNN's reference implementation, as "kind instruction"; the listings
// are removed once read.
std::vector<std::string> ReferenceKernels(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::ifstream f(e.path());
    std::string line;
    bool listing = false;
    while (std::getline(f, line)) {
      if (line.rfind("# Kernels in run order", 0) == 0) {
        listing = true;
        continue;
      }
      if (!listing) continue;
      std::istringstream fields(line);
      std::string index, kind, name;
      fields >> index >> kind >> name;
      const bool onednn_ref = kind.size() > 4 && kind.compare(kind.size() - 4, 4, "-ref") == 0;
      if (kind.rfind("kernel:", 0) == 0 || kind == "control-flow" || onednn_ref) found.push_back(kind + " " + name);
    }
    f.close();
    fs::remove(e.path(), ec);
  }
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  std::set<std::string> only;  // model folder names; empty: all
  double tolerance = 1e-4;
  bool native_only = false;
  xonnx::SessionOptions base;
  base.use_cache = false;  // these runs test conversion; a compile cache would skip it
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto device_flag = xonnx::testing::ParseDeviceFlag(argc, argv, &i, &base);
    if (!device_flag.ok()) {
      std::cerr << "model_runner: " << device_flag.status().message() << "\n";
      return 2;
    }
    if (*device_flag) continue;
    if (a == "--models" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--tolerance" && i + 1 < argc)
      tolerance = std::atof(argv[++i]);
    else if (a == "--native-only")
      native_only = true;
    else if (a == "--only" && i + 1 < argc)
      for (absl::string_view name : absl::StrSplit(argv[++i], ',', absl::SkipEmpty())) only.insert(std::string(name));
    else {
      std::cerr << "usage: model_runner --models DIR [--only NAME,...] [--tolerance 1e-4] [--native-only] "
                << xonnx::testing::kDeviceFlagsUsage << "\n";
      return 2;
    }
  }
  if (dir.empty() || !fs::is_directory(dir)) {
    std::cerr << "model_runner: --models must name the exported models folder\n";
    return 2;
  }
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator(dir))
    if (fs::exists(e.path() / "model.onnx") && (only.empty() || only.count(e.path().filename().string())))
      models.push_back(e.path());
  std::sort(models.begin(), models.end());
  fs::path dumps = fs::temp_directory_path() / ("xonnx_model_runner_" + std::to_string(::getpid()));
  if (native_only) {
    fs::remove_all(dumps);
    fs::create_directories(dumps);
    ::setenv("XONNX_DUMP_TO", dumps.c_str(), 1);
  }
  int passed = 0, failed = 0;
  for (const fs::path& m : models) {
    auto s = xonnx::Session::Open((m / "model.onnx").string(), base);
    if (!s.ok()) {
      std::cout << "FAIL " << m.filename().string() << ": " << s.status().message() << "\n";
      ++failed;
      if (native_only) ReferenceKernels(dumps);  // clears what it compiled, if anything
      continue;
    }
    bool signal = false;  // some reference output of the model is not all zeros
    for (const fs::path& set : xonnx::testing::NumberedFiles(m, "test_data_set_")) {
      std::string label = absl::StrFormat("%s/%s", m.filename().string(), set.filename().string());
      auto inputs = xonnx::testing::ReadInputs(**s, set);
      auto want = xonnx::testing::ReadOutputs(set);
      if (!inputs.ok() || !want.ok()) {
        std::cout << "FAIL " << label << ": cannot read test data\n";
        ++failed;
        continue;
      }
      auto got = (*s)->Run(*inputs);
      if (!got.ok()) {
        std::cout << "FAIL " << label << ": " << got.status().message() << "\n";
        ++failed;
        continue;
      }
      double worst = 0;
      bool shapes_ok = got->size() == want->size();
      bool zero_ref = false;
      for (size_t k = 0; shapes_ok && k < got->size(); ++k) {
        const auto& g = (*got)[k];
        const auto& w = (*want)[k];
        if (g.dims() != w.dims()) {
          shapes_ok = false;
          break;
        }
        double diff = 0, ref = 0;
        for (int64_t i = 0; i < g.element_count(); ++i) {
          double d = g.GetAsDouble(i) - w.GetAsDouble(i);
          diff += d * d;
          ref += w.GetAsDouble(i) * w.GetAsDouble(i);
        }
        zero_ref |= ref == 0;
        signal |= ref != 0;
        worst = std::max(worst, std::sqrt(diff) / std::max(std::sqrt(ref), 1e-30));
      }
      // An all-zero (or empty) reference output must be matched exactly
      // (the relative error divides by almost nothing); the model as a
      // whole must have some other output (checked below).
      bool ok = shapes_ok && worst <= tolerance;
      if (zero_ref) std::cout << "     " << label << ": a reference output is all zeros or empty (compared exactly)\n";
      std::cout << absl::StrFormat("%s %-50s rel_l2=%.3g\n", ok ? "PASS" : "FAIL", label, shapes_ok ? worst : NAN);
      (ok ? passed : failed)++;
    }
    // All-zero references everywhere would let a broken model pass.
    if (!signal) {
      std::cout << "FAIL " << m.filename().string() << ": every reference output is all zeros\n";
      ++failed;
    }
    if (native_only) {
      std::vector<std::string> slow = ReferenceKernels(dumps);
      for (const std::string& k : slow) std::cout << "     " << m.filename().string() << ": runs " << k << "\n";
      std::cout << (slow.empty() ? "PASS " : "FAIL ") << m.filename().string() << ": "
                << (slow.empty() ? "every kernel native" : "runs on the reference evaluator's kernels") << "\n";
      (slow.empty() ? passed : failed)++;
    }
    std::cout.flush();  // a crash in the next model keeps this one's lines
  }
  if (native_only) fs::remove_all(dumps);
  std::cout << absl::StrFormat("%d passed, %d failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
