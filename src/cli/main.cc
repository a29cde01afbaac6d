// The `xonnx` command: run, bench, convert and info over xonnx::Session.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "xonnx/cache.h"
#include "xonnx/float16.h"
#include "xonnx/session.h"

namespace {

namespace fs = std::filesystem;
using xonnx::DataType;
using xonnx::Tensor;

// Thrown inside the CLI only, turned into a one-line message and exit code 1.
struct CliError {
  std::string message;
};

template <typename T>
T Check(xonnx::StatusOr<T> s) {
  if (!s.ok()) throw CliError{std::string(s.status().message())};
  return *std::move(s);
}
void Check(const xonnx::Status& s) {
  if (!s.ok()) throw CliError{std::string(s.message())};
}

// "name=1x3x224x224" -> shape map entry.
xonnx::ShapeMap ParseShapes(const std::vector<std::string>& specs) {
  xonnx::ShapeMap m;
  for (const auto& spec : specs) {
    std::vector<std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty())
      throw CliError{absl::StrCat("--shape '", spec, "': expected NAME=DIMxDIMx...")};
    std::vector<int64_t> dims;
    if (!kv[1].empty()) {
      for (absl::string_view d : absl::StrSplit(kv[1], absl::ByAnyChar("x,"))) {
        int64_t v;
        if (!absl::SimpleAtoi(d, &v) || v < 0)
          throw CliError{absl::StrCat("--shape '", spec, "': bad dimension '", d, "'")};
        dims.push_back(v);
      }
    }
    m[kv[0]] = dims;
  }
  return m;
}

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

struct InputArgs {
  std::vector<std::string> inputs;  // NAME=FILE
  std::string input_dir;
  std::vector<std::string> shapes;
  uint64_t seed = 0;
};

// Builds the input map: files first, then random values for the rest.
std::map<std::string, Tensor> LoadInputs(xonnx::Session& s, const InputArgs& a) {
  std::map<std::string, Tensor> m;
  const auto& specs = s.inputs();
  for (const auto& kv : a.inputs) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() != 2) throw CliError{absl::StrCat("--input '", kv, "': expected NAME=FILE")};
    m[p[0]] = Check(xonnx::ReadTensorFile(p[1]));
  }
  if (!a.input_dir.empty()) {
    if (!fs::is_directory(a.input_dir)) throw CliError{absl::StrCat(a.input_dir, ": not a directory")};
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
          throw CliError{absl::StrCat(f.string(), ": the model has only ", specs.size(), " inputs")};
        name = specs[i].name;
      }
      if (!m.count(name)) m[name] = std::move(t);
    }
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
    if (!known) throw CliError{absl::StrCat("--shape: the model has no input named '", name, "'")};
  }
  std::mt19937_64 rng(a.seed);
  for (const auto& sp : specs) {
    if (m.count(sp.name)) continue;
    std::vector<int64_t> dims = sp.dims;
    auto g = given.find(sp.name);
    if (g != given.end()) dims = g->second;
    for (auto& d : dims)
      if (d < 0) d = 1;
    if (sp.dtype == DataType::kString)
      throw CliError{absl::StrCat("string input '", sp.name, "' must be given with --input or --input-dir")};
    m[sp.name] = RandomTensor(sp.dtype, dims, rng);
    std::cerr << "xonnx: input '" << sp.name << "' not given: using random " << m[sp.name].ShapeString() << " (seed "
              << a.seed << ")\n";
  }
  return m;
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

// Where DefaultCacheDir looks, for --help.
constexpr char kCacheDirDefault[] = "(default: $XONNX_CACHE_DIR, else $XDG_CACHE_HOME/xonnx, else ~/.cache/xonnx)";

// Where and how a model runs: --plugin, --device, --create-option, buckets,
// data types and the compile cache.
struct DeviceArgs {
  std::string plugin;
  std::string device = "0";
  std::vector<std::string> create_options;
  int64_t max_batch = 0, steps = 1;
  std::string batch_buckets;
  std::vector<std::string> dim_buckets;
  std::string cache_dir;
  bool no_cache = false;
  std::string data_type = "f32", io_data_type = "f32";
  int compile_threads = 0;
};
DeviceArgs g_device;

std::vector<int64_t> ParseSizes(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int64_t v;
    if (!absl::SimpleAtoi(part, &v) || v < 1)
      throw CliError{absl::StrCat(flag, " '", text, "': expected a comma list of sizes >= 1, e.g. 1,8,64")};
    out.push_back(v);
  }
  if (out.empty()) throw CliError{absl::StrCat(flag, " '", text, "': no sizes given")};
  return out;
}

DataType ParseFloatType(const std::string& text, const std::string& flag) {
  if (text == "f32" || text == "float32") return DataType::kFloat32;
  if (text == "f16" || text == "float16") return DataType::kFloat16;
  if (text == "bf16" || text == "bfloat16") return DataType::kBFloat16;
  throw CliError{absl::StrCat(flag, " '", text, "': expected f32, f16 or bf16")};
}

// A progress bar on stderr while buckets compile, when it is a terminal.
void ShowProgress(int done, int total) {
  constexpr int kWidth = 30;
  int filled = total ? done * kWidth / total : kWidth;
  std::cerr << "\rxonnx: compiling buckets [" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
            << done << "/" << total << (done == total ? "\n" : "") << std::flush;
}

xonnx::SessionOptions BaseOptions() {
  xonnx::SessionOptions o;
  o.plugin = g_device.plugin;
  if (g_device.device == "all") {
    o.device = xonnx::SessionOptions::kAllDevices;
  } else if (!absl::SimpleAtoi(g_device.device, &o.device) || o.device < 0) {
    throw CliError{
        absl::StrCat("--device '", g_device.device, "': expected a device index (see `xonnx devices`) or 'all'")};
  }
  for (const auto& text : g_device.create_options) {
    o.create_options.push_back(Check(xonnx::ParseCreateOption(text)));
  }
  o.max_batch = g_device.max_batch;
  o.steps = g_device.steps;
  if (!g_device.batch_buckets.empty()) o.batch_buckets = ParseSizes(g_device.batch_buckets, "--batch-buckets");
  for (const auto& spec : g_device.dim_buckets) {
    std::vector<std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty())
      throw CliError{absl::StrCat("--dim-buckets '", spec, "': expected NAME=16,32,64")};
    o.dim_buckets[kv[0]] = ParseSizes(kv[1], "--dim-buckets");
  }
  o.data_type = ParseFloatType(g_device.data_type, "--data-type");
  o.io_data_type = ParseFloatType(g_device.io_data_type, "--io-data-type");
  o.use_cache = !g_device.no_cache;
  o.cache_dir = g_device.cache_dir;
  o.compile_threads = g_device.compile_threads;
  if (isatty(STDERR_FILENO)) o.compile_progress = ShowProgress;
  return o;
}

std::unique_ptr<xonnx::Session> Open(const std::string& path, bool allow_unsupported = false) {
  xonnx::SessionOptions o = BaseOptions();
  o.allow_unsupported = allow_unsupported;
  return Check(xonnx::Session::Open(path, o));
}

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

// "12.3 MiB": a size for people.
std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", v, units[u]);
}

// "3 h ago": how long since a time, for people.
std::string Ago(int64_t then, int64_t now) {
  int64_t d = std::max<int64_t>(0, now - then);
  if (d < 120) return absl::StrCat(d, " s ago");
  if (d < 7200) return absl::StrCat(d / 60, " min ago");
  if (d < 2 * 86400) return absl::StrCat(d / 3600, " h ago");
  return absl::StrCat(d / 86400, " days ago");
}

// "500M", "2G", "1.5GiB", "0": a size in bytes (K, M, G, T are powers of 1024).
uint64_t ParseByteSize(const std::string& text, const std::string& flag) {
  absl::string_view t = text;
  uint64_t scale = 1;
  for (absl::string_view suffix : {"iB", "B"})
    if (absl::EndsWith(t, suffix) && t.size() > suffix.size()) {
      t.remove_suffix(suffix.size());
      break;
    }
  if (!t.empty()) {
    size_t unit = std::string("KMGT").find(static_cast<char>(std::toupper(t.back())));
    if (unit != std::string::npos) {
      scale = uint64_t{1} << (10 * (unit + 1));
      t.remove_suffix(1);
    }
  }
  double v;
  if (!absl::SimpleAtod(t, &v) || v < 0 || !std::isfinite(v))
    throw CliError{absl::StrCat(flag, " '", text, "': expected a size such as 500M, 2G or 0")};
  return static_cast<uint64_t>(v * scale);
}

// `xonnx cache`: what the persistent compile cache holds; with `max_size`,
// removes the least recently used entries until the rest fit.
int Cache(std::string dir, const std::string& max_size, bool clear, bool json) {
  if (dir.empty()) dir = xonnx::DefaultCacheDir();
  if (dir.empty())
    throw CliError{"no cache folder: give --cache-dir (XONNX_CACHE_DIR, XDG_CACHE_HOME and HOME are unset)"};
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    if (json) {
      std::cout << nlohmann::json{{"dir", dir}, {"entries", 0}, {"bytes", 0}}.dump() << "\n";
    } else {
      std::cout << "cache:   " << dir << " (does not exist yet: nothing has been cached there)\n";
    }
    return 0;
  }
  if (!std::filesystem::is_directory(dir, ec)) throw CliError{absl::StrCat(dir, ": not a folder")};
  nlohmann::json j{{"dir", dir}};
  if (clear || !max_size.empty()) {
    uint64_t limit = clear ? 0 : ParseByteSize(max_size, "--max-size");
    std::vector<xonnx::CacheFile> removed = Check(xonnx::TrimCache(dir, limit));
    uint64_t bytes = 0;
    int entries = 0, temporaries = 0;
    for (const auto& f : removed) {
      (f.temporary ? temporaries : entries) += 1;
      bytes += f.bytes;
    }
    j["removed_entries"] = entries;
    j["removed_temporaries"] = temporaries;
    j["removed_bytes"] = bytes;
    if (!json)
      std::cout << absl::StrFormat("removed: %d entries and %d stale temporary files, %s\n", entries, temporaries,
                                   HumanBytes(bytes));
  }
  std::vector<xonnx::CacheFile> files = Check(xonnx::ListCache(dir));
  std::map<std::string, int> kinds;
  uint64_t bytes = 0;
  int entries = 0, temporaries = 0;
  int64_t oldest = 0, newest = 0;
  for (const auto& f : files) {
    if (f.temporary) {
      ++temporaries;
      continue;
    }
    ++entries;
    bytes += f.bytes;
    // A key starts with what it holds ("program ...", "executable ...").
    ++kinds[f.key.empty() ? "unreadable" : f.key.substr(0, f.key.find(' '))];
    oldest = entries == 1 ? f.last_used : std::min(oldest, f.last_used);
    newest = std::max(newest, f.last_used);
  }
  if (json) {
    j["entries"] = entries;
    j["bytes"] = bytes;
    j["kinds"] = kinds;
    j["temporaries"] = temporaries;
    if (entries) {
      j["oldest_use"] = oldest;
      j["newest_use"] = newest;
    }
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::vector<std::string> parts;
  for (const auto& [kind, n] : kinds) parts.push_back(absl::StrCat(n, " ", kind, n == 1 ? "" : "s"));
  std::cout << "cache:   " << dir << "\nentries: " << entries
            << (parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")")) << ", " << HumanBytes(bytes)
            << "\n";
  int64_t now = ::time(nullptr);
  if (entries)
    std::cout << "used:    least recently " << Ago(oldest, now) << ", most recently " << Ago(newest, now) << "\n";
  if (temporaries)
    std::cout << "temporary files: " << temporaries << " (being written, or left by a writer that died)\n";
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

void PrintCacheMessages(const xonnx::Session& s) {
  for (const auto& m : s.compile_stats().cache_messages) std::cerr << "xonnx: " << m << "\n";
}

// `run` and `bench` read and write tensors; sequences and optionals need the
// C++ API.
void RequireTensors(const std::string& model, const xonnx::Session& s) {
  for (const auto* specs : {&s.inputs(), &s.outputs()})
    for (const auto& spec : *specs)
      if (spec.sequence || spec.optional)
        throw CliError{absl::StrCat(model, ": '", spec.name, "' is a", spec.optional ? "n optional" : " sequence",
                                    "; the xonnx command takes and writes tensors only (the C++ API runs this model "
                                    "with Session::RunValues)")};
}

int Run(const std::string& model, const InputArgs& in, const std::string& output_dir) {
  auto s = Open(model);
  RequireTensors(model, *s);
  PrintCacheMessages(*s);
  auto inputs = LoadInputs(*s, in);
  auto outs = Check(s->Run(inputs));
  if (!output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(output_dir, ec);
    if (ec) throw CliError{absl::StrCat(output_dir, ": cannot create the output folder: ", ec.message())};
    for (size_t i = 0; i < outs.size(); ++i)
      Check(xonnx::WriteTensorProto((fs::path(output_dir) / absl::StrCat("output_", i, ".pb")).string(), outs[i],
                                    s->outputs()[i].name));
    std::cerr << "xonnx: wrote " << outs.size() << " output(s) to " << output_dir << "\n";
  } else {
    for (size_t i = 0; i < outs.size(); ++i) PrintSummary(s->outputs()[i], outs[i]);
  }
  return 0;
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
  xonnx::CompileStats st = s->compile_stats();
  if (json) {
    nlohmann::json j;
    j["load_ms"] = s->load_ms();
    j["compile_ms"] = compile_ms;
    j["compiled"] = st.compiled;
    j["from_cache"] = st.from_cache;
    j["cache_rejected"] = st.cache_rejected;
    j["buckets_ms"] = st.buckets_ms;
    j["weights_ms"] = st.weights_ms;
    j["latency_ms"] = {{"min", ms.empty() ? 0 : ms.front()}, {"median", median}, {"p90", pct(0.9)}};
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
        "throughput %.1f items/s (batch %d)\npeak memory %.0f MB\n",
        s->DeviceSummary(), s->load_ms(), StartupLine(*s), compile_ms, s->LastProgramSummary(),
        ms.empty() ? 0 : ms.front(), median, pct(0.9), iterations, std::max(1, in_flight), per_s, batch, PeakRssMb());
  }
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

void AddInputOptions(CLI::App* cmd, InputArgs& a, bool with_files) {
  if (with_files) {
    cmd->add_option("--input", a.inputs, "Input tensor NAME=FILE (.pb TensorProto or .npy); repeatable");
    cmd->add_option("--input-dir", a.input_dir, "Folder with input_<i>.pb files (matched by name, else position)");
  }
  cmd->add_option("--shape", a.shapes, "Shape of an input, NAME=1x3x224x224 (for dynamic dims); repeatable");
  cmd->add_option("--seed", a.seed, "Seed for the random values of inputs not given")->capture_default_str();
}

void AddDeviceOptions(CLI::App* cmd, bool serving) {
  cmd->add_option("--plugin", g_device.plugin,
                  "PjRT plugin: a file path (with a '/') or a library name found through LD_LIBRARY_PATH; "
                  "default: xonnx's CPU plugin, libxonnx_pjrt_cpu.so, found next to this program "
                  "(the environment variable XONNX_PLUGIN overrides the default)");
  cmd->add_option("--create-option", g_device.create_options,
                  "Option for the plugin's client, NAME=VALUE (true/false, integer, float, comma list of integers, "
                  "or string), e.g. cpu_device_count=4 or memory_fraction=0.5; repeatable");
  if (!serving) return;
  cmd->add_option("--device", g_device.device,
                  "Index of the plugin's device to run on (see `xonnx devices`), or 'all': each batch is split "
                  "across all devices and run concurrently")
      ->capture_default_str();
  cmd->add_option("--max-batch", g_device.max_batch,
                  "Largest batch to compile for; with --steps S, buckets max-batch*i/S for i=1..S are compiled at "
                  "start (a call runs on the smallest bucket that fits, padded with zeros; larger batches are split)");
  cmd->add_option("--steps", g_device.steps, "Number of batch buckets up to --max-batch")->capture_default_str();
  cmd->add_option("--batch-buckets", g_device.batch_buckets,
                  "Explicit batch buckets, e.g. 1,8,64 (instead of --max-batch/--steps)");
  cmd->add_option("--dim-buckets", g_device.dim_buckets,
                  "Buckets for a dynamic dimension by its name in the model, NAME=16,32,64 (padded with zeros, "
                  "outputs cut back); repeatable");
  cmd->add_option("--data-type", g_device.data_type,
                  "Type the model computes in: f32, f16 or bf16 (weights converted once; reductions accumulate in f32)")
      ->capture_default_str();
  cmd->add_option("--io-data-type", g_device.io_data_type,
                  "Host-side type of float inputs and outputs: f32, f16 or bf16 (input files of another float type "
                  "are converted)")
      ->capture_default_str();
  cmd->add_option("--cache-dir", g_device.cache_dir,
                  absl::StrCat("Persistent compile cache folder ", kCacheDirDefault));
  cmd->add_flag("--no-cache", g_device.no_cache, "Do not read or write the persistent compile cache");
  cmd->add_option("--compile-threads", g_device.compile_threads,
                  "Threads compiling buckets at start (default: one per hardware thread)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xonnx: run ONNX models on XLA devices (ONNX -> XLA HLO -> a PjRT plugin; CPU by default)"};
  app.require_subcommand(1);
  std::string model;
  InputArgs in;

  auto* run = app.add_subcommand("run", "Run a model once and print or save its outputs");
  run->add_option("MODEL", model, "ONNX model file")->required();
  AddInputOptions(run, in, true);
  std::string output_dir;
  run->add_option("--output-dir", output_dir, "Write output_<i>.pb (TensorProto named after the output) here");

  auto* bench = app.add_subcommand("bench", "Time loading, compiling and running a model");
  bench->add_option("MODEL", model, "ONNX model file")->required();
  AddInputOptions(bench, in, false);
  int warmup = 5, iterations = 50;
  bool json = false;
  bench->add_option("--warmup", warmup, "Untimed runs before timing")->capture_default_str();
  bench->add_option("--iterations", iterations, "Timed runs")->capture_default_str();
  bench->add_flag(
      "--json", json,
      "Print one JSON object: load_ms, buckets_ms, weights_ms, compile_ms, compiled, from_cache, cache_rejected, "
      "latency_ms{min,median,p90}, items_per_s, peak_rss_mb (and bucket_first_call_ms)");
  int in_flight = 1;
  bool every_bucket = false;
  bench->add_flag("--every-bucket", every_bucket,
                  "Before timing, make one call of each batch bucket's size and report its time (a bucket's first "
                  "call binds the weights on some plugins and allocates its working memory); peak memory then "
                  "covers every bucket");
  bench->add_option("--in-flight", in_flight, "Calls kept in flight at once (Session::RunAsync)")
      ->capture_default_str();

  auto* convert = app.add_subcommand("convert", "Convert a model to XLA HLO (text and/or HloModuleProto)");
  convert->add_option("MODEL", model, "ONNX model file")->required();
  std::string text_out, proto_out;
  std::vector<std::string> shapes;
  int64_t batch = 1;
  bool allow_partial = false;
  convert->add_option("--hlo-text", text_out, "Write HLO text to FILE, or '-' for stdout");
  convert->add_option("--hlo-proto", proto_out, "Write the serialized HloModuleProto to FILE");
  convert->add_option("--shape", shapes, "Shape of an input, NAME=1x3x224x224; repeatable");
  convert->add_option("--batch", batch, "Value for dynamic dimensions of inputs without --shape")
      ->capture_default_str();
  convert->add_flag("--allow-partial", allow_partial, "On an error, write the part converted before it");

  auto* info = app.add_subcommand("info", "Print a model's inputs, outputs, opsets, ops and unsupported ops");
  info->add_option("MODEL", model, "ONNX model file")->required();

  auto* devices = app.add_subcommand("devices", "Print a PjRT plugin's version, platform and devices");
  auto* cache = app.add_subcommand(
      "cache", "Show the persistent compile cache, or trim it: --max-size removes least recently used entries");
  std::string max_size;
  bool clear = false;
  cache->add_option("--cache-dir", g_device.cache_dir, absl::StrCat("Cache folder ", kCacheDirDefault));
  cache->add_option("--max-size", max_size,
                    "Remove the least recently used entries until the rest take at most this much, e.g. 500M or 2G "
                    "(K, M, G: powers of 1024); also removes temporary files that writers left more than an hour ago");
  cache->add_flag("--clear", clear, "Remove every entry (files that are not the cache's are left alone)");
  cache->add_flag("--json", json, "Print one JSON object");
  cache->get_option("--clear")->excludes(cache->get_option("--max-size"));
  for (CLI::App* cmd : {run, bench}) AddDeviceOptions(cmd, /*serving=*/true);
  for (CLI::App* cmd : {convert, info, devices}) AddDeviceOptions(cmd, /*serving=*/false);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*run) return Run(model, in, output_dir);
    if (*bench) {
      if (iterations < 1 || warmup < 0) throw CliError{"--iterations must be >= 1 and --warmup >= 0"};
      if (in_flight < 1) throw CliError{"--in-flight must be >= 1"};
      return Bench(model, in, warmup, iterations, json, in_flight, every_bucket);
    }
    if (*convert) return Convert(model, shapes, text_out, proto_out, batch, allow_partial);
    if (*info) return Info(model);
    if (*devices) return Devices();
    if (*cache) return Cache(g_device.cache_dir, max_size, clear, json);
  } catch (const CliError& e) {
    std::cerr << "xonnx: error: " << e.message << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "xonnx: error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}
