// RAII C++ wrappers over the PjRT C ABI (c_api.h): the only way the rest of
// xonnx talks to a plugin. Every PJRT_Error becomes an absl::Status with the
// plugin's message and code; every PJRT_Event and object is destroyed by its
// owner; calls to slots a plugin's API version lacks fail with a clear
// UNIMPLEMENTED instead of jumping through garbage.
//
//   ASSIGN_OR_RETURN(auto plugin, pjrt::Plugin::Load("libxonnx_pjrt_cpu.so"));
//   ASSIGN_OR_RETURN(auto client, pjrt::Client::Create(plugin, {}));
//   ASSIGN_OR_RETURN(auto exe, client->Compile(hlo_proto_bytes, CompileOptionsFor(device)));
//   ASSIGN_OR_RETURN(auto out, exe->Execute({arg_buffers...}));
#ifndef XONNX_PJRT_CLIENT_H_
#define XONNX_PJRT_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pjrt/c_api.h"
#include "pjrt/compile_options.h"

namespace xonnx::pjrt {

// A loaded plugin: the shared object and its function table. Shared by every
// client made from it; the library stays loaded while any of them lives.
class Plugin {
 public:
  // A path containing '/' is opened as a file; a bare name goes through the
  // dynamic loader's search path (LD_LIBRARY_PATH, rpath, system dirs).
  // Checks the major version and calls PJRT_Plugin_Initialize. Loading the
  // same resolved file twice returns the same Plugin.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<Plugin>> Load(const std::string& path_or_name);
  ~Plugin();

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int major_version() const { return api_->pjrt_api_version.major_version; }
  int minor_version() const { return api_->pjrt_api_version.minor_version; }
  // Plugin attributes as "name=value" strings (empty if the plugin has none).
  std::vector<std::pair<std::string, std::string>> Attributes() const;

  // Whether the plugin's table reaches the slot at `offset` (offsetof in
  // PJRT_Api) and fills it.
  bool HasSlot(size_t offset) const;
  // Converts (and destroys) an error returned by the plugin.
  absl::Status ToStatus(PJRT_Error* error) const;

 private:
  Plugin() = default;
  void* handle_ = nullptr;
  bool initialized_ = false;  // loaded, version checked and initialized
  const PJRT_Api* api_ = nullptr;
  std::string path_;
};

// A create option for PJRT_Client_Create, e.g. {"cpu_device_count", int64_t{4}}.
struct NamedValue {
  std::string name;
  std::variant<std::string, int64_t, std::vector<int64_t>, float, bool> value;
};
// Parses "name=value" (value: true/false, an integer, a float, a comma list
// of integers, or else a string).
absl::StatusOr<NamedValue> ParseNamedValue(const std::string& text);

class Client;

// A completion event; destroyed with its owner.
class Event {
 public:
  Event(std::shared_ptr<Plugin> plugin, PJRT_Event* event) : plugin_(std::move(plugin)), event_(event) {}
  Event(Event&& other) noexcept : plugin_(std::move(other.plugin_)), event_(other.event_) { other.event_ = nullptr; }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event& operator=(Event&&) = delete;
  ~Event();
  // Blocks until the event is ready; returns its error, if any.
  [[nodiscard]] absl::Status Await();
  // The same, polling the event for up to `spin_us` microseconds before
  // blocking: a blocked thread takes tens of microseconds to wake up, which
  // a call of a fraction of a millisecond notices. Plugins without
  // PJRT_Event_IsReady block at once.
  [[nodiscard]] absl::Status Await(int spin_us);
  // Whether the event is ready (UNIMPLEMENTED without PJRT_Event_IsReady).
  [[nodiscard]] absl::StatusOr<bool> IsReady() const;
  // Calls `fn` on a plugin thread once the event is ready (at once if it
  // is), whether or not it failed; `fn` may outlive this Event. UNIMPLEMENTED
  // from a plugin without PJRT_Event_OnReady, and then `fn` is never called.
  [[nodiscard]] absl::Status OnReady(std::function<void()> fn);

 private:
  std::shared_ptr<Plugin> plugin_;
  PJRT_Event* event_;
};

// An addressable device, described once when the client is created.
struct Device {
  PJRT_Device* raw = nullptr;
  int id = 0;
  int local_hardware_id = -1;
  std::string kind, description;  // e.g. "cpu", "CpuDevice(id=0)"
  std::vector<std::pair<std::string, std::string>> attributes;
};

// A device buffer.
class Buffer {
 public:
  Buffer(std::shared_ptr<Client> client, PJRT_Buffer* buffer);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  PJRT_Buffer* raw() const { return buffer_; }
  [[nodiscard]] absl::StatusOr<std::vector<int64_t>> Dimensions() const;
  [[nodiscard]] absl::StatusOr<PJRT_Buffer_Type> ElementType() const;
  // Copies the buffer into `dst` (dense, row-major, `size` bytes) and waits.
  [[nodiscard]] absl::Status ToHost(void* dst, size_t size) const;
  // Starts that copy and returns at once (the buffer may still be being
  // computed: the plugin orders the copy after it); `dst` must stay valid
  // until the returned event is ready.
  [[nodiscard]] absl::StatusOr<Event> StartToHost(void* dst, size_t size) const;

 private:
  std::shared_ptr<Client> client_;
  PJRT_Buffer* buffer_;
};

// A compiled program loaded on a device.
class LoadedExecutable {
 public:
  LoadedExecutable(std::shared_ptr<Client> client, PJRT_LoadedExecutable* exe);
  LoadedExecutable(const LoadedExecutable&) = delete;
  LoadedExecutable& operator=(const LoadedExecutable&) = delete;
  ~LoadedExecutable();

  // Runs once on the device the program was compiled for; returns one buffer
  // per output (tuple elements of the result).
  [[nodiscard]] absl::StatusOr<std::vector<std::unique_ptr<Buffer>>> Execute(absl::Span<Buffer* const> args) const;
  // The same without waiting: the outputs exist at once (reading them is
  // ordered after the run by the plugin) and `done` is ready, with the run's
  // error if it failed, when the device has finished.
  struct Launch {
    std::vector<std::unique_ptr<Buffer>> outputs;
    Event done;
  };
  // `extensions`, when given, is chained into the execute options
  // (xonnx's own, which only xonnx's CPU plugin reads; pass them to no
  // other plugin).
  [[nodiscard]] absl::StatusOr<Launch> Start(absl::Span<Buffer* const> args,
                                             PJRT_Extension_Base* extensions = nullptr) const;
  // PJRT_Executable_Serialize: the bytes DeserializeAndLoad accepts.
  [[nodiscard]] absl::StatusOr<std::string> Serialize() const;
  [[nodiscard]] absl::StatusOr<std::string> Fingerprint() const;
  size_t num_outputs() const { return num_outputs_; }

 private:
  std::shared_ptr<Client> client_;
  PJRT_LoadedExecutable* exe_;
  size_t num_outputs_ = 0;
};

// A PjRT client over one plugin.
class Client : public std::enable_shared_from_this<Client> {
 public:
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<Client>> Create(std::shared_ptr<Plugin> plugin,
                                                                      const std::vector<NamedValue>& options);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  const std::shared_ptr<Plugin>& plugin() const { return plugin_; }
  PJRT_Client* raw() const { return client_; }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  const std::vector<Device>& devices() const { return devices_; }  // addressable ones
  [[nodiscard]] absl::StatusOr<const Device*> device(int index) const;

  // Copies a dense row-major host array to `device`; waits until the host
  // memory may be reused.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Buffer>> BufferFromHost(const void* data, PJRT_Buffer_Type type,
                                                                       absl::Span<const int64_t> dims,
                                                                       const Device& device);
  // Starts that copy and returns at once: the buffer can be passed to a run
  // straight away (the plugin orders the run after the copy); the host
  // memory must stay unchanged until `host_released` is ready.
  struct Upload {
    std::unique_ptr<Buffer> buffer;
    Event host_released;
  };
  [[nodiscard]] absl::StatusOr<Upload> StartBufferFromHost(const void* data, PJRT_Buffer_Type type,
                                                           absl::Span<const int64_t> dims, const Device& device);
  // A buffer of a dense row-major host array that the plugin may read in
  // place (PJRT's immutable zero-copy: a CPU plugin can; others copy).
  // `owner` keeps the bytes alive until the plugin reports that it is done
  // with them, which can be long after this returns (when the buffer and
  // whatever the plugin built from it are gone); the bytes must not change
  // until then.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Buffer>> BufferFromHostZeroCopy(const void* data, PJRT_Buffer_Type type,
                                                                               absl::Span<const int64_t> dims,
                                                                               const Device& device,
                                                                               std::shared_ptr<const void> owner);
  // Registers `size` bytes of host memory at `data` for the device's direct
  // memory access (PJRT_Client_DmaMap): uploads from it and downloads into
  // it skip the plugin's staging copy. UNIMPLEMENTED where the plugin has
  // no such call. DmaUnmap undoes it; the memory must outlive the mapping.
  [[nodiscard]] absl::Status DmaMap(void* data, size_t size);
  [[nodiscard]] absl::Status DmaUnmap(void* data);
  // Compiles a program: a serialized HloModuleProto (format "hlo") or
  // StableHLO MLIR text (format "mlir").
  [[nodiscard]] absl::StatusOr<std::unique_ptr<LoadedExecutable>> Compile(const std::string& program,
                                                                          const std::string& compile_options,
                                                                          absl::string_view format = "hlo");
  // PJRT_Executable_DeserializeAndLoad of LoadedExecutable::Serialize()'s
  // bytes; non-empty compile_options override the serialized ones (the
  // device assignment).
  [[nodiscard]] absl::StatusOr<std::unique_ptr<LoadedExecutable>> Deserialize(const std::string& bytes,
                                                                              const std::string& compile_options = "");

 private:
  // Calls PJRT_Client_BufferFromHostBuffer: the new buffer and its
  // done_with_host_buffer event (which the caller owns; may be null).
  absl::StatusOr<std::pair<std::unique_ptr<Buffer>, PJRT_Event*>> StartUpload(const void* data, PJRT_Buffer_Type type,
                                                                              absl::Span<const int64_t> dims,
                                                                              const Device& device,
                                                                              PJRT_HostBufferSemantics semantics);
  explicit Client(std::shared_ptr<Plugin> plugin) : plugin_(std::move(plugin)) {}
  std::shared_ptr<Plugin> plugin_;
  PJRT_Client* client_ = nullptr;
  std::string platform_name_, platform_version_;
  std::vector<Device> devices_;
};

// A serialized CompileOptionsProto for one replica and one partition on
// `device`.
inline std::string CompileOptionsFor(const Device& device) {
  return EncodeCompileOptions(device.id, device.local_hardware_id >= 0 ? device.local_hardware_id : 0);
}

}  // namespace xonnx::pjrt

#endif  // XONNX_PJRT_CLIENT_H_
