#include "runtime/threads.h"

#include <algorithm>

namespace xonnx {

ThreadPool::~ThreadPool() { Shutdown(); }

void ThreadPool::Shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  // threads_ no longer grows (Submit checks stop_).
  for (auto& t : threads_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  std::lock_guard<std::mutex> l(mu_);
  queue_.push_back(std::move(task));
  // While stopping, the workers left drain the queue (the destructor is
  // joining threads_, which must not grow).
  if (!stop_ && idle_ == 0 && threads_.size() < max_workers_) threads_.emplace_back([this] { Work(); });
  cv_.notify_one();
}

void ThreadPool::Work() {
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

namespace {

// What the participants of one ParallelFor share. Helpers still queued when
// it returns find nothing left to take and never touch `fn`.
struct ForState {
  std::mutex mu;
  std::condition_variable done;
  int next = 0, n = 0, running = 0;
  bool stop = false;
  const std::function<bool(int)>* fn = nullptr;

  void Take() {
    for (;;) {
      int k;
      {
        std::lock_guard<std::mutex> l(mu);
        if (stop || next >= n) return;
        k = next++;
        ++running;
      }
      bool go = (*fn)(k);
      std::lock_guard<std::mutex> l(mu);
      --running;
      stop |= !go;
      if (running == 0 && (stop || next >= n)) done.notify_all();
    }
  }
};

}  // namespace

void ThreadPool::ParallelFor(int n, int width, const std::function<bool(int)>& fn) {
  if (n <= 0) return;
  auto st = std::make_shared<ForState>();
  st->n = n;
  st->fn = &fn;
  for (int h = 1; h < std::min(width, n); ++h) Submit([st] { st->Take(); });
  st->Take();
  std::unique_lock<std::mutex> l(st->mu);
  st->done.wait(l, [&] { return st->running == 0 && (st->stop || st->next >= st->n); });
}

void LimitedQueue::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (running_ >= limit_) {
      waiting_.push_back(std::move(task));
      return;
    }
    ++running_;
  }
  Start(std::move(task));
}

void LimitedQueue::Start(std::function<void()> task) {
  pool_->Submit([this, task = std::move(task)] {
    task();
    std::function<void()> next;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (waiting_.empty()) {
        --running_;
        return;
      }
      next = std::move(waiting_.front());
      waiting_.pop_front();
    }
    Start(std::move(next));
  });
}

}  // namespace xonnx
