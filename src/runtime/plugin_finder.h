// Plugins by name: `--plugin cuda` or SessionOptions::plugin = "tpu" finds
// the plugin's library the way JAX and go-xla do, so a user need not know
// where a Python package put it.
//
// A name (no '/', no ".so") is looked up, first match wins, in:
//   1. XONNX_PLUGINS="name:path,name:path";
//   2. JAX's PJRT_NAMES_AND_LIBRARY_PATHS, the same form;
//   3. standard folders, ~/.local/lib/xonnx/plugins and
//      <prefix>/lib/xonnx/plugins: pjrt_<name>.so, libpjrt_<name>.so,
//      pjrt_c_api_<name>_plugin.so or <name>.so;
//   4. JAX's installed plugins, in the site-packages folders of the active
//      virtual environment, of each python3 on PATH, of the user and of the
//      system: jax_plugins/xla_<name>*/xla_<name>_plugin.so (cuda, rocm),
//      libtpu/libtpu.so (tpu).
// "cpu" not found there is xonnx's own CPU plugin. A path (with a '/') or
// a library file name (with ".so") is used as given.
#ifndef XONNX_RUNTIME_PLUGIN_FINDER_H_
#define XONNX_RUNTIME_PLUGIN_FINDER_H_

#include <string>
#include <vector>

#include "base/status.h"

namespace xonnx {

// One place a plugin was found (or named).
struct PluginCandidate {
  std::string name;    // "cuda", "tpu", ...
  std::string path;    // the library file
  std::string source;  // where it was found, e.g. "XONNX_PLUGINS" or a folder
};

// Whether `plugin` is a short name to look up rather than a file.
bool IsPluginName(const std::string& plugin);

// Every candidate for `name`, in lookup order (empty name: every plugin of
// every name the four places list). Files that do not exist are left out,
// except those named by the two variables, which the caller then reports.
std::vector<PluginCandidate> FindPluginCandidates(const std::string& name);

// The library to load for SessionOptions::plugin: `plugin` itself when it is
// a path or a file name, the first candidate of a name, or NOT_FOUND naming
// every place looked in. `default_path` is xonnx's CPU plugin, for "" and
// "cpu".
absl::StatusOr<std::string> ResolvePlugin(const std::string& plugin, const std::string& default_path);

}  // namespace xonnx

#endif  // XONNX_RUNTIME_PLUGIN_FINDER_H_
