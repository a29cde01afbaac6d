#include "serve/batcher.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xonnx::serve {
namespace {

int64_t Micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count();
}

int64_t RowSize(const Tensor& t) {
  int64_t n = 1;
  for (size_t i = 1; i < t.dims().size(); ++i) n *= t.dims()[i];
  return n;
}

// The jobs' tensors of one input, one after another along dim 0.
Tensor ConcatRows(const std::vector<std::shared_ptr<Job>>& jobs, const std::string& name, int64_t rows) {
  const Tensor& first = jobs[0]->inputs.at(name);
  std::vector<int64_t> dims = first.dims();
  dims[0] = rows;
  if (first.dtype() == DataType::kString) {
    std::vector<std::string> values;
    for (const auto& j : jobs) {
      const auto& s = j->inputs.at(name).strings();
      values.insert(values.end(), s.begin(), s.end());
    }
    return Tensor::FromStrings(dims, std::move(values));
  }
  Tensor out = Tensor::ForOverwrite(first.dtype(), dims);
  char* at = static_cast<char*>(out.data());
  for (const auto& j : jobs) {
    const Tensor& t = j->inputs.at(name);
    if (t.byte_size() == 0) continue;
    std::memcpy(at, t.data(), t.byte_size());
    at += t.byte_size();
  }
  return out;
}

// Rows [begin, begin + count) of `t`.
Tensor SliceRows(const Tensor& t, int64_t begin, int64_t count) {
  std::vector<int64_t> dims = t.dims();
  dims[0] = count;
  int64_t row = RowSize(t);
  if (t.dtype() == DataType::kString) {
    auto from = t.strings().begin() + begin * row;
    return Tensor::FromStrings(dims, std::vector<std::string>(from, from + count * row));
  }
  size_t w = DataTypeSize(t.dtype());
  if (count * row == 0) return Tensor(t.dtype(), dims);
  return Tensor::FromData(t.dtype(), dims, static_cast<const char*>(t.data()) + begin * row * w);
}

int HistogramSlot(int64_t rows) {
  int slot = 0;
  for (int64_t limit = 1; slot < 7 && rows > limit; limit *= 2) ++slot;
  return slot;
}

}  // namespace

std::string ShapeKey(const std::map<std::string, Tensor>& inputs, bool batching) {
  std::string key;
  for (const auto& [name, t] : inputs) {
    const auto& d = t.dims();
    absl::StrAppend(&key, name, ":", static_cast<int>(t.dtype()), ":",
                    absl::StrJoin(d.begin() + (batching && !d.empty() ? 1 : 0), d.end(), "x"), ";");
  }
  return key;
}

Batcher::Batcher(Options options, std::vector<Runner> runners) : options_(options), runners_(std::move(runners)) {
  for (size_t i = 0; i < runners_.size(); ++i) threads_.emplace_back([this, i] { Loop(i); });
}

Batcher::~Batcher() { Stop(); }

Status Batcher::Submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status(StatusCode::kUnavailable, "the model is being unloaded or the server is stopping");
    if (static_cast<int64_t>(queue_.size()) >= options_.max_queue)
      return Status(StatusCode::kResourceExhausted,
                    absl::StrCat("the model's queue is full (", options_.max_queue, " requests waiting); retry later"));
    if (queue_.empty() && executing_ == 0 &&
        job->arrived - last_answer_ > std::chrono::microseconds(options_.max_delay_us))
      expected_rows_ = peak_rows_ = 0;  // idle for longer than the delay: the last burst is over
    queue_.push_back(job);
    in_flight_rows_ += job->rows;
    peak_rows_ = std::max(peak_rows_, in_flight_rows_);
  }
  cv_.notify_all();
  return OkStatus();
}

JobResult Batcher::Wait(const std::shared_ptr<Job>& job) {
  if (job->deadline == Clock::time_point::max()) return job->future.get();
  if (job->future.wait_until(job->deadline) != std::future_status::ready) {
    std::unique_lock<std::mutex> lock(mu_);
    if (job->state == Job::kQueued) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), job));
      JobResult r;
      r.queue_us = Micros(job->arrived, Clock::now());
      r.outputs = Status(StatusCode::kDeadlineExceeded,
                         absl::StrCat("the request waited ", r.queue_us / 1000, " ms in the queue, past its timeout"));
      Answer(*job, std::move(r));
    }
  }
  return job->future.get();
}

void Batcher::Answer(Job& job, JobResult result) {
  job.state = Job::kAnswered;
  in_flight_rows_ -= job.rows;
  last_answer_ = Clock::now();
  job.promise.set_value(std::move(result));
}

void Batcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Batcher::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  cancel_->Cancel();
  for (auto& job : queue_) {
    JobResult r;
    r.outputs = Status(StatusCode::kUnavailable, "the server stopped before the request ran");
    Answer(*job, std::move(r));
  }
  queue_.clear();
  cv_.notify_all();
}

int64_t Batcher::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t Batcher::executing() const {
  std::lock_guard<std::mutex> lock(mu_);
  return executing_;
}

int64_t Batcher::RowsReady(const std::string& key) const {
  int64_t rows = 0;
  for (const auto& j : queue_)
    if (j->shape_key == key && rows + j->rows <= options_.max_batch) rows += j->rows;
  return rows;
}

std::vector<std::shared_ptr<Job>> Batcher::Take(std::unique_lock<std::mutex>& lock, Clock::time_point free_since) {
  std::vector<std::shared_ptr<Job>> taken;
  // Requests already past their deadline are answered, never run.
  Clock::time_point now = Clock::now();
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->deadline > now) {
      ++it;
      continue;
    }
    JobResult r;
    r.queue_us = Micros((*it)->arrived, now);
    r.outputs = Status(StatusCode::kDeadlineExceeded, "the request's timeout passed while it was queued");
    Answer(**it, std::move(r));
    it = queue_.erase(it);
  }
  if (queue_.empty()) return taken;
  std::shared_ptr<Job> first = queue_.front();
  if (options_.batching && !stopping_) {
    Clock::time_point until = std::max(first->arrived, free_since) + std::chrono::microseconds(options_.max_delay_us);
    int64_t target = std::min(options_.target_rows, std::max<int64_t>(1, expected_rows_));
    if (RowsReady(first->shape_key) < target && Clock::now() < until) {
      cv_.wait_until(lock, until);
      return taken;  // the caller looks again: more may have come, or another thread took them
    }
  }
  int64_t rows = 0;
  for (auto it = queue_.begin(); it != queue_.end();) {
    bool fits = taken.empty() ||
                (options_.batching && (*it)->shape_key == first->shape_key && rows + (*it)->rows <= options_.max_batch);
    if (!fits) {
      ++it;
      continue;
    }
    rows += (*it)->rows;
    (*it)->state = Job::kRunning;
    taken.push_back(*it);
    it = queue_.erase(it);
    if (!options_.batching) break;
  }
  expected_rows_ = peak_rows_;
  peak_rows_ = in_flight_rows_;
  return taken;
}

void Batcher::Loop(size_t runner) {
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point free_since = Clock::now();
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::vector<std::shared_ptr<Job>> jobs = Take(lock, free_since);
    if (jobs.empty()) continue;
    executing_ += static_cast<int64_t>(jobs.size());
    lock.unlock();
    RunCall(runner, jobs);
    lock.lock();
    executing_ -= static_cast<int64_t>(jobs.size());
    free_since = Clock::now();
  }
}

void Batcher::RunCall(size_t runner, std::vector<std::shared_ptr<Job>>& jobs) {
  Clock::time_point start = Clock::now();
  int64_t rows = 0;
  Clock::time_point deadline = Clock::time_point::min();
  for (const auto& j : jobs) {
    rows += j->rows;
    deadline = std::max(deadline, j->deadline);
  }
  RunOptions run;
  run.deadline_ms = 0;
  run.cancel = cancel_;
  if (deadline != Clock::time_point::max()) run.deadline_ms = std::max<int64_t>(1, Micros(start, deadline) / 1000 + 1);
  std::map<std::string, Tensor> merged;
  const std::map<std::string, Tensor>* inputs = &jobs[0]->inputs;
  StatusOr<std::vector<Tensor>> outputs = Status(StatusCode::kInternal, "not run");
  Clock::time_point run_start = start;
  try {
    if (jobs.size() > 1) {
      for (const auto& [name, t] : jobs[0]->inputs) merged[name] = ConcatRows(jobs, name, rows);
      inputs = &merged;
    }
    run_start = Clock::now();
    outputs = runners_[runner](*inputs, run);
  } catch (const std::exception& e) {  // std::bad_alloc on a call too large for memory
    outputs = Status(StatusCode::kResourceExhausted, absl::StrCat("the call failed: ", e.what()));
  }
  Clock::time_point run_end = Clock::now();
  if (!outputs.ok() && cancel_->cancelled())
    outputs = Status(StatusCode::kUnavailable, "the server stopped while the request ran (--exit-timeout-secs)");
  merged.clear();
  stats_.executions.fetch_add(1);
  stats_.rows.fetch_add(rows);
  stats_.batch_histogram[HistogramSlot(rows)].fetch_add(1);
  if (outputs.ok() && jobs.size() > 1)
    for (const Tensor& t : *outputs)
      if (t.dims().empty() || t.dims()[0] != rows)
        outputs = Status(StatusCode::kInternal, absl::StrCat("an output of shape ", t.ShapeString(), " for a batch of ",
                                                             rows, " rows cannot be split back into requests"));
  int64_t at = 0;
  for (const auto& j : jobs) {
    JobResult r;
    r.batch_rows = rows;
    r.queue_us = Micros(j->arrived, start);
    r.input_us = Micros(start, run_start);
    r.infer_us = Micros(run_start, run_end);
    if (!outputs.ok()) {
      r.outputs = outputs.status();
    } else if (jobs.size() == 1) {
      r.outputs = std::move(*outputs);
    } else {
      try {
        std::vector<Tensor> mine;
        for (const Tensor& t : *outputs) mine.push_back(SliceRows(t, at, j->rows));
        r.outputs = std::move(mine);
      } catch (const std::exception& e) {
        r.outputs = Status(StatusCode::kResourceExhausted, absl::StrCat("splitting the call's outputs: ", e.what()));
      }
    }
    at += j->rows;
    r.output_us = Micros(run_end, Clock::now());
    std::lock_guard<std::mutex> lock(mu_);
    Answer(*j, std::move(r));
  }
}

}  // namespace xonnx::serve
