// The programs a session has compiled, in memory and in the persistent
// compile cache. A program is found in memory by its key (device, shapes,
// bound values); failing that, its description (which executable, which
// inputs and weights it takes, what it returns) may be in the persistent
// cache, so a later process need not convert the model at all; failing
// that, the session converts the model and CompileOrLoad finds or compiles
// the executable for the module.
#ifndef XONNX_RUNTIME_PROGRAM_CACHE_H_
#define XONNX_RUNTIME_PROGRAM_CACHE_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnx/importer.h"
#include "pjrt/client.h"
#include "runtime/compile_cache.h"
#include "xonnx/session.h"
#include "xonnx/tensor.h"

namespace xonnx {

// A compiled program, the model inputs its parameters take (in order), and
// for each model output either the program output it is or, for string
// outputs computed while converting, its value.
struct Program {
  std::shared_ptr<pjrt::LoadedExecutable> exe;
  std::vector<std::string> params;                     // model inputs, in parameter order
  std::vector<std::string> weight_names;               // initializers, in parameter order
  std::vector<std::shared_ptr<pjrt::Buffer>> weights;  // their buffers, the parameters after the inputs
  std::vector<onnx_import::TensorInfo> computed;       // what the program returns, in order
  std::vector<int> output_index;                       // -1 for a string output
  std::vector<Tensor> string_outputs;                  // by model output position (unused entries empty)
  // Per model output: ImportedModule::kTensorOutput, a sequence's length,
  // or kNoneOutput (see onnx/importer.h).
  std::vector<int> output_counts;
  // The program's run-time index checks; when there are any, the last entry
  // of `computed` is their ranges (ImportedModule::checks).
  std::vector<onnx_import::IndexCheck> checks;
  // The persistent cache entries it was loaded from (none when compiled
  // here): dropped if the plugin refuses the program when it first runs.
  std::vector<std::string> cache_keys;
};

class ProgramCache {
 public:
  explicit ProgramCache(std::shared_ptr<pjrt::Client> client) : client_(std::move(client)) {}

  // Uses the persistent cache the options name, for this client's plugin
  // (only to write, when the options dump: see DumpOptions::to). A folder
  // that cannot be used leaves the cache in memory only, and says why in
  // stats().
  void OpenPersistent(const SessionOptions& options);
  // Uses the same persistent cache as `other` (a graph stage's programs
  // share its session's folder, and keep their own statistics).
  void SharePersistent(const ProgramCache& other);
  bool persistent() const { return disk_.has_value(); }
  std::string dir() const { return disk_ ? disk_->dir() : ""; }
  // What a cached executable is valid for: the plugin's build, its create
  // options and what it says about itself; part of every key.
  const std::string& plugin_identity() const { return plugin_identity_; }

  // The program kept under `key`, if any (null when none). Shared, not
  // copied: a decoder looks its program up once a token, and a copy of
  // its names and weight buffers cost more than the lookup.
  std::shared_ptr<const Program> Find(const std::string& key) const;
  // Keeps `p` under `key` and returns the program kept (a concurrent twin
  // kept first wins).
  std::shared_ptr<const Program> Keep(const std::string& key, Program p);

  // The executable for a program (bytes in the PjRT program `format`,
  // "hlo" or "mlir"): from the persistent cache when it holds one for the
  // same program, options and plugin; else compiled (and stored). `exe_key`
  // receives its key, `loaded` which it was.
  absl::StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> CompileOrLoad(const std::string& module_bytes,
                                                                        const std::string& compile_options,
                                                                        const std::string& model_path,
                                                                        std::string* exe_key, bool* loaded,
                                                                        absl::string_view format = "hlo");
  // The program described under `key`, with its executable loaded but
  // without its weight buffers: NotFound when there is none; DataLoss when
  // the entry is damaged or does not have `num_outputs` outputs.
  absl::StatusOr<Program> LoadDescribed(const std::string& key, const std::string& compile_options, size_t num_outputs);
  // Describes `p`, whose executable is stored under `exe_key`, under `key`.
  void StoreDescription(const std::string& key, const std::string& exe_key, const Program& p);
  // The plugin refused a program loaded from the persistent cache when it
  // first ran it (its module does not match what the entry says it takes):
  // forgets the program, removes its entries and never loads them again in
  // this session, so that the next lookup converts and compiles it afresh.
  void Drop(const Program& bad, const absl::Status& why);
  // Counts a damaged entry (DataLoss) and keeps the message for stats().
  void NoteProblem(const absl::Status& st);

  // Statistics and the last program's summary, for Session.
  void NoteProgram(bool from_cache, double ms, std::string summary);
  void NoteBucketTimes(double buckets_ms, double weights_ms);
  void NoteCompileTime(double ms);
  CompileStats stats() const;
  double last_compile_ms() const;
  std::string last_summary() const;

 private:
  absl::StatusOr<std::string> LoadEntry(const std::string& key);
  absl::StatusOr<std::shared_ptr<pjrt::LoadedExecutable>> LoadExecutable(const std::string& key,
                                                                         const std::string& compile_options);

  std::shared_ptr<pjrt::Client> client_;
  std::optional<CompileCache> disk_;
  bool write_only_ = false;  // a dumping session: stores, never loads
  std::string plugin_identity_;

  mutable std::mutex mu_;  // guards what follows
  std::map<std::string, std::shared_ptr<const Program>> programs_;
  // Entries whose program the plugin refused at its first run; never loaded
  // again (LoadEntry), even when they could not be removed.
  std::set<std::string> distrusted_;
  CompileStats stats_;
  double last_compile_ms_ = 0;
  std::string last_summary_;
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_PROGRAM_CACHE_H_
