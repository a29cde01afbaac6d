// How a session reaches its plugin: where the plugin file is, the create
// options it is given, and one client per (plugin, create options) shared
// by every session in the process. Also the identities that key the
// persistent compile cache (a plugin's or the converter's build).
#ifndef XONNX_RUNTIME_CLIENTS_H_
#define XONNX_RUNTIME_CLIENTS_H_

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "pjrt/client.h"
#include "runtime/mapped_staging.h"
#include "xonnx/options.h"

namespace xonnx {

// A canonical text of create options, for keys.
std::string OptionsKey(const std::vector<pjrt::NamedValue>& options);

// The plugin's create options: the user's, and for our CPU plugin the
// session's switches that it implements.
std::vector<pjrt::NamedValue> CreateOptionsFor(const SessionOptions& options, const pjrt::Plugin& plugin);

// One client per (plugin, create options), shared by the sessions using it:
// a client may own a whole device (XLA's GPU plugin preallocates memory).
absl::StatusOr<std::shared_ptr<pjrt::Client>> GetClient(const SessionOptions& options);

// The pool of DMA-mapped staging memory of `client`, one per client, shared
// by its sessions (mapped host memory is pinned: one cap for all of them).
std::shared_ptr<MappedStaging> StagingFor(const std::shared_ptr<pjrt::Client>& client);

// What a plugin says about itself that decides what it is sent.
struct PluginTraits {
  // Not xonnx's CPU plugin (which says its version): taken to be XLA's or
  // built from it, so programs get the rewrites XLA's plugins need
  // (onnx/importer.h, ImportOptions::xla_compatible).
  bool xla = true;
  // It lists the program formats it takes, with "mlir" and without "hlo":
  // programs go as StableHLO from the start.
  bool mlir_only = false;
};
PluginTraits TraitsOf(const pjrt::Plugin& plugin);

// A library that ships with xonnx (its CPU plugin, the SentencePiece
// shim), found next to the code running, in the install layout or in the
// build tree; `file` itself (for the loader's search) when none is there.
std::string FindXonnxLibrary(const std::string& file);

// A file's canonical path, size and modification time: what changes when it
// is rebuilt.
std::string FileIdentity(const std::string& path);

// The file holding xonnx's converter (the program, or a shared library
// linking it): a rebuilt converter may emit other HLO for the same model, so
// cached descriptions of programs must not match. Found once per process:
// the code running is the code that was loaded, whatever happens to the
// file later.
const std::string& ConverterIdentity();

}  // namespace xonnx

#endif  // XONNX_RUNTIME_CLIENTS_H_
