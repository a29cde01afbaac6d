#include "serve/metrics.h"

#include "absl/strings/str_cat.h"
#include "serve/model.h"

namespace xonnx::serve {
namespace {

std::string Labels(const std::string& model, int64_t version) {
  std::string escaped;
  for (char c : model) {
    if (c == '\\' || c == '"') escaped.push_back('\\');
    escaped.push_back(c == '\n' ? ' ' : c);
  }
  return absl::StrCat("model=\"", escaped, "\",version=\"", version, "\"");
}

void Family(std::string& out, const char* name, const char* type, const char* help) {
  absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

// Why a request failed, as Triton's nv_inference_request_failure labels it.
const char* FailureReason(const Status& s, const JobResult& r) {
  if (s.code() == StatusCode::kCancelled) return "CANCELED";
  if (s.code() == StatusCode::kResourceExhausted || s.code() == StatusCode::kUnavailable) return "REJECTED";
  if (r.batch_rows == 0 && s.code() == StatusCode::kDeadlineExceeded) return "REJECTED";
  if (r.batch_rows > 0) return "BACKEND";
  return "OTHER";
}

}  // namespace

void Metrics::Record(const std::string& model, int64_t version, const Status& outcome, const JobResult& result,
                     int64_t total_us) {
  std::lock_guard<std::mutex> lock(mu_);
  Counters& c = counters_[{model, version}];
  if (outcome.ok()) {
    ++c.success;
  } else {
    ++c.failures[FailureReason(outcome, result)];
  }
  c.request_us += total_us;
  c.queue_us += result.queue_us;
  c.input_us += result.input_us;
  c.infer_us += result.infer_us;
  c.output_us += result.output_us;
}

std::string Metrics::Render(const std::vector<std::shared_ptr<ServedModel>>& loaded) const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  auto counter = [&](const char* name, const char* help, int64_t Counters::*field) {
    Family(out, name, "counter", help);
    for (const auto& [key, c] : counters_)
      absl::StrAppend(&out, name, "{", Labels(key.first, key.second), "} ", c.*field, "\n");
  };
  counter("nv_inference_request_success", "Number of successful inference requests, all batch sizes",
          &Counters::success);
  Family(out, "nv_inference_request_failure", "counter", "Number of failed inference requests, all batch sizes");
  for (const auto& [key, c] : counters_)
    for (const char* reason : {"REJECTED", "CANCELED", "BACKEND", "OTHER"}) {
      auto it = c.failures.find(reason);
      absl::StrAppend(&out, "nv_inference_request_failure{", Labels(key.first, key.second), ",reason=\"", reason,
                      "\"} ", it == c.failures.end() ? 0 : it->second, "\n");
    }
  counter("nv_inference_request_duration_us", "Cumulative inference request duration in microseconds",
          &Counters::request_us);
  counter("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds",
          &Counters::queue_us);
  counter("nv_inference_compute_input_duration_us", "Cumulative compute input duration in microseconds",
          &Counters::input_us);
  counter("nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds",
          &Counters::infer_us);
  counter("nv_inference_compute_output_duration_us", "Cumulative inference compute output duration in microseconds",
          &Counters::output_us);
  // Per loaded model: what its batcher counts.
  struct Row {
    std::string labels;
    const Batcher* b;
  };
  std::vector<Row> rows;
  for (const auto& m : loaded) rows.push_back({Labels(m->config().name, m->version()), &m->batcher()});
  Family(out, "nv_inference_count", "counter", "Number of inferences performed (does not include cached requests)");
  for (const auto& r : rows)
    absl::StrAppend(&out, "nv_inference_count{", r.labels, "} ", r.b->stats().rows.load(), "\n");
  Family(out, "nv_inference_exec_count", "counter",
         "Number of model executions performed (does not include cached requests)");
  for (const auto& r : rows)
    absl::StrAppend(&out, "nv_inference_exec_count{", r.labels, "} ", r.b->stats().executions.load(), "\n");
  Family(out, "nv_inference_pending_request_count", "gauge",
         "Instantaneous number of pending requests awaiting execution per-model.");
  for (const auto& r : rows)
    absl::StrAppend(&out, "nv_inference_pending_request_count{", r.labels, "} ", r.b->pending(), "\n");
  Family(out, "xonnx_inference_executing_request_count", "gauge", "Requests in model executions now");
  for (const auto& r : rows)
    absl::StrAppend(&out, "xonnx_inference_executing_request_count{", r.labels, "} ", r.b->executing(), "\n");
  Family(out, "xonnx_inference_batch_size", "histogram", "Rows per model execution (requests merged by the batcher)");
  for (const auto& r : rows) {
    int64_t cumulative = 0;
    for (int i = 0; i < 8; ++i) {
      cumulative += r.b->stats().batch_histogram[i].load();
      std::string le = i == 7 ? "+Inf" : absl::StrCat(int64_t{1} << i);
      absl::StrAppend(&out, "xonnx_inference_batch_size_bucket{", r.labels, ",le=\"", le, "\"} ", cumulative, "\n");
    }
    absl::StrAppend(&out, "xonnx_inference_batch_size_sum{", r.labels, "} ", r.b->stats().rows.load(), "\n");
    absl::StrAppend(&out, "xonnx_inference_batch_size_count{", r.labels, "} ", cumulative, "\n");
  }
  return out;
}

}  // namespace xonnx::serve
