// The CPU plugin's client, its create options, devices and memories.
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "plugins/cpu/shim.h"

namespace xonnx::pjrt_cpu {

namespace {

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

// The plugin's boolean create options, each with the switch it sets.
struct BoolOption {
  const char* name;
  bool& (*field)(PluginOptions&);
};
constexpr BoolOption kBoolOptions[] = {
    {"optimize", [](PluginOptions& o) -> bool& { return o.program.optimize; }},
    {"verify_passes", [](PluginOptions& o) -> bool& { return o.program.verify_passes; }},
    {"use_dnnl", [](PluginOptions& o) -> bool& { return o.program.compile.use_dnnl; }},
    {"fuse_elementwise", [](PluginOptions& o) -> bool& { return o.program.compile.fuse_elementwise; }},
    {"winograd", [](PluginOptions& o) -> bool& { return o.program.compile.winograd; }},
    {"blocked_layouts", [](PluginOptions& o) -> bool& { return o.program.compile.blocked_layouts; }},
    {"concurrent_branches", [](PluginOptions& o) -> bool& { return o.program.compile.concurrent_branches; }},
    {"reference", [](PluginOptions& o) -> bool& { return o.program.compile.reference; }},
    {"distinct_buffers", [](PluginOptions& o) -> bool& { return o.program.compile.distinct_buffers; }},
    {"excess_precision", [](PluginOptions& o) -> bool& { return o.program.compile.excess_precision; }},
};

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
    return absl::OkStatus();
  }
  if (name == "threads") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kInt64, "an integer"));
    if (v.int64_value < 0 || v.int64_value > 4096)
      return xonnx::InvalidArgument("create option threads=%d is out of range 0..4096 (0: every core)", v.int64_value);
    o.threads = static_cast<int>(v.int64_value);
    return absl::OkStatus();
  }
  if (name == "batch_rows") {
    RETURN_IF_ERROR(want(PJRT_NamedValue_kInt64, "an integer"));
    if (v.int64_value < 0)
      return xonnx::InvalidArgument("create option batch_rows=%d must be 0 (never split) or a row count",
                                    v.int64_value);
    o.program.compile.batch_rows = v.int64_value;
    return absl::OkStatus();
  }
  std::vector<std::string> known = {"cpu_device_count", "threads", "batch_rows"};
  for (const BoolOption& b : kBoolOptions) {
    if (name == b.name) {
      RETURN_IF_ERROR(want(PJRT_NamedValue_kBool, "a bool"));
      b.field(o) = v.bool_value;
      return absl::OkStatus();
    }
    known.push_back(b.name);
  }
  return xonnx::InvalidArgument("unknown create option '%s' (the xonnx CPU plugin knows %s)", name,
                                absl::StrJoin(known, ", "));
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

PJRT_Error* Client_DmaMap(PJRT_Client_DmaMap_Args* a) {
  CHECK_ARGS(PJRT_Client_DmaMap_Args, a, size);
  if (!a->client || !a->data || a->size == 0)
    return MakeError(absl::InvalidArgumentError("PJRT_Client_DmaMap: expected a client and a non-empty range"));
  auto* start = static_cast<const char*>(a->data);
  std::lock_guard<std::mutex> l(a->client->dma_mu);
  auto& mapped = a->client->dma_mapped;
  // An overlap with a mapped range is refused, as CUDA refuses registering
  // memory twice.
  auto next = mapped.lower_bound(start);
  bool overlaps = next != mapped.end() && static_cast<const char*>(next->first) < start + a->size;
  if (next != mapped.begin()) {
    auto prev = std::prev(next);
    overlaps |= static_cast<const char*>(prev->first) + prev->second > start;
  }
  if (overlaps) return MakeError(absl::AlreadyExistsError("PJRT_Client_DmaMap: the range overlaps one already mapped"));
  mapped[start] = a->size;
  return nullptr;
}

PJRT_Error* Client_DmaUnmap(PJRT_Client_DmaUnmap_Args* a) {
  CHECK_ARGS(PJRT_Client_DmaUnmap_Args, a, data);
  if (!a->client) return MakeError(absl::InvalidArgumentError("PJRT_Client_DmaUnmap: null client"));
  std::lock_guard<std::mutex> l(a->client->dma_mu);
  if (!a->client->dma_mapped.erase(a->data))
    return MakeError(absl::NotFoundError("PJRT_Client_DmaUnmap: no range mapped at that address"));
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
    return MakeError(
        xonnx::InvalidArgument("no device with id %d (the client has %d)", a->id, a->client->device_ptrs.size()));
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
  if (n < 1 || n > static_cast<int64_t>(a->client->device_ptrs.size()) ||
      a->default_assignment_size < static_cast<size_t>(n))
    return MakeError(xonnx::InvalidArgument("cannot assign %d replicas x %d partitions to %d devices", a->num_replicas,
                                            a->num_partitions, a->client->device_ptrs.size()));
  for (int64_t i = 0; i < n; ++i) a->default_assignment[i] = static_cast<int>(i);
  return nullptr;
}

// ------------------------------------------------------- devices, memories

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

}  // namespace

void SetClientSlots(PJRT_Api& api) {
  api.PJRT_Client_Create = Guarded<Client_Create>;
  api.PJRT_Client_Destroy = Guarded<Client_Destroy>;
  api.PJRT_Client_DmaMap = Guarded<Client_DmaMap>;
  api.PJRT_Client_DmaUnmap = Guarded<Client_DmaUnmap>;
  api.PJRT_Client_PlatformName = Guarded<Client_PlatformName>;
  api.PJRT_Client_ProcessIndex = Guarded<Client_ProcessIndex>;
  api.PJRT_Client_PlatformVersion = Guarded<Client_PlatformVersion>;
  api.PJRT_Client_Devices = Guarded<Client_Devices>;
  api.PJRT_Client_AddressableDevices = Guarded<Client_Devices>;
  api.PJRT_Client_LookupDevice = Guarded<Client_LookupDevice>;
  api.PJRT_Client_LookupAddressableDevice = Guarded<Client_LookupDevice>;
  api.PJRT_Client_AddressableMemories = Guarded<Client_AddressableMemories>;
  api.PJRT_Client_DefaultDeviceAssignment = Guarded<Client_DefaultDeviceAssignment>;
  api.PJRT_DeviceDescription_Id = Guarded<DeviceDescription_Id>;
  api.PJRT_DeviceDescription_ProcessIndex = Guarded<DeviceDescription_ProcessIndex>;
  api.PJRT_DeviceDescription_Attributes = Guarded<DeviceDescription_Attributes>;
  api.PJRT_DeviceDescription_Kind = Guarded<DeviceDescription_Kind>;
  api.PJRT_DeviceDescription_DebugString = Guarded<DeviceDescription_DebugString>;
  api.PJRT_DeviceDescription_ToString = Guarded<DeviceDescription_ToString>;
  api.PJRT_Device_GetDescription = Guarded<Device_GetDescription>;
  api.PJRT_Device_IsAddressable = Guarded<Device_IsAddressable>;
  api.PJRT_Device_LocalHardwareId = Guarded<Device_LocalHardwareId>;
  api.PJRT_Device_AddressableMemories = Guarded<Device_AddressableMemories>;
  api.PJRT_Device_DefaultMemory = Guarded<Device_DefaultMemory>;
  api.PJRT_Memory_Id = Guarded<Memory_Id>;
  api.PJRT_Memory_Kind = Guarded<Memory_Kind>;
  api.PJRT_Memory_DebugString = Guarded<Memory_DebugString>;
  api.PJRT_Memory_ToString = Guarded<Memory_ToString>;
  api.PJRT_Memory_AddressableByDevices = Guarded<Memory_AddressableByDevices>;
}

}  // namespace xonnx::pjrt_cpu
