// Our declarations of the PjRT C ABI (XLA's `pjrt_c_api.h`), written for
// xonnx from the published interface of API version 0.113. Only the argument
// structs that xonnx calls (as a client) or implements (in its CPU plugin) are
// spelled out; every other slot of the function table is declared as an
// opaque function pointer, which has the same size and position.
//
// ABI rules this file relies on:
//  - Every argument struct starts with `struct_size` and `extension_start`.
//    A caller sets struct_size to the size up to and including the last field
//    it knows (XonnxStructSize below); an implementation reads only fields
//    that lie inside the caller's struct_size.
//  - Minor versions only append fields to structs and slots to PJRT_Api, so a
//    client built for 0.113 can drive an older plugin as long as it only
//    calls slots inside that plugin's PJRT_Api::struct_size.
#ifndef XONNX_PJRT_C_API_H_
#define XONNX_PJRT_C_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XONNX_PJRT_API_MAJOR 0
#define XONNX_PJRT_API_MINOR 113

// Size of `type` up to and including `field`: what struct_size must hold.
#define XONNX_STRUCT_SIZE(type, field) (offsetof(type, field) + sizeof(((type*)0)->field))

typedef struct PJRT_Extension_Base {
  size_t struct_size;
  int type;
  struct PJRT_Extension_Base* next;
} PJRT_Extension_Base;

typedef struct PJRT_Api_Version {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  int major_version;
  int minor_version;
} PJRT_Api_Version;

// ------------------------------------------------------------------ errors
typedef struct PJRT_Error PJRT_Error;

typedef enum {
  PJRT_Error_Code_OK = 0,
  PJRT_Error_Code_CANCELLED = 1,
  PJRT_Error_Code_UNKNOWN = 2,
  PJRT_Error_Code_INVALID_ARGUMENT = 3,
  PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
  PJRT_Error_Code_NOT_FOUND = 5,
  PJRT_Error_Code_ALREADY_EXISTS = 6,
  PJRT_Error_Code_PERMISSION_DENIED = 7,
  PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
  PJRT_Error_Code_FAILED_PRECONDITION = 9,
  PJRT_Error_Code_ABORTED = 10,
  PJRT_Error_Code_OUT_OF_RANGE = 11,
  PJRT_Error_Code_UNIMPLEMENTED = 12,
  PJRT_Error_Code_INTERNAL = 13,
  PJRT_Error_Code_UNAVAILABLE = 14,
  PJRT_Error_Code_DATA_LOSS = 15,
  PJRT_Error_Code_UNAUTHENTICATED = 16,
} PJRT_Error_Code;

// Since 0.10x an error object starts with a table of functions, so that a
// caller can use an error without going through PJRT_Api. Our plugin's errors
// carry one; the client always goes through PJRT_Api.
typedef void (*PJRT_Error_PayloadVisitor)(const char* key, size_t key_size, const char* value, size_t value_size,
                                          void* user_arg);
typedef struct PJRT_Error_FunctionTable {
  size_t struct_size;
  size_t instance_size;
  PJRT_Extension_Base* extension_start;
  void (*destroy)(PJRT_Error* error);
  void (*message)(const PJRT_Error* error, const char** message, size_t* message_size);
  PJRT_Error_Code (*get_code)(const PJRT_Error* error);
  void (*for_each_payload)(const PJRT_Error* error, PJRT_Error_PayloadVisitor visitor, void* user_arg);
} PJRT_Error_FunctionTable;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Error* error;
} PJRT_Error_Destroy_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  const char* message;  // out, lives as long as `error`
  size_t message_size;  // out
} PJRT_Error_Message_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  PJRT_Error_Code code;  // out
} PJRT_Error_GetCode_Args;

// ------------------------------------------------------------ named values
typedef enum {
  PJRT_NamedValue_kString = 0,
  PJRT_NamedValue_kInt64 = 1,
  PJRT_NamedValue_kInt64List = 2,
  PJRT_NamedValue_kFloat = 3,
  PJRT_NamedValue_kBool = 4,
} PJRT_NamedValue_Type;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* name;
  size_t name_size;
  PJRT_NamedValue_Type type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size;  // elements of a list or characters of a string; 1 for scalars
} PJRT_NamedValue;

// ------------------------------------------------------------------ plugin
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
} PJRT_Plugin_Initialize_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* attributes;  // out, lives as long as the process
  size_t num_attributes;              // out
} PJRT_Plugin_Attributes_Args;

// ------------------------------------------------------------------ events
typedef struct PJRT_Event PJRT_Event;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Destroy_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
  bool is_ready;  // out
} PJRT_Event_IsReady_Args;

// Shared by PJRT_Event_Error and PJRT_Event_Await.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Await_Args;
typedef PJRT_Event_Await_Args PJRT_Event_Error_Args;

typedef void (*PJRT_Event_OnReadyCallback)(PJRT_Error* error, void* user_arg);
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
  PJRT_Event_OnReadyCallback callback;  // receives ownership of the error
  void* user_arg;
} PJRT_Event_OnReady_Args;

// ------------------------------------------------------------------ client
typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_Memory PJRT_Memory;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_Executable PJRT_Executable;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_Buffer PJRT_Buffer;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* create_options;
  size_t num_options;
  void* kv_get_callback;  // multi-process key-value store; unused by xonnx
  void* kv_get_user_arg;
  void* kv_put_callback;
  void* kv_put_user_arg;
  PJRT_Client* client;  // out
  void* kv_try_get_callback;
  void* kv_try_get_user_arg;
} PJRT_Client_Create_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
} PJRT_Client_Destroy_Args;

// Registers host memory for the device's direct memory access (CUDA's
// cudaHostRegister on XLA's GPU plugin): transfers from and to it skip the
// plugin's staging copy.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  void* data;
  size_t size;
} PJRT_Client_DmaMap_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  void* data;
} PJRT_Client_DmaUnmap_Args;

// Shared by PJRT_Client_PlatformName and PJRT_Client_PlatformVersion.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* value;  // out, lives as long as the client
  size_t value_size;  // out
} PJRT_Client_String_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  int process_index;  // out
} PJRT_Client_ProcessIndex_Args;

// Shared by PJRT_Client_Devices and PJRT_Client_AddressableDevices.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Device* const* devices;  // out, lives as long as the client
  size_t num_devices;           // out
} PJRT_Client_Devices_Args;

// Shared by PJRT_Client_LookupDevice (by id) and
// PJRT_Client_LookupAddressableDevice (by local hardware id).
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  int id;
  PJRT_Device* device;  // out
} PJRT_Client_LookupDevice_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Memory* const* memories;  // out
  size_t num_memories;           // out
} PJRT_Client_AddressableMemories_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  char* code;  // a serialized HloModuleProto for format "hlo"
  size_t code_size;
  const char* format;
  size_t format_size;
} PJRT_Program;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const PJRT_Program* program;
  const char* compile_options;  // serialized xla.CompileOptionsProto
  size_t compile_options_size;
  PJRT_LoadedExecutable* executable;  // out
} PJRT_Client_Compile_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  int num_replicas;
  int num_partitions;
  size_t default_assignment_size;
  int* default_assignment;  // caller's array; receives replicas*partitions ids
} PJRT_Client_DefaultDeviceAssignment_Args;

// PJRT_Buffer_Type differs from xla.PrimitiveType.
typedef enum {
  PJRT_Buffer_Type_INVALID = 0,
  PJRT_Buffer_Type_PRED = 1,
  PJRT_Buffer_Type_S8 = 2,
  PJRT_Buffer_Type_S16 = 3,
  PJRT_Buffer_Type_S32 = 4,
  PJRT_Buffer_Type_S64 = 5,
  PJRT_Buffer_Type_U8 = 6,
  PJRT_Buffer_Type_U16 = 7,
  PJRT_Buffer_Type_U32 = 8,
  PJRT_Buffer_Type_U64 = 9,
  PJRT_Buffer_Type_F16 = 10,
  PJRT_Buffer_Type_F32 = 11,
  PJRT_Buffer_Type_F64 = 12,
  PJRT_Buffer_Type_BF16 = 13,
  PJRT_Buffer_Type_C64 = 14,
  PJRT_Buffer_Type_C128 = 15,
} PJRT_Buffer_Type;

typedef enum {
  PJRT_HostBufferSemantics_kImmutableOnlyDuringCall = 0,
  PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes = 1,
  PJRT_HostBufferSemantics_kImmutableZeroCopy = 2,
  PJRT_HostBufferSemantics_kMutableZeroCopy = 3,
} PJRT_HostBufferSemantics;

typedef enum {
  PJRT_Buffer_MemoryLayout_Type_Tiled = 0,
  PJRT_Buffer_MemoryLayout_Type_Strides = 1,
} PJRT_Buffer_MemoryLayout_Type;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const int64_t* minor_to_major;
  size_t minor_to_major_size;
  const int64_t* tile_dims;
  const size_t* tile_dim_sizes;
  size_t num_tiles;
} PJRT_Buffer_MemoryLayout_Tiled;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const int64_t* byte_strides;
  size_t num_byte_strides;
} PJRT_Buffer_MemoryLayout_Strides;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  union {
    PJRT_Buffer_MemoryLayout_Tiled tiled;
    PJRT_Buffer_MemoryLayout_Strides strides;
  };
  PJRT_Buffer_MemoryLayout_Type type;
} PJRT_Buffer_MemoryLayout;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const void* data;
  PJRT_Buffer_Type type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;  // empty: dense, row-major
  size_t num_byte_strides;
  PJRT_HostBufferSemantics host_buffer_semantics;
  PJRT_Device* device;
  PJRT_Memory* memory;                      // optional, overrides device
  PJRT_Buffer_MemoryLayout* device_layout;  // optional
  PJRT_Event* done_with_host_buffer;        // out, always set; caller destroys
  PJRT_Buffer* buffer;                      // out
} PJRT_Client_BufferFromHostBuffer_Args;

// ------------------------------------------------------ device descriptions
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  int value;  // out: id (DeviceDescription_Id) or process index
} PJRT_DeviceDescription_Int_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  size_t num_attributes;              // out
  const PJRT_NamedValue* attributes;  // out
} PJRT_DeviceDescription_Attributes_Args;

// Shared by DeviceDescription_Kind, _DebugString and _ToString.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* value;  // out, lives as long as the device
  size_t value_size;  // out
} PJRT_DeviceDescription_String_Args;

// ----------------------------------------------------------------- devices
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_DeviceDescription* device_description;  // out
} PJRT_Device_GetDescription_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  bool is_addressable;  // out
} PJRT_Device_IsAddressable_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  int local_hardware_id;  // out
} PJRT_Device_LocalHardwareId_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_Memory* const* memories;  // out
  size_t num_memories;           // out
} PJRT_Device_AddressableMemories_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_Memory* memory;  // out
} PJRT_Device_DefaultMemory_Args;

// ------------------------------------------------------------------ memory
// Since 0.10x a memory object starts with a function table for user data.
typedef struct PJRT_Memory_FunctionTable {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  size_t instance_struct_size;
  void* (*get_user_data)(PJRT_Memory* memory, const void* key);
  void (*set_user_data)(PJRT_Memory* memory, const void* key, void* data, void (*dtor)(void*));
} PJRT_Memory_FunctionTable;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  int id;  // out
} PJRT_Memory_Id_Args;

// Shared by Memory_Kind, _DebugString and _ToString.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  const char* value;  // out
  size_t value_size;  // out
} PJRT_Memory_String_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  PJRT_Device* const* devices;  // out
  size_t num_devices;           // out
} PJRT_Memory_AddressableByDevices_Args;

// ------------------------------------------------------------- executables
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
} PJRT_Executable_Destroy_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
} PJRT_LoadedExecutable_Destroy_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* loaded_executable;
  PJRT_Executable* executable;  // out; caller destroys
} PJRT_LoadedExecutable_GetExecutable_Args;

// Shared by Executable_Name and Executable_Fingerprint.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  const char* value;  // out, lives as long as the executable
  size_t value_size;  // out
} PJRT_Executable_String_Args;

// Shared by Executable_NumReplicas, _NumPartitions and _NumOutputs.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t value;  // out
} PJRT_Executable_Count_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  int64_t size_in_bytes;  // out
} PJRT_Executable_SizeOfGeneratedCodeInBytes_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  PJRT_Buffer_Type* output_types;  // out, lives as long as the executable
  size_t num_output_types;         // out
} PJRT_Executable_OutputElementTypes_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs;       // out
  const int64_t* dims;      // out: all outputs' dims, concatenated
  const size_t* dim_sizes;  // out: rank of each output
} PJRT_Executable_OutputDimensions_Args;

typedef struct PJRT_SerializedExecutable PJRT_SerializedExecutable;
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Executable* executable;
  const char* serialized_bytes;                      // out, lives as long as serialized_executable
  size_t serialized_bytes_size;                      // out
  PJRT_SerializedExecutable* serialized_executable;  // out
  void (*serialized_executable_deleter)(PJRT_SerializedExecutable* exec);  // out; call once
} PJRT_Executable_Serialize_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* serialized_executable;
  size_t serialized_executable_size;
  PJRT_LoadedExecutable* loaded_executable;  // out
  const char* overridden_serialized_compile_options;
  size_t overridden_serialized_compile_options_size;
  void* load_options;
} PJRT_Executable_DeserializeAndLoad_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_Device* const* addressable_devices;  // out
  size_t num_addressable_devices;           // out
} PJRT_LoadedExecutable_AddressableDevices_Args;

// Shared by LoadedExecutable_Delete and LoadedExecutable_IsDeleted.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  bool is_deleted;  // out (IsDeleted only)
} PJRT_LoadedExecutable_Delete_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  void** send_callbacks;
  void** recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  void* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
  void* multi_slice_config;
  bool use_major_to_minor_data_layout_for_callbacks;
  void* hlo_output_callbacks;
  size_t num_hlo_output_callbacks;
} PJRT_ExecuteOptions;

// xonnx's own extension of PJRT_ExecuteOptions (chained from its
// extension_start): bounds on one execution, which xonnx's CPU plugin
// checks between kernels and at every loop iteration. The type is outside
// the range XLA's extension types use; xonnx attaches it only for its own
// plugin.
#define PJRT_Extension_Type_XonnxRunBounds 0x786f0001
typedef struct {
  PJRT_Extension_Base base;
  // Up to two flags (std::atomic<int32_t>, or null) another thread may set
  // nonzero to stop the execution with CANCELLED.
  const void* cancel_flags[2];
  // CLOCK_MONOTONIC nanoseconds after which the execution stops with
  // DEADLINE_EXCEEDED; 0: none.
  int64_t deadline_ns;
} PJRT_XonnxRunBounds_Extension;

// xonnx's extension asking for a trace: xonnx's CPU plugin calls on_kernel
// after each kernel of the execution, on the thread that ran it, with the
// HLO instruction's name, the kernel's kind, the ONNX node it computes
// (empty strings when unknown; all valid during the call only) and its
// start and end in CLOCK_MONOTONIC nanoseconds.
#define PJRT_Extension_Type_XonnxKernelTrace 0x786f0002
typedef void (*PJRT_XonnxKernelTrace_Fn)(void* context, const char* name, const char* kind, const char* op_type,
                                         const char* op_name, int64_t start_ns, int64_t end_ns);
typedef struct {
  PJRT_Extension_Base base;
  PJRT_XonnxKernelTrace_Fn on_kernel;
  void* context;
} PJRT_XonnxKernelTrace_Extension;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_ExecuteOptions* options;
  PJRT_Buffer* const* const* argument_lists;  // [num_devices][num_args]
  size_t num_devices;
  size_t num_args;
  PJRT_Buffer** const* output_lists;    // [num_devices][num_outputs], caller-allocated
  PJRT_Event** device_complete_events;  // optional [num_devices]
  PJRT_Device* execute_device;          // optional
} PJRT_LoadedExecutable_Execute_Args;

// ----------------------------------------------------------------- buffers
// Shared by Buffer_Destroy and Buffer_Delete.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_Destroy_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Buffer_Type type;  // out
} PJRT_Buffer_ElementType_Args;

// Shared by Buffer_Dimensions and Buffer_UnpaddedDimensions.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  const int64_t* dims;  // out, lives as long as the buffer
  size_t num_dims;      // out
} PJRT_Buffer_Dimensions_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  const size_t* dynamic_dim_indices;  // out
  size_t num_dynamic_dims;            // out
} PJRT_Buffer_DynamicDimensionIndices_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* src;
  PJRT_Buffer_MemoryLayout* host_layout;  // optional; null: dense row-major
  void* dst;                              // null: query the size into dst_size
  size_t dst_size;
  PJRT_Event* event;  // out
} PJRT_Buffer_ToHostBuffer_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  size_t on_device_size_in_bytes;  // out
} PJRT_Buffer_OnDeviceSizeInBytes_Args;

// Shared by Buffer_IsDeleted and Buffer_IsOnCpu.
typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  bool value;  // out
} PJRT_Buffer_Bool_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Device* device;  // out
} PJRT_Buffer_Device_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Memory* memory;  // out
} PJRT_Buffer_Memory_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Event* event;  // out; caller destroys
} PJRT_Buffer_ReadyEvent_Args;

typedef struct {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Device* dst_device;
  PJRT_Buffer* dst_buffer;  // out
} PJRT_Buffer_CopyToDevice_Args;

// ------------------------------------------------------------ the function table
typedef PJRT_Error* (*PJRT_Fn)(void* args);  // an entry xonnx never calls
typedef void (*PJRT_VoidFn)(void* args);

typedef struct PJRT_Api {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Api_Version pjrt_api_version;

  void (*PJRT_Error_Destroy)(PJRT_Error_Destroy_Args*);
  void (*PJRT_Error_Message)(PJRT_Error_Message_Args*);
  PJRT_Error* (*PJRT_Error_GetCode)(PJRT_Error_GetCode_Args*);

  PJRT_Error* (*PJRT_Plugin_Initialize)(PJRT_Plugin_Initialize_Args*);
  PJRT_Error* (*PJRT_Plugin_Attributes)(PJRT_Plugin_Attributes_Args*);

  PJRT_Error* (*PJRT_Event_Destroy)(PJRT_Event_Destroy_Args*);
  PJRT_Error* (*PJRT_Event_IsReady)(PJRT_Event_IsReady_Args*);
  PJRT_Error* (*PJRT_Event_Error)(PJRT_Event_Error_Args*);
  PJRT_Error* (*PJRT_Event_Await)(PJRT_Event_Await_Args*);
  PJRT_Error* (*PJRT_Event_OnReady)(PJRT_Event_OnReady_Args*);

  PJRT_Error* (*PJRT_Client_Create)(PJRT_Client_Create_Args*);
  PJRT_Error* (*PJRT_Client_Destroy)(PJRT_Client_Destroy_Args*);
  PJRT_Error* (*PJRT_Client_PlatformName)(PJRT_Client_String_Args*);
  PJRT_Error* (*PJRT_Client_ProcessIndex)(PJRT_Client_ProcessIndex_Args*);
  PJRT_Error* (*PJRT_Client_PlatformVersion)(PJRT_Client_String_Args*);
  PJRT_Error* (*PJRT_Client_Devices)(PJRT_Client_Devices_Args*);
  PJRT_Error* (*PJRT_Client_AddressableDevices)(PJRT_Client_Devices_Args*);
  PJRT_Error* (*PJRT_Client_LookupDevice)(PJRT_Client_LookupDevice_Args*);
  PJRT_Error* (*PJRT_Client_LookupAddressableDevice)(PJRT_Client_LookupDevice_Args*);
  PJRT_Error* (*PJRT_Client_AddressableMemories)(PJRT_Client_AddressableMemories_Args*);
  PJRT_Error* (*PJRT_Client_Compile)(PJRT_Client_Compile_Args*);
  PJRT_Error* (*PJRT_Client_DefaultDeviceAssignment)(PJRT_Client_DefaultDeviceAssignment_Args*);
  PJRT_Error* (*PJRT_Client_BufferFromHostBuffer)(PJRT_Client_BufferFromHostBuffer_Args*);

  PJRT_Error* (*PJRT_DeviceDescription_Id)(PJRT_DeviceDescription_Int_Args*);
  PJRT_Error* (*PJRT_DeviceDescription_ProcessIndex)(PJRT_DeviceDescription_Int_Args*);
  PJRT_Error* (*PJRT_DeviceDescription_Attributes)(PJRT_DeviceDescription_Attributes_Args*);
  PJRT_Error* (*PJRT_DeviceDescription_Kind)(PJRT_DeviceDescription_String_Args*);
  PJRT_Error* (*PJRT_DeviceDescription_DebugString)(PJRT_DeviceDescription_String_Args*);
  PJRT_Error* (*PJRT_DeviceDescription_ToString)(PJRT_DeviceDescription_String_Args*);

  PJRT_Error* (*PJRT_Device_GetDescription)(PJRT_Device_GetDescription_Args*);
  PJRT_Error* (*PJRT_Device_IsAddressable)(PJRT_Device_IsAddressable_Args*);
  PJRT_Error* (*PJRT_Device_LocalHardwareId)(PJRT_Device_LocalHardwareId_Args*);
  PJRT_Error* (*PJRT_Device_AddressableMemories)(PJRT_Device_AddressableMemories_Args*);
  PJRT_Error* (*PJRT_Device_DefaultMemory)(PJRT_Device_DefaultMemory_Args*);
  PJRT_Fn PJRT_Device_MemoryStats;

  PJRT_Error* (*PJRT_Memory_Id)(PJRT_Memory_Id_Args*);
  PJRT_Error* (*PJRT_Memory_Kind)(PJRT_Memory_String_Args*);
  PJRT_Error* (*PJRT_Memory_DebugString)(PJRT_Memory_String_Args*);
  PJRT_Error* (*PJRT_Memory_ToString)(PJRT_Memory_String_Args*);
  PJRT_Error* (*PJRT_Memory_AddressableByDevices)(PJRT_Memory_AddressableByDevices_Args*);

  PJRT_Error* (*PJRT_Executable_Destroy)(PJRT_Executable_Destroy_Args*);
  PJRT_Error* (*PJRT_Executable_Name)(PJRT_Executable_String_Args*);
  PJRT_Error* (*PJRT_Executable_NumReplicas)(PJRT_Executable_Count_Args*);
  PJRT_Error* (*PJRT_Executable_NumPartitions)(PJRT_Executable_Count_Args*);
  PJRT_Error* (*PJRT_Executable_NumOutputs)(PJRT_Executable_Count_Args*);
  PJRT_Error* (*PJRT_Executable_SizeOfGeneratedCodeInBytes)(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args*);
  PJRT_Fn PJRT_Executable_GetCostAnalysis;
  PJRT_Fn PJRT_Executable_OutputMemoryKinds;
  PJRT_Fn PJRT_Executable_OptimizedProgram;
  PJRT_Error* (*PJRT_Executable_Serialize)(PJRT_Executable_Serialize_Args*);

  PJRT_Error* (*PJRT_LoadedExecutable_Destroy)(PJRT_LoadedExecutable_Destroy_Args*);
  PJRT_Error* (*PJRT_LoadedExecutable_GetExecutable)(PJRT_LoadedExecutable_GetExecutable_Args*);
  PJRT_Error* (*PJRT_LoadedExecutable_AddressableDevices)(PJRT_LoadedExecutable_AddressableDevices_Args*);
  PJRT_Error* (*PJRT_LoadedExecutable_Delete)(PJRT_LoadedExecutable_Delete_Args*);
  PJRT_Error* (*PJRT_LoadedExecutable_IsDeleted)(PJRT_LoadedExecutable_Delete_Args*);
  PJRT_Error* (*PJRT_LoadedExecutable_Execute)(PJRT_LoadedExecutable_Execute_Args*);
  PJRT_Error* (*PJRT_Executable_DeserializeAndLoad)(PJRT_Executable_DeserializeAndLoad_Args*);
  PJRT_Fn PJRT_LoadedExecutable_Fingerprint;

  PJRT_Error* (*PJRT_Buffer_Destroy)(PJRT_Buffer_Destroy_Args*);
  PJRT_Error* (*PJRT_Buffer_ElementType)(PJRT_Buffer_ElementType_Args*);
  PJRT_Error* (*PJRT_Buffer_Dimensions)(PJRT_Buffer_Dimensions_Args*);
  PJRT_Error* (*PJRT_Buffer_UnpaddedDimensions)(PJRT_Buffer_Dimensions_Args*);
  PJRT_Error* (*PJRT_Buffer_DynamicDimensionIndices)(PJRT_Buffer_DynamicDimensionIndices_Args*);
  PJRT_Fn PJRT_Buffer_GetMemoryLayout;
  PJRT_Error* (*PJRT_Buffer_OnDeviceSizeInBytes)(PJRT_Buffer_OnDeviceSizeInBytes_Args*);
  PJRT_Error* (*PJRT_Buffer_Device)(PJRT_Buffer_Device_Args*);
  PJRT_Error* (*PJRT_Buffer_Memory)(PJRT_Buffer_Memory_Args*);
  PJRT_Error* (*PJRT_Buffer_Delete)(PJRT_Buffer_Destroy_Args*);
  PJRT_Error* (*PJRT_Buffer_IsDeleted)(PJRT_Buffer_Bool_Args*);
  PJRT_Error* (*PJRT_Buffer_CopyToDevice)(PJRT_Buffer_CopyToDevice_Args*);
  PJRT_Error* (*PJRT_Buffer_ToHostBuffer)(PJRT_Buffer_ToHostBuffer_Args*);
  PJRT_Error* (*PJRT_Buffer_IsOnCpu)(PJRT_Buffer_Bool_Args*);
  PJRT_Error* (*PJRT_Buffer_ReadyEvent)(PJRT_Buffer_ReadyEvent_Args*);
  PJRT_Fn PJRT_Buffer_UnsafePointer;
  PJRT_Fn PJRT_Buffer_IncreaseExternalReferenceCount;
  PJRT_Fn PJRT_Buffer_DecreaseExternalReferenceCount;
  PJRT_Fn PJRT_Buffer_OpaqueDeviceMemoryDataPointer;

  PJRT_Fn PJRT_CopyToDeviceStream_Destroy;
  PJRT_Fn PJRT_CopyToDeviceStream_AddChunk;
  PJRT_Fn PJRT_CopyToDeviceStream_TotalBytes;
  PJRT_Fn PJRT_CopyToDeviceStream_GranuleSize;
  PJRT_Fn PJRT_CopyToDeviceStream_CurrentBytes;

  PJRT_Fn PJRT_TopologyDescription_Create;
  PJRT_Fn PJRT_TopologyDescription_Destroy;
  PJRT_Fn PJRT_TopologyDescription_PlatformName;
  PJRT_Fn PJRT_TopologyDescription_PlatformVersion;
  PJRT_Fn PJRT_TopologyDescription_GetDeviceDescriptions;
  PJRT_Fn PJRT_TopologyDescription_Serialize;
  PJRT_Fn PJRT_TopologyDescription_Attributes;

  PJRT_Fn PJRT_Compile;

  // Appended after the first release, in this order.
  PJRT_Error* (*PJRT_Executable_OutputElementTypes)(PJRT_Executable_OutputElementTypes_Args*);
  PJRT_Error* (*PJRT_Executable_OutputDimensions)(PJRT_Executable_OutputDimensions_Args*);
  PJRT_Fn PJRT_Buffer_CopyToMemory;
  PJRT_Fn PJRT_Client_CreateViewOfDeviceBuffer;
  PJRT_Error* (*PJRT_Executable_Fingerprint)(PJRT_Executable_String_Args*);
  PJRT_Fn PJRT_Client_TopologyDescription;
  PJRT_Fn PJRT_Executable_GetCompiledMemoryStats;
  PJRT_Fn PJRT_Memory_Kind_Id;
  PJRT_Fn PJRT_ExecuteContext_Create;
  PJRT_Fn PJRT_ExecuteContext_Destroy;
  PJRT_Fn PJRT_Buffer_CopyRawToHost;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_Destroy;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_TransferData;
  PJRT_Fn PJRT_Client_CreateBuffersForAsyncHostToDevice;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_Device;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_BufferCount;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_BufferSize;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_SetBufferError;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_AddMetadata;
  PJRT_Error* (*PJRT_Client_DmaMap)(PJRT_Client_DmaMap_Args*);
  PJRT_Error* (*PJRT_Client_DmaUnmap)(PJRT_Client_DmaUnmap_Args*);
  PJRT_Fn PJRT_Client_CreateUninitializedBuffer;
  PJRT_Fn PJRT_Client_UpdateGlobalProcessInfo;
  PJRT_Fn PJRT_TopologyDescription_Deserialize;
  PJRT_Fn PJRT_Client_CreateAliasBuffer;
  PJRT_Fn PJRT_Client_FulfillAliasBuffer;
  PJRT_Fn PJRT_LoadedExecutable_GetDeviceAssignment;
  PJRT_Fn PJRT_Client_CreateErrorBuffer;
  PJRT_Fn PJRT_AsyncHostToDeviceTransferManager_TransferLiteral;
  PJRT_Fn PJRT_Buffer_CopyRawToHostFuture;
  PJRT_Fn PJRT_Device_PoisonExecution;
  PJRT_Fn PJRT_Device_CreateAsyncTrackingEvent;
  PJRT_Fn PJRT_AsyncTrackingEvent_Destroy;
  PJRT_Fn PJRT_Executable_GetCompileOptions;
  PJRT_Fn PJRT_Buffer_DonateWithControlDependency;
  PJRT_Fn PJRT_Event_Create;
  PJRT_Fn PJRT_Event_Set;
  PJRT_Fn PJRT_Device_GetAttributes;
  PJRT_Fn PJRT_Client_Load;
  PJRT_Fn PJRT_LoadedExecutable_AddressableDeviceLogicalIds;
  PJRT_Fn PJRT_Buffer_Bitcast;
  PJRT_Fn PJRT_Error_ForEachPayload;
  PJRT_Fn PJRT_TopologyDescription_Fingerprint;
  PJRT_Fn PJRT_Executable_ParameterMemoryKinds;
  PJRT_Fn PJRT_Device_ClearMemoryStats;
  PJRT_Fn PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace;
  PJRT_Fn PJRT_TopologyDescription_GetMemorySpaceKindIds;
} PJRT_Api;

// The one symbol a plugin exports.
typedef const PJRT_Api* (*PJRT_GetPjrtApi_Fn)(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // XONNX_PJRT_C_API_H_
