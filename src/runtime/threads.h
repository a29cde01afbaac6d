// The session's threads: one pool for all its parallel work (asynchronous
// calls, the devices' parts of a split batch, compiling buckets at Open),
// and a limit on how many asynchronous calls run at once.
#ifndef XONNX_RUNTIME_THREADS_H_
#define XONNX_RUNTIME_THREADS_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace xonnx {

// Workers started as work arrives, up to a maximum; more tasks wait in the
// queue instead of each getting a thread. Destroying the pool drains the
// queue: every submitted task runs.
class ThreadPool {
 public:
  explicit ThreadPool(size_t max_workers) : max_workers_(max_workers < 1 ? 1 : max_workers) {}
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task);
  // Runs every task submitted (tasks may still submit and call ParallelFor
  // meanwhile) and joins the workers. The pool stays usable by the tasks
  // until this returns, which is why an owner calls it before destroying
  // the pool: unique_ptr::reset() clears its pointer first.
  void Shutdown();

  // Runs fn(0..n-1), at most `width` at once, on the pool's workers and the
  // calling thread, and returns when they have run; fn returns false to
  // stop the items not started yet. The caller takes items itself, so this
  // finishes even when every worker is busy (a pool task may call it).
  void ParallelFor(int n, int width, const std::function<bool(int)>& fn);

 private:
  void Work();
  const size_t max_workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

// Runs tasks on a pool, at most `limit` at a time; the others wait their
// turn in order (Session::RunAsync: calls beyond two per device gain
// nothing and hold memory). Its tasks refer to it: destroy the pool (which
// runs them all) before it.
class LimitedQueue {
 public:
  LimitedQueue(ThreadPool* pool, size_t limit) : pool_(pool), limit_(limit < 1 ? 1 : limit) {}
  void Submit(std::function<void()> task);
  // Runs every task submitted (tasks may still submit and call ParallelFor
  // meanwhile) and joins the workers. The pool stays usable by the tasks
  // until this returns, which is why an owner calls it before destroying
  // the pool: unique_ptr::reset() clears its pointer first.
  void Shutdown();

 private:
  void Start(std::function<void()> task);
  ThreadPool* pool_;
  const size_t limit_;
  std::mutex mu_;
  size_t running_ = 0;
  std::deque<std::function<void()>> waiting_;
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_THREADS_H_
