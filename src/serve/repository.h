// The model repository in Triton's layout: ROOT/<model>/[config.pbtxt] and
// ROOT/<model>/<version>/model.onnx. Loads, reloads and unloads models and
// versions (the version policy picks which), on request or when the
// folders change, and says which are ready. A model being reloaded keeps
// serving its old versions until the new ones are ready.
#ifndef XONNX_SERVE_REPOSITORY_H_
#define XONNX_SERVE_REPOSITORY_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "serve/model.h"

namespace xonnx::serve {

// A model version's state, with the protocol's names.
enum class ModelState { kUnknown, kLoading, kReady, kUnavailable, kUnloading };
const char* ModelStateName(ModelState s);

// A row of the repository index.
struct IndexEntry {
  std::string name;
  int64_t version = -1;  // -1: no version known (the model failed before any)
  ModelState state = ModelState::kUnknown;
  std::string reason;
};

class ModelRepository {
 public:
  ModelRepository(std::vector<std::string> roots, ServeSettings settings);
  ~ModelRepository();

  // The model folders found now, by name (a name in two roots is an error).
  StatusOr<std::map<std::string, std::string>> Scan() const;
  // Loads (or reloads) a model's versions as its policy picks them; versions
  // the policy no longer picks are unloaded. `config_text`, when not empty,
  // replaces config.pbtxt (protobuf text or JSON, as the load API's
  // "config" parameter gives it). Blocks until done.
  Status Load(const std::string& name, const std::string& config_text = "");
  // Unloads every version: each finishes its queued and running requests.
  Status Unload(const std::string& name);
  // Loads, reloads or unloads what changed in the folders since the last
  // look (model-control mode poll). Returns the first error, having tried all.
  Status Poll();
  // Every model in the repository, one row per version known (index API);
  // a model never loaded is one row, UNAVAILABLE, "not loaded".
  std::vector<IndexEntry> Index(bool ready_only) const;
  // A ready version: `version` empty picks the highest ready one.
  StatusOr<std::shared_ptr<ServedModel>> Find(const std::string& name, const std::string& version) const;
  // The ready versions of a model, highest first.
  std::vector<int64_t> ReadyVersions(const std::string& name) const;
  // Every model loaded is ready (and none failed).
  bool AllReady() const;
  // Requests queued or running in every model.
  int64_t InFlight() const;
  // Stops every model: finishes what is queued and running.
  void StopAll();
  // Every loaded model, for the metrics.
  std::vector<std::shared_ptr<ServedModel>> Loaded() const;

 private:
  struct Version {
    ModelState state = ModelState::kUnknown;
    std::string reason;
    std::shared_ptr<ServedModel> model;
    bool unloaded = false;  // taken away on purpose: not a failure
  };
  struct Entry {
    std::map<int64_t, Version> versions;
    std::string failure;  // why the model itself could not load (no version reached)
    std::string stamp;    // the folder's files as last loaded, for Poll
    bool busy = false;    // a load or unload is running
  };
  // `stamp`: FolderStamp(dir), taken before the lock.
  Status LoadLocked(std::unique_lock<std::mutex>& lock, const std::string& name, const std::string& dir,
                    const std::string& config_text, std::string stamp);
  void Begin(std::unique_lock<std::mutex>& lock, const std::string& name);
  void End(const std::string& name);
  // Ends a load or unload however it leaves (an exception included).
  struct Busy {
    ModelRepository* repository;
    std::string name;
    std::unique_lock<std::mutex>* lock;  // released first
    ~Busy();
  };

  std::vector<std::string> roots_;
  ServeSettings settings_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> models_;
};

// The files under a model folder with their sizes and times, as one
// string: equal stamps mean nothing changed.
std::string FolderStamp(const std::string& dir);
// The version folders of a model (numeric names not starting with 0).
std::vector<int64_t> VersionFolders(const std::string& dir);

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_REPOSITORY_H_
