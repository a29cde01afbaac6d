// The threads that run every model's calls on each device. A call runs
// OpenMP parallel regions on the thread that makes it, and each thread that
// does gets a team of OpenMP workers of its own: with more workers than
// cores, libgomp stops spinning between regions, and every region then pays
// a wake-up (a BERT-style encoder's call went from 2.4 to 5.5 ms on 2 cores
// once the warm-up's thread and the batcher's each had a team). So the
// batchers and the warm-up hand their calls to these threads, one team per
// instance, whatever the number of models.
#ifndef XONNX_SERVE_DEVICE_THREADS_H_
#define XONNX_SERVE_DEVICE_THREADS_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace xonnx::serve {

class DeviceThreads {
 public:
  DeviceThreads() = default;
  ~DeviceThreads();  // runs what is queued, then joins
  DeviceThreads(const DeviceThreads&) = delete;
  DeviceThreads& operator=(const DeviceThreads&) = delete;

  // Gives `device` at least `count` threads (calls of its models at once).
  void Reserve(int device, int count);
  // Runs `fn` on one of the device's threads and waits for it.
  void Run(int device, const std::function<void()>& fn);

 private:
  struct Device {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> tasks;
    std::vector<std::thread> threads;
    bool stopping = false;
  };
  static void Work(Device& d);
  Device& Get(int device);

  std::mutex mu_;
  std::map<int, std::unique_ptr<Device>> devices_;
};

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_DEVICE_THREADS_H_
