// The inference server's core, shared by the HTTP and gRPC front ends:
// health, server and model metadata, inference through the models'
// batchers, the repository API, metrics, access logs and the drain on
// shutdown. Nothing here knows a transport.
#ifndef XONNX_SERVE_SERVER_H_
#define XONNX_SERVE_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/metrics.h"
#include "serve/repository.h"
#include "serve/wire.h"

namespace xonnx::serve {

// Which models load, and when (Triton's --model-control-mode).
enum class ControlMode { kNone, kPoll, kExplicit };

struct ServerOptions {
  std::vector<std::string> repositories;
  ControlMode control_mode = ControlMode::kNone;
  int poll_secs = 15;
  std::vector<std::string> load_models;  // kExplicit: loaded at start ("*": all)
  ServeSettings settings;
  // Where access logs go, one JSON object per line (empty: nowhere).
  std::function<void(const std::string&)> access_log;
};

struct TensorMetadata {
  std::string name, datatype;
  std::vector<int64_t> shape;
};
struct ModelMetadata {
  std::string name, platform;
  std::vector<std::string> versions;
  std::vector<TensorMetadata> inputs, outputs;
};

// One line of the access log (the front ends fill what they know).
struct AccessRecord {
  std::string transport, peer, method, target, model, version, id;
  int status = 0;     // HTTP status, or the gRPC code
  std::string error;  // the message of a failure
  int64_t bytes_in = 0, bytes_out = 0;
  int64_t total_us = 0, queue_us = 0, compute_us = 0, batch_rows = 0;
};

class InferenceServer {
 public:
  static constexpr int kDrainLingerMs = 500;
  // Loads the models the control mode starts with (a model that fails is
  // reported and left unavailable; the server still starts) and, in poll
  // mode, starts watching the repository.
  static StatusOr<std::unique_ptr<InferenceServer>> Start(ServerOptions options);
  ~InferenceServer();

  bool live() const { return true; }
  // Every model loaded is ready, and the server is not draining.
  bool ready() const;
  StatusOr<bool> ModelReady(const std::string& name, const std::string& version) const;
  std::string name() const { return "xonnx"; }
  std::string version() const;
  std::vector<std::string> extensions() const;
  StatusOr<ModelMetadata> Metadata(const std::string& name, const std::string& version) const;

  // Runs one request: checks it against the model, queues it for the
  // batcher and waits. Fails with UNAVAILABLE once draining; `record` gets
  // the model, version and timings for the access log.
  StatusOr<InferResponse> Infer(InferRequest request, AccessRecord* record = nullptr);

  // The model repository extension. Load and unload need control mode
  // explicit (as in Triton: in none and poll modes the folder decides).
  std::vector<IndexEntry> Index(bool ready_only) const { return repository_->Index(ready_only); }
  Status Load(const std::string& name, const std::string& config_text);
  Status Unload(const std::string& name);

  std::string MetricsText() const { return metrics_.Render(repository_->Loaded()); }
  void Log(const AccessRecord& record) const;

  // Stops taking requests (ready() turns false, new ones get UNAVAILABLE)
  // and waits until those in flight have been answered, then goes on
  // answering UNAVAILABLE for kDrainLingerMs, all within `timeout_s`.
  // Returns how many were still in flight.
  int64_t Drain(int timeout_s);
  // After a drain that timed out: answers every queued request UNAVAILABLE
  // and cancels the running calls, so that the process can exit now.
  void CancelAll();

 private:
  explicit InferenceServer(ServerOptions options);
  void PollLoop();

  ServerOptions options_;
  std::unique_ptr<ModelRepository> repository_;
  Metrics metrics_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> in_flight_{0};
  std::mutex poll_mu_;
  std::condition_variable poll_cv_;
  bool stop_poll_ = false;
  std::thread poller_;
  mutable std::mutex log_mu_;
};

// The protocol extensions the server metadata lists.
inline constexpr const char* kServerExtensions[] = {"binary_tensor_data", "model_repository", "parameters", "metrics"};

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_SERVER_H_
