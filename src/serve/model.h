// One version of a model being served: its configuration, a session per
// device, and the batcher that runs requests on them.
#ifndef XONNX_SERVE_MODEL_H_
#define XONNX_SERVE_MODEL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/batcher.h"
#include "serve/device_threads.h"
#include "serve/model_config.h"
#include "serve/wire.h"
#include "xonnx/session.h"

namespace xonnx::serve {

// What every model of a server shares.
struct ServeSettings {
  SessionOptions session;          // plugin, cache, types (per-model parameters override)
  std::vector<int> devices = {0};  // instances go on each of these
  int default_max_batch = 8;       // for models without config.pbtxt that can batch
  int64_t default_queue_size = 256;
  bool strict_config = false;
  bool warmup = true;
  // Each session writes its Chrome/Perfetto trace (every call, its phases
  // and kernels) here as <model>_v<version>_d<device>.json when the model
  // unloads or the server stops; empty: no traces.
  std::string profile_dir;
  std::function<void(const std::string&)> log;  // one line of the server's log
  // Where every call and warm-up runs (one set of threads per device, for
  // all models); must outlive the models.
  std::shared_ptr<DeviceThreads> device_threads = std::make_shared<DeviceThreads>();
};

class ServedModel {
 public:
  // Opens DIR/<version>/<model file> with `config` (completed from the
  // model), compiles its batch sizes and runs each once (warm-up).
  static StatusOr<std::shared_ptr<ServedModel>> Load(const std::string& model_dir, int64_t version, ModelConfig config,
                                                     const ServeSettings& settings);
  ~ServedModel();

  const ModelConfig& config() const { return config_; }
  int64_t version() const { return version_; }
  // The devices its sessions run on, e.g. "0,1".
  const std::string& devices() const { return devices_; }
  // The protocol's view of an input or output: [-1] + dims when batching.
  std::vector<int64_t> WireShape(const TensorConfig& t) const;

  // Checks a request against the model (names, types, shapes, batch size,
  // requested outputs), queues it, waits for it and picks the outputs
  // asked for. `result` gets the timings even on failure.
  StatusOr<std::vector<InferOutput>> Infer(InferRequest& request, JobResult& result);

  Batcher& batcher() { return *batcher_; }
  // Finishes the queued and running requests and refuses new ones.
  void Stop() { batcher_->Stop(); }
  // Answers the queued requests UNAVAILABLE and cancels the running calls.
  void Cancel() { batcher_->Cancel(); }

 private:
  ServedModel() = default;
  StatusOr<std::shared_ptr<Job>> MakeJob(InferRequest& request) const;
  StatusOr<std::vector<size_t>> PickOutputs(const InferRequest& request, std::vector<bool>& binary) const;
  Status Warmup(const ServeSettings& settings);

  ModelConfig config_;
  int64_t version_ = 0;
  std::string devices_;
  std::vector<std::unique_ptr<Session>> sessions_;  // one per device
  std::vector<std::string> session_outputs_;        // the sessions' outputs, in order
  std::unique_ptr<Batcher> batcher_;
};

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_MODEL_H_
