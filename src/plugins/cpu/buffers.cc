// The CPU plugin's buffers: host memory, copied from the caller or
// borrowed from it (zero-copy), read back, copied between devices.
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "pjrt/compile_options.h"
#include "plugins/cpu/element_types.h"
#include "plugins/cpu/shim.h"

namespace xonnx::pjrt_cpu {

// Buffer identities: a program's weights are cached by them.
std::atomic<uint64_t> next_buffer_id{1};

namespace {

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
  if (absl::Status st = CheckDims(a->dims, a->num_dims); !st.ok())
    return MakeError(xonnx::Annotate(st, "PJRT_Client_BufferFromHostBuffer"));
  PJRT_Device* device = a->device;
  if (a->memory) device = a->memory->device;
  if (!device) device = a->client->device_ptrs[0];
  xonnx::hlo::Shape shape(*type, std::vector<int64_t>(a->dims, a->dims + a->num_dims));
  if (absl::Status st = CheckRowMajor(a->device_layout, shape, "PJRT_Client_BufferFromHostBuffer device_layout");
      !st.ok())
    return MakeError(st);
  size_t bytes = shape.ByteSize();
  if (bytes && !a->data) return MakeError(absl::InvalidArgumentError("PJRT_Client_BufferFromHostBuffer: null data"));
  auto b = std::make_unique<PJRT_Buffer>();
  b->device = device;
  if (a->num_byte_strides && a->num_byte_strides != shape.dims.size())
    return MakeError(
        xonnx::InvalidArgument("%d byte strides for a rank-%d array", a->num_byte_strides, shape.dims.size()));
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
    if (!b->storage->data)
      return MakeError(absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes")));
    if (dense) {
      if (bytes) std::memcpy(b->storage->data, a->data, bytes);
    } else {
      GatherStrided(static_cast<const char*>(a->data), static_cast<char*>(b->storage->data), b->shape.dims,
                    a->byte_strides, xonnx::hlo::ByteWidth(*type));
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
  a->event =
      ReadyEvent(a->buffer->deleted ? absl::FailedPreconditionError("the buffer was deleted") : absl::OkStatus());
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

}  // namespace

void SetBufferSlots(PJRT_Api& api) {
  api.PJRT_Client_BufferFromHostBuffer = Guarded<Client_BufferFromHostBuffer>;
  api.PJRT_Buffer_Destroy = Guarded<Buffer_Destroy>;
  api.PJRT_Buffer_ElementType = Guarded<Buffer_ElementType>;
  api.PJRT_Buffer_Dimensions = Guarded<Buffer_Dimensions>;
  api.PJRT_Buffer_UnpaddedDimensions = Guarded<Buffer_Dimensions>;  // no padding, so the same
  api.PJRT_Buffer_DynamicDimensionIndices = Guarded<Buffer_DynamicDimensionIndices>;
  api.PJRT_Buffer_OnDeviceSizeInBytes = Guarded<Buffer_OnDeviceSizeInBytes>;
  api.PJRT_Buffer_Device = Guarded<Buffer_Device>;
  api.PJRT_Buffer_Memory = Guarded<Buffer_Memory>;
  api.PJRT_Buffer_Delete = Guarded<Buffer_Delete>;
  api.PJRT_Buffer_IsDeleted = Guarded<Buffer_IsDeleted>;
  api.PJRT_Buffer_CopyToDevice = Guarded<Buffer_CopyToDevice>;
  api.PJRT_Buffer_ToHostBuffer = Guarded<Buffer_ToHostBuffer>;
  api.PJRT_Buffer_IsOnCpu = Guarded<Buffer_IsOnCpu>;
  api.PJRT_Buffer_ReadyEvent = Guarded<Buffer_ReadyEvent>;
}

}  // namespace xonnx::pjrt_cpu
