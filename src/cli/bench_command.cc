// `xonnx bench`: times loading, compiling and calls, as onnxruntime_perf_test
// and trtexec do: a number of calls or a duration, percentiles, a JSON
// summary, every call's time in a CSV, and a progress line on a terminal.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/cli.h"

namespace xonnx::cli {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Latency statistics of the timed calls.
struct Stats {
  double min = 0, mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, max = 0, stddev = 0;
};

Stats StatsOf(std::vector<double> ms) {
  Stats st;
  if (ms.empty()) return st;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  // The nearest-rank percentile: the smallest value with at least p of the
  // calls at or below it.
  auto pct = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p * n));
    return ms[std::min(n, std::max<size_t>(rank, 1)) - 1];
  };
  st.min = ms.front();
  st.max = ms.back();
  st.median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  st.p90 = pct(0.90);
  st.p95 = pct(0.95);
  st.p99 = pct(0.99);
  double sum = 0, sq = 0;
  for (double v : ms) sum += v;
  st.mean = sum / n;
  for (double v : ms) sq += (v - st.mean) * (v - st.mean);
  st.stddev = n > 1 ? std::sqrt(sq / (n - 1)) : 0;
  return st;
}

// A progress line on stderr, redrawn at most twice a second, when stderr
// is a terminal (never in logs or pipes).
class Progress {
 public:
  Progress(const BenchArgs& a) : args_(a), on_(::isatty(STDERR_FILENO)), start_(Clock::now()), last_(start_) {}
  void Update(size_t done) {
    if (!on_ || MsSince(last_) < 500) return;
    last_ = Clock::now();
    double s = MsSince(start_) / 1000;
    if (args_.duration_s > 0)
      std::cerr << absl::StrFormat("\rbench: %zu calls, %.1f of %.1f s", done, s, args_.duration_s);
    else
      std::cerr << absl::StrFormat("\rbench: %zu of %d calls, %.1f s", done, args_.iterations, s);
    shown_ = true;
  }
  ~Progress() {
    if (shown_) std::cerr << "\r\033[K";
  }

 private:
  const BenchArgs& args_;
  bool on_, shown_ = false;
  Clock::time_point start_, last_;
};

// Times the calls: `iterations` of them, or as many as fit in the duration,
// `in_flight` at once; each call's latency from its start.
std::vector<double> TimeCalls(xonnx::Session& s, const std::map<std::string, Tensor>& inputs, const BenchArgs& a) {
  std::vector<double> ms;
  Progress progress(a);
  Clock::time_point start = Clock::now();
  auto more = [&](size_t started) {
    return a.duration_s > 0 ? MsSince(start) < a.duration_s * 1000 : started < static_cast<size_t>(a.iterations);
  };
  std::vector<std::pair<std::future<xonnx::StatusOr<std::vector<Tensor>>>, Clock::time_point>> q;
  for (size_t started = 0; more(started); ++started) {
    if (a.in_flight <= 1) {
      Clock::time_point t0 = Clock::now();
      Check(s.Run(inputs));
      ms.push_back(MsSince(t0));
    } else {
      if (static_cast<int>(q.size()) == a.in_flight) {
        Check(q.front().first.get());
        ms.push_back(MsSince(q.front().second));
        q.erase(q.begin());
      }
      q.emplace_back(s.RunAsync(inputs), Clock::now());
    }
    progress.Update(ms.size());
  }
  for (auto& [f, t0] : q) {
    Check(f.get());
    ms.push_back(MsSince(t0));
  }
  return ms;
}

// One call of each batch bucket's size (inputs of zeros with the batch
// changed): what a server meets the first time each bucket is used.
std::vector<std::pair<int64_t, double>> FirstCalls(xonnx::Session& s, const std::map<std::string, Tensor>& inputs) {
  if (s.batch_buckets().empty())
    throw CliError{"--every-bucket needs batch buckets (--max-batch/--steps or --batch-buckets)"};
  std::vector<std::pair<int64_t, double>> out;
  for (int64_t b : s.batch_buckets()) {
    std::map<std::string, Tensor> batch_inputs;
    for (const auto& spec : s.inputs()) {
      std::vector<int64_t> dims = inputs.at(spec.name).dims();
      if (!spec.dims.empty() && spec.dims[0] < 0) dims[0] = b;
      batch_inputs[spec.name] = Tensor(inputs.at(spec.name).dtype(), dims);
    }
    Clock::time_point t0 = Clock::now();
    Check(s.Run(batch_inputs));
    out.emplace_back(b, MsSince(t0));
  }
  return out;
}

void ExportTimes(const std::string& path, const std::vector<double>& ms) {
  std::ofstream f(path);
  f << "call,latency_ms\n";
  for (size_t i = 0; i < ms.size(); ++i) f << i << "," << absl::StrFormat("%.6f", ms[i]) << "\n";
  f.close();
  if (!f) throw CliError{absl::StrCat(path, ": cannot write the call times"), kExitRuntime};
}

nlohmann::json StatsJson(const Stats& st) {
  return {{"min", st.min}, {"mean", st.mean}, {"median", st.median}, {"p50", st.median},   {"p90", st.p90},
          {"p95", st.p95}, {"p99", st.p99},   {"max", st.max},       {"stddev", st.stddev}};
}

}  // namespace

int Bench(const std::string& model, const InputArgs& in, const BenchArgs& a) {
  auto s = Open(model);
  RequireTensors(model, *s);
  PrintCacheMessages(*s);
  auto inputs = LoadInputs(*s, in);
  Check(s->Prepare(inputs));
  double compile_ms = s->last_compile_ms();
  std::vector<std::pair<int64_t, double>> first_calls;
  if (a.every_bucket) first_calls = FirstCalls(*s, inputs);
  for (int i = 0; i < a.warmup; ++i) Check(s->Run(inputs));
  xonnx::RunPhases before = s->run_phases();
  Clock::time_point t_all = Clock::now();
  std::vector<double> ms = TimeCalls(*s, inputs, a);
  double total_s = MsSince(t_all) / 1000;
  if (!a.export_times.empty()) ExportTimes(a.export_times, ms);
  int64_t batch = 1;
  for (const auto& sp : s->inputs())
    if (!sp.dims.empty() && sp.dims[0] < 0) batch = inputs.at(sp.name).dims()[0];
  double per_s = total_s > 0 ? ms.size() * batch / total_s : 0;
  Stats st = StatsOf(ms);
  xonnx::RunPhases after = s->run_phases();
  int64_t calls = std::max<int64_t>(1, after.calls - before.calls);
  double upload_ms = (after.upload_ms - before.upload_ms) / calls;
  double execute_ms = (after.execute_ms - before.execute_ms) / calls;
  double download_ms = (after.download_ms - before.download_ms) / calls;
  xonnx::CompileStats cs = s->compile_stats();
  if (a.json) {
    nlohmann::json j;
    j["model"] = model;
    j["device"] = s->DeviceSummary();
    nlohmann::json shapes = nlohmann::json::object();
    for (const auto& [name, t] : inputs) shapes[name] = t.dims();
    j["input_shapes"] = shapes;
    j["batch"] = batch;
    j["load_ms"] = s->load_ms();
    j["compile_ms"] = compile_ms;
    j["compiled"] = cs.compiled;
    j["from_cache"] = cs.from_cache;
    j["cache_rejected"] = cs.cache_rejected;
    j["cache_messages"] = cs.cache_messages;
    j["buckets_ms"] = cs.buckets_ms;
    j["weights_ms"] = cs.weights_ms;
    j["latency_ms"] = StatsJson(st);
    j["phases_ms"] = {{"upload", upload_ms}, {"execute", execute_ms}, {"download", download_ms}};
    j["iterations"] = ms.size();
    j["in_flight"] = std::max(1, a.in_flight);
    j["items_per_s"] = per_s;
    j["peak_rss_mb"] = PeakRssMb();
    if (a.every_bucket) {
      nlohmann::json b = nlohmann::json::object();
      for (const auto& [size, t] : first_calls) b[std::to_string(size)] = t;
      j["bucket_first_call_ms"] = b;
    }
    std::cout << j.dump() << "\n";
  } else {
    if (a.every_bucket) {
      std::vector<std::string> parts;
      for (const auto& [size, t] : first_calls) parts.push_back(absl::StrFormat("%d: %.1f ms", size, t));
      std::cout << "first call per bucket  " << absl::StrJoin(parts, ", ") << "\n";
    }
    std::cout << absl::StrFormat(
        "device  %s\nload    %9.2f ms  (%s)\ncompile %9.2f ms  (%s; includes the first run)\n"
        "latency min %.3f ms  median %.3f ms  p90 %.3f ms  (%d runs, %d in flight)\n"
        "        mean %.3f ms  p95 %.3f ms  p99 %.3f ms  max %.3f ms  stddev %.3f ms\n"
        "phases (mean) upload %.3f ms  execute %.3f ms  download %.3f ms\n"
        "throughput %.1f items/s (batch %d)\npeak memory %.0f MB\n",
        s->DeviceSummary(), s->load_ms(), StartupLine(*s), compile_ms, s->LastProgramSummary(), st.min, st.median,
        st.p90, ms.size(), std::max(1, a.in_flight), st.mean, st.p95, st.p99, st.max, st.stddev, upload_ms, execute_ms,
        download_ms, per_s, batch, PeakRssMb());
  }
  WriteProfile(*s);
  return kExitOk;
}

}  // namespace xonnx::cli
