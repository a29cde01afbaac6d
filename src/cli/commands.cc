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

int Devices() {
  xonnx::PluginInfo p = Check(xonnx::DescribePlugin(BaseOptions()));
  std::cout << "plugin:   " << p.path << "\napi:      PjRT C API " << p.api_major << "." << p.api_minor
            << "\nplatform: " << p.platform_name << " (" << p.platform_version << ")\n";
  if (!p.attributes.empty()) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : p.attributes) kv.push_back(absl::StrCat(k, "=", v));
    std::cout << "attributes: " << absl::StrJoin(kv, " ") << "\n";
  }
  std::cout << "devices:\n";
  for (const auto& d : p.devices) {
    std::cout << absl::StrFormat("  %d: %s  (kind %s, id %d, local hardware id %d)", d.index,
                                 d.description.empty() ? "-" : d.description, d.kind.empty() ? "?" : d.kind, d.id,
                                 d.local_hardware_id);
    for (const auto& [k, v] : d.attributes) std::cout << " " << k << "=" << v;
    std::cout << "\n";
  }
  return 0;
}

int AllPlugins() {
  for (const xonnx::FoundPlugin& p : xonnx::FindPlugins()) {
    std::cout << absl::StrFormat("%-6s %s\n       found in %s\n       ", p.name, p.path, p.source);
    if (p.refused.empty()) {
      std::cout << "loads: PjRT C API " << p.api_major << "." << p.api_minor << "\n";
    } else {
      std::cout << "refused: " << p.refused << "\n";
    }
  }
  return 0;
}

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
                                    "; xonnx bench times tensor models only (xonnx run runs this one)")};
}

int Run(const std::string& model, const InputArgs& in, const std::string& output_dir, const std::string& compare,
        double tolerance) {
  auto s = Open(model);
  PrintCacheMessages(*s);
  std::vector<xonnx::Value> outs;
  int differing = 0;
  if (TakesValues(*s)) {
    if (!compare.empty()) throw CliError{"--compare takes models with tensor inputs and outputs only"};
    outs = Check(s->RunValues(LoadValueInputs(*s, in)));
  } else {
    std::map<std::string, Tensor> inputs = LoadInputs(*s, in);
    std::vector<Tensor> tensors = Check(s->Run(inputs));
    if (!compare.empty()) differing = CompareWithReference(model, inputs, tensors, s->outputs(), tolerance);
    for (Tensor& t : tensors) outs.push_back(xonnx::Value::Of(std::move(t)));
  }
  if (!output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(output_dir, ec);
    if (ec) throw CliError{absl::StrCat(output_dir, ": cannot create the output folder: ", ec.message())};
    for (size_t i = 0; i < outs.size(); ++i)
      Check(xonnx::WriteValueFile((fs::path(output_dir) / absl::StrCat("output_", i, ".pb")).string(), outs[i],
                                  s->outputs()[i]));
    std::cerr << "xonnx: wrote " << outs.size() << " output(s) to " << output_dir << "\n";
  } else {
    for (size_t i = 0; i < outs.size(); ++i) PrintValueSummary(s->outputs()[i], outs[i]);
  }
  WriteProfile(*s);
  return differing ? 1 : 0;
}

// The process's peak resident memory so far, in MB.
double PeakRssMb() {
  struct rusage u;
  return ::getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss / 1024.0 : 0;
}

int Bench(const std::string& model, const InputArgs& in, int warmup, int iterations, bool json, int in_flight,
          bool every_bucket) {
  auto s = Open(model);
  RequireTensors(model, *s);
  PrintCacheMessages(*s);
  auto inputs = LoadInputs(*s, in);
  Check(s->Prepare(inputs));
  double compile_ms = s->last_compile_ms();
  // One call of each batch bucket's size (inputs of zeros with the batch
  // changed): what a server meets the first time each bucket is used.
  std::vector<std::pair<int64_t, double>> first_calls;
  if (every_bucket) {
    if (s->batch_buckets().empty())
      throw CliError{"--every-bucket needs batch buckets (--max-batch/--steps or --batch-buckets)"};
    for (int64_t b : s->batch_buckets()) {
      std::map<std::string, Tensor> batch_inputs;
      for (const auto& spec : s->inputs()) {
        std::vector<int64_t> dims = inputs.at(spec.name).dims();
        if (!spec.dims.empty() && spec.dims[0] < 0) dims[0] = b;
        batch_inputs[spec.name] = Tensor(inputs.at(spec.name).dtype(), dims);
      }
      auto t0 = std::chrono::steady_clock::now();
      Check(s->Run(batch_inputs));
      first_calls.emplace_back(
          b, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  for (int i = 0; i < warmup; ++i) Check(s->Run(inputs));
  xonnx::RunPhases phases_before = s->run_phases();
  std::vector<double> ms;
  auto t_all = std::chrono::steady_clock::now();
  if (in_flight <= 1) {
    for (int i = 0; i < iterations; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      Check(s->Run(inputs));
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  } else {
    // Keep `in_flight` calls running; a call's latency is from its start.
    std::vector<std::pair<std::future<xonnx::StatusOr<std::vector<Tensor>>>, std::chrono::steady_clock::time_point>> q;
    for (int i = 0; i < iterations; ++i) {
      if (static_cast<int>(q.size()) == in_flight) {
        Check(q.front().first.get());
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - q.front().second).count());
        q.erase(q.begin());
      }
      q.emplace_back(s->RunAsync(inputs), std::chrono::steady_clock::now());
    }
    for (auto& [f, t0] : q) {
      Check(f.get());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  int64_t batch = 1;
  for (const auto& sp : s->inputs())
    if (!sp.dims.empty() && sp.dims[0] < 0) batch = inputs.at(sp.name).dims()[0];
  double per_s = total_s > 0 ? iterations * batch / total_s : 0;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms.empty() ? 0.0 : ms[std::min<size_t>(ms.size() - 1, static_cast<size_t>(p * ms.size()))];
  };
  double median =
      ms.empty() ? 0 : (ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2);
  xonnx::RunPhases phases = s->run_phases();
  int64_t phase_calls = std::max<int64_t>(1, phases.calls - phases_before.calls);
  double upload_ms = (phases.upload_ms - phases_before.upload_ms) / phase_calls;
  double execute_ms = (phases.execute_ms - phases_before.execute_ms) / phase_calls;
  double download_ms = (phases.download_ms - phases_before.download_ms) / phase_calls;
  xonnx::CompileStats st = s->compile_stats();
  if (json) {
    nlohmann::json j;
    j["load_ms"] = s->load_ms();
    j["compile_ms"] = compile_ms;
    j["compiled"] = st.compiled;
    j["from_cache"] = st.from_cache;
    j["cache_rejected"] = st.cache_rejected;
    j["cache_messages"] = st.cache_messages;
    j["buckets_ms"] = st.buckets_ms;
    j["weights_ms"] = st.weights_ms;
    j["latency_ms"] = {{"min", ms.empty() ? 0 : ms.front()}, {"median", median}, {"p90", pct(0.9)}};
    j["phases_ms"] = {{"upload", upload_ms}, {"execute", execute_ms}, {"download", download_ms}};
    j["iterations"] = iterations;
    j["items_per_s"] = per_s;
    j["peak_rss_mb"] = PeakRssMb();
    if (every_bucket) {
      nlohmann::json b = nlohmann::json::object();
      for (const auto& [size, t] : first_calls) b[std::to_string(size)] = t;
      j["bucket_first_call_ms"] = b;
    }
    std::cout << j.dump() << "\n";
  } else {
    if (every_bucket) {
      std::vector<std::string> parts;
      for (const auto& [size, t] : first_calls) parts.push_back(absl::StrFormat("%d: %.1f ms", size, t));
      std::cout << "first call per bucket  " << absl::StrJoin(parts, ", ") << "\n";
    }
    std::cout << absl::StrFormat(
        "device  %s\nload    %9.2f ms  (%s)\ncompile %9.2f ms  (%s; includes the first run)\n"
        "latency min %.3f ms  median %.3f ms  p90 %.3f ms  (%d runs, %d in flight)\n"
        "phases (mean) upload %.3f ms  execute %.3f ms  download %.3f ms\n"
        "throughput %.1f items/s (batch %d)\npeak memory %.0f MB\n",
        s->DeviceSummary(), s->load_ms(), StartupLine(*s), compile_ms, s->LastProgramSummary(),
        ms.empty() ? 0 : ms.front(), median, pct(0.9), iterations, std::max(1, in_flight), upload_ms, execute_ms,
        download_ms, per_s, batch, PeakRssMb());
  }
  WriteProfile(*s);
  return 0;
}

int Convert(const std::string& model, const std::vector<std::string>& shape_specs, const std::string& text_out,
            const std::string& proto_out, int64_t batch, bool allow_partial) {
  auto s = Open(model, allow_partial);
  auto dump = Check(s->DumpHlo(ParseShapes(shape_specs), batch, allow_partial));
  if (!dump.partial_error.empty()) std::cerr << "xonnx: partial conversion, stopped at: " << dump.partial_error << "\n";
  if (text_out == "-") {
    std::cout << dump.text;
  } else if (!text_out.empty()) {
    std::ofstream f(text_out);
    f << dump.text;
    if (!f) throw CliError{absl::StrCat(text_out, ": cannot write")};
  }
  if (!proto_out.empty()) {
    std::ofstream f(proto_out, std::ios::binary);
    f.write(dump.proto.data(), dump.proto.size());
    if (!f) throw CliError{absl::StrCat(proto_out, ": cannot write")};
  }
  if (text_out.empty() && proto_out.empty())
    std::cerr << "xonnx: converted; give --hlo-text FILE|- or --hlo-proto FILE to write the HLO\n";
  return 0;
}

std::string DimsString(const xonnx::TensorSpec& s) {
  std::vector<std::string> d;
  for (size_t i = 0; i < s.dims.size(); ++i)
    d.push_back(s.dims[i] >= 0 ? absl::StrCat(s.dims[i]) : (s.dim_names[i].empty() ? "?" : s.dim_names[i]));
  std::string t = absl::StrCat(xonnx::DataTypeName(s.dtype), "[", absl::StrJoin(d, ","), "]");
  if (s.sequence) t = absl::StrCat("sequence of ", t);
  if (s.optional) t = absl::StrCat("optional ", t);
  return t;
}

int Info(const std::string& model) {
  auto s = Open(model, /*allow_unsupported=*/true);
  xonnx::ModelInfo info = s->Info();
  std::cout << "model:    " << model << "\nproducer: " << info.producer << "\nir:       " << info.ir_version
            << "\nopsets:  ";
  for (const auto& [d, v] : info.opsets) std::cout << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
  std::cout << "\nweights:  " << absl::StrFormat("%.2f MiB", info.initializer_bytes / 1048576.0) << "\ninputs:\n";
  for (const auto& i : s->inputs()) std::cout << "  " << i.name << ": " << DimsString(i) << "\n";
  std::cout << "outputs:\n";
  for (const auto& o : s->outputs()) std::cout << "  " << o.name << ": " << DimsString(o) << "\n";
  std::cout << "ops:\n";
  for (const auto& [op, n] : info.op_counts) std::cout << "  " << op << " x" << n << "\n";
  if (!info.host_nodes.empty()) {
    std::cout << "runs on the host (the graph is split into " << info.device_programs
              << " device program(s) around these nodes):\n";
    for (const auto& h : info.host_nodes) std::cout << "  " << h << "\n";
  }
  if (!info.value_nodes.empty()) {
    std::cout << "compiled for values computed at run time (the graph is split into " << info.device_programs
              << " device program(s); each of these nodes starts one, which receives its shape-like input and "
                 "compiles once per distinct value):\n";
    for (const auto& h : info.value_nodes) std::cout << "  " << h << "\n";
  }
  if (info.unsupported.empty()) {
    std::cout << "unsupported: none\n";
  } else {
    std::cout << "unsupported:\n";
    for (const auto& u : info.unsupported) std::cout << "  " << u << "\n";
  }
  return 0;
}

}  // namespace xonnx::cli
