// libxonnx_pjrt_cpu.so: xonnx's CPU backend behind the PjRT C ABI. It exports
// one symbol, GetPjrtApi; everything a client needs to create a client, list
// devices, compile format "hlo", move buffers both ways, execute, await
// events and (de)serialize executables is implemented, and every other slot
// returns UNIMPLEMENTED naming itself. No exception or crash crosses the
// boundary: every failure is a PJRT_Error carrying an absl status.
//
// All work is synchronous: an operation is complete when its call returns,
// so every event the plugin hands out is already ready, except one: a
// zero-copy host buffer's done_with_host_buffer, ready when the plugin no
// longer reads the caller's bytes.
//
// Weights. Parameters whose OpMetadata op_type is "xonnx.weight" (the
// importer marks model initializers so) are weights: the same device buffer
// is passed on every call. The CPU backend is fastest when weights are
// compile-time constants (oneDNN packs and reorders them once, the layout
// pass transposes them once, batch norms fold into convolutions), so such a
// program is compiled on its first execution with the weight buffers' values
// bound as constants, and cached by the identities of those buffers (device
// buffers are immutable, so identity implies value). Programs without
// weights compile when PJRT_Client_Compile is called.
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/executable.h"
#include "base/fingerprint.h"
#include "base/status.h"
#include "hlo/proto_codec.h"
#include "hlo/verifier.h"
#include "passes/pipeline.h"
#include "pjrt/c_api.h"
#include "pjrt/compile_options.h"

#ifndef XONNX_VERSION
#define XONNX_VERSION "0.0.0"
#endif

namespace {

using xonnx::pjrt::FromPjrtType;
using xonnx::pjrt::ToPjrtType;

constexpr char kWeightMarker[] = "xonnx.weight";
constexpr char kSerializedMagic[] = "XONNX-CPU-EXECUTABLE-3";
constexpr size_t kSpecializationCacheSize = 2;

void ErrorDestroyImpl(PJRT_Error* e);
void ErrorMessageImpl(const PJRT_Error* e, const char** msg, size_t* size);
PJRT_Error_Code ErrorCodeImpl(const PJRT_Error* e);
void ErrorPayloadsImpl(const PJRT_Error* e, PJRT_Error_PayloadVisitor visitor, void* arg);

const PJRT_Error_FunctionTable kErrorTable = {sizeof(PJRT_Error_FunctionTable), 0, nullptr, ErrorDestroyImpl,
                                              ErrorMessageImpl, ErrorCodeImpl, ErrorPayloadsImpl};

}  // namespace

// ------------------------------------------------------------------ objects
// The ABI declares these opaque; the plugin defines them.

struct PJRT_Error {
  const PJRT_Error_FunctionTable* vtable = &kErrorTable;  // first, as the ABI expects
  absl::Status status;
  std::string message;
};

namespace {
PJRT_Error* MakeError(const absl::Status& st);

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
}  // namespace

struct PJRT_Event {
  std::shared_ptr<EventState> state;
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

struct PluginOptions {
  int device_count = 1;
  bool optimize = true;
  bool verify_passes = false;
  bool use_dnnl = true;
  bool fuse_elementwise = true;
  bool winograd = true;
  bool blocked_layouts = true;
};

struct PJRT_Client {
  PluginOptions options;
  std::vector<std::unique_ptr<PJRT_Device>> devices;
  std::vector<PJRT_Device*> device_ptrs;
  std::vector<PJRT_Memory*> memory_ptrs;
  std::string platform_name = "cpu";
  std::string platform_version = absl::StrCat("xonnx ", XONNX_VERSION, " CPU (oneDNN)");
};

namespace {

std::atomic<uint64_t> next_buffer_id{1};

// Host memory of a buffer: its own, 64-byte aligned for the vector
// kernels, or the caller's (zero-copy), never written, and given back by
// setting `released` when the last user of the storage lets go of it.
struct Storage {
  explicit Storage(size_t n) : size(n) {
    data = std::aligned_alloc(64, (std::max<size_t>(n, 1) + 63) / 64 * 64);
  }
  Storage(const void* borrowed, size_t n, std::shared_ptr<EventState> released)
      : data(const_cast<void*>(borrowed)), size(n), released_(std::move(released)) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (released_) released_->Set(absl::OkStatus());
    else std::free(data);
  }
  void* data;
  size_t size;

 private:
  std::shared_ptr<EventState> released_;
};

// Zero-copy host buffers must be aligned at least this much: what malloc
// gives, and enough for every element type the kernels read in place.
constexpr uintptr_t kZeroCopyAlignment = 16;

}  // namespace

struct PJRT_Buffer {
  std::shared_ptr<Storage> storage;
  xonnx::hlo::Shape shape;  // an array, dense and row-major
  PJRT_Device* device = nullptr;
  bool deleted = false;
  uint64_t id = next_buffer_id++;
};

namespace {

// A compiled program, shared by the PJRT_Executable and PJRT_LoadedExecutable
// handles that refer to it.
struct Program {
  std::string name, fingerprint;
  std::string module_bytes;                   // serialized HloModuleProto after our passes
  std::unique_ptr<xonnx::hlo::Module> module;  // the same, decoded (null until its first run when deserialized)
  std::vector<xonnx::hlo::Shape> param_shapes, output_shapes;
  bool tuple_result = false;  // the entry returns a tuple (of output_shapes)
  std::vector<PJRT_Buffer_Type> output_types;
  std::vector<int64_t> output_dims_flat;
  std::vector<size_t> output_ranks;
  std::vector<int> weight_params;  // parameter numbers, ascending
  std::vector<int> other_params;   // the rest, ascending
  int device_id = 0;
  PluginOptions options;

  std::mutex mu;  // guards what follows, and `module` while it is null
  std::shared_ptr<xonnx::cpu::Executable> generic;  // when there are no weights
  std::list<std::pair<std::vector<uint64_t>, std::shared_ptr<xonnx::cpu::Executable>>> specialized;  // most recent first
};

}  // namespace

struct PJRT_Executable {
  std::shared_ptr<Program> program;
};

struct PJRT_LoadedExecutable {
  std::shared_ptr<Program> program;
  PJRT_Client* client = nullptr;
  PJRT_Device* device = nullptr;
  bool deleted = false;
};

struct PJRT_SerializedExecutable {
  std::string bytes;
};

namespace {

// ------------------------------------------------------------------ errors

PJRT_Error* MakeError(const absl::Status& st) {
  if (st.ok()) return nullptr;
  auto* e = new PJRT_Error;
  e->status = st;
  e->message = std::string(st.message());
  return e;
}

void ErrorDestroyImpl(PJRT_Error* e) { delete e; }
void ErrorMessageImpl(const PJRT_Error* e, const char** msg, size_t* size) {
  *msg = e->message.data();
  *size = e->message.size();
}
PJRT_Error_Code ErrorCodeImpl(const PJRT_Error* e) { return static_cast<PJRT_Error_Code>(e->status.code()); }
void ErrorPayloadsImpl(const PJRT_Error* e, PJRT_Error_PayloadVisitor visitor, void* arg) {
  e->status.ForEachPayload([&](absl::string_view key, const absl::Cord& value) {
    std::string v(value);
    visitor(key.data(), key.size(), v.data(), v.size(), arg);
  });
}

// Checks that the caller's struct reaches `needed` bytes (the last field the
// call reads or writes).
absl::Status CheckSize(const char* what, size_t given, size_t needed) {
  if (given < needed)
    return xonnx::InvalidArgument("%s: argument struct is %d bytes, at least %d expected", what, given, needed);
  return absl::OkStatus();
}
#define CHECK_ARGS(type, args, last)                                                              \
  do {                                                                                            \
    if (!(args)) return MakeError(absl::InvalidArgumentError(#type ": null arguments"));          \
    absl::Status _s = CheckSize(#type, (args)->struct_size, XONNX_STRUCT_SIZE(type, last));       \
    if (!_s.ok()) return MakeError(_s);                                                           \
  } while (0)

PJRT_Event* ReadyEvent(absl::Status st = absl::OkStatus()) {
  return new PJRT_Event{std::make_shared<EventState>(std::move(st))};
}

// A string getter's answer: `value`/`value_size` point into `s`, which lives
// as long as the object asked about.
template <typename Args>
PJRT_Error* ReturnString(Args* a, const std::string& s) {
  a->value = s.data();
  a->value_size = s.size();
  return nullptr;
}

void Error_Destroy(PJRT_Error_Destroy_Args* a) {
  if (a) delete a->error;
}
void Error_Message(PJRT_Error_Message_Args* a) {
  if (!a || !a->error) return;
  a->message = a->error->message.data();
  a->message_size = a->error->message.size();
}
PJRT_Error* Error_GetCode(PJRT_Error_GetCode_Args* a) {
  CHECK_ARGS(PJRT_Error_GetCode_Args, a, code);
  a->code = ErrorCodeImpl(a->error);
  return nullptr;
}

// ------------------------------------------------------------------ plugin

PJRT_Error* Plugin_Initialize(PJRT_Plugin_Initialize_Args*) { return nullptr; }

PJRT_NamedValue StringValue(const char* name, const char* value) {
  PJRT_NamedValue v;
  std::memset(&v, 0, sizeof(v));
  v.struct_size = sizeof(v);
  v.name = name;
  v.name_size = std::strlen(name);
  v.type = PJRT_NamedValue_kString;
  v.string_value = value;
  v.value_size = std::strlen(value);
  return v;
}

PJRT_Error* Plugin_Attributes(PJRT_Plugin_Attributes_Args* a) {
  CHECK_ARGS(PJRT_Plugin_Attributes_Args, a, num_attributes);
  static const PJRT_NamedValue attrs[] = {StringValue("xonnx_version", XONNX_VERSION),
                                          StringValue("program_formats", "hlo")};
  a->attributes = attrs;
  a->num_attributes = 2;
  return nullptr;
}

// ------------------------------------------------------------------ events

PJRT_Error* Event_Destroy(PJRT_Event_Destroy_Args* a) {
  CHECK_ARGS(PJRT_Event_Destroy_Args, a, event);
  delete a->event;
  return nullptr;
}
PJRT_Error* Event_IsReady(PJRT_Event_IsReady_Args* a) {
  CHECK_ARGS(PJRT_Event_IsReady_Args, a, is_ready);
  if (!a->event) return MakeError(absl::InvalidArgumentError("PJRT_Event_IsReady: null event"));
  a->is_ready = a->event->state->ready();
  return nullptr;
}
PJRT_Error* Event_Await(PJRT_Event_Await_Args* a) {
  CHECK_ARGS(PJRT_Event_Await_Args, a, event);
  if (!a->event) return MakeError(absl::InvalidArgumentError("PJRT_Event_Await: null event"));
  return MakeError(a->event->state->Await());
}
PJRT_Error* Event_OnReady(PJRT_Event_OnReady_Args* a) {
  CHECK_ARGS(PJRT_Event_OnReady_Args, a, user_arg);
  if (!a->event || !a->callback) return MakeError(absl::InvalidArgumentError("PJRT_Event_OnReady: null event or callback"));
  a->event->state->OnReady(a->callback, a->user_arg);
  return nullptr;
}

// ------------------------------------------------------------------ client

void* MemoryGetUserData(PJRT_Memory* m, const void* key) {
  std::lock_guard<std::mutex> l(m->mu);
  auto it = m->user_data.find(key);
  return it == m->user_data.end() ? nullptr : it->second.first;
}
void MemorySetUserData(PJRT_Memory* m, const void* key, void* data, void (*dtor)(void*)) {
  std::lock_guard<std::mutex> l(m->mu);
  auto& slot = m->user_data[key];
  if (slot.second) slot.second(slot.first);
  slot = {data, dtor};
}
const PJRT_Memory_FunctionTable kMemoryTable = {sizeof(PJRT_Memory_FunctionTable), nullptr, sizeof(void*),
                                                MemoryGetUserData, MemorySetUserData};

absl::Status ApplyCreateOption(const PJRT_NamedValue& v, PluginOptions& o) {
  std::string name(v.name, v.name_size);
  auto want = [&](PJRT_NamedValue_Type t, const char* tname) -> absl::Status {
    if (v.type != t) return xonnx::InvalidArgument("create option '%s' must be %s", name, tname);
    return absl::OkStatus();
  };
  if (name == "cpu_device_count") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kInt64, "an integer"));
    if (v.int64_value < 1 || v.int64_value > 256)
      return xonnx::InvalidArgument("create option cpu_device_count=%d is out of range 1..256", v.int64_value);
    o.device_count = static_cast<int>(v.int64_value);
  } else if (name == "optimize") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kBool, "a bool"));
    o.optimize = v.bool_value;
  } else if (name == "verify_passes") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kBool, "a bool"));
    o.verify_passes = v.bool_value;
  } else if (name == "use_dnnl") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kBool, "a bool"));
    o.use_dnnl = v.bool_value;
  } else if (name == "fuse_elementwise") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kBool, "a bool"));
    o.fuse_elementwise = v.bool_value;
  } else if (name == "winograd") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kBool, "a bool"));
    o.winograd = v.bool_value;
  } else if (name == "blocked_layouts") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kBool, "a bool"));
    o.blocked_layouts = v.bool_value;
  } else {
    return xonnx::InvalidArgument(
        "unknown create option '%s' (the xonnx CPU plugin knows cpu_device_count, optimize, verify_passes, use_dnnl, "
        "fuse_elementwise, winograd, blocked_layouts)",
        name);
  }
  return absl::OkStatus();
}

PJRT_Error* Client_Create(PJRT_Client_Create_Args* a) {
  CHECK_ARGS(PJRT_Client_Create_Args, a, client);
  auto c = std::make_unique<PJRT_Client>();
  for (size_t i = 0; i < a->num_options; ++i) {
    absl::Status st = ApplyCreateOption(a->create_options[i], c->options);
    if (!st.ok()) return MakeError(st);
  }
  for (int d = 0; d < c->options.device_count; ++d) {
    auto dev = std::make_unique<PJRT_Device>();
    dev->client = c.get();
    dev->description.id = d;
    dev->description.to_string = absl::StrCat("CpuDevice(id=", d, ")");
    dev->description.debug_string = absl::StrCat("xonnx CPU device ", d);
    dev->memory = std::make_unique<PJRT_Memory>();
    dev->memory->vtable = &kMemoryTable;
    dev->memory->id = d;
    dev->memory->device = dev.get();
    dev->memory->to_string = absl::StrCat("CpuMemory(id=", d, ")");
    dev->memory->debug_string = absl::StrCat("xonnx CPU memory of device ", d);
    dev->memory_ptr = dev->memory.get();
    c->device_ptrs.push_back(dev.get());
    c->memory_ptrs.push_back(dev->memory.get());
    c->devices.push_back(std::move(dev));
  }
  a->client = c.release();
  return nullptr;
}

PJRT_Error* Client_Destroy(PJRT_Client_Destroy_Args* a) {
  CHECK_ARGS(PJRT_Client_Destroy_Args, a, client);
  delete a->client;
  return nullptr;
}

PJRT_Error* Client_PlatformName(PJRT_Client_String_Args* a) {
  CHECK_ARGS(PJRT_Client_String_Args, a, value_size);
  return ReturnString(a, a->client->platform_name);
}
PJRT_Error* Client_PlatformVersion(PJRT_Client_String_Args* a) {
  CHECK_ARGS(PJRT_Client_String_Args, a, value_size);
  return ReturnString(a, a->client->platform_version);
}
PJRT_Error* Client_ProcessIndex(PJRT_Client_ProcessIndex_Args* a) {
  CHECK_ARGS(PJRT_Client_ProcessIndex_Args, a, process_index);
  a->process_index = 0;
  return nullptr;
}
PJRT_Error* Client_Devices(PJRT_Client_Devices_Args* a) {
  CHECK_ARGS(PJRT_Client_Devices_Args, a, num_devices);
  a->devices = a->client->device_ptrs.data();
  a->num_devices = a->client->device_ptrs.size();
  return nullptr;
}
PJRT_Error* Client_LookupDevice(PJRT_Client_LookupDevice_Args* a) {
  CHECK_ARGS(PJRT_Client_LookupDevice_Args, a, device);
  if (a->id < 0 || a->id >= static_cast<int>(a->client->device_ptrs.size()))
    return MakeError(xonnx::InvalidArgument("no device with id %d (the client has %d)", a->id, a->client->device_ptrs.size()));
  a->device = a->client->device_ptrs[a->id];
  return nullptr;
}
PJRT_Error* Client_AddressableMemories(PJRT_Client_AddressableMemories_Args* a) {
  CHECK_ARGS(PJRT_Client_AddressableMemories_Args, a, num_memories);
  a->memories = a->client->memory_ptrs.data();
  a->num_memories = a->client->memory_ptrs.size();
  return nullptr;
}
PJRT_Error* Client_DefaultDeviceAssignment(PJRT_Client_DefaultDeviceAssignment_Args* a) {
  CHECK_ARGS(PJRT_Client_DefaultDeviceAssignment_Args, a, default_assignment);
  int64_t n = static_cast<int64_t>(a->num_replicas) * a->num_partitions;
  if (n < 1 || n > static_cast<int64_t>(a->client->device_ptrs.size()) || a->default_assignment_size < static_cast<size_t>(n))
    return MakeError(xonnx::InvalidArgument("cannot assign %d replicas x %d partitions to %d devices", a->num_replicas,
                                            a->num_partitions, a->client->device_ptrs.size()));
  for (int64_t i = 0; i < n; ++i) a->default_assignment[i] = static_cast<int>(i);
  return nullptr;
}

// ----------------------------------------------------------------- buffers

// Whether byte strides (one per dimension) describe the dense row-major
// layout of `shape`; strides of size-1 dimensions do not matter.
bool DenseRowMajorStrides(const int64_t* byte_strides, const xonnx::hlo::Shape& shape) {
  int64_t stride = xonnx::hlo::ByteWidth(shape.element_type);
  for (size_t i = shape.dims.size(); i-- > 0;) {
    if (shape.dims[i] > 1 && byte_strides[i] != stride) return false;
    stride *= shape.dims[i];
  }
  return true;
}

// Whether `layout` (if any) is the dense row-major layout of `shape`.
absl::Status CheckRowMajor(const PJRT_Buffer_MemoryLayout* layout, const xonnx::hlo::Shape& shape, const char* what) {
  if (!layout) return absl::OkStatus();
  size_t rank = shape.dims.size();
  if (layout->type == PJRT_Buffer_MemoryLayout_Type_Tiled) {
    const auto& tl = layout->tiled;
    bool ok = tl.num_tiles == 0 && tl.minor_to_major_size == rank;
    for (size_t i = 0; ok && i < rank; ++i) ok = tl.minor_to_major[i] == static_cast<int64_t>(rank - 1 - i);
    if (ok) return absl::OkStatus();
  } else if (layout->strides.num_byte_strides == rank && DenseRowMajorStrides(layout->strides.byte_strides, shape)) {
    return absl::OkStatus();
  }
  return absl::UnimplementedError(absl::StrCat(what, ": only the dense row-major layout is supported"));
}

absl::Status CheckDims(const int64_t* dims, size_t n) {
  if (n > 64) return xonnx::InvalidArgument("rank %d is too large", n);
  if (n && !dims) return absl::InvalidArgumentError("null dims");
  __int128 total = 1;
  for (size_t i = 0; i < n; ++i) {
    if (dims[i] < 0) return xonnx::InvalidArgument("negative dimension %d", dims[i]);
    total *= dims[i];
    if (total > (static_cast<__int128>(1) << 40)) return absl::ResourceExhaustedError("buffer is too large");
  }
  return absl::OkStatus();
}

// Copies a strided host array into dense row-major `dst`.
void GatherStrided(const char* src, char* dst, const std::vector<int64_t>& dims, const int64_t* strides, size_t elem) {
  size_t rank = dims.size();
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t off = 0;
    for (size_t i = 0; i < rank; ++i) off += idx[i] * strides[i];
    std::memcpy(dst + n * elem, src + off, elem);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

PJRT_Error* Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args* a) {
  CHECK_ARGS(PJRT_Client_BufferFromHostBuffer_Args, a, buffer);
  auto type = FromPjrtType(a->type);
  if (!type.ok()) return MakeError(type.status());
  if (absl::Status st = CheckDims(a->dims, a->num_dims); !st.ok()) return MakeError(xonnx::Annotate(st, "PJRT_Client_BufferFromHostBuffer"));
  PJRT_Device* device = a->device;
  if (a->memory) device = a->memory->device;
  if (!device) device = a->client->device_ptrs[0];
  xonnx::hlo::Shape shape(*type, std::vector<int64_t>(a->dims, a->dims + a->num_dims));
  if (absl::Status st = CheckRowMajor(a->device_layout, shape, "PJRT_Client_BufferFromHostBuffer device_layout"); !st.ok())
    return MakeError(st);
  size_t bytes = shape.ByteSize();
  if (bytes && !a->data) return MakeError(absl::InvalidArgumentError("PJRT_Client_BufferFromHostBuffer: null data"));
  auto b = std::make_unique<PJRT_Buffer>();
  b->device = device;
  if (a->num_byte_strides && a->num_byte_strides != shape.dims.size())
    return MakeError(xonnx::InvalidArgument("%d byte strides for a rank-%d array", a->num_byte_strides, shape.dims.size()));
  bool dense = !a->num_byte_strides || DenseRowMajorStrides(a->byte_strides, shape);
  b->shape = std::move(shape);
  // Immutable zero-copy: the buffer reads the caller's bytes in place when
  // they are dense and aligned (else it copies, as PJRT allows), and tells
  // the caller when it is done with them.
  if (a->host_buffer_semantics == PJRT_HostBufferSemantics_kImmutableZeroCopy && dense && bytes &&
      reinterpret_cast<uintptr_t>(a->data) % kZeroCopyAlignment == 0) {
    auto released = std::make_shared<EventState>();
    b->storage = std::make_shared<Storage>(a->data, bytes, released);
    a->done_with_host_buffer = new PJRT_Event{std::move(released)};
  } else {
    b->storage = std::make_shared<Storage>(bytes);
    if (!b->storage->data) return MakeError(absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes")));
    if (dense) {
      if (bytes) std::memcpy(b->storage->data, a->data, bytes);
    } else {
      GatherStrided(static_cast<const char*>(a->data), static_cast<char*>(b->storage->data), b->shape.dims, a->byte_strides,
                    xonnx::hlo::ByteWidth(*type));
    }
    a->done_with_host_buffer = ReadyEvent();
  }
  a->buffer = b.release();
  return nullptr;
}

PJRT_Error* Buffer_Destroy(PJRT_Buffer_Destroy_Args* a) {
  CHECK_ARGS(PJRT_Buffer_Destroy_Args, a, buffer);
  delete a->buffer;
  return nullptr;
}
PJRT_Error* Buffer_Delete(PJRT_Buffer_Destroy_Args* a) {
  CHECK_ARGS(PJRT_Buffer_Destroy_Args, a, buffer);
  a->buffer->deleted = true;
  a->buffer->storage.reset();
  return nullptr;
}
PJRT_Error* Buffer_IsDeleted(PJRT_Buffer_Bool_Args* a) {
  CHECK_ARGS(PJRT_Buffer_Bool_Args, a, value);
  a->value = a->buffer->deleted;
  return nullptr;
}
PJRT_Error* Buffer_IsOnCpu(PJRT_Buffer_Bool_Args* a) {
  CHECK_ARGS(PJRT_Buffer_Bool_Args, a, value);
  a->value = true;
  return nullptr;
}
PJRT_Error* Buffer_ElementType(PJRT_Buffer_ElementType_Args* a) {
  CHECK_ARGS(PJRT_Buffer_ElementType_Args, a, type);
  auto t = ToPjrtType(a->buffer->shape.element_type);
  if (!t.ok()) return MakeError(t.status());
  a->type = *t;
  return nullptr;
}
PJRT_Error* Buffer_Dimensions(PJRT_Buffer_Dimensions_Args* a) {
  CHECK_ARGS(PJRT_Buffer_Dimensions_Args, a, num_dims);
  a->dims = a->buffer->shape.dims.data();
  a->num_dims = a->buffer->shape.dims.size();
  return nullptr;
}
PJRT_Error* Buffer_DynamicDimensionIndices(PJRT_Buffer_DynamicDimensionIndices_Args* a) {
  CHECK_ARGS(PJRT_Buffer_DynamicDimensionIndices_Args, a, num_dynamic_dims);
  a->dynamic_dim_indices = nullptr;
  a->num_dynamic_dims = 0;
  return nullptr;
}
PJRT_Error* Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args* a) {
  CHECK_ARGS(PJRT_Buffer_OnDeviceSizeInBytes_Args, a, on_device_size_in_bytes);
  a->on_device_size_in_bytes = a->buffer->shape.ByteSize();
  return nullptr;
}
PJRT_Error* Buffer_Device(PJRT_Buffer_Device_Args* a) {
  CHECK_ARGS(PJRT_Buffer_Device_Args, a, device);
  a->device = a->buffer->device;
  return nullptr;
}
PJRT_Error* Buffer_Memory(PJRT_Buffer_Memory_Args* a) {
  CHECK_ARGS(PJRT_Buffer_Memory_Args, a, memory);
  a->memory = a->buffer->device->memory_ptr;
  return nullptr;
}
PJRT_Error* Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args* a) {
  CHECK_ARGS(PJRT_Buffer_ReadyEvent_Args, a, event);
  a->event = ReadyEvent(a->buffer->deleted ? absl::FailedPreconditionError("the buffer was deleted") : absl::OkStatus());
  return nullptr;
}
PJRT_Error* Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args* a) {
  CHECK_ARGS(PJRT_Buffer_ToHostBuffer_Args, a, event);
  PJRT_Buffer* b = a->src;
  if (!b) return MakeError(absl::InvalidArgumentError("PJRT_Buffer_ToHostBuffer: null buffer"));
  if (b->deleted) return MakeError(absl::FailedPreconditionError("PJRT_Buffer_ToHostBuffer: the buffer was deleted"));
  if (absl::Status st = CheckRowMajor(a->host_layout, b->shape, "PJRT_Buffer_ToHostBuffer host_layout"); !st.ok())
    return MakeError(st);
  size_t bytes = b->shape.ByteSize();
  if (!a->dst) {
    a->dst_size = bytes;
    a->event = nullptr;
    return nullptr;
  }
  if (a->dst_size < bytes)
    return MakeError(xonnx::InvalidArgument("PJRT_Buffer_ToHostBuffer: destination has %d bytes, the buffer %d",
                                            a->dst_size, bytes));
  if (bytes) std::memcpy(a->dst, b->storage->data, bytes);
  a->event = ReadyEvent();
  return nullptr;
}
PJRT_Error* Buffer_CopyToDevice(PJRT_Buffer_CopyToDevice_Args* a) {
  CHECK_ARGS(PJRT_Buffer_CopyToDevice_Args, a, dst_buffer);
  PJRT_Buffer* b = a->buffer;
  if (b->deleted) return MakeError(absl::FailedPreconditionError("PJRT_Buffer_CopyToDevice: the buffer was deleted"));
  if (a->dst_device == b->device)
    return MakeError(absl::InvalidArgumentError("PJRT_Buffer_CopyToDevice: the buffer is already on that device"));
  auto c = std::make_unique<PJRT_Buffer>();
  c->storage = b->storage;  // immutable, so the copy can share the bytes
  c->shape = b->shape;
  c->device = a->dst_device;
  c->id = b->id;  // same contents: lets specializations be shared
  a->dst_buffer = c.release();
  return nullptr;
}

// ----------------------------------------------------------------- devices

PJRT_Error* DeviceDescription_Id(PJRT_DeviceDescription_Int_Args* a) {
  CHECK_ARGS(PJRT_DeviceDescription_Int_Args, a, value);
  a->value = a->device_description->id;
  return nullptr;
}
PJRT_Error* DeviceDescription_ProcessIndex(PJRT_DeviceDescription_Int_Args* a) {
  CHECK_ARGS(PJRT_DeviceDescription_Int_Args, a, value);
  a->value = 0;
  return nullptr;
}
PJRT_Error* DeviceDescription_Attributes(PJRT_DeviceDescription_Attributes_Args* a) {
  CHECK_ARGS(PJRT_DeviceDescription_Attributes_Args, a, attributes);
  a->num_attributes = 0;
  a->attributes = nullptr;
  return nullptr;
}
PJRT_Error* DeviceDescription_Kind(PJRT_DeviceDescription_String_Args* a) {
  CHECK_ARGS(PJRT_DeviceDescription_String_Args, a, value_size);
  return ReturnString(a, a->device_description->kind);
}
PJRT_Error* DeviceDescription_DebugString(PJRT_DeviceDescription_String_Args* a) {
  CHECK_ARGS(PJRT_DeviceDescription_String_Args, a, value_size);
  return ReturnString(a, a->device_description->debug_string);
}
PJRT_Error* DeviceDescription_ToString(PJRT_DeviceDescription_String_Args* a) {
  CHECK_ARGS(PJRT_DeviceDescription_String_Args, a, value_size);
  return ReturnString(a, a->device_description->to_string);
}
PJRT_Error* Device_GetDescription(PJRT_Device_GetDescription_Args* a) {
  CHECK_ARGS(PJRT_Device_GetDescription_Args, a, device_description);
  a->device_description = &a->device->description;
  return nullptr;
}
PJRT_Error* Device_IsAddressable(PJRT_Device_IsAddressable_Args* a) {
  CHECK_ARGS(PJRT_Device_IsAddressable_Args, a, is_addressable);
  a->is_addressable = true;
  return nullptr;
}
PJRT_Error* Device_LocalHardwareId(PJRT_Device_LocalHardwareId_Args* a) {
  CHECK_ARGS(PJRT_Device_LocalHardwareId_Args, a, local_hardware_id);
  a->local_hardware_id = a->device->description.id;
  return nullptr;
}
PJRT_Error* Device_AddressableMemories(PJRT_Device_AddressableMemories_Args* a) {
  CHECK_ARGS(PJRT_Device_AddressableMemories_Args, a, num_memories);
  a->memories = &a->device->memory_ptr;
  a->num_memories = 1;
  return nullptr;
}
PJRT_Error* Device_DefaultMemory(PJRT_Device_DefaultMemory_Args* a) {
  CHECK_ARGS(PJRT_Device_DefaultMemory_Args, a, memory);
  a->memory = a->device->memory_ptr;
  return nullptr;
}
PJRT_Error* Memory_Id(PJRT_Memory_Id_Args* a) {
  CHECK_ARGS(PJRT_Memory_Id_Args, a, id);
  a->id = a->memory->id;
  return nullptr;
}
PJRT_Error* Memory_Kind(PJRT_Memory_String_Args* a) {
  CHECK_ARGS(PJRT_Memory_String_Args, a, value_size);
  return ReturnString(a, a->memory->kind);
}
PJRT_Error* Memory_DebugString(PJRT_Memory_String_Args* a) {
  CHECK_ARGS(PJRT_Memory_String_Args, a, value_size);
  return ReturnString(a, a->memory->debug_string);
}
PJRT_Error* Memory_ToString(PJRT_Memory_String_Args* a) {
  CHECK_ARGS(PJRT_Memory_String_Args, a, value_size);
  return ReturnString(a, a->memory->to_string);
}
PJRT_Error* Memory_AddressableByDevices(PJRT_Memory_AddressableByDevices_Args* a) {
  CHECK_ARGS(PJRT_Memory_AddressableByDevices_Args, a, num_devices);
  a->devices = &a->memory->device;
  a->num_devices = 1;
  return nullptr;
}

// ------------------------------------------------------------- compilation

// Compiles `m` for the CPU; `run_passes` runs our pipeline first (needed
// after weights were bound as constants, not for a module already optimized).
absl::StatusOr<std::shared_ptr<xonnx::cpu::Executable>> CompileBackend(std::unique_ptr<xonnx::hlo::Module> m,
                                                                       const PluginOptions& o, bool run_passes) {
  if (run_passes && o.optimize) RETURN_IF_ERROR(xonnx::passes::RunStandardPipeline(m.get(), o.verify_passes));
  xonnx::cpu::CompileOptions co;
  co.use_dnnl = o.use_dnnl;
  co.fuse_elementwise = o.fuse_elementwise;
  co.winograd = o.winograd;
  co.blocked_layouts = o.blocked_layouts;
  ASSIGN_OR_RETURN(std::unique_ptr<xonnx::cpu::Executable> exe, xonnx::cpu::Executable::Compile(std::move(m), co));
  return std::shared_ptr<xonnx::cpu::Executable>(std::move(exe));
}

absl::Status CheckRowMajorShape(const xonnx::hlo::Shape& s, const std::string& what) {
  if (!s.IsArray()) return absl::UnimplementedError(absl::StrCat(what, " has type ", s.ToString(), "; arrays only"));
  if (!s.minor_to_major.empty() && s.minor_to_major != xonnx::hlo::DefaultLayout(s.rank()))
    return absl::UnimplementedError(absl::StrCat(what, " has layout ", s.ToString(), "; only row-major layouts are supported"));
  return absl::OkStatus();
}

// What a program takes and returns, from its entry's parameter shapes
// (`weights`: the parameter numbers that are weights) and result shape.
absl::Status SetSignature(Program* p, std::vector<xonnx::hlo::Shape> params, const std::set<int>& weights,
                          const xonnx::hlo::Shape& result) {
  for (size_t k = 0; k < params.size(); ++k) {
    RETURN_IF_ERROR(CheckRowMajorShape(params[k], absl::StrCat("parameter ", k)));
    (weights.count(k) ? p->weight_params : p->other_params).push_back(static_cast<int>(k));
  }
  for (int w : weights)
    if (w < 0 || w >= static_cast<int>(params.size())) return xonnx::InvalidArgument("weight parameter %d does not exist", w);
  p->param_shapes = std::move(params);
  p->tuple_result = result.IsTuple();
  if (result.IsTuple()) {
    for (const auto& s : result.tuple_shapes) p->output_shapes.push_back(s);
  } else {
    p->output_shapes.push_back(result);
  }
  for (size_t k = 0; k < p->output_shapes.size(); ++k) {
    const auto& s = p->output_shapes[k];
    RETURN_IF_ERROR(CheckRowMajorShape(s, absl::StrCat("output ", k)));
    ASSIGN_OR_RETURN(PJRT_Buffer_Type t, ToPjrtType(s.element_type));
    p->output_types.push_back(t);
    p->output_ranks.push_back(s.dims.size());
    p->output_dims_flat.insert(p->output_dims_flat.end(), s.dims.begin(), s.dims.end());
  }
  return absl::OkStatus();
}

std::string ProgramFingerprint(absl::string_view module_bytes, int device_id, const PluginOptions& o) {
  xonnx::Fingerprinter f;
  f.UpdateField(module_bytes);
  f.UpdateField(absl::StrCat(device_id, o.use_dnnl, o.fuse_elementwise, o.optimize, o.winograd, o.blocked_layouts, XONNX_VERSION));
  return f.Finish().Hex();
}

// The entry's parameter shapes, and which parameters are weights.
absl::Status EntryParams(const xonnx::hlo::Module& m, std::vector<xonnx::hlo::Shape>* shapes, std::set<int>* weights) {
  const xonnx::hlo::Computation* entry = m.entry();
  for (int64_t k = 0; k < entry->num_parameters(); ++k) {
    const xonnx::hlo::Instruction* param = entry->parameter(k);
    if (!param) return xonnx::InvalidArgument("entry parameter %d is missing", k);
    shapes->push_back(param->shape());
    if (param->metadata.op_type == kWeightMarker) weights->insert(static_cast<int>(k));
  }
  return absl::OkStatus();
}

// Gives a program its decoded module, compiling it now when it has no
// weights (one with weights compiles per set of weight buffers).
absl::Status InstallModule(Program& p, std::unique_ptr<xonnx::hlo::Module> m) {
  if (p.weight_params.empty()) {
    ASSIGN_OR_RETURN(p.generic, CompileBackend(m->Clone(), p.options, /*run_passes=*/false));
  }
  p.module = std::move(m);
  return absl::OkStatus();
}

// Decodes, checks and optimizes a program; compiles it now when it has no
// weights.
absl::StatusOr<std::shared_ptr<Program>> BuildProgram(absl::string_view module_bytes, int device_id,
                                                      const PluginOptions& o) {
  ASSIGN_OR_RETURN(std::unique_ptr<xonnx::hlo::Module> m, xonnx::hlo::ParseModule(module_bytes));
  if (o.optimize) RETURN_IF_ERROR(xonnx::passes::RunStandardPipeline(m.get(), o.verify_passes));
  auto p = std::make_shared<Program>();
  p->options = o;
  p->device_id = device_id;
  p->name = m->name();
  std::vector<xonnx::hlo::Shape> params;
  std::set<int> weights;
  RETURN_IF_ERROR(EntryParams(*m, &params, &weights));
  RETURN_IF_ERROR(SetSignature(p.get(), std::move(params), weights, m->entry()->root()->shape()));
  p->module_bytes = xonnx::hlo::SerializeModule(*m);
  p->fingerprint = ProgramFingerprint(p->module_bytes, device_id, o);
  RETURN_IF_ERROR(InstallModule(*p, std::move(m)));
  return p;
}

// Decodes a deserialized program's module at its first run (p.mu held),
// checks it against the signature it was loaded with, and compiles it when
// it has no weights.
absl::Status DecodeModule(Program& p) {
  if (p.module) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<xonnx::hlo::Module> m, xonnx::hlo::ParseModule(p.module_bytes));
  std::vector<xonnx::hlo::Shape> params;
  std::set<int> weights;
  bool same = EntryParams(*m, &params, &weights).ok() && params.size() == p.param_shapes.size() &&
              weights == std::set<int>(p.weight_params.begin(), p.weight_params.end());
  for (size_t k = 0; same && k < params.size(); ++k) same = params[k].Compatible(p.param_shapes[k]);
  if (!same) return absl::DataLossError("the serialized program's module does not match its signature");
  return InstallModule(p, std::move(m));
}

// The program with the weight parameters bound to these buffers' values.
absl::StatusOr<std::shared_ptr<xonnx::cpu::Executable>> Specialize(Program& p, const std::vector<PJRT_Buffer*>& weights) {
  std::unique_ptr<xonnx::hlo::Module> m = p.module->Clone();
  std::vector<std::pair<int64_t, xonnx::hlo::Literal>> values;
  for (size_t w = 0; w < p.weight_params.size(); ++w) {
    // Buffers never change, so the constant reads the buffer's bytes: no
    // copy per program, and the backend recognizes the same weight in every
    // program that binds it (its packed form is shared).
    const auto& storage = weights[w]->storage;
    values.emplace_back(p.weight_params[w], xonnx::hlo::Literal::Borrow(p.param_shapes[p.weight_params[w]], storage->data, storage));
  }
  RETURN_IF_ERROR(m->BindParameters(std::move(values)));
  return CompileBackend(std::move(m), p.options, /*run_passes=*/true);
}

PJRT_Error* Client_Compile(PJRT_Client_Compile_Args* a) {
  CHECK_ARGS(PJRT_Client_Compile_Args, a, executable);
  if (!a->program || !a->program->code) return MakeError(absl::InvalidArgumentError("PJRT_Client_Compile: no program"));
  std::string format(a->program->format ? a->program->format : "", a->program->format ? a->program->format_size : 0);
  if (format != "hlo")
    return MakeError(absl::InvalidArgumentError(
        absl::StrCat("PJRT_Client_Compile: program format '", format, "' is not supported; the xonnx CPU plugin takes \"hlo\" (a serialized HloModuleProto)")));
  int device_id = 0;
  if (a->compile_options_size) {
    auto id = xonnx::pjrt::DeviceIdFromCompileOptions(absl::string_view(a->compile_options, a->compile_options_size));
    if (!id.ok()) return MakeError(xonnx::Annotate(id.status(), "PJRT_Client_Compile"));
    device_id = *id;
  }
  if (device_id < 0 || device_id >= static_cast<int>(a->client->device_ptrs.size()))
    return MakeError(xonnx::InvalidArgument("PJRT_Client_Compile: device %d does not exist (the client has %d)", device_id,
                                            a->client->device_ptrs.size()));
  auto p = BuildProgram(absl::string_view(a->program->code, a->program->code_size), device_id, a->client->options);
  if (!p.ok()) return MakeError(xonnx::Annotate(p.status(), "PJRT_Client_Compile"));
  auto* e = new PJRT_LoadedExecutable;
  e->program = *p;
  e->client = a->client;
  e->device = a->client->device_ptrs[device_id];
  a->executable = e;
  return nullptr;
}

// -------------------------------------------------------------- executables

PJRT_Error* Executable_Destroy(PJRT_Executable_Destroy_Args* a) {
  CHECK_ARGS(PJRT_Executable_Destroy_Args, a, executable);
  delete a->executable;
  return nullptr;
}
PJRT_Error* LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_Destroy_Args, a, executable);
  delete a->executable;
  return nullptr;
}
PJRT_Error* LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_GetExecutable_Args, a, executable);
  a->executable = new PJRT_Executable{a->loaded_executable->program};
  return nullptr;
}
PJRT_Error* LoadedExecutable_AddressableDevices(PJRT_LoadedExecutable_AddressableDevices_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_AddressableDevices_Args, a, num_addressable_devices);
  a->addressable_devices = &a->executable->device;
  a->num_addressable_devices = 1;
  return nullptr;
}
PJRT_Error* LoadedExecutable_Delete(PJRT_LoadedExecutable_Delete_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_Delete_Args, a, executable);
  a->executable->deleted = true;
  return nullptr;
}
PJRT_Error* LoadedExecutable_IsDeleted(PJRT_LoadedExecutable_Delete_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_Delete_Args, a, is_deleted);
  a->is_deleted = a->executable->deleted;
  return nullptr;
}
PJRT_Error* Executable_Name(PJRT_Executable_String_Args* a) {
  CHECK_ARGS(PJRT_Executable_String_Args, a, value_size);
  return ReturnString(a, a->executable->program->name);
}
PJRT_Error* Executable_Fingerprint(PJRT_Executable_String_Args* a) {
  CHECK_ARGS(PJRT_Executable_String_Args, a, value_size);
  return ReturnString(a, a->executable->program->fingerprint);
}
PJRT_Error* Executable_NumReplicas(PJRT_Executable_Count_Args* a) {
  CHECK_ARGS(PJRT_Executable_Count_Args, a, value);
  a->value = 1;
  return nullptr;
}
PJRT_Error* Executable_NumOutputs(PJRT_Executable_Count_Args* a) {
  CHECK_ARGS(PJRT_Executable_Count_Args, a, value);
  a->value = a->executable->program->output_shapes.size();
  return nullptr;
}
PJRT_Error* Executable_SizeOfGeneratedCodeInBytes(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args* a) {
  CHECK_ARGS(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, a, size_in_bytes);
  a->size_in_bytes = 0;  // no generated machine code: thunks over precompiled kernels
  return nullptr;
}
PJRT_Error* Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args* a) {
  CHECK_ARGS(PJRT_Executable_OutputElementTypes_Args, a, num_output_types);
  a->output_types = a->executable->program->output_types.data();
  a->num_output_types = a->executable->program->output_types.size();
  return nullptr;
}
PJRT_Error* Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args* a) {
  CHECK_ARGS(PJRT_Executable_OutputDimensions_Args, a, dim_sizes);
  const Program& p = *a->executable->program;
  a->num_outputs = p.output_shapes.size();
  a->dims = p.output_dims_flat.data();
  a->dim_sizes = p.output_ranks.data();
  return nullptr;
}

// Serialized form: lines with the magic, the plugin's version, the device,
// the options, the weight parameter numbers, the sizes of the signature and
// of the name, and the module's fingerprint; then the signature (a
// ProgramShapeProto), the program's name and the module, already
// optimized. Only this plugin version reads it back.
//
// Loading reads the header and the signature and checks the module's
// fingerprint, so a damaged entry is refused at once; the module itself is
// decoded at the program's first run, next to the specialization that run
// does anyway. Loading a cached bucket therefore costs microseconds, and
// buckets that never run never pay for decoding.
PJRT_Error* Executable_Serialize(PJRT_Executable_Serialize_Args* a) {
  CHECK_ARGS(PJRT_Executable_Serialize_Args, a, serialized_executable_deleter);
  const Program& p = *a->executable->program;
  xonnx::wire::ProgramShapeProto sig;
  for (const auto& s : p.param_shapes) *sig.add_parameters() = xonnx::hlo::ShapeToProto(s);
  *sig.mutable_result() =
      xonnx::hlo::ShapeToProto(p.tuple_result ? xonnx::hlo::Shape::Tuple(p.output_shapes) : p.output_shapes.at(0));
  std::string sig_bytes = sig.SerializeAsString();
  auto* s = new PJRT_SerializedExecutable;
  s->bytes = absl::StrCat(kSerializedMagic, "\n", XONNX_VERSION, "\n", p.device_id, "\n", p.options.optimize ? 1 : 0,
                          p.options.use_dnnl ? 1 : 0, p.options.fuse_elementwise ? 1 : 0, p.options.winograd ? 1 : 0, "\n",
                          absl::StrJoin(p.weight_params, ","), "\n", sig_bytes.size(), " ", p.name.size(), "\n",
                          xonnx::FingerprintOf(p.module_bytes).Hex(), "\n", sig_bytes, p.name, p.module_bytes);
  a->serialized_executable = s;
  a->serialized_bytes = s->bytes.data();
  a->serialized_bytes_size = s->bytes.size();
  a->serialized_executable_deleter = [](PJRT_SerializedExecutable* e) { delete e; };
  return nullptr;
}

PJRT_Error* Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args* a) {
  CHECK_ARGS(PJRT_Executable_DeserializeAndLoad_Args, a, loaded_executable);
  absl::string_view bytes(a->serialized_executable ? a->serialized_executable : "", a->serialized_executable_size);
  auto bad = [](absl::string_view why) {
    return MakeError(absl::InvalidArgumentError(absl::StrCat("PJRT_Executable_DeserializeAndLoad: ", why)));
  };
  std::vector<absl::string_view> header;
  size_t pos = 0;
  for (int k = 0; k < 7; ++k) {
    size_t nl = bytes.find('\n', pos);
    if (nl == absl::string_view::npos) return bad("not an executable serialized by the xonnx CPU plugin");
    header.push_back(bytes.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (header[0] != kSerializedMagic) return bad("not an executable serialized by this version of the xonnx CPU plugin");
  if (header[1] != XONNX_VERSION)
    return bad(absl::StrCat("serialized by xonnx ", header[1], ", this plugin is ", XONNX_VERSION));
  int device_id = 0;
  size_t sig_size = 0, name_size = 0;
  std::vector<absl::string_view> sizes = absl::StrSplit(header[5], ' ');
  if (!absl::SimpleAtoi(header[2], &device_id) || header[3].size() != 4 || sizes.size() != 2 ||
      !absl::SimpleAtoi(sizes[0], &sig_size) || !absl::SimpleAtoi(sizes[1], &name_size) ||
      sig_size > bytes.size() - pos || name_size > bytes.size() - pos - sig_size)
    return bad("corrupt header");
  std::set<int> weights;
  for (absl::string_view w : absl::StrSplit(header[4], ',', absl::SkipEmpty())) {
    int k;
    if (!absl::SimpleAtoi(w, &k)) return bad("corrupt header");
    weights.insert(k);
  }
  absl::string_view module = bytes.substr(pos + sig_size + name_size);
  if (xonnx::FingerprintOf(module).Hex() != header[6]) return bad("the module is damaged (fingerprint mismatch)");
  xonnx::wire::ProgramShapeProto sig;
  if (!sig.ParseFromArray(bytes.data() + pos, static_cast<int>(sig_size))) return bad("corrupt signature");
  PluginOptions o = a->client->options;
  o.optimize = header[3][0] == '1';
  o.use_dnnl = header[3][1] == '1';
  o.fuse_elementwise = header[3][2] == '1';
  o.winograd = header[3][3] == '1';
  if (a->overridden_serialized_compile_options && a->overridden_serialized_compile_options_size &&
      a->struct_size >= XONNX_STRUCT_SIZE(PJRT_Executable_DeserializeAndLoad_Args, overridden_serialized_compile_options_size)) {
    auto id = xonnx::pjrt::DeviceIdFromCompileOptions(
        absl::string_view(a->overridden_serialized_compile_options, a->overridden_serialized_compile_options_size));
    if (!id.ok()) return MakeError(xonnx::Annotate(id.status(), "PJRT_Executable_DeserializeAndLoad"));
    device_id = *id;
  }
  if (device_id < 0 || device_id >= static_cast<int>(a->client->device_ptrs.size()))
    return bad(absl::StrCat("device ", device_id, " does not exist"));
  auto p = std::make_shared<Program>();
  p->options = o;
  p->device_id = device_id;
  p->name = std::string(bytes.substr(pos + sig_size, name_size));
  std::vector<xonnx::hlo::Shape> params;
  for (const auto& sp : sig.parameters()) {
    auto shape = xonnx::hlo::ShapeFromProto(sp);
    if (!shape.ok()) return bad(absl::StrCat("corrupt signature: ", shape.status().message()));
    params.push_back(*std::move(shape));
  }
  auto result = xonnx::hlo::ShapeFromProto(sig.result());
  if (!result.ok()) return bad(absl::StrCat("corrupt signature: ", result.status().message()));
  if (absl::Status st = SetSignature(p.get(), std::move(params), weights, *result); !st.ok())
    return MakeError(xonnx::Annotate(st, "PJRT_Executable_DeserializeAndLoad"));
  p->module_bytes = std::string(module);
  p->fingerprint = ProgramFingerprint(p->module_bytes, device_id, o);
  auto* e = new PJRT_LoadedExecutable;
  e->program = std::move(p);
  e->client = a->client;
  e->device = a->client->device_ptrs[device_id];
  a->loaded_executable = e;
  return nullptr;
}

absl::Status ExecuteOne(PJRT_LoadedExecutable* e, PJRT_Buffer* const* args, size_t num_args, PJRT_Buffer** outs) {
  Program& p = *e->program;
  if (num_args != p.param_shapes.size())
    return xonnx::InvalidArgument("the program takes %d arguments, %d given", p.param_shapes.size(), num_args);
  for (size_t k = 0; k < num_args; ++k) {
    const PJRT_Buffer* b = args[k];
    if (!b) return xonnx::InvalidArgument("argument %d is null", k);
    if (b->deleted) return xonnx::InvalidArgument("argument %d was deleted", k);
    const auto& s = p.param_shapes[k];
    if (!b->shape.Compatible(s))
      return xonnx::InvalidArgument("argument %d is %s, the program expects %s", k, b->shape.ToString(false),
                                    s.ToString(false));
    if (b->device != e->device)
      return xonnx::InvalidArgument("argument %d is on device %d, the program runs on device %d", k,
                                    b->device->description.id, e->device->description.id);
  }
  std::shared_ptr<xonnx::cpu::Executable> exe;
  {
    std::lock_guard<std::mutex> l(p.mu);
    RETURN_IF_ERROR(DecodeModule(p));
    if (p.weight_params.empty()) {
      exe = p.generic;
    } else {
      std::vector<uint64_t> key;
      std::vector<PJRT_Buffer*> weights;
      for (int w : p.weight_params) {
        key.push_back(args[w]->id);
        weights.push_back(args[w]);
      }
      for (auto it = p.specialized.begin(); it != p.specialized.end(); ++it)
        if (it->first == key) {
          exe = it->second;
          p.specialized.splice(p.specialized.begin(), p.specialized, it);
          break;
        }
      if (!exe) {
        ASSIGN_OR_RETURN(exe, Specialize(p, weights));
        p.specialized.emplace_front(key, exe);
        if (p.specialized.size() > kSpecializationCacheSize) p.specialized.pop_back();
      }
    }
  }
  // Weights are compiled in; the program takes the other parameters, in order
  // (all of them when there are no weights).
  std::vector<const void*> arg_ptrs;
  for (int k : p.other_params) arg_ptrs.push_back(args[k]->storage->data);
  std::vector<std::unique_ptr<PJRT_Buffer>> results;
  std::vector<void*> out_ptrs;
  for (const auto& s : p.output_shapes) {
    auto b = std::make_unique<PJRT_Buffer>();
    b->shape = xonnx::hlo::Shape(s.element_type, s.dims);
    b->device = e->device;
    b->storage = std::make_shared<Storage>(b->shape.ByteSize());
    if (!b->storage->data) return absl::ResourceExhaustedError("cannot allocate an output buffer");
    out_ptrs.push_back(b->storage->data);
    results.push_back(std::move(b));
  }
  RETURN_IF_ERROR(exe->Execute(arg_ptrs, out_ptrs));
  for (size_t k = 0; k < results.size(); ++k) outs[k] = results[k].release();
  return absl::OkStatus();
}

PJRT_Error* LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_Execute_Args, a, device_complete_events);
  PJRT_LoadedExecutable* e = a->executable;
  if (!e) return MakeError(absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: null executable"));
  if (e->deleted) return MakeError(absl::FailedPreconditionError("PJRT_LoadedExecutable_Execute: the executable was deleted"));
  if (!a->options) return MakeError(absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: options must not be null"));
  if (a->num_devices != 1)
    return MakeError(xonnx::InvalidArgument(
        "PJRT_LoadedExecutable_Execute: the program was compiled for 1 device, arguments for %d given", a->num_devices));
  if (!a->argument_lists || !a->output_lists || (!e->program->output_shapes.empty() && !a->output_lists[0]) ||
      (a->num_args && !a->argument_lists[0]))
    return MakeError(absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: null argument or output lists"));
  PJRT_LoadedExecutable target = *e;
  if (a->struct_size >= XONNX_STRUCT_SIZE(PJRT_LoadedExecutable_Execute_Args, execute_device) && a->execute_device)
    target.device = a->execute_device;
  absl::Status st = ExecuteOne(&target, a->argument_lists[0], a->num_args, a->output_lists[0]);
  if (!st.ok()) return MakeError(xonnx::Annotate(st, absl::StrCat("executing '", e->program->name, "'")));
  if (a->device_complete_events) a->device_complete_events[0] = ReadyEvent();
  return nullptr;
}

// ---------------------------------------------------------- unimplemented

#define XONNX_UNIMPLEMENTED(slot)                                                                         \
  PJRT_Error* Unimplemented_##slot(void*) {                                                              \
    return MakeError(absl::UnimplementedError(#slot " is not implemented by the xonnx CPU plugin"));      \
  }
#define XONNX_SLOTS(V)                                                                                             \
  V(PJRT_Device_MemoryStats) V(PJRT_Executable_GetCostAnalysis)                   \
  V(PJRT_Executable_OutputMemoryKinds) V(PJRT_Executable_OptimizedProgram) V(PJRT_LoadedExecutable_Fingerprint)    \
  V(PJRT_Buffer_GetMemoryLayout) V(PJRT_Buffer_UnsafePointer)                    \
  V(PJRT_Buffer_IncreaseExternalReferenceCount) V(PJRT_Buffer_DecreaseExternalReferenceCount)                      \
  V(PJRT_Buffer_OpaqueDeviceMemoryDataPointer) V(PJRT_CopyToDeviceStream_Destroy)                                  \
  V(PJRT_CopyToDeviceStream_AddChunk) V(PJRT_CopyToDeviceStream_TotalBytes) V(PJRT_CopyToDeviceStream_GranuleSize) \
  V(PJRT_CopyToDeviceStream_CurrentBytes) V(PJRT_TopologyDescription_Create) V(PJRT_TopologyDescription_Destroy)   \
  V(PJRT_TopologyDescription_PlatformName) V(PJRT_TopologyDescription_PlatformVersion)                             \
  V(PJRT_TopologyDescription_GetDeviceDescriptions) V(PJRT_TopologyDescription_Serialize)                          \
  V(PJRT_TopologyDescription_Attributes) V(PJRT_Compile) V(PJRT_Buffer_CopyToMemory)                               \
  V(PJRT_Client_CreateViewOfDeviceBuffer) V(PJRT_Client_TopologyDescription) V(PJRT_Executable_GetCompiledMemoryStats) \
  V(PJRT_Memory_Kind_Id) V(PJRT_ExecuteContext_Create) V(PJRT_ExecuteContext_Destroy) V(PJRT_Buffer_CopyRawToHost) \
  V(PJRT_AsyncHostToDeviceTransferManager_Destroy) V(PJRT_AsyncHostToDeviceTransferManager_TransferData)           \
  V(PJRT_Client_CreateBuffersForAsyncHostToDevice) V(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer)         \
  V(PJRT_AsyncHostToDeviceTransferManager_Device) V(PJRT_AsyncHostToDeviceTransferManager_BufferCount)             \
  V(PJRT_AsyncHostToDeviceTransferManager_BufferSize) V(PJRT_AsyncHostToDeviceTransferManager_SetBufferError)      \
  V(PJRT_AsyncHostToDeviceTransferManager_AddMetadata) V(PJRT_Client_DmaMap) V(PJRT_Client_DmaUnmap)               \
  V(PJRT_Client_CreateUninitializedBuffer) V(PJRT_Client_UpdateGlobalProcessInfo)                                  \
  V(PJRT_TopologyDescription_Deserialize) V(PJRT_Client_CreateAliasBuffer) V(PJRT_Client_FulfillAliasBuffer)       \
  V(PJRT_LoadedExecutable_GetDeviceAssignment) V(PJRT_Client_CreateErrorBuffer)                                    \
  V(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral) V(PJRT_Buffer_CopyRawToHostFuture)                      \
  V(PJRT_Device_PoisonExecution) V(PJRT_Device_CreateAsyncTrackingEvent) V(PJRT_AsyncTrackingEvent_Destroy)        \
  V(PJRT_Executable_GetCompileOptions) V(PJRT_Buffer_DonateWithControlDependency) V(PJRT_Event_Create)             \
  V(PJRT_Event_Set) V(PJRT_Device_GetAttributes) V(PJRT_Client_Load)                                               \
  V(PJRT_LoadedExecutable_AddressableDeviceLogicalIds) V(PJRT_Buffer_Bitcast) V(PJRT_Error_ForEachPayload)         \
  V(PJRT_TopologyDescription_Fingerprint) V(PJRT_Executable_ParameterMemoryKinds) V(PJRT_Device_ClearMemoryStats)  \
  V(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace) V(PJRT_TopologyDescription_GetMemorySpaceKindIds)
XONNX_SLOTS(XONNX_UNIMPLEMENTED)

PJRT_Api MakeApi() {
  PJRT_Api api;
  std::memset(&api, 0, sizeof(api));
  api.struct_size = sizeof(PJRT_Api);
  api.pjrt_api_version.struct_size = sizeof(PJRT_Api_Version);
  api.pjrt_api_version.major_version = XONNX_PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = XONNX_PJRT_API_MINOR;
#define XONNX_SET_UNIMPLEMENTED(slot) api.slot = Unimplemented_##slot;
  XONNX_SLOTS(XONNX_SET_UNIMPLEMENTED)
#undef XONNX_SET_UNIMPLEMENTED
  api.PJRT_Error_Destroy = Error_Destroy;
  api.PJRT_Error_Message = Error_Message;
  api.PJRT_Error_GetCode = Error_GetCode;
  api.PJRT_Plugin_Initialize = Plugin_Initialize;
  api.PJRT_Plugin_Attributes = Plugin_Attributes;
  api.PJRT_Event_Destroy = Event_Destroy;
  api.PJRT_Event_IsReady = Event_IsReady;
  api.PJRT_Event_Error = Event_Await;  // asked of ready events, for which it is Await
  api.PJRT_Event_Await = Event_Await;
  api.PJRT_Event_OnReady = Event_OnReady;
  api.PJRT_Client_Create = Client_Create;
  api.PJRT_Client_Destroy = Client_Destroy;
  api.PJRT_Client_PlatformName = Client_PlatformName;
  api.PJRT_Client_ProcessIndex = Client_ProcessIndex;
  api.PJRT_Client_PlatformVersion = Client_PlatformVersion;
  api.PJRT_Client_Devices = Client_Devices;
  api.PJRT_Client_AddressableDevices = Client_Devices;
  api.PJRT_Client_LookupDevice = Client_LookupDevice;
  api.PJRT_Client_LookupAddressableDevice = Client_LookupDevice;
  api.PJRT_Client_AddressableMemories = Client_AddressableMemories;
  api.PJRT_Client_Compile = Client_Compile;
  api.PJRT_Client_DefaultDeviceAssignment = Client_DefaultDeviceAssignment;
  api.PJRT_Client_BufferFromHostBuffer = Client_BufferFromHostBuffer;
  api.PJRT_DeviceDescription_Id = DeviceDescription_Id;
  api.PJRT_DeviceDescription_ProcessIndex = DeviceDescription_ProcessIndex;
  api.PJRT_DeviceDescription_Attributes = DeviceDescription_Attributes;
  api.PJRT_DeviceDescription_Kind = DeviceDescription_Kind;
  api.PJRT_DeviceDescription_DebugString = DeviceDescription_DebugString;
  api.PJRT_DeviceDescription_ToString = DeviceDescription_ToString;
  api.PJRT_Device_GetDescription = Device_GetDescription;
  api.PJRT_Device_IsAddressable = Device_IsAddressable;
  api.PJRT_Device_LocalHardwareId = Device_LocalHardwareId;
  api.PJRT_Device_AddressableMemories = Device_AddressableMemories;
  api.PJRT_Device_DefaultMemory = Device_DefaultMemory;
  api.PJRT_Memory_Id = Memory_Id;
  api.PJRT_Memory_Kind = Memory_Kind;
  api.PJRT_Memory_DebugString = Memory_DebugString;
  api.PJRT_Memory_ToString = Memory_ToString;
  api.PJRT_Memory_AddressableByDevices = Memory_AddressableByDevices;
  api.PJRT_Executable_Destroy = Executable_Destroy;
  api.PJRT_Executable_Name = Executable_Name;
  api.PJRT_Executable_NumReplicas = Executable_NumReplicas;
  api.PJRT_Executable_NumPartitions = Executable_NumReplicas;  // one of each
  api.PJRT_Executable_NumOutputs = Executable_NumOutputs;
  api.PJRT_Executable_SizeOfGeneratedCodeInBytes = Executable_SizeOfGeneratedCodeInBytes;
  api.PJRT_Executable_Serialize = Executable_Serialize;
  api.PJRT_LoadedExecutable_Destroy = LoadedExecutable_Destroy;
  api.PJRT_LoadedExecutable_GetExecutable = LoadedExecutable_GetExecutable;
  api.PJRT_LoadedExecutable_AddressableDevices = LoadedExecutable_AddressableDevices;
  api.PJRT_LoadedExecutable_Delete = LoadedExecutable_Delete;
  api.PJRT_LoadedExecutable_IsDeleted = LoadedExecutable_IsDeleted;
  api.PJRT_LoadedExecutable_Execute = LoadedExecutable_Execute;
  api.PJRT_Executable_DeserializeAndLoad = Executable_DeserializeAndLoad;
  api.PJRT_Buffer_Destroy = Buffer_Destroy;
  api.PJRT_Buffer_ElementType = Buffer_ElementType;
  api.PJRT_Buffer_Dimensions = Buffer_Dimensions;
  api.PJRT_Buffer_UnpaddedDimensions = Buffer_Dimensions;  // no padding, so the same
  api.PJRT_Buffer_DynamicDimensionIndices = Buffer_DynamicDimensionIndices;
  api.PJRT_Buffer_OnDeviceSizeInBytes = Buffer_OnDeviceSizeInBytes;
  api.PJRT_Buffer_Device = Buffer_Device;
  api.PJRT_Buffer_Memory = Buffer_Memory;
  api.PJRT_Buffer_Delete = Buffer_Delete;
  api.PJRT_Buffer_IsDeleted = Buffer_IsDeleted;
  api.PJRT_Buffer_CopyToDevice = Buffer_CopyToDevice;
  api.PJRT_Buffer_ToHostBuffer = Buffer_ToHostBuffer;
  api.PJRT_Buffer_IsOnCpu = Buffer_IsOnCpu;
  api.PJRT_Buffer_ReadyEvent = Buffer_ReadyEvent;
  api.PJRT_Executable_OutputElementTypes = Executable_OutputElementTypes;
  api.PJRT_Executable_OutputDimensions = Executable_OutputDimensions;
  api.PJRT_Executable_Fingerprint = Executable_Fingerprint;
  return api;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() {
  static const PJRT_Api api = MakeApi();
  return &api;
}
