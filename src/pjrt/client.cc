#include "pjrt/client.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status.h"

namespace xonnx::pjrt {

namespace {

// Fills the two header fields every argument struct starts with.
template <typename T>
T Args() {
  T a;
  std::memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(T);
  return a;
}

std::string View(const char* p, size_t n) { return p ? std::string(p, n) : std::string(); }

std::string FormatValue(const PJRT_NamedValue& v) {
  switch (v.type) {
    case PJRT_NamedValue_kString:
      return View(v.string_value, v.value_size);
    case PJRT_NamedValue_kInt64:
      return absl::StrCat(v.int64_value);
    case PJRT_NamedValue_kInt64List:
      return absl::StrJoin(absl::MakeConstSpan(v.int64_array_value, v.value_size), ",");
    case PJRT_NamedValue_kFloat:
      return absl::StrCat(v.float_value);
    case PJRT_NamedValue_kBool:
      return v.bool_value ? "true" : "false";
  }
  return "?";
}

}  // namespace

// Calls a PJRT_Api slot, first checking that the plugin has it.
#define PJRT_CALL(plugin, slot, args)                                                                                  \
  ((plugin)->HasSlot(offsetof(PJRT_Api, slot))                                                                         \
       ? (plugin)->ToStatus((plugin)->api()->slot(args))                                                               \
       : absl::UnimplementedError(absl::StrCat((plugin)->path(), ": the plugin (PjRT API ", (plugin)->major_version(), \
                                               ".", (plugin)->minor_version(), ") has no ", #slot)))

// ------------------------------------------------------------------ Plugin

absl::StatusOr<std::shared_ptr<Plugin>> Plugin::Load(const std::string& path_or_name) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<Plugin>> loaded;
  std::string key = path_or_name;
  if (path_or_name.find('/') != std::string::npos) {
    char real[PATH_MAX];
    if (!realpath(path_or_name.c_str(), real))
      return absl::NotFoundError(absl::StrCat(path_or_name, ": no such PjRT plugin file"));
    key = real;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(key); it != loaded.end())
    if (auto p = it->second.lock()) return p;

  std::shared_ptr<Plugin> p(new Plugin());
  p->path_ = key;
  p->handle_ = dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p->handle_) {
    const char* err = dlerror();
    return absl::NotFoundError(
        absl::StrCat("cannot load PjRT plugin '", path_or_name, "': ", err ? err : "unknown error"));
  }
  auto get = reinterpret_cast<PJRT_GetPjrtApi_Fn>(dlsym(p->handle_, "GetPjrtApi"));
  if (!get) return absl::InvalidArgumentError(absl::StrCat(key, ": not a PjRT plugin (no GetPjrtApi symbol)"));
  p->api_ = get();
  if (!p->api_) return absl::InternalError(absl::StrCat(key, ": GetPjrtApi returned null"));
  if (p->api_->struct_size < offsetof(PJRT_Api, PJRT_Client_BufferFromHostBuffer) + sizeof(void*))
    return absl::FailedPreconditionError(
        absl::StrCat(key, ": the plugin's API table is too small (", p->api_->struct_size, " bytes)"));
  if (p->major_version() != XONNX_PJRT_API_MAJOR)
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: the plugin implements PjRT C API %d.%d; xonnx speaks major version %d (built for %d.%d)", key,
        p->major_version(), p->minor_version(), XONNX_PJRT_API_MAJOR, XONNX_PJRT_API_MAJOR, XONNX_PJRT_API_MINOR));
  auto init = Args<PJRT_Plugin_Initialize_Args>();
  absl::Status st = PJRT_CALL(p, PJRT_Plugin_Initialize, &init);
  if (!st.ok()) return Annotate(st, absl::StrCat(key, ": initializing the plugin"));
  p->initialized_ = true;
  loaded[key] = p;
  return p;
}

Plugin::~Plugin() {
  // A plugin that loaded holds threads and static state that do not expect
  // to be unloaded (XLA's plugins among them): it stays mapped for the
  // process. One that failed to load is closed again.
  if (handle_ && !initialized_) dlclose(handle_);
}

bool Plugin::HasSlot(size_t offset) const {
  if (api_->struct_size < offset + sizeof(void*)) return false;
  void* fn;
  std::memcpy(&fn, reinterpret_cast<const char*>(api_) + offset, sizeof(fn));
  return fn != nullptr;
}

absl::Status Plugin::ToStatus(PJRT_Error* error) const {
  if (!error) return absl::OkStatus();
  auto msg = Args<PJRT_Error_Message_Args>();
  msg.error = error;
  api_->PJRT_Error_Message(&msg);
  auto code = Args<PJRT_Error_GetCode_Args>();
  code.error = error;
  absl::StatusCode c = absl::StatusCode::kUnknown;
  PJRT_Error* code_err = api_->PJRT_Error_GetCode(&code);
  if (!code_err && code.code > 0 && code.code <= 16) c = static_cast<absl::StatusCode>(code.code);
  absl::Status st(c, View(msg.message, msg.message_size));
  auto destroy = Args<PJRT_Error_Destroy_Args>();
  destroy.error = error;
  api_->PJRT_Error_Destroy(&destroy);
  if (code_err) {
    destroy.error = code_err;
    api_->PJRT_Error_Destroy(&destroy);
  }
  return st;
}

std::vector<std::pair<std::string, std::string>> Plugin::Attributes() const {
  std::vector<std::pair<std::string, std::string>> out;
  auto a = Args<PJRT_Plugin_Attributes_Args>();
  if (!PJRT_CALL(this, PJRT_Plugin_Attributes, &a).ok()) return out;
  for (size_t i = 0; i < a.num_attributes; ++i)
    out.emplace_back(View(a.attributes[i].name, a.attributes[i].name_size), FormatValue(a.attributes[i]));
  return out;
}

absl::StatusOr<NamedValue> ParseNamedValue(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return absl::InvalidArgumentError(absl::StrCat("create option '", text, "' is not of the form name=value"));
  NamedValue nv;
  nv.name = text.substr(0, eq);
  std::string v = text.substr(eq + 1);
  int64_t i;
  float f;
  if (v == "true" || v == "false") {
    nv.value = v == "true";
  } else if (absl::SimpleAtoi(v, &i)) {
    nv.value = i;
  } else if (absl::SimpleAtof(v, &f) && v.find(',') == std::string::npos) {
    nv.value = f;
  } else {
    std::vector<int64_t> list;
    bool all_ints = v.find(',') != std::string::npos;
    for (absl::string_view part : absl::StrSplit(v, ','))
      all_ints &= absl::SimpleAtoi(part, &i) && (list.push_back(i), true);
    if (all_ints)
      nv.value = list;
    else
      nv.value = v;
  }
  return nv;
}

// ------------------------------------------------------------------- Event

Event::~Event() {
  if (!event_) return;
  auto a = Args<PJRT_Event_Destroy_Args>();
  a.event = event_;
  (void)PJRT_CALL(plugin_, PJRT_Event_Destroy, &a);
}

absl::Status Event::Await() {
  if (!event_) return absl::OkStatus();
  auto a = Args<PJRT_Event_Await_Args>();
  a.event = event_;
  return PJRT_CALL(plugin_, PJRT_Event_Await, &a);
}

absl::StatusOr<bool> Event::IsReady() const {
  if (!event_) return true;
  auto a = Args<PJRT_Event_IsReady_Args>();
  a.event = event_;
  RETURN_IF_ERROR(PJRT_CALL(plugin_, PJRT_Event_IsReady, &a));
  return a.is_ready;
}

absl::Status Event::Await(int spin_us) {
  if (spin_us > 0 && event_ && plugin_->HasSlot(offsetof(PJRT_Api, PJRT_Event_IsReady))) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
    for (;;) {
      auto ready = IsReady();
      if (!ready.ok() || *ready || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::yield();  // leaves the core to the plugin's threads when they need it
    }
  }
  return Await();
}

absl::Status Event::OnReady(std::function<void()> fn) {
  if (!event_) {  // no event: nothing is pending
    fn();
    return absl::OkStatus();
  }
  // The callback holds the API table, not the Plugin: it runs inside the
  // plugin, which must not be unloaded from there.
  struct Pending {
    const PJRT_Api* api;
    std::function<void()> fn;
  };
  auto* p = new Pending{plugin_->api(), std::move(fn)};
  auto a = Args<PJRT_Event_OnReady_Args>();
  a.event = event_;
  a.user_arg = p;
  a.callback = [](PJRT_Error* error, void* arg) {
    auto* p = static_cast<Pending*>(arg);
    if (error) {  // reported by Await; here only the time matters
      auto d = Args<PJRT_Error_Destroy_Args>();
      d.error = error;
      p->api->PJRT_Error_Destroy(&d);
    }
    p->fn();
    delete p;
  };
  absl::Status st = PJRT_CALL(plugin_, PJRT_Event_OnReady, &a);
  if (!st.ok()) delete p;
  return st;
}

// ------------------------------------------------------------------ Client

absl::Status Client::DmaMap(void* data, size_t size) {
  auto a = Args<PJRT_Client_DmaMap_Args>();
  a.client = client_;
  a.data = data;
  a.size = size;
  return PJRT_CALL(plugin_, PJRT_Client_DmaMap, &a);
}

absl::Status Client::DmaUnmap(void* data) {
  auto a = Args<PJRT_Client_DmaUnmap_Args>();
  a.client = client_;
  a.data = data;
  return PJRT_CALL(plugin_, PJRT_Client_DmaUnmap, &a);
}

absl::StatusOr<std::shared_ptr<Client>> Client::Create(std::shared_ptr<Plugin> plugin,
                                                       const std::vector<NamedValue>& options) {
  std::shared_ptr<Client> c(new Client(plugin));
  std::vector<PJRT_NamedValue> raw(options.size());
  for (size_t i = 0; i < options.size(); ++i) {
    PJRT_NamedValue& r = raw[i];
    std::memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
    r.name = options[i].name.data();
    r.name_size = options[i].name.size();
    r.value_size = 1;
    const auto& v = options[i].value;
    if (auto* s = std::get_if<std::string>(&v)) {
      r.type = PJRT_NamedValue_kString;
      r.string_value = s->data();
      r.value_size = s->size();
    } else if (auto* n = std::get_if<int64_t>(&v)) {
      r.type = PJRT_NamedValue_kInt64;
      r.int64_value = *n;
    } else if (auto* l = std::get_if<std::vector<int64_t>>(&v)) {
      r.type = PJRT_NamedValue_kInt64List;
      r.int64_array_value = l->data();
      r.value_size = l->size();
    } else if (auto* f = std::get_if<float>(&v)) {
      r.type = PJRT_NamedValue_kFloat;
      r.float_value = *f;
    } else {
      r.type = PJRT_NamedValue_kBool;
      r.bool_value = std::get<bool>(v);
    }
  }
  auto a = Args<PJRT_Client_Create_Args>();
  a.create_options = raw.data();
  a.num_options = raw.size();
  absl::Status st = PJRT_CALL(plugin, PJRT_Client_Create, &a);
  if (!st.ok()) return Annotate(st, absl::StrCat(plugin->path(), ": creating a client"));
  c->client_ = a.client;

  auto name = Args<PJRT_Client_String_Args>();
  name.client = c->client_;
  RETURN_IF_ERROR(PJRT_CALL(plugin, PJRT_Client_PlatformName, &name));
  c->platform_name_ = View(name.value, name.value_size);
  auto version = Args<PJRT_Client_String_Args>();
  version.client = c->client_;
  RETURN_IF_ERROR(PJRT_CALL(plugin, PJRT_Client_PlatformVersion, &version));
  c->platform_version_ = View(version.value, version.value_size);

  auto devs = Args<PJRT_Client_Devices_Args>();
  devs.client = c->client_;
  RETURN_IF_ERROR(PJRT_CALL(plugin, PJRT_Client_AddressableDevices, &devs));
  for (size_t i = 0; i < devs.num_devices; ++i) {
    Device d;
    d.raw = devs.devices[i];
    auto gd = Args<PJRT_Device_GetDescription_Args>();
    gd.device = d.raw;
    RETURN_IF_ERROR(PJRT_CALL(plugin, PJRT_Device_GetDescription, &gd));
    auto id = Args<PJRT_DeviceDescription_Int_Args>();
    id.device_description = gd.device_description;
    RETURN_IF_ERROR(PJRT_CALL(plugin, PJRT_DeviceDescription_Id, &id));
    d.id = id.value;
    auto hw = Args<PJRT_Device_LocalHardwareId_Args>();
    hw.device = d.raw;
    if (PJRT_CALL(plugin, PJRT_Device_LocalHardwareId, &hw).ok()) d.local_hardware_id = hw.local_hardware_id;
    auto kind = Args<PJRT_DeviceDescription_String_Args>();
    kind.device_description = gd.device_description;
    if (PJRT_CALL(plugin, PJRT_DeviceDescription_Kind, &kind).ok()) d.kind = View(kind.value, kind.value_size);
    auto str = Args<PJRT_DeviceDescription_String_Args>();
    str.device_description = gd.device_description;
    if (PJRT_CALL(plugin, PJRT_DeviceDescription_ToString, &str).ok()) d.description = View(str.value, str.value_size);
    auto attrs = Args<PJRT_DeviceDescription_Attributes_Args>();
    attrs.device_description = gd.device_description;
    if (PJRT_CALL(plugin, PJRT_DeviceDescription_Attributes, &attrs).ok())
      for (size_t k = 0; k < attrs.num_attributes; ++k)
        d.attributes.emplace_back(View(attrs.attributes[k].name, attrs.attributes[k].name_size),
                                  FormatValue(attrs.attributes[k]));
    c->devices_.push_back(std::move(d));
  }
  if (c->devices_.empty())
    return absl::FailedPreconditionError(absl::StrCat(plugin->path(), ": the plugin has no addressable devices"));
  return c;
}

Client::~Client() {
  if (!client_) return;
  auto a = Args<PJRT_Client_Destroy_Args>();
  a.client = client_;
  (void)PJRT_CALL(plugin_, PJRT_Client_Destroy, &a);
}

absl::StatusOr<const Device*> Client::device(int index) const {
  if (index < 0 || index >= static_cast<int>(devices_.size()))
    return absl::InvalidArgumentError(absl::StrFormat("device %d does not exist: the %s plugin has %d device%s (0..%d)",
                                                      index, platform_name_, devices_.size(),
                                                      devices_.size() == 1 ? "" : "s", devices_.size() - 1));
  return &devices_[index];
}

absl::StatusOr<std::pair<std::unique_ptr<Buffer>, PJRT_Event*>> Client::StartUpload(
    const void* data, PJRT_Buffer_Type type, absl::Span<const int64_t> dims, const Device& device,
    PJRT_HostBufferSemantics semantics) {
  auto a = Args<PJRT_Client_BufferFromHostBuffer_Args>();
  a.client = client_;
  a.data = data;
  a.type = type;
  a.dims = dims.data();
  a.num_dims = dims.size();
  a.host_buffer_semantics = semantics;
  a.device = device.raw;
  RETURN_IF_ERROR(PJRT_CALL(plugin_, PJRT_Client_BufferFromHostBuffer, &a));
  return std::make_pair(std::make_unique<Buffer>(shared_from_this(), a.buffer), a.done_with_host_buffer);
}

absl::StatusOr<std::unique_ptr<Buffer>> Client::BufferFromHost(const void* data, PJRT_Buffer_Type type,
                                                               absl::Span<const int64_t> dims, const Device& device) {
  ASSIGN_OR_RETURN(Upload up, StartBufferFromHost(data, type, dims, device));
  RETURN_IF_ERROR(up.host_released.Await());
  return std::move(up.buffer);
}

absl::StatusOr<Client::Upload> Client::StartBufferFromHost(const void* data, PJRT_Buffer_Type type,
                                                           absl::Span<const int64_t> dims, const Device& device) {
  ASSIGN_OR_RETURN(auto started,
                   StartUpload(data, type, dims, device, PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes));
  return Upload{std::move(started.first), Event(plugin_, started.second)};
}

absl::StatusOr<std::unique_ptr<Buffer>> Client::BufferFromHostZeroCopy(const void* data, PJRT_Buffer_Type type,
                                                                       absl::Span<const int64_t> dims,
                                                                       const Device& device,
                                                                       std::shared_ptr<const void> owner) {
  ASSIGN_OR_RETURN(auto started, StartUpload(data, type, dims, device, PJRT_HostBufferSemantics_kImmutableZeroCopy));
  std::unique_ptr<Buffer> buffer = std::move(started.first);
  PJRT_Event* done_with_host_buffer = started.second;
  if (!done_with_host_buffer) return buffer;  // nothing to wait for: the plugin copied
  // The callback's copy of the owner goes with the callback, whenever the
  // plugin calls it; this one keeps the bytes for the fallback below.
  Event done(plugin_, done_with_host_buffer);
  if (done.OnReady([owner] {}).ok()) return buffer;
  // A plugin that cannot call back: copy instead, so that nothing depends
  // on when it lets go of the bytes.
  buffer.reset();
  RETURN_IF_ERROR(done.Await());
  return BufferFromHost(data, type, dims, device);
}

absl::StatusOr<std::unique_ptr<LoadedExecutable>> Client::Compile(const std::string& program_bytes,
                                                                  const std::string& compile_options,
                                                                  absl::string_view format) {
  PJRT_Program program;
  std::memset(&program, 0, sizeof(program));
  program.struct_size = sizeof(program);
  program.code = const_cast<char*>(program_bytes.data());
  program.code_size = program_bytes.size();
  program.format = format.data();
  program.format_size = format.size();
  auto a = Args<PJRT_Client_Compile_Args>();
  a.client = client_;
  a.program = &program;
  a.compile_options = compile_options.data();
  a.compile_options_size = compile_options.size();
  RETURN_IF_ERROR(PJRT_CALL(plugin_, PJRT_Client_Compile, &a));
  return std::make_unique<LoadedExecutable>(shared_from_this(), a.executable);
}

absl::StatusOr<std::unique_ptr<LoadedExecutable>> Client::Deserialize(const std::string& bytes,
                                                                      const std::string& compile_options) {
  auto a = Args<PJRT_Executable_DeserializeAndLoad_Args>();
  a.client = client_;
  a.serialized_executable = bytes.data();
  a.serialized_executable_size = bytes.size();
  if (!compile_options.empty()) {
    a.overridden_serialized_compile_options = compile_options.data();
    a.overridden_serialized_compile_options_size = compile_options.size();
  }
  RETURN_IF_ERROR(PJRT_CALL(plugin_, PJRT_Executable_DeserializeAndLoad, &a));
  return std::make_unique<LoadedExecutable>(shared_from_this(), a.loaded_executable);
}

// ------------------------------------------------------------------ Buffer

Buffer::Buffer(std::shared_ptr<Client> client, PJRT_Buffer* buffer) : client_(std::move(client)), buffer_(buffer) {}

Buffer::~Buffer() {
  if (!buffer_) return;
  auto a = Args<PJRT_Buffer_Destroy_Args>();
  a.buffer = buffer_;
  (void)PJRT_CALL(client_->plugin(), PJRT_Buffer_Destroy, &a);
}

absl::StatusOr<std::vector<int64_t>> Buffer::Dimensions() const {
  auto a = Args<PJRT_Buffer_Dimensions_Args>();
  a.buffer = buffer_;
  RETURN_IF_ERROR(PJRT_CALL(client_->plugin(), PJRT_Buffer_Dimensions, &a));
  return std::vector<int64_t>(a.dims, a.dims + a.num_dims);
}

absl::StatusOr<PJRT_Buffer_Type> Buffer::ElementType() const {
  auto a = Args<PJRT_Buffer_ElementType_Args>();
  a.buffer = buffer_;
  RETURN_IF_ERROR(PJRT_CALL(client_->plugin(), PJRT_Buffer_ElementType, &a));
  return a.type;
}

absl::Status Buffer::ToHost(void* dst, size_t size) const {
  ASSIGN_OR_RETURN(Event done, StartToHost(dst, size));
  return done.Await();
}

absl::StatusOr<Event> Buffer::StartToHost(void* dst, size_t size) const {
  auto a = Args<PJRT_Buffer_ToHostBuffer_Args>();
  a.src = buffer_;
  a.dst = dst;
  a.dst_size = size;
  RETURN_IF_ERROR(PJRT_CALL(client_->plugin(), PJRT_Buffer_ToHostBuffer, &a));
  return Event(client_->plugin(), a.event);
}

// -------------------------------------------------------- LoadedExecutable

namespace {

// The PJRT_Executable behind a loaded one, destroyed when this goes away.
class ExecutableView {
 public:
  ExecutableView(std::shared_ptr<Plugin> plugin, PJRT_LoadedExecutable* loaded) : plugin_(std::move(plugin)) {
    auto get = Args<PJRT_LoadedExecutable_GetExecutable_Args>();
    get.loaded_executable = loaded;
    status_ = PJRT_CALL(plugin_, PJRT_LoadedExecutable_GetExecutable, &get);
    if (status_.ok()) exe_ = get.executable;
  }
  ~ExecutableView() {
    if (!exe_) return;
    auto d = Args<PJRT_Executable_Destroy_Args>();
    d.executable = exe_;
    (void)PJRT_CALL(plugin_, PJRT_Executable_Destroy, &d);
  }
  const absl::Status& status() const { return status_; }
  PJRT_Executable* get() const { return exe_; }

 private:
  std::shared_ptr<Plugin> plugin_;
  PJRT_Executable* exe_ = nullptr;
  absl::Status status_;
};

}  // namespace

LoadedExecutable::LoadedExecutable(std::shared_ptr<Client> client, PJRT_LoadedExecutable* exe)
    : client_(std::move(client)), exe_(exe) {
  ExecutableView view(client_->plugin(), exe_);
  if (!view.status().ok()) return;
  auto n = Args<PJRT_Executable_Count_Args>();
  n.executable = view.get();
  if (PJRT_CALL(client_->plugin(), PJRT_Executable_NumOutputs, &n).ok()) num_outputs_ = n.value;
}

LoadedExecutable::~LoadedExecutable() {
  if (!exe_) return;
  auto a = Args<PJRT_LoadedExecutable_Destroy_Args>();
  a.executable = exe_;
  (void)PJRT_CALL(client_->plugin(), PJRT_LoadedExecutable_Destroy, &a);
}

absl::StatusOr<std::vector<std::unique_ptr<Buffer>>> LoadedExecutable::Execute(absl::Span<Buffer* const> args) const {
  ASSIGN_OR_RETURN(Launch launch, Start(args));
  RETURN_IF_ERROR(launch.done.Await());
  return std::move(launch.outputs);
}

absl::StatusOr<LoadedExecutable::Launch> LoadedExecutable::Start(absl::Span<Buffer* const> args,
                                                                 PJRT_Extension_Base* extensions) const {
  const auto& plugin = client_->plugin();
  std::vector<PJRT_Buffer*> raw_args;
  for (Buffer* b : args) raw_args.push_back(b->raw());
  PJRT_Buffer* const* arg_list = raw_args.data();
  std::vector<PJRT_Buffer*> outs(num_outputs_, nullptr);
  PJRT_Buffer** out_list = outs.data();
  PJRT_Event* complete = nullptr;
  PJRT_ExecuteOptions options;
  std::memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.extension_start = extensions;
  auto a = Args<PJRT_LoadedExecutable_Execute_Args>();
  a.executable = exe_;
  a.options = &options;
  a.argument_lists = &arg_list;
  a.num_devices = 1;
  a.num_args = raw_args.size();
  a.output_lists = &out_list;
  a.device_complete_events = &complete;
  RETURN_IF_ERROR(PJRT_CALL(plugin, PJRT_LoadedExecutable_Execute, &a));
  std::vector<std::unique_ptr<Buffer>> result;
  for (PJRT_Buffer* b : outs) result.push_back(std::make_unique<Buffer>(client_, b));
  return Launch{std::move(result), Event(plugin, complete)};
}

absl::StatusOr<std::string> LoadedExecutable::Serialize() const {
  ExecutableView view(client_->plugin(), exe_);
  RETURN_IF_ERROR(view.status());
  auto s = Args<PJRT_Executable_Serialize_Args>();
  s.executable = view.get();
  RETURN_IF_ERROR(PJRT_CALL(client_->plugin(), PJRT_Executable_Serialize, &s));
  std::string bytes(s.serialized_bytes, s.serialized_bytes_size);
  if (s.serialized_executable_deleter) s.serialized_executable_deleter(s.serialized_executable);
  return bytes;
}

absl::StatusOr<std::string> LoadedExecutable::Fingerprint() const {
  ExecutableView view(client_->plugin(), exe_);
  RETURN_IF_ERROR(view.status());
  auto f = Args<PJRT_Executable_String_Args>();
  f.executable = view.get();
  RETURN_IF_ERROR(PJRT_CALL(client_->plugin(), PJRT_Executable_Fingerprint, &f));
  return View(f.value, f.value_size);
}

}  // namespace xonnx::pjrt
