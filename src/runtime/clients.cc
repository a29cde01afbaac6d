#include "runtime/clients.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/exceptions.h"
#include "base/logging.h"
#include "base/status.h"
#include "runtime/plugin_finder.h"
#include "runtime/public_status.h"
#include "xonnx/session.h"

namespace xonnx {

namespace {

constexpr char kPluginFile[] = "libxonnx_pjrt_cpu.so";

// The folder of the running program.
std::filesystem::path ProgramDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

// The folder of the file holding this code: libxonnx.so's when a program
// links the shared library, else the program's own.
std::filesystem::path CodeDir() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&ProgramDir), &info) || !info.dli_fname) return {};
  std::error_code ec;
  auto file = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path() : file.parent_path();
}

std::vector<pjrt::NamedValue> ToNamedValues(const std::vector<CreateOption>& options) {
  std::vector<pjrt::NamedValue> out;
  for (const auto& o : options) {
    pjrt::NamedValue nv;
    nv.name = o.name;
    std::visit([&](const auto& v) { nv.value = v; }, o.value);
    out.push_back(std::move(nv));
  }
  return out;
}

}  // namespace

std::string OptionsKey(const std::vector<pjrt::NamedValue>& options) {
  std::string key;
  for (const auto& o : options) {
    absl::StrAppend(&key, o.name, "=", o.value.index(), ":");
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>)
            absl::StrAppend(&key, absl::StrJoin(v, ","));
          else
            absl::StrAppend(&key, v);
        },
        o.value);
    key += ";";
  }
  return key;
}

std::vector<pjrt::NamedValue> CreateOptionsFor(const SessionOptions& options, const pjrt::Plugin& plugin) {
  std::vector<pjrt::NamedValue> create = ToNamedValues(options.create_options);
  bool ours = std::filesystem::path(plugin.path()).filename() == kPluginFile;
  if (ours && !options.use_dnnl) create.push_back({"use_dnnl", false});
  if (ours && !options.fuse_elementwise) create.push_back({"fuse_elementwise", false});
  if (ours && !options.optimize) create.push_back({"optimize", false});
  if (ours && options.verify_passes) create.push_back({"verify_passes", true});
  return create;
}

absl::StatusOr<std::shared_ptr<pjrt::Client>> GetClient(const SessionOptions& options) {
  ASSIGN_OR_RETURN(std::string path, ResolvePlugin(options.plugin, DefaultPluginPath()));
  ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Plugin> plugin, pjrt::Plugin::Load(path));
  std::vector<pjrt::NamedValue> create = CreateOptionsFor(options, *plugin);
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<pjrt::Client>> clients;
  std::string key = absl::StrCat(plugin->path(), "|", OptionsKey(create));
  std::lock_guard<std::mutex> l(mu);
  if (auto it = clients.find(key); it != clients.end())
    if (auto c = it->second.lock()) return c;
  ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Client> client, pjrt::Client::Create(plugin, create));
  VLOG(1) << "plugin " << plugin->path() << " (PjRT C API " << plugin->major_version() << "." << plugin->minor_version()
          << "): a client of platform " << client->platform_name() << " [" << client->platform_version() << "] with "
          << client->devices().size() << " device(s), " << create.size() << " create option(s)";
  clients[key] = client;
  return client;
}

std::shared_ptr<MappedStaging> StagingFor(const std::shared_ptr<pjrt::Client>& client) {
  static std::mutex mu;
  static std::map<const pjrt::Client*, std::weak_ptr<MappedStaging>> pools;
  std::lock_guard<std::mutex> l(mu);
  // A pool keeps its client alive, so a live entry's address is that client.
  auto& slot = pools[client.get()];
  if (auto pool = slot.lock()) return pool;
  auto pool = std::make_shared<MappedStaging>(client);
  slot = pool;
  return pool;
}

std::string FileIdentity(const std::string& path) {
  std::error_code ec;
  std::filesystem::path file = std::filesystem::canonical(path, ec);
  if (ec) return path;
  auto size = std::filesystem::file_size(file, ec);
  auto time = std::filesystem::last_write_time(file, ec).time_since_epoch().count();
  return absl::StrCat(file.string(), "|", ec ? 0 : size, "|", ec ? 0 : time);
}

const std::string& ConverterIdentity() {
  static const std::string identity = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void*>(&FileIdentity), &info) || !info.dli_fname) return std::string("unknown");
    return FileIdentity(info.dli_fname);
  }();
  return identity;
}

std::string FindXonnxLibrary(const std::string& file) {
  // Relative to where xonnx is, so that an installed tree can move: the
  // library's <libdir>/xonnx/ and a program's ../lib/xonnx/ (the install
  // layout), or the same folder; then the folders compiled in (the build
  // tree, the configured install prefix).
  std::vector<std::filesystem::path> candidates;
  if (std::filesystem::path lib = CodeDir(); !lib.empty()) {
    candidates.push_back(lib / "xonnx" / file);
    candidates.push_back(lib / file);
  }
  if (std::filesystem::path dir = ProgramDir(); !dir.empty()) {
    candidates.push_back(dir / file);
    candidates.push_back(dir / ".." / "lib" / file);
    candidates.push_back(dir / ".." / "lib" / "xonnx" / file);
  }
#ifdef XONNX_BUILD_PLUGIN_DIR
  candidates.push_back(std::filesystem::path(XONNX_BUILD_PLUGIN_DIR) / file);
#endif
#ifdef XONNX_INSTALL_PLUGIN_DIR
  candidates.push_back(std::filesystem::path(XONNX_INSTALL_PLUGIN_DIR) / file);
#endif
  for (const auto& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(c, ec)) return std::filesystem::weakly_canonical(c, ec).string();
  }
  return file;
}

std::string DefaultPluginPath() {
  if (const char* env = std::getenv("XONNX_PLUGIN"); env && *env) return env;
  return FindXonnxLibrary(kPluginFile);
}

StatusOr<PluginInfo> DescribePlugin(const SessionOptions& options) {
  return PublicCall("plugin", [&]() -> absl::StatusOr<PluginInfo> {
    InitLogging();
    ASSIGN_OR_RETURN(std::shared_ptr<pjrt::Client> client, GetClient(options));
    PluginInfo info;
    const auto& plugin = client->plugin();
    info.path = plugin->path();
    info.api_major = plugin->major_version();
    info.api_minor = plugin->minor_version();
    info.attributes = plugin->Attributes();
    info.platform_name = client->platform_name();
    info.platform_version = client->platform_version();
    for (size_t i = 0; i < client->devices().size(); ++i) {
      const auto& d = client->devices()[i];
      info.devices.push_back({static_cast<int>(i), d.id, d.local_hardware_id, d.kind, d.description, d.attributes});
    }
    return info;
  });
}

std::vector<FoundPlugin> FindPlugins() {
  std::vector<PluginCandidate> candidates = {{"cpu", DefaultPluginPath(), "xonnx's CPU plugin"}};
  for (PluginCandidate& c : FindPluginCandidates(std::string())) candidates.push_back(std::move(c));
  std::vector<FoundPlugin> out;
  for (const PluginCandidate& c : candidates) {
    FoundPlugin f{c.name, c.path, c.source};
    auto plugin = pjrt::Plugin::Load(c.path);
    if (plugin.ok()) {
      f.api_major = (*plugin)->major_version();
      f.api_minor = (*plugin)->minor_version();
    } else {
      f.refused = std::string(plugin.status().message());
    }
    out.push_back(std::move(f));
  }
  return out;
}

StatusOr<CreateOption> ParseCreateOption(const std::string& text) {
  return PublicCall(absl::StrCat("create option '", text, "'"), [&]() -> absl::StatusOr<CreateOption> {
    ASSIGN_OR_RETURN(pjrt::NamedValue nv, pjrt::ParseNamedValue(text));
    CreateOption c;
    c.name = nv.name;
    std::visit([&](const auto& v) { c.value = v; }, nv.value);
    return c;
  });
}

PluginTraits TraitsOf(const pjrt::Plugin& plugin) {
  PluginTraits t;
  for (const auto& [name, value] : plugin.Attributes()) {
    if (name == "xonnx_version") t.xla = false;
    if (name == "program_formats") {
      std::vector<std::string> formats = absl::StrSplit(value, ',');
      t.mlir_only = absl::c_linear_search(formats, "mlir") && !absl::c_linear_search(formats, "hlo");
    }
  }
  return t;
}

}  // namespace xonnx
