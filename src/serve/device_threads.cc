#include "serve/device_threads.h"

#include <future>

namespace xonnx::serve {

DeviceThreads::~DeviceThreads() {
  for (auto& [index, d] : devices_) {
    {
      std::lock_guard<std::mutex> lock(d->mu);
      d->stopping = true;
    }
    d->cv.notify_all();
    for (auto& t : d->threads) t.join();
  }
}

DeviceThreads::Device& DeviceThreads::Get(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& d = devices_[device];
  if (!d) d = std::make_unique<Device>();
  return *d;
}

void DeviceThreads::Reserve(int device, int count) {
  Device& d = Get(device);
  std::lock_guard<std::mutex> lock(d.mu);
  while (static_cast<int>(d.threads.size()) < count) d.threads.emplace_back([&d] { Work(d); });
}

void DeviceThreads::Run(int device, const std::function<void()>& fn) {
  Device& d = Get(device);
  std::promise<void> done;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (d.threads.empty()) d.threads.emplace_back([&d] { Work(d); });
    d.tasks.push_back([&] {
      // Callers turn their own exceptions into errors; one that escapes
      // must still release the caller, never end the process.
      try {
        fn();
      } catch (...) {
      }
      done.set_value();
    });
  }
  d.cv.notify_one();
  done.get_future().wait();
}

void DeviceThreads::Work(Device& d) {
  std::unique_lock<std::mutex> lock(d.mu);
  for (;;) {
    d.cv.wait(lock, [&] { return d.stopping || !d.tasks.empty(); });
    if (d.tasks.empty()) return;
    std::function<void()> task = std::move(d.tasks.front());
    d.tasks.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace xonnx::serve
