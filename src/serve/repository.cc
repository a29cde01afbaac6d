#include "serve/repository.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xonnx::serve {
namespace {

namespace fs = std::filesystem;

// The versions a policy serves out of those on disk, highest first.
std::vector<int64_t> PickVersions(const VersionPolicy& p, std::vector<int64_t> on_disk) {
  std::sort(on_disk.rbegin(), on_disk.rend());
  std::vector<int64_t> out;
  for (int64_t v : on_disk) {
    bool take = p.kind == VersionPolicy::Kind::kAll ||
                (p.kind == VersionPolicy::Kind::kLatest && static_cast<int>(out.size()) < p.num_versions) ||
                (p.kind == VersionPolicy::Kind::kSpecific &&
                 std::find(p.versions.begin(), p.versions.end(), v) != p.versions.end());
    if (take) out.push_back(v);
  }
  return out;
}

}  // namespace

const char* ModelStateName(ModelState s) {
  switch (s) {
    case ModelState::kLoading:
      return "LOADING";
    case ModelState::kReady:
      return "READY";
    case ModelState::kUnavailable:
      return "UNAVAILABLE";
    case ModelState::kUnloading:
      return "UNLOADING";
    default:
      return "UNKNOWN";
  }
}

std::vector<int64_t> VersionFolders(const std::string& dir) {
  std::vector<int64_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string n = e.path().filename().string();
    int64_t v = 0;
    if (e.is_directory(ec) && !n.empty() && n[0] != '0' && absl::SimpleAtoi(n, &v) && v > 0) out.push_back(v);
  }
  return out;
}

std::string FolderStamp(const std::string& dir) {
  std::vector<std::string> rows;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    auto t = fs::last_write_time(it->path(), ec).time_since_epoch().count();
    rows.push_back(absl::StrCat(it->path().string(), ":", it->file_size(ec), ":", t));
  }
  std::sort(rows.begin(), rows.end());
  return absl::StrJoin(rows, "\n");
}

ModelRepository::ModelRepository(std::vector<std::string> roots, ServeSettings settings)
    : roots_(std::move(roots)), settings_(std::move(settings)) {}

ModelRepository::~ModelRepository() { StopAll(); }

StatusOr<std::map<std::string, std::string>> ModelRepository::Scan() const {
  std::map<std::string, std::string> found;
  for (const auto& root : roots_) {
    std::error_code ec;
    fs::directory_iterator it(root, ec);
    if (ec) return Status(StatusCode::kNotFound, absl::StrCat("model repository '", root, "': ", ec.message()));
    for (const auto& e : it) {
      std::string name = e.path().filename().string();
      if (!e.is_directory(ec) || name.empty() || name[0] == '.') continue;
      if (found.count(name))
        return Status(
            StatusCode::kInvalidArgument,
            absl::StrCat("model '", name, "' is in two repositories: ", found[name], " and ", e.path().string()));
      found[name] = e.path().string();
    }
  }
  return found;
}

void ModelRepository::Begin(std::unique_lock<std::mutex>& lock, const std::string& name) {
  cv_.wait(lock, [&] { return !models_[name].busy; });
  models_[name].busy = true;
}

void ModelRepository::End(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    models_[name].busy = false;
  }
  cv_.notify_all();
}

ModelRepository::Busy::~Busy() {
  if (lock->owns_lock()) lock->unlock();
  repository->End(name);
}

Status ModelRepository::Load(const std::string& name, const std::string& config_text) {
  StatusOr<std::map<std::string, std::string>> found = Scan();
  if (!found.ok()) return found.status();
  auto dir = found->find(name);
  if (dir == found->end())
    return Status(StatusCode::kNotFound, absl::StrCat("failed to load '", name, "': no such model in the repository"));
  // The folder is walked outside the lock, which every request takes.
  std::string stamp = FolderStamp(dir->second);
  std::unique_lock<std::mutex> lock(mu_);
  Begin(lock, name);
  Busy busy{this, name, &lock};
  return LoadLocked(lock, name, dir->second, config_text, std::move(stamp));
}

Status ModelRepository::LoadLocked(std::unique_lock<std::mutex>& lock, const std::string& name, const std::string& dir,
                                   const std::string& config_text, std::string stamp) {
  Entry& entry = models_[name];
  entry.stamp = std::move(stamp);
  lock.unlock();
  StatusOr<ModelConfig> config =
      config_text.empty() ? ReadModelConfig(dir, name, settings_.strict_config)
                          : ParseModelConfig(config_text, name, absl::StrCat("model '", name, "' config parameter"),
                                             settings_.strict_config);
  std::vector<int64_t> versions;
  if (config.ok()) {
    for (const auto& i : config->ignored)
      if (settings_.log) settings_.log(absl::StrCat("model '", name, "': ignored ", i));
    versions = PickVersions(config->version_policy, VersionFolders(dir));
    if (versions.empty())
      config = Status(StatusCode::kInvalidArgument,
                      absl::StrCat(dir, ": no version folder the version policy serves (1, 2, ...)"));
  }
  lock.lock();
  if (!config.ok()) {
    entry.failure = config.status().message();
    return config.status();
  }
  entry.failure.clear();
  Status first;
  for (int64_t v : versions) {
    Version& ver = entry.versions[v];
    if (ver.state != ModelState::kReady) ver.state = ModelState::kLoading;
    lock.unlock();
    if (settings_.log) settings_.log(absl::StrCat("loading model '", name, "' version ", v));
    StatusOr<std::shared_ptr<ServedModel>> loaded = ServedModel::Load(dir, v, *config, settings_);
    std::shared_ptr<ServedModel> old;
    lock.lock();
    if (loaded.ok()) {
      old = std::move(ver.model);
      ver.model = *loaded;
      ver.state = ModelState::kReady;
      ver.reason.clear();
      ver.unloaded = false;
      if (settings_.log)
        settings_.log(absl::StrCat(
            "model '", name, "' version ", v, " is ready (max_batch_size ", (*loaded)->config().max_batch_size,
            ", dynamic batching ", (*loaded)->config().dynamic_batching ? "on" : "off", ", ",
            (*loaded)->config().instance_count, " instance(s) on device(s) ", (*loaded)->devices(), ")"));
    } else {
      // A version that was serving keeps serving; the failure is reported.
      if (!ver.model) ver.state = ModelState::kUnavailable;
      ver.reason = loaded.status().message();
      if (first.ok()) first = loaded.status();
      if (settings_.log) settings_.log(absl::StrCat("model '", name, "' version ", v, ": ", ver.reason));
    }
    if (old) {
      lock.unlock();
      old->Stop();  // its requests in flight finish on the old sessions
      old.reset();
      lock.lock();
    }
  }
  // Versions the policy no longer picks go, once the ones it picks serve: a
  // failed reload leaves the model serving what it served.
  if (!first.ok()) return first;
  for (auto& [v, ver] : entry.versions) {
    if (std::find(versions.begin(), versions.end(), v) != versions.end() || !ver.model) continue;
    std::shared_ptr<ServedModel> old = std::move(ver.model);
    ver.state = ModelState::kUnavailable;
    ver.reason = "unloaded: no longer picked by the version policy";
    ver.unloaded = true;
    lock.unlock();
    old->Stop();
    old.reset();
    lock.lock();
  }
  return first;
}

Status ModelRepository::Unload(const std::string& name) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!models_.count(name))
    return Status(StatusCode::kNotFound, absl::StrCat("failed to unload '", name, "': the model is not loaded"));
  Begin(lock, name);
  Busy busy{this, name, &lock};
  Entry& entry = models_[name];
  for (auto& [v, ver] : entry.versions) {
    if (!ver.model) continue;
    // Not found from now on (new requests get 404); the ones it has finish.
    ver.state = ModelState::kUnloading;
    std::shared_ptr<ServedModel> old = std::move(ver.model);
    lock.unlock();
    old->Stop();
    old.reset();
    lock.lock();
    ver.state = ModelState::kUnavailable;
    ver.reason = "unloaded";
    ver.unloaded = true;
    if (settings_.log) settings_.log(absl::StrCat("model '", name, "' version ", v, " unloaded"));
  }
  entry.stamp.clear();
  lock.unlock();
  return OkStatus();
}

Status ModelRepository::Poll() {
  StatusOr<std::map<std::string, std::string>> found = Scan();
  if (!found.ok()) return found.status();
  Status first;
  std::vector<std::string> gone, changed;
  // The folders are walked outside the lock, which every request takes.
  std::map<std::string, std::string> stamps;
  for (const auto& [name, dir] : *found) stamps[name] = FolderStamp(dir);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, entry] : models_)
      if (!found->count(name) && !entry.stamp.empty()) gone.push_back(name);
    for (const auto& [name, dir] : *found) {
      auto it = models_.find(name);
      if (it == models_.end() || it->second.stamp != stamps[name]) changed.push_back(name);
    }
  }
  for (const auto& name : gone) {
    Status s = Unload(name);
    if (first.ok()) first = s;
  }
  for (const auto& name : changed) {
    Status s = Load(name);
    if (first.ok()) first = s;
  }
  return first;
}

std::vector<IndexEntry> ModelRepository::Index(bool ready_only) const {
  std::vector<IndexEntry> out;
  StatusOr<std::map<std::string, std::string>> found = Scan();
  std::lock_guard<std::mutex> lock(mu_);
  if (found.ok() && !ready_only)
    for (const auto& [name, dir] : *found)
      if (!models_.count(name)) out.push_back({name, -1, ModelState::kUnavailable, "not loaded"});
  for (const auto& [name, entry] : models_) {
    if (entry.versions.empty() && !ready_only)
      out.push_back({name, -1, entry.failure.empty() ? ModelState::kUnknown : ModelState::kUnavailable, entry.failure});
    for (const auto& [v, ver] : entry.versions)
      if (!ready_only || ver.state == ModelState::kReady) out.push_back({name, v, ver.state, ver.reason});
  }
  std::sort(out.begin(), out.end(), [](const IndexEntry& a, const IndexEntry& b) {
    return std::tie(a.name, a.version) < std::tie(b.name, b.version);
  });
  return out;
}

StatusOr<std::shared_ptr<ServedModel>> ModelRepository::Find(const std::string& name,
                                                             const std::string& version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(name);
  bool any = it != models_.end() && std::any_of(it->second.versions.begin(), it->second.versions.end(),
                                                [](const auto& v) { return v.second.model != nullptr; });
  if (!any) return Status(StatusCode::kNotFound, absl::StrCat("Request for unknown model: '", name, "' is not found"));
  if (version.empty()) {
    for (auto v = it->second.versions.rbegin(); v != it->second.versions.rend(); ++v)
      if (v->second.model) return v->second.model;
  }
  int64_t number = 0;
  auto v = absl::SimpleAtoi(version, &number) ? it->second.versions.find(number) : it->second.versions.end();
  if (v == it->second.versions.end() || !v->second.model)
    return Status(StatusCode::kNotFound,
                  absl::StrCat("Request for unknown model: '", name, "' version ", version, " is not found"));
  return v->second.model;
}

std::vector<int64_t> ModelRepository::ReadyVersions(const std::string& name) const {
  std::vector<int64_t> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return out;
  for (auto v = it->second.versions.rbegin(); v != it->second.versions.rend(); ++v)
    if (v->second.state == ModelState::kReady) out.push_back(v->first);
  return out;
}

bool ModelRepository::AllReady() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, entry] : models_) {
    if (!entry.failure.empty()) return false;
    for (const auto& [v, ver] : entry.versions)
      if (ver.state == ModelState::kLoading || (ver.state == ModelState::kUnavailable && !ver.unloaded)) return false;
  }
  return true;
}

std::vector<std::shared_ptr<ServedModel>> ModelRepository::Loaded() const {
  std::vector<std::shared_ptr<ServedModel>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, entry] : models_)
    for (const auto& [v, ver] : entry.versions)
      if (ver.model) out.push_back(ver.model);
  return out;
}

int64_t ModelRepository::InFlight() const {
  int64_t n = 0;
  for (const auto& m : Loaded()) n += m->batcher().pending() + m->batcher().executing();
  return n;
}

void ModelRepository::StopAll() {
  for (const auto& m : Loaded()) m->Stop();
}

}  // namespace xonnx::serve
