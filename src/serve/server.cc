#include "serve/server.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "xonnx/session.h"

namespace xonnx::serve {
namespace {

int64_t MicrosSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

}  // namespace

InferenceServer::InferenceServer(ServerOptions options) : options_(std::move(options)) {
  repository_ = std::make_unique<ModelRepository>(options_.repositories, options_.settings);
}

StatusOr<std::unique_ptr<InferenceServer>> InferenceServer::Start(ServerOptions options) {
  std::unique_ptr<InferenceServer> s(new InferenceServer(std::move(options)));
  StatusOr<std::map<std::string, std::string>> found = s->repository_->Scan();
  if (!found.ok()) return found.status();
  std::vector<std::string> names;
  if (s->options_.control_mode != ControlMode::kExplicit ||
      (s->options_.load_models.size() == 1 && s->options_.load_models[0] == "*")) {
    for (const auto& [name, dir] : *found) names.push_back(name);
  } else {
    for (const auto& name : s->options_.load_models) {
      if (name == "*") return Status(StatusCode::kInvalidArgument, "--load-model=* must be the only --load-model");
      if (!found->count(name))
        return Status(StatusCode::kNotFound, absl::StrCat("--load-model ", name, ": no such model in the repository"));
      names.push_back(name);
    }
  }
  for (const auto& name : names) {
    // A model that fails stays unavailable with its reason in the index;
    // the others serve.
    Status st = s->repository_->Load(name);
    (void)st;
  }
  if (s->options_.control_mode == ControlMode::kPoll) s->poller_ = std::thread([p = s.get()] { p->PollLoop(); });
  return s;
}

InferenceServer::~InferenceServer() {
  {
    std::lock_guard<std::mutex> lock(poll_mu_);
    stop_poll_ = true;
  }
  poll_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  repository_->StopAll();
}

void InferenceServer::PollLoop() {
  std::unique_lock<std::mutex> lock(poll_mu_);
  while (!poll_cv_.wait_for(lock, std::chrono::seconds(options_.poll_secs), [&] { return stop_poll_; })) {
    lock.unlock();
    Status s = repository_->Poll();  // failures are logged per model and shown by the index
    (void)s;
    lock.lock();
  }
}

bool InferenceServer::ready() const { return !draining_.load() && repository_->AllReady(); }

std::string InferenceServer::version() const { return Version(); }

std::vector<std::string> InferenceServer::extensions() const {
  return std::vector<std::string>(std::begin(kServerExtensions), std::end(kServerExtensions));
}

StatusOr<bool> InferenceServer::ModelReady(const std::string& name, const std::string& version) const {
  if (name.empty()) return Status(StatusCode::kInvalidArgument, "Missing model name in ModelReady request");
  return repository_->Find(name, version).ok() && !draining_.load();
}

StatusOr<ModelMetadata> InferenceServer::Metadata(const std::string& name, const std::string& version) const {
  StatusOr<std::shared_ptr<ServedModel>> m = repository_->Find(name, version);
  if (!m.ok()) return m.status();
  const ModelConfig& c = (*m)->config();
  ModelMetadata md;
  md.name = name;
  md.platform = c.platform;
  if (version.empty()) {
    for (int64_t v : repository_->ReadyVersions(name)) md.versions.push_back(std::to_string(v));
  } else {
    md.versions.push_back(std::to_string((*m)->version()));
  }
  for (const auto* list : {&c.inputs, &c.outputs})
    for (const auto& t : *list)
      (list == &c.inputs ? md.inputs : md.outputs).push_back({t.name, WireName(t.dtype), (*m)->WireShape(t)});
  return md;
}

StatusOr<InferResponse> InferenceServer::Infer(InferRequest request, AccessRecord* record) {
  Clock::time_point start = Clock::now();
  if (record) {
    record->model = request.model;
    record->version = request.version;
    record->id = request.id;
  }
  // Counted before the check, so that Drain() never misses a request that
  // got past it.
  in_flight_.fetch_add(1);
  struct Done {
    std::atomic<int64_t>& n;
    ~Done() { n.fetch_sub(1); }
  } done{in_flight_};
  if (draining_.load()) return Status(StatusCode::kUnavailable, "the server is shutting down");
  StatusOr<std::shared_ptr<ServedModel>> model = repository_->Find(request.model, request.version);
  if (!model.ok()) return model.status();
  JobResult result;
  StatusOr<std::vector<InferOutput>> outputs = (*model)->Infer(request, result);
  if (outputs.status().code() == StatusCode::kUnavailable && !draining_.load()) {
    // A reload or unload took the version found away before the request
    // was queued: ask again (the new version, or 404).
    model = repository_->Find(request.model, request.version);
    if (!model.ok()) return model.status();
    outputs = (*model)->Infer(request, result);
  }
  int64_t total = MicrosSince(start);
  metrics_.Record(request.model, (*model)->version(), outputs.status(), result, total);
  if (record) {
    record->version = std::to_string((*model)->version());
    record->queue_us = result.queue_us;
    record->compute_us = result.input_us + result.infer_us + result.output_us;
    record->batch_rows = result.batch_rows;
  }
  if (!outputs.ok()) return outputs.status();
  InferResponse response;
  response.model = request.model;
  response.version = std::to_string((*model)->version());
  response.id = request.id;
  response.outputs = std::move(*outputs);
  return response;
}

Status InferenceServer::Load(const std::string& name, const std::string& config_text) {
  if (options_.control_mode != ControlMode::kExplicit)
    return Status(StatusCode::kUnavailable,
                  "explicit model load / unload is not allowed unless --model-control-mode=explicit");
  return repository_->Load(name, config_text);
}

Status InferenceServer::Unload(const std::string& name) {
  if (options_.control_mode != ControlMode::kExplicit)
    return Status(StatusCode::kUnavailable,
                  "explicit model load / unload is not allowed unless --model-control-mode=explicit");
  return repository_->Unload(name);
}

void InferenceServer::Log(const AccessRecord& r) const {
  if (!options_.access_log) return;
  auto now = std::chrono::system_clock::now().time_since_epoch();
  nlohmann::json j = {
      {"time_ms", std::chrono::duration_cast<std::chrono::milliseconds>(now).count()},
      {"transport", r.transport},
      {"peer", r.peer},
      {"method", r.method},
      {"target", r.target},
      {"status", r.status},
      {"bytes_in", r.bytes_in},
      {"bytes_out", r.bytes_out},
      {"total_us", r.total_us},
  };
  if (!r.model.empty()) {
    j["model"] = r.model;
    j["version"] = r.version;
    j["queue_us"] = r.queue_us;
    j["compute_us"] = r.compute_us;
    j["batch_rows"] = r.batch_rows;
  }
  if (!r.id.empty()) j["id"] = r.id;
  if (!r.error.empty()) j["error"] = r.error;
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(log_mu_);
  options_.access_log(line);
}

void InferenceServer::CancelAll() {
  for (const auto& m : repository_->Loaded()) m->Cancel();
}

int64_t InferenceServer::Drain(int timeout_s) {
  draining_.store(true);
  Clock::time_point until = Clock::now() + std::chrono::seconds(timeout_s);
  while (in_flight_.load() > 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Clients whose last request was just answered send one more: it gets
  // 503 here, rather than a reset from a closed listener, which would leave
  // them unsure whether it ran.
  Clock::time_point linger = std::min(until, Clock::now() + std::chrono::milliseconds(kDrainLingerMs));
  while (Clock::now() < linger) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  while (in_flight_.load() > 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return in_flight_.load();
}

}  // namespace xonnx::serve
