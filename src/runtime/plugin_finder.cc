#include "runtime/plugin_finder.h"

#include <cstdlib>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace xonnx {

namespace {

namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The subfolders of `dir` whose names start with `prefix`, sorted (so the
// choice among several versions is stable).
std::vector<fs::path> SubdirsStartingWith(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec) && absl::StartsWith(it->path().filename().string(), prefix)) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

// "name:path,name:path" (XONNX_PLUGINS, PJRT_NAMES_AND_LIBRARY_PATHS).
void AddNamed(const char* variable, const std::string& name, std::vector<PluginCandidate>* out) {
  for (absl::string_view entry : absl::StrSplit(Env(variable), ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits(':', 1));
    if (kv.first.empty() || kv.second.empty()) continue;
    if (name.empty() || kv.first == name) out->push_back({kv.first, kv.second, variable});
  }
}

// The folders xonnx's own plugins are installed in.
std::vector<fs::path> PluginFolders() {
  std::vector<fs::path> dirs;
  if (std::string home = Env("HOME"); !home.empty()) dirs.push_back(fs::path(home) / ".local/lib/xonnx/plugins");
#ifdef XONNX_INSTALL_PLUGIN_DIR
  dirs.push_back(fs::path(XONNX_INSTALL_PLUGIN_DIR) / "plugins");
#endif
  return dirs;
}

// Python's package folders, where JAX's plugins are installed.
std::vector<fs::path> SitePackages() {
  std::vector<fs::path> roots;  // folders holding lib/python3.*/
  if (std::string venv = Env("VIRTUAL_ENV"); !venv.empty()) roots.push_back(venv);
  for (absl::string_view dir : absl::StrSplit(Env("PATH"), ':', absl::SkipEmpty()))
    if (IsFile(fs::path(std::string(dir)) / "python3")) roots.push_back(fs::path(std::string(dir)).parent_path());
  if (std::string home = Env("HOME"); !home.empty()) roots.push_back(fs::path(home) / ".local");
  roots.push_back("/usr/local");
  roots.push_back("/usr");
  std::vector<fs::path> out;
  std::set<std::string> seen;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    if (!ec && fs::is_directory(c, ec) && seen.insert(c.string()).second) out.push_back(c);
  };
  for (absl::string_view dir : absl::StrSplit(Env("PYTHONPATH"), ':', absl::SkipEmpty())) add(std::string(dir));
  for (const fs::path& root : roots)
    for (const fs::path& lib : SubdirsStartingWith(root / "lib", "python3")) {
      add(lib / "site-packages");
      add(lib / "dist-packages");
    }
  add("/usr/lib/python3/dist-packages");
  return out;
}

// JAX's plugin of `name` in one package folder.
void AddJaxPlugins(const fs::path& site, const std::string& name, std::vector<PluginCandidate>* out) {
  std::string where = absl::StrCat("jax plugins in ", site.string());
  if (name.empty() || name == "tpu")
    if (IsFile(site / "libtpu/libtpu.so")) out->push_back({"tpu", (site / "libtpu/libtpu.so").string(), where});
  for (const fs::path& dir : SubdirsStartingWith(site / "jax_plugins", name.empty() ? "xla_" : "xla_" + name)) {
    // xla_cuda13/xla_cuda_plugin.so: the name is the folder's less "xla_"
    // and the CUDA version.
    std::string folder = dir.filename().string().substr(4);
    std::string plugin_name = folder.substr(0, folder.find_first_of("0123456789"));
    fs::path file = dir / absl::StrCat("xla_", plugin_name, "_plugin.so");
    if (IsFile(file)) out->push_back({plugin_name, file.string(), where});
  }
}

}  // namespace

bool IsPluginName(const std::string& plugin) {
  return !plugin.empty() && plugin.find('/') == std::string::npos && !absl::StrContains(plugin, ".so");
}

std::vector<PluginCandidate> FindPluginCandidates(const std::string& name) {
  std::vector<PluginCandidate> out;
  AddNamed("XONNX_PLUGINS", name, &out);
  AddNamed("PJRT_NAMES_AND_LIBRARY_PATHS", name, &out);
  for (const fs::path& dir : PluginFolders()) {
    if (name.empty()) {
      std::error_code ec;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string file = it->path().filename().string();
        if (!absl::EndsWith(file, ".so") || !IsFile(it->path())) continue;
        std::string stem = file.substr(0, file.size() - 3);
        for (const char* prefix : {"libpjrt_", "pjrt_c_api_", "pjrt_"})
          if (absl::StartsWith(stem, prefix)) {
            stem = stem.substr(std::string(prefix).size());
            break;
          }
        if (absl::EndsWith(stem, "_plugin")) stem = stem.substr(0, stem.size() - 7);
        out.push_back({stem, it->path().string(), dir.string()});
      }
      continue;
    }
    for (const std::string& file : {absl::StrCat("pjrt_", name, ".so"), absl::StrCat("libpjrt_", name, ".so"),
                                    absl::StrCat("pjrt_c_api_", name, "_plugin.so"), absl::StrCat(name, ".so")})
      if (IsFile(dir / file)) out.push_back({name, (dir / file).string(), dir.string()});
  }
  for (const fs::path& site : SitePackages()) AddJaxPlugins(site, name, &out);
  return out;
}

absl::StatusOr<std::string> ResolvePlugin(const std::string& plugin, const std::string& default_path) {
  if (plugin.empty()) return default_path;
  if (!IsPluginName(plugin)) return plugin;
  std::vector<PluginCandidate> found = FindPluginCandidates(plugin);
  if (!found.empty()) return found.front().path;
  if (plugin == "cpu") return default_path;
  std::vector<std::string> places = {"XONNX_PLUGINS", "PJRT_NAMES_AND_LIBRARY_PATHS"};
  for (const fs::path& dir : PluginFolders()) places.push_back(dir.string());
  places.push_back("jax plugins in " + std::to_string(SitePackages().size()) + " Python package folders");
  return absl::NotFoundError(absl::StrCat("no PjRT plugin named '", plugin, "' (looked in ",
                                          absl::StrJoin(places, ", "),
                                          "); give its file path, or list what is found with `xonnx devices --all`"));
}

}  // namespace xonnx
