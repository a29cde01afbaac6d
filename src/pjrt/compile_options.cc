#include "pjrt/compile_options.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pjrt/compile_options.pb.h"

namespace xonnx::pjrt {

// --------------------------------------------------------- compile options

std::string EncodeCompileOptions(int device_id, int device_ordinal) {
  wire::CompileOptionsProto p;
  auto* build = p.mutable_executable_build_options();
  build->set_device_ordinal(device_ordinal);
  build->set_num_replicas(1);
  build->set_num_partitions(1);
  auto* da = build->mutable_device_assignment();
  da->set_replica_count(1);
  da->set_computation_count(1);
  da->add_computation_devices()->add_replica_device_ids(device_id);
  return p.SerializeAsString();
}

absl::StatusOr<int> DeviceIdFromCompileOptions(absl::string_view bytes) {
  wire::CompileOptionsProto p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return absl::InvalidArgumentError("compile options are not a valid CompileOptionsProto");
  const auto& build = p.executable_build_options();
  if (build.num_replicas() > 1 || build.num_partitions() > 1)
    return absl::UnimplementedError(absl::StrFormat("%d replicas x %d partitions requested; this plugin runs one of each",
                                                    build.num_replicas(), build.num_partitions()));
  if (build.has_device_assignment()) {
    const auto& da = build.device_assignment();
    if (da.computation_devices_size() > 1 ||
        (da.computation_devices_size() == 1 && da.computation_devices(0).replica_device_ids_size() > 1))
      return absl::UnimplementedError("the device assignment names several devices; this plugin runs on one");
    if (da.computation_devices_size() == 1 && da.computation_devices(0).replica_device_ids_size() == 1)
      return static_cast<int>(da.computation_devices(0).replica_device_ids(0));
  }
  return static_cast<int>(build.device_ordinal() > 0 ? build.device_ordinal() : 0);
}

// ------------------------------------------------------------------- types

absl::StatusOr<PJRT_Buffer_Type> ToPjrtType(hlo::PrimitiveType t) {
  switch (t) {
    case hlo::PRED: return PJRT_Buffer_Type_PRED;
    case hlo::S8: return PJRT_Buffer_Type_S8;
    case hlo::S16: return PJRT_Buffer_Type_S16;
    case hlo::S32: return PJRT_Buffer_Type_S32;
    case hlo::S64: return PJRT_Buffer_Type_S64;
    case hlo::U8: return PJRT_Buffer_Type_U8;
    case hlo::U16: return PJRT_Buffer_Type_U16;
    case hlo::U32: return PJRT_Buffer_Type_U32;
    case hlo::U64: return PJRT_Buffer_Type_U64;
    case hlo::F16: return PJRT_Buffer_Type_F16;
    case hlo::F32: return PJRT_Buffer_Type_F32;
    case hlo::F64: return PJRT_Buffer_Type_F64;
    case hlo::BF16: return PJRT_Buffer_Type_BF16;
    default: return absl::InvalidArgumentError(absl::StrCat("element type ", hlo::PrimitiveTypeName(t), " has no PjRT buffer type"));
  }
}

absl::StatusOr<hlo::PrimitiveType> FromPjrtType(PJRT_Buffer_Type t) {
  switch (t) {
    case PJRT_Buffer_Type_PRED: return hlo::PRED;
    case PJRT_Buffer_Type_S8: return hlo::S8;
    case PJRT_Buffer_Type_S16: return hlo::S16;
    case PJRT_Buffer_Type_S32: return hlo::S32;
    case PJRT_Buffer_Type_S64: return hlo::S64;
    case PJRT_Buffer_Type_U8: return hlo::U8;
    case PJRT_Buffer_Type_U16: return hlo::U16;
    case PJRT_Buffer_Type_U32: return hlo::U32;
    case PJRT_Buffer_Type_U64: return hlo::U64;
    case PJRT_Buffer_Type_F16: return hlo::F16;
    case PJRT_Buffer_Type_F32: return hlo::F32;
    case PJRT_Buffer_Type_F64: return hlo::F64;
    case PJRT_Buffer_Type_BF16: return hlo::BF16;
    default: return absl::InvalidArgumentError(absl::StrCat("PjRT buffer type ", static_cast<int>(t), " is not supported"));
  }
}

}  // namespace xonnx::pjrt
