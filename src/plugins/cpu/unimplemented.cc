// The PjRT slots the CPU plugin does not implement: each returns
// UNIMPLEMENTED naming itself, so a client learns what is missing instead
// of calling through a null pointer.
#include "absl/status/status.h"
#include "plugins/cpu/shim.h"

namespace xonnx::pjrt_cpu {

namespace {

#define XONNX_UNIMPLEMENTED(slot)                                                                    \
  PJRT_Error* Unimplemented_##slot(void*) {                                                          \
    return MakeError(absl::UnimplementedError(#slot " is not implemented by the xonnx CPU plugin")); \
  }
// clang-format off
#define XONNX_SLOTS(V) \
  V(PJRT_Device_MemoryStats) \
  V(PJRT_Executable_GetCostAnalysis) \
  V(PJRT_Executable_OutputMemoryKinds) \
  V(PJRT_Executable_OptimizedProgram) \
  V(PJRT_LoadedExecutable_Fingerprint) \
  V(PJRT_Buffer_GetMemoryLayout) \
  V(PJRT_Buffer_UnsafePointer) \
  V(PJRT_Buffer_IncreaseExternalReferenceCount) \
  V(PJRT_Buffer_DecreaseExternalReferenceCount) \
  V(PJRT_Buffer_OpaqueDeviceMemoryDataPointer) \
  V(PJRT_CopyToDeviceStream_Destroy) \
  V(PJRT_CopyToDeviceStream_AddChunk) \
  V(PJRT_CopyToDeviceStream_TotalBytes) \
  V(PJRT_CopyToDeviceStream_GranuleSize) \
  V(PJRT_CopyToDeviceStream_CurrentBytes) \
  V(PJRT_TopologyDescription_Create) \
  V(PJRT_TopologyDescription_Destroy) \
  V(PJRT_TopologyDescription_PlatformName) \
  V(PJRT_TopologyDescription_PlatformVersion) \
  V(PJRT_TopologyDescription_GetDeviceDescriptions) \
  V(PJRT_TopologyDescription_Serialize) \
  V(PJRT_TopologyDescription_Attributes) \
  V(PJRT_Compile) \
  V(PJRT_Buffer_CopyToMemory) \
  V(PJRT_Client_CreateViewOfDeviceBuffer) \
  V(PJRT_Client_TopologyDescription) \
  V(PJRT_Executable_GetCompiledMemoryStats) \
  V(PJRT_Memory_Kind_Id) \
  V(PJRT_ExecuteContext_Create) \
  V(PJRT_ExecuteContext_Destroy) \
  V(PJRT_Buffer_CopyRawToHost) \
  V(PJRT_AsyncHostToDeviceTransferManager_Destroy) \
  V(PJRT_AsyncHostToDeviceTransferManager_TransferData) \
  V(PJRT_Client_CreateBuffersForAsyncHostToDevice) \
  V(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer) \
  V(PJRT_AsyncHostToDeviceTransferManager_Device) \
  V(PJRT_AsyncHostToDeviceTransferManager_BufferCount) \
  V(PJRT_AsyncHostToDeviceTransferManager_BufferSize) \
  V(PJRT_AsyncHostToDeviceTransferManager_SetBufferError) \
  V(PJRT_AsyncHostToDeviceTransferManager_AddMetadata) \
  V(PJRT_Client_CreateUninitializedBuffer) \
  V(PJRT_Client_UpdateGlobalProcessInfo) \
  V(PJRT_TopologyDescription_Deserialize) \
  V(PJRT_Client_CreateAliasBuffer) \
  V(PJRT_Client_FulfillAliasBuffer) \
  V(PJRT_LoadedExecutable_GetDeviceAssignment) \
  V(PJRT_Client_CreateErrorBuffer) \
  V(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral) \
  V(PJRT_Buffer_CopyRawToHostFuture) \
  V(PJRT_Device_PoisonExecution) \
  V(PJRT_Device_CreateAsyncTrackingEvent) \
  V(PJRT_AsyncTrackingEvent_Destroy) \
  V(PJRT_Executable_GetCompileOptions) \
  V(PJRT_Buffer_DonateWithControlDependency) \
  V(PJRT_Event_Create) \
  V(PJRT_Event_Set) \
  V(PJRT_Device_GetAttributes) \
  V(PJRT_Client_Load) \
  V(PJRT_LoadedExecutable_AddressableDeviceLogicalIds) \
  V(PJRT_Buffer_Bitcast) \
  V(PJRT_Error_ForEachPayload) \
  V(PJRT_TopologyDescription_Fingerprint) \
  V(PJRT_Executable_ParameterMemoryKinds) \
  V(PJRT_Device_ClearMemoryStats) \
  V(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace) \
  V(PJRT_TopologyDescription_GetMemorySpaceKindIds)
// clang-format on
XONNX_SLOTS(XONNX_UNIMPLEMENTED)

}  // namespace

void SetUnimplementedSlots(PJRT_Api& api) {
#define XONNX_SET_UNIMPLEMENTED(slot) api.slot = Unimplemented_##slot;
  XONNX_SLOTS(XONNX_SET_UNIMPLEMENTED)
#undef XONNX_SET_UNIMPLEMENTED
}

}  // namespace xonnx::pjrt_cpu
