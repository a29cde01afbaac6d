#include "runtime/program_cache.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/fingerprint.h"
#include "base/logging.h"
#include "base/status.h"
#include "runtime/clients.h"

#ifndef XONNX_VERSION
#define XONNX_VERSION "0.0.0"
#endif

namespace xonnx {

namespace {

// A program's description without its executable and buffers: "exe KEY",
// then "param", "weight" and "out TYPE DIMS" lines with a name each.
std::string DescribeProgram(const std::string& exe_key, const Program& p) {
  std::string s = absl::StrCat("exe ", exe_key, "\n");
  for (const auto& n : p.params) absl::StrAppend(&s, "param ", n, "\n");
  for (const auto& n : p.weight_names) absl::StrAppend(&s, "weight ", n, "\n");
  for (const auto& o : p.computed)
    absl::StrAppend(&s, "out ", static_cast<int>(o.type), " ", o.dims.empty() ? "-" : absl::StrJoin(o.dims, ","), " ",
                    o.name, "\n");
  for (const auto& c : p.checks) absl::StrAppend(&s, "check ", c.lo, " ", c.hi, " ", c.what, "\n");
  return s;
}

// The inverse of DescribeProgram, but for the executable: `exe_key`
// receives the key it names.
absl::StatusOr<Program> ParseDescription(absl::string_view text, std::string* exe_key) {
  Program p;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(' ', 1));
    if (f.size() != 2) return absl::DataLossError("bad program description line");
    if (f[0] == "exe") {
      *exe_key = std::string(f[1]);
    } else if (f[0] == "param") {
      p.params.emplace_back(f[1]);
    } else if (f[0] == "weight") {
      p.weight_names.emplace_back(f[1]);
    } else if (f[0] == "out") {
      std::vector<absl::string_view> g = absl::StrSplit(f[1], absl::MaxSplits(' ', 2));
      int type;
      if (g.size() != 3 || !absl::SimpleAtoi(g[0], &type)) return absl::DataLossError("bad output line");
      onnx_import::TensorInfo info;
      info.type = static_cast<hlo::PrimitiveType>(type);
      if (g[1] != "-")
        for (absl::string_view d : absl::StrSplit(g[1], ',')) {
          int64_t v;
          if (!absl::SimpleAtoi(d, &v)) return absl::DataLossError("bad output dims");
          info.dims.push_back(v);
        }
      info.name = std::string(g[2]);
      p.output_index.push_back(static_cast<int>(p.computed.size()));
      p.string_outputs.emplace_back();
      p.computed.push_back(std::move(info));
    } else if (f[0] == "check") {
      std::vector<absl::string_view> g = absl::StrSplit(f[1], absl::MaxSplits(' ', 2));
      onnx_import::IndexCheck c;
      if (g.size() != 3 || !absl::SimpleAtoi(g[0], &c.lo) || !absl::SimpleAtoi(g[1], &c.hi))
        return absl::DataLossError("bad check line");
      c.what = std::string(g[2]);
      p.checks.push_back(std::move(c));
    } else {
      return absl::DataLossError("unknown program description line");
    }
  }
  if (!p.checks.empty()) {
    // The last output is the checks' ranges, not a model output.
    if (p.output_index.empty()) return absl::DataLossError("checks without their output");
    p.output_index.pop_back();
    p.string_outputs.pop_back();
  }
  p.output_counts.assign(p.output_index.size(), onnx_import::ImportedModule::kTensorOutput);
  return p;
}

}  // namespace

void ProgramCache::OpenPersistent(const SessionOptions& options) {
  if (!options.use_cache) return;
  std::string dir = options.cache_dir.empty() ? CompileCache::DefaultDir() : options.cache_dir;
  auto c = CompileCache::Open(dir);
  if (!c.ok()) {
    stats_.cache_messages.push_back(absl::StrCat("compile cache off: ", c.status().message()));
    return;
  }
  disk_ = *std::move(c);
  // Dumps come from importing and compiling, which a program loaded from
  // the cache skips: a dumping session only writes it.
  write_only_ = !options.dump.to.empty();
  // A cached executable is only valid for the same build of the plugin:
  // its file (size and time) and what it says about itself, and for the
  // same create options (they may choose kernels or numerics). (Program
  // descriptions also depend on the converter; see the session.)
  const auto& plugin = client_->plugin();
  plugin_identity_ =
      absl::StrCat(FileIdentity(plugin->path()), "|", plugin->major_version(), ".", plugin->minor_version(), "|",
                   client_->platform_name(), "|", client_->platform_version(), "|", XONNX_VERSION, "|",
                   OptionsKey(CreateOptionsFor(options, *plugin)));
}

void ProgramCache::SharePersistent(const ProgramCache& other) {
  disk_ = other.disk_;
  write_only_ = other.write_only_;
  plugin_identity_ = other.plugin_identity_;
}

std::shared_ptr<const Program> ProgramCache::Find(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = programs_.find(key);
  return it == programs_.end() ? nullptr : it->second;
}

std::shared_ptr<const Program> ProgramCache::Keep(const std::string& key, Program p) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;
  return programs_.emplace(key, std::make_shared<const Program>(std::move(p))).first->second;
}

void ProgramCache::Drop(const Program& bad, const absl::Status& why) {
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = programs_.begin(); it != programs_.end();)
      it = it->second->exe == bad.exe ? programs_.erase(it) : std::next(it);
    distrusted_.insert(bad.cache_keys.begin(), bad.cache_keys.end());
  }
  for (const auto& key : bad.cache_keys) disk_->Remove(key);
  NoteProblem(absl::DataLossError(absl::StrCat(disk_->PathFor(bad.cache_keys.front()),
                                               ": the plugin refused the cached program when it first ran it (",
                                               why.message(), "); recompiling")));
}

void ProgramCache::NoteProblem(const absl::Status& st) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::IsDataLoss(st)) ++stats_.cache_rejected;
  if (stats_.cache_messages.size() < 16) stats_.cache_messages.push_back(std::string(st.message()));
}

// The payload of the persistent cache's entry `key`; a distrusted one (see
// Drop) reads as missing. Every load goes through here.
absl::StatusOr<std::string> ProgramCache::LoadEntry(const std::string& key) {
  if (!disk_) return absl::NotFoundError("no persistent compile cache");
  if (write_only_) return absl::NotFoundError("a dumping session does not read the compile cache");
  {
    std::lock_guard<std::mutex> l(mu_);
    if (distrusted_.count(key)) return absl::NotFoundError(absl::StrCat(key, ": refused earlier in this session"));
  }
  return disk_->Load(key);
}

// The executable stored under `key`: NotFound when there is none, DataLoss
// when the entry is damaged or the plugin refuses it.
absl::StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> ProgramCache::LoadExecutable(
    const std::string& key, const std::string& compile_options) {
  ASSIGN_OR_RETURN(std::string bytes, LoadEntry(key));
  auto exe = client_->Deserialize(bytes, compile_options);
  if (!exe.ok())
    return absl::DataLossError(absl::StrCat(disk_->PathFor(key), ": the plugin refuses the cached executable (",
                                            exe.status().message(), "); recompiling"));
  return std::shared_ptr<pjrt::LoadedExecutable>(*std::move(exe));
}

absl::StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> ProgramCache::CompileOrLoad(const std::string& module_bytes,
                                                                                    const std::string& compile_options,
                                                                                    const std::string& model_path,
                                                                                    std::string* exe_key, bool* loaded,
                                                                                    absl::string_view format) {
  Fingerprinter f;
  f.UpdateField(module_bytes);
  if (format != "hlo") f.UpdateField(format);  // keys of HLO programs stay as they were
  f.UpdateField(compile_options);
  f.UpdateField(plugin_identity_);
  *exe_key = absl::StrCat("executable ", f.Finish().Hex());
  *loaded = false;
  if (disk_) {
    auto exe = LoadExecutable(*exe_key, compile_options);
    if (exe.ok()) {
      *loaded = true;
      return exe;
    }
    if (!absl::IsNotFound(exe.status())) NoteProblem(exe.status());
  }
  auto exe = client_->Compile(module_bytes, compile_options, format);
  if (!exe.ok()) return Annotate(exe.status(), absl::StrCat(model_path, ": compiling on ", client_->platform_name()));
  std::shared_ptr<pjrt::LoadedExecutable> shared = *std::move(exe);
  if (disk_) {
    auto serialized = shared->Serialize();
    absl::Status st = serialized.ok() ? disk_->Store(*exe_key, *serialized) : serialized.status();
    if (!st.ok()) NoteProblem(st);
  }
  return shared;
}

absl::StatusOr<Program> ProgramCache::LoadDescribed(const std::string& key, const std::string& compile_options,
                                                    size_t num_outputs) {
  // A damaged entry's own error says so; what it describes is checked here.
  ASSIGN_OR_RETURN(std::string text, LoadEntry(key));
  std::string exe_key;
  auto p = ParseDescription(text, &exe_key);
  if (p.ok() && (exe_key.empty() || p->output_index.size() != num_outputs))
    p = absl::DataLossError("incomplete program description");
  if (p.ok()) {
    p->cache_keys = {exe_key, key};
    auto exe = LoadExecutable(exe_key, compile_options);
    if (!exe.ok()) {
      p = exe.status();
    } else if ((*exe)->num_outputs() != p->computed.size()) {
      p = absl::DataLossError("the cached executable has other outputs");
    } else {
      p->exe = *std::move(exe);
    }
  }
  if (p.ok()) return p;
  // An executable removed on its own (`xonnx cache --max-size`) is a miss,
  // not damage.
  if (absl::IsNotFound(p.status())) return p.status();
  return absl::DataLossError(
      absl::StrCat(disk_->PathFor(key), ": ", p.status().message(), "; converting the model again"));
}

void ProgramCache::StoreDescription(const std::string& key, const std::string& exe_key, const Program& p) {
  if (!disk_) return;
  absl::Status st = disk_->Store(key, DescribeProgram(exe_key, p));
  if (!st.ok()) NoteProblem(st);
}

void ProgramCache::NoteProgram(bool from_cache, double ms, std::string summary) {
  VLOG(1) << (from_cache ? "loaded from the compile cache" : "compiled") << " in " << ms << " ms: " << summary;
  std::lock_guard<std::mutex> l(mu_);
  ++(from_cache ? stats_.from_cache : stats_.compiled);
  last_compile_ms_ = ms;
  last_summary_ = std::move(summary);
}

void ProgramCache::NoteBucketTimes(double buckets_ms, double weights_ms) {
  std::lock_guard<std::mutex> l(mu_);
  stats_.buckets_ms = buckets_ms;
  stats_.weights_ms = weights_ms;
}

void ProgramCache::NoteCompileTime(double ms) {
  std::lock_guard<std::mutex> l(mu_);
  last_compile_ms_ = ms;
}

CompileStats ProgramCache::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

double ProgramCache::last_compile_ms() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_compile_ms_;
}

std::string ProgramCache::last_summary() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_summary_;
}

}  // namespace xonnx
