// Prometheus metrics of the inference server, named as Triton names its own
// where there is an equivalent (nv_inference_*: requests by outcome,
// inferences, executions, cumulative queue and compute microseconds,
// pending requests), plus xonnx's call batch sizes and requests running.
#ifndef XONNX_SERVE_METRICS_H_
#define XONNX_SERVE_METRICS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "serve/batcher.h"
#include "xonnx/status.h"

namespace xonnx::serve {

class ServedModel;

class Metrics {
 public:
  // One request to a model version, answered with `outcome`; `result` holds
  // its timings (zeros for a request refused before it was queued).
  void Record(const std::string& model, int64_t version, const Status& outcome, const JobResult& result,
              int64_t total_us);
  // The exposition text (Prometheus text format 0.0.4), with the batchers'
  // executions, batch sizes and queue lengths read from `loaded`.
  std::string Render(const std::vector<std::shared_ptr<ServedModel>>& loaded) const;

 private:
  struct Counters {
    int64_t success = 0;
    std::map<std::string, int64_t> failures;  // by reason: REJECTED, CANCELED, BACKEND, OTHER
    int64_t request_us = 0, queue_us = 0, input_us = 0, infer_us = 0, output_us = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int64_t>, Counters> counters_;
};

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_METRICS_H_
