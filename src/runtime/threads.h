// The session's threads: RunAsync's workers, and a parallel for over the
// buckets compiled at Open.
#ifndef XONNX_RUNTIME_THREADS_H_
#define XONNX_RUNTIME_THREADS_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace xonnx {

// RunAsync's workers: started as calls arrive, up to a maximum; more calls
// wait in the queue instead of each getting a thread. Destroying it drains
// the queue: every submitted task runs.
class AsyncWorkers {
 public:
  explicit AsyncWorkers(size_t max_workers) : max_workers_(max_workers) {}
  ~AsyncWorkers() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void Submit(std::function<void()> task) {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(task));
    if (idle_ == 0 && threads_.size() < max_workers_) threads_.emplace_back([this] { Work(); });
    cv_.notify_one();
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // stopping, and nothing left
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      task();
      l.lock();
    }
  }
  const size_t max_workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

// Runs fn(0..n-1) on up to `threads` threads (the caller's among them);
// fn returns false to stop the items not started yet.
inline void ParallelFor(int n, int threads, const std::function<bool(int)>& fn) {
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int k; (k = next++) < n;)
      if (!fn(k)) next = n;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min(threads, n); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace xonnx

#endif  // XONNX_RUNTIME_THREADS_H_
