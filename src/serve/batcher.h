// The dynamic batcher: a model's bounded request queue and the threads that
// run it. Requests whose inputs agree in every dimension but the first are
// merged into one call of up to max_batch rows (waiting at most the queue
// delay for more), run on one of the model's instances, and split back. A
// request is answered exactly once: with its outputs, or with an error.
//
// It waits only for rows it has reason to expect: as many as were in flight
// (queued or running) at the busiest moment since the last call started,
// up to the target. A lone client's request runs at once instead of
// waiting out the delay; sixteen clients' requests, which arrive spread
// over the time their answers take to go out, are gathered into one call
// instead of running as fragments while the rest arrive. The queue delay
// counts from when the oldest request arrived or the instance became free,
// whichever is later: a request that waited out a long call does not make
// the next call start with the few rows that came during it. A burst is
// over once the model has sat idle for longer than the delay.
#ifndef XONNX_SERVE_BATCHER_H_
#define XONNX_SERVE_BATCHER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "xonnx/options.h"
#include "xonnx/status.h"
#include "xonnx/tensor.h"

namespace xonnx::serve {

using Clock = std::chrono::steady_clock;

// What a request's outputs came with: the batch it ran in and where its
// time went, in microseconds.
struct JobResult {
  StatusOr<std::vector<Tensor>> outputs = Status(StatusCode::kUnknown, "not run");
  int64_t batch_rows = 0;  // rows of the call it ran in (0: never ran)
  int64_t queue_us = 0, input_us = 0, infer_us = 0, output_us = 0;
};

// One request in a queue.
struct Job {
  std::map<std::string, Tensor> inputs;  // validated against the model
  int64_t rows = 1;                      // its batch size (dim 0) when the model batches
  std::string shape_key;                 // jobs with equal keys may share a call
  Clock::time_point arrived = Clock::now();
  Clock::time_point deadline = Clock::time_point::max();
  std::promise<JobResult> promise;
  std::future<JobResult> future = promise.get_future();
  enum State { kQueued, kRunning, kAnswered };
  State state = kQueued;  // guarded by the batcher's mutex
};

// Runs one call on an instance (a session on a device).
using Runner = std::function<StatusOr<std::vector<Tensor>>(const std::map<std::string, Tensor>&, const RunOptions&)>;

class Batcher {
 public:
  struct Options {
    bool batching = false;     // merge requests; otherwise each runs alone
    int64_t max_batch = 1;     // rows per call
    int64_t target_rows = 1;   // stop waiting once this many rows are queued
    int64_t max_delay_us = 0;  // how long the oldest request may wait for more
    int64_t max_queue = 1024;  // queued requests beyond which Submit refuses
  };
  // Counters the metrics read.
  struct Stats {
    std::atomic<int64_t> executions{0}, rows{0};
    std::atomic<int64_t> batch_histogram[8] = {};  // calls of <= 1, 2, 4, ..., 64, more rows
  };

  // One thread per runner; each takes calls from the one queue.
  Batcher(Options options, std::vector<Runner> runners);
  ~Batcher();  // Stop()

  // Queues a job. RESOURCE_EXHAUSTED at once when the queue is full,
  // UNAVAILABLE after Stop().
  Status Submit(const std::shared_ptr<Job>& job);
  // The job's result. A job still queued at its deadline is taken out and
  // fails with DEADLINE_EXCEEDED; a running one is waited for (its call
  // runs under the latest deadline of the jobs in it).
  JobResult Wait(const std::shared_ptr<Job>& job);
  // Refuses new jobs, runs the queued ones, waits for all, joins.
  void Stop();
  // Refuses new jobs, answers the queued ones UNAVAILABLE and cancels the
  // running calls (they end with CANCELLED between kernels); does not wait.
  void Cancel();

  int64_t pending() const;    // queued, not yet running
  int64_t executing() const;  // in calls now
  const Stats& stats() const { return stats_; }

 private:
  void Loop(size_t runner);
  // Takes the next call's jobs (mutex held); empty when there is none yet.
  // `free_since`: when the calling thread finished its last call.
  std::vector<std::shared_ptr<Job>> Take(std::unique_lock<std::mutex>& lock, Clock::time_point free_since);
  int64_t RowsReady(const std::string& key) const;
  void RunCall(size_t runner, std::vector<std::shared_ptr<Job>>& jobs);
  void Answer(Job& job, JobResult result);

  Options options_;
  std::vector<Runner> runners_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  int64_t executing_ = 0;
  // Rows queued or running now, the most since the last call started, and
  // what that most was for the previous call (the rows worth waiting for).
  int64_t in_flight_rows_ = 0, peak_rows_ = 0, expected_rows_ = 1;
  Clock::time_point last_answer_ = Clock::now();
  Stats stats_;
  std::shared_ptr<CancelToken> cancel_ = std::make_shared<CancelToken>();
  std::vector<std::thread> threads_;
};

// The key under which a job's inputs batch: names, types and every dim
// after the first (or all dims when `batching` is off).
std::string ShapeKey(const std::map<std::string, Tensor>& inputs, bool batching);

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_BATCHER_H_
