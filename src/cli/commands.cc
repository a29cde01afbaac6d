// The subcommands that open a model or a plugin: run, bench, convert, info,
// devices.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"

namespace xonnx::cli {

namespace fs = std::filesystem;

// One line on what the start cost: buckets and where their programs came from.
std::string StartupLine(const xonnx::Session& s) {
  xonnx::CompileStats st = s.compile_stats();
  std::string line = absl::StrFormat("%d compiled, %d from the cache", st.compiled, st.from_cache);
  if (st.cache_rejected) absl::StrAppend(&line, ", ", st.cache_rejected, " damaged cache entries replaced");
  absl::StrAppend(&line, s.cache_dir().empty() ? "; cache off" : absl::StrCat("; cache ", s.cache_dir()));
  if (!s.batch_buckets().empty()) absl::StrAppend(&line, "; batch buckets ", absl::StrJoin(s.batch_buckets(), ","));
  if (st.buckets_ms > 0)
    absl::StrAppend(&line, absl::StrFormat("; programs %.1f ms, weights %.1f ms", st.buckets_ms, st.weights_ms));
  return line;
}

// Writes the session's profile when --profile asked for one.
void WriteProfile(const xonnx::Session& s) {
  if (g_device.profile.empty()) return;
  Check(s.WriteProfile());
  std::cerr << "xonnx: wrote the profile to " << g_device.profile
            << " (open it in ui.perfetto.dev; `xonnx profile FILE` sums it by op type)\n";
}

void PrintCacheMessages(const xonnx::Session& s) {
  for (const auto& m : s.compile_stats().cache_messages) std::cerr << "xonnx: " << m << "\n";
}

// `bench` times tensors in and out; sequences and optionals need `run` or
// the C++ API.
void RequireTensors(const std::string& model, const xonnx::Session& s) {
  for (const auto* specs : {&s.inputs(), &s.outputs()})
    for (const auto& spec : *specs)
      if (spec.sequence || spec.optional)
        throw CliError{absl::StrCat(model, ": '", spec.name, "' is a", spec.optional ? "n optional" : " sequence",
                                    "; xonnx bench times tensor models only (xonnx run runs this one)"),
                       kExitInput};
}

namespace {

// Positions of the outputs --outputs names (all when it names none).
std::vector<size_t> SelectedOutputs(const xonnx::Session& s, const std::vector<std::string>& names) {
  std::vector<size_t> out;
  if (names.empty()) {
    for (size_t i = 0; i < s.outputs().size(); ++i) out.push_back(i);
    return out;
  }
  for (const std::string& n : names) {
    size_t i = 0;
    while (i < s.outputs().size() && s.outputs()[i].name != n) ++i;
    if (i == s.outputs().size()) {
      std::vector<std::string> known;
      for (const auto& o : s.outputs()) known.push_back(absl::StrCat("'", o.name, "'"));
      throw CliError{absl::StrCat("--outputs: the model has no output named '", n,
                                  "' (its outputs: ", absl::StrJoin(known, ", "), ")"),
                     kExitInput};
    }
    out.push_back(i);
  }
  return out;
}

// output_<i>.pb (or .npy) of `dir`, one per model output, as the
// conformance data and `run --output-dir` store them.
std::vector<Tensor> ReadExpected(const std::string& dir, const xonnx::Session& s) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < s.outputs().size(); ++i) {
    fs::path pb = fs::path(dir) / absl::StrCat("output_", i, ".pb");
    fs::path npy = fs::path(dir) / absl::StrCat("output_", i, ".npy");
    if (!fs::exists(pb) && !fs::exists(npy))
      throw CliError{absl::StrCat(dir, ": no output_", i, ".pb or .npy for output '", s.outputs()[i].name, "'"),
                     kExitInput};
    out.push_back(Check(xonnx::ReadTensorFile((fs::exists(pb) ? pb : npy).string())));
  }
  return out;
}

void WriteOutputs(const RunArgs& a, const xonnx::Session& s, const std::vector<xonnx::Value>& outs,
                  const std::vector<size_t>& selected) {
  std::error_code ec;
  fs::create_directories(a.output_dir, ec);
  if (ec) throw CliError{absl::StrCat(a.output_dir, ": cannot create the output folder: ", ec.message()), kExitRuntime};
  int files = 0;
  for (size_t i : selected) {
    fs::path base = fs::path(a.output_dir) / absl::StrCat("output_", i);
    if (a.output_format != "npy") {
      Check(xonnx::WriteValueFile(base.string() + ".pb", outs[i], s.outputs()[i]));
      ++files;
    }
    if (a.output_format != "pb") {
      if (outs[i].kind != xonnx::Value::Kind::kTensor)
        throw CliError{absl::StrCat("output '", s.outputs()[i].name, "' is not a tensor: write it as .pb"), kExitInput};
      Check(xonnx::WriteNpyFile(base.string() + ".npy", outs[i].tensor));
      ++files;
    }
  }
  std::cerr << "xonnx: wrote " << selected.size() << " output(s) to " << a.output_dir << " (" << files << " file(s))\n";
}

}  // namespace

int Run(const std::string& model, const InputArgs& in, const RunArgs& a) {
  auto s = Open(model);
  PrintCacheMessages(*s);
  std::vector<size_t> selected = SelectedOutputs(*s, a.outputs);
  std::vector<xonnx::Value> outs;
  int differing = 0;
  if (TakesValues(*s)) {
    if (!a.compare.empty() || !a.expect_dir.empty())
      throw CliError{"--compare and --expect take models with tensor inputs and outputs only"};
    outs = Check(s->RunValues(LoadValueInputs(*s, in)));
  } else {
    std::map<std::string, Tensor> inputs = LoadInputs(*s, in);
    std::vector<Tensor> tensors = Check(s->Run(inputs));
    if (a.compare == "reference") {
      int d = CompareOutputs(tensors, RunOnReference(model, inputs), s->outputs(), a.tolerance, "the reference device");
      if (d) ReportFirstDifference(model, inputs, s->outputs().size(), a.tolerance);
      differing += d;
    } else if (a.compare == "buffers") {
      int d =
          CompareOutputs(tensors, RunWithDistinctBuffers(model, inputs), s->outputs(), a.tolerance, "distinct buffers");
      if (d)
        std::cout << "buffers: the program gives other values when every value has memory of its own: a "
                     "buffer-lifetime bug in xonnx's CPU plugin, not a numeric difference\n";
      differing += d;
    }
    if (!a.expect_dir.empty())
      differing += CompareOutputs(tensors, ReadExpected(a.expect_dir, *s), s->outputs(), a.tolerance, a.expect_dir);
    for (Tensor& t : tensors) outs.push_back(xonnx::Value::Of(std::move(t)));
  }
  if (!a.output_dir.empty()) {
    WriteOutputs(a, *s, outs, selected);
  } else {
    for (size_t i : selected) PrintValueSummary(s->outputs()[i], outs[i]);
  }
  WriteProfile(*s);
  return differing ? kExitDiffers : kExitOk;
}

// The process's peak resident memory so far, in MB.
double PeakRssMb() {
  struct rusage u;
  return ::getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss / 1024.0 : 0;
}

int Convert(const std::string& model, const std::vector<std::string>& shape_specs, const std::string& text_out,
            const std::string& proto_out, const std::string& stablehlo_out, int64_t batch, bool allow_partial) {
  auto s = Open(model, allow_partial, /*plugin_needed=*/false);
  auto dump = Check(s->DumpHlo(ParseShapes(shape_specs), batch, allow_partial));
  if (!dump.partial_error.empty()) std::cerr << "xonnx: partial conversion, stopped at: " << dump.partial_error << "\n";
  if (!dump.index_checks.empty()) {
    std::cerr << "xonnx: the program's last output, s64[" << 2 * dump.index_checks.size()
              << "], holds the smallest and largest value of each run-time index input, to check against its "
                 "bounds (--no-check-indices leaves it out):\n";
    for (const std::string& c : dump.index_checks) std::cerr << "  " << c << "\n";
  }
  auto write = [](const std::string& path, const std::string& bytes) {
    if (path == "-") {
      std::cout << bytes;
      return;
    }
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), bytes.size());
    if (!f) throw CliError{absl::StrCat(path, ": cannot write"), kExitRuntime};
  };
  if (!text_out.empty()) write(text_out, dump.text);
  if (!proto_out.empty()) write(proto_out, dump.proto);
  if (!stablehlo_out.empty()) write(stablehlo_out, dump.stablehlo);
  if (text_out.empty() && proto_out.empty() && stablehlo_out.empty())
    std::cerr << "xonnx: converted; give --hlo-text FILE|-, --hlo-proto FILE or --stablehlo FILE|- to write the "
                 "program\n";
  return 0;
}

}  // namespace xonnx::cli
