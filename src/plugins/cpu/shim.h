// The CPU plugin's shim (internal header): the objects the PjRT C ABI
// declares opaque, defined here, and the helpers every slot uses. The slots
// live in one file per concept (api.cc: errors, events and the table;
// client.cc: the client, devices and memories; buffers.cc;
// executables.cc; unimplemented.cc); the program logic they call is
// backends/cpu's Program.
//
// All work is synchronous: an operation is complete when its call returns,
// so every event the plugin hands out is already ready, except one: a
// zero-copy host buffer's done_with_host_buffer, ready when the plugin no
// longer reads the caller's bytes. No exception or crash crosses the
// boundary: every failure is a PJRT_Error carrying an absl status.
#ifndef XONNX_PLUGINS_CPU_SHIM_H_
#define XONNX_PLUGINS_CPU_SHIM_H_

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/cpu/program.h"
#include "base/exceptions.h"
#include "hlo/shape.h"
#include "pjrt/c_api.h"
#include "xonnx/host_memory.h"

#ifndef XONNX_VERSION
#define XONNX_VERSION "0.0.0"
#endif

namespace xonnx::pjrt_cpu {

extern const PJRT_Error_FunctionTable kErrorTable;

// A Status as a PJRT_Error (null for OK).
PJRT_Error* MakeError(const absl::Status& st);

// Checks that the caller's struct reaches `needed` bytes (the last field the
// call reads or writes).
absl::Status CheckSize(const char* what, size_t given, size_t needed);

// Returns an error from the slot when the arguments are null or their
// struct is too small for the field `last`.
#define CHECK_ARGS(type, args, last)                                                        \
  do {                                                                                      \
    if (!(args)) return MakeError(absl::InvalidArgumentError(#type ": null arguments"));    \
    absl::Status _s = CheckSize(#type, (args)->struct_size, XONNX_STRUCT_SIZE(type, last)); \
    if (!_s.ok()) return MakeError(_s);                                                     \
  } while (0)

// A string getter's answer: `value`/`value_size` point into `s`, which lives
// as long as the object asked about.
template <typename Args>
PJRT_Error* ReturnString(Args* a, const std::string& s) {
  a->value = s.data();
  a->value_size = s.size();
  return nullptr;
}

// A slot's function, guarded: an exception escaping it (an allocation
// failure, a bug) becomes the call's error instead of unwinding into the
// caller's C code. Every slot that returns a PJRT_Error* is set through it.
template <typename Fn>
struct SlotArgs;
template <typename A>
struct SlotArgs<PJRT_Error* (*)(A*)> {
  using type = A;
};
template <auto Fn>
PJRT_Error* Guarded(typename SlotArgs<decltype(Fn)>::type* a) {
  try {
    return Fn(a);
  } catch (...) {
    return MakeError(StatusOfCurrentException("xonnx CPU plugin"));
  }
}

// Each file of the shim fills the slots it implements.
void SetErrorAndEventSlots(PJRT_Api& api);
void SetClientSlots(PJRT_Api& api);
void SetBufferSlots(PJRT_Api& api);
void SetExecutableSlots(PJRT_Api& api);
void SetUnimplementedSlots(PJRT_Api& api);

}  // namespace xonnx::pjrt_cpu

// The ABI declares these opaque; the plugin defines them.

struct PJRT_Error {
  const PJRT_Error_FunctionTable* vtable = &xonnx::pjrt_cpu::kErrorTable;  // first, as the ABI expects
  absl::Status status;
  std::string message;
};

namespace xonnx::pjrt_cpu {

// An event's state, shared by its handles and by what makes it ready. Most
// work is synchronous, so most events are born ready; a zero-copy buffer's
// done_with_host_buffer event becomes ready when the buffer's storage is
// freed.
class EventState {
 public:
  EventState() = default;
  explicit EventState(absl::Status st) : ready_(true), status_(std::move(st)) {}
  void Set(absl::Status st) {
    std::vector<std::pair<PJRT_Event_OnReadyCallback, void*>> run;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (ready_) return;
      ready_ = true;
      status_ = std::move(st);
      run.swap(callbacks_);
    }
    cv_.notify_all();
    for (auto& [cb, arg] : run) cb(MakeError(status_), arg);
  }
  bool ready() {
    std::lock_guard<std::mutex> l(mu_);
    return ready_;
  }
  absl::Status Await() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return ready_; });
    return status_;
  }
  // Calls `cb` now when ready, else when Set.
  void OnReady(PJRT_Event_OnReadyCallback cb, void* arg) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!ready_) {
        callbacks_.emplace_back(cb, arg);
        return;
      }
    }
    cb(MakeError(status_), arg);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
  absl::Status status_;
  std::vector<std::pair<PJRT_Event_OnReadyCallback, void*>> callbacks_;
};
}  // namespace xonnx::pjrt_cpu

struct PJRT_Event {
  std::shared_ptr<xonnx::pjrt_cpu::EventState> state;
};

struct PJRT_DeviceDescription {
  int id = 0;
  std::string kind = "cpu", debug_string, to_string;
  std::vector<PJRT_NamedValue> attributes;
};

struct PJRT_Memory {
  const PJRT_Memory_FunctionTable* vtable;
  int id = 0;
  PJRT_Device* device = nullptr;
  std::string kind = "device", debug_string, to_string;
  std::mutex mu;
  std::map<const void*, std::pair<void*, void (*)(void*)>> user_data;
  ~PJRT_Memory() {
    for (auto& [k, v] : user_data)
      if (v.second) v.second(v.first);
  }
};

struct PJRT_Device {
  PJRT_DeviceDescription description;
  PJRT_Client* client = nullptr;
  std::unique_ptr<PJRT_Memory> memory;
  PJRT_Memory* memory_ptr = nullptr;
};

namespace xonnx::pjrt_cpu {
// What PJRT_Client_Create's options set.
struct PluginOptions {
  int device_count = 1;
  // Threads a call's kernels use (create option `threads`); 0: OpenMP's
  // default (OMP_NUM_THREADS, else every core).
  int threads = 0;
  cpu::ProgramOptions program;
};
}  // namespace xonnx::pjrt_cpu

struct PJRT_Client {
  xonnx::pjrt_cpu::PluginOptions options;
  std::vector<std::unique_ptr<PJRT_Device>> devices;
  std::vector<PJRT_Device*> device_ptrs;
  std::vector<PJRT_Memory*> memory_ptrs;
  std::string platform_name = "cpu";
  // Host ranges registered through PJRT_Client_DmaMap, by start: the device
  // reads host memory directly, so mapping changes nothing but this record,
  // which keeps unmapping honest (only what was mapped, once).
  std::mutex dma_mu;
  std::map<const void*, size_t> dma_mapped;
  std::string platform_version = absl::StrCat("xonnx ", XONNX_VERSION, " CPU (oneDNN)");
};

namespace xonnx::pjrt_cpu {

extern std::atomic<uint64_t> next_buffer_id;

// Host memory of a buffer: its own, 64-byte aligned for the vector
// kernels, or the caller's (zero-copy), never written, and given back by
// setting `released` when the last user of the storage lets go of it.
struct Storage {
  // Large ones come from the host block cache (host_memory.h): outputs of
  // the same size are written every call, into pages already mapped.
  explicit Storage(size_t n) : size(n) { data = AllocateHostBytes(std::max<size_t>(n, 1)); }
  Storage(const void* borrowed, size_t n, std::shared_ptr<EventState> released)
      : data(const_cast<void*>(borrowed)), size(n), released_(std::move(released)) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (released_)
      released_->Set(absl::OkStatus());
    else
      FreeHostBytes(data, std::max<size_t>(size, 1));
  }
  void* data;
  size_t size;

 private:
  std::shared_ptr<EventState> released_;
};

// Zero-copy host buffers must be aligned at least this much: what malloc
// gives, and enough for every element type the kernels read in place.
constexpr uintptr_t kZeroCopyAlignment = 16;

}  // namespace xonnx::pjrt_cpu

struct PJRT_Buffer {
  std::shared_ptr<xonnx::pjrt_cpu::Storage> storage;
  xonnx::hlo::Shape shape;  // an array, dense and row-major
  PJRT_Device* device = nullptr;
  bool deleted = false;
  uint64_t id = xonnx::pjrt_cpu::next_buffer_id++;
};

namespace xonnx::pjrt_cpu {

// A compiled program as the ABI sees it: the backend's program, the device
// it was compiled for, and its signature in the ABI's types (the ABI hands
// out pointers into these arrays).
struct ProgramHandle {
  std::shared_ptr<cpu::Program> program;
  int device_id = 0;
  std::string fingerprint;
  std::vector<PJRT_Buffer_Type> output_types;
  std::vector<int64_t> output_dims_flat;
  std::vector<size_t> output_ranks;
};

}  // namespace xonnx::pjrt_cpu

struct PJRT_Executable {
  std::shared_ptr<xonnx::pjrt_cpu::ProgramHandle> program;
};

struct PJRT_LoadedExecutable {
  std::shared_ptr<xonnx::pjrt_cpu::ProgramHandle> program;
  PJRT_Client* client = nullptr;
  PJRT_Device* device = nullptr;
  bool deleted = false;
};

struct PJRT_SerializedExecutable {
  std::string bytes;
};

namespace xonnx::pjrt_cpu {
// An event that is ready already, with this status.
PJRT_Event* ReadyEvent(absl::Status st = absl::OkStatus());
}  // namespace xonnx::pjrt_cpu

#endif  // XONNX_PLUGINS_CPU_SHIM_H_
