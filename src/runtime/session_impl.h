// The state behind a public Session (xonnx/session.h): the model runner,
// buckets and graph stages, and the steps Open() and Run() share.
#ifndef XONNX_RUNTIME_SESSION_IMPL_H_
#define XONNX_RUNTIME_SESSION_IMPL_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "onnx/model.h"
#include "runtime/buckets.h"
#include "runtime/call_bounds.h"
#include "runtime/graph_stages.h"
#include "runtime/model_runner.h"
#include "runtime/threads.h"
#include "runtime/trace.h"
#include "xonnx/session.h"

namespace xonnx {

// The model at `path` with `rewrite` applied to it as loaded: the file is
// read once, where writing a rewritten model out and reading it back held
// three copies of its weights at once. When `rewrite` returns true (it
// must then have left a valid model, a function of the file and `tag`
// alone), the content fingerprint that compiled programs are cached by
// takes `tag` in, and *rewritten is true; when it returns false it must
// have changed nothing.
absl::StatusOr<std::shared_ptr<onnx_import::LoadedModel>> LoadRewritten(
    const std::string& path, const std::function<bool(onnx::ModelProto*)>& rewrite, const std::string& tag,
    bool* rewritten);

struct Session::Impl {
  // Everything Session::Open does after loading the model (LoadModel or
  // LoadModelFromBytes; the model's path names it in messages).
  static absl::StatusOr<std::unique_ptr<Impl>> Open(std::shared_ptr<onnx_import::LoadedModel> model,
                                                    const SessionOptions& options);
  // Session::Open of the model LoadRewritten gives.
  static absl::StatusOr<std::unique_ptr<Impl>> OpenRewritten(const std::string& path, const SessionOptions& options,
                                                             const std::function<bool(onnx::ModelProto*)>& rewrite,
                                                             const std::string& tag, bool* rewritten);

  SessionOptions options;
  std::vector<TensorSpec> inputs, outputs;
  std::string unsupported;  // non-empty when allow_unsupported let Open pass
  double load_ms = 0;
  std::unique_ptr<ModelRunner> runner;
  Buckets buckets;
  GraphStages stages;
  // Some input or output is a sequence or an optional (RunValues).
  bool value_io = false;
  // The profile (SessionOptions::profile_file), or null.
  std::shared_ptr<TraceRecorder> trace;
  // Raised when the session closes: its calls in flight stop.
  CancelToken closing;
  // All of the session's parallel work runs on `pool` (made at Open,
  // threads started as work arrives); RunAsync's calls go through `async`,
  // at most two per device (at least four) at once.
  // (`async` is declared first so that `pool`, destroyed first, drains
  // its tasks while `async` is whole.)
  std::unique_ptr<LimitedQueue> async;
  std::unique_ptr<ThreadPool> pool;

  const std::string& path() const { return runner->path(); }
  int num_devices() const { return runner->devices().size(); }

  // Every name given to a call is one of the model's inputs.
  template <typename V>
  absl::Status CheckInputNames(const std::map<std::string, V>& given) const {
    for (const auto& [name, v] : given) {
      bool known = false;
      for (const auto& s : inputs) known |= s.name == name;
      if (!known) return InvalidArgument("%s: the model has no input named '%s'", path(), name);
    }
    return absl::OkStatus();
  }

  // The session has a plugin to run on (not SessionOptions::kNoPlugin).
  absl::Status CheckRunnable() const {
    if (runner->client()) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat(path(),
                     ": the session was opened without a plugin (plugin \"none\"); it describes and converts "
                     "the model but cannot run it"));
  }

  // The call's inputs are the model's, each of its declared type and shape.
  absl::Status CheckInputs(const std::map<std::string, Tensor>& inputs) const;

  // Rows [begin, begin + rows) of the batched inputs, padded to a bucket,
  // run on devices[dev]; the outputs cut back to `rows`.
  absl::StatusOr<std::vector<Tensor>> RunRows(const std::map<std::string, Tensor>& all, int64_t begin, int64_t rows,
                                              int64_t total, int dev, const CallBounds& bounds);
  // With buckets covering every dynamic dimension, compiles (or loads) every
  // bucket on every device now, in parallel.
  absl::Status CompileBuckets();
  // Options a split graph cannot honour: padding or splitting the batch
  // would reach the host nodes, or the values computed at run time, and
  // change what they are.
  absl::Status CheckSplitOptions() const;
  // Buckets and device splits work on tensors with a batch dimension.
  absl::Status CheckValueOptions() const;
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_SESSION_IMPL_H_
