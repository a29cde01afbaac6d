#include "pjrt/compile_options.h"

#include <utility>

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

namespace {

// The one table of element types both ways.
constexpr std::pair<hlo::PrimitiveType, PJRT_Buffer_Type> kTypes[] = {
    {hlo::PRED, PJRT_Buffer_Type_PRED}, {hlo::S8, PJRT_Buffer_Type_S8},     {hlo::S16, PJRT_Buffer_Type_S16},
    {hlo::S32, PJRT_Buffer_Type_S32},   {hlo::S64, PJRT_Buffer_Type_S64},   {hlo::U8, PJRT_Buffer_Type_U8},
    {hlo::U16, PJRT_Buffer_Type_U16},   {hlo::U32, PJRT_Buffer_Type_U32},   {hlo::U64, PJRT_Buffer_Type_U64},
    {hlo::F16, PJRT_Buffer_Type_F16},   {hlo::F32, PJRT_Buffer_Type_F32},   {hlo::F64, PJRT_Buffer_Type_F64},
    {hlo::BF16, PJRT_Buffer_Type_BF16},
};

}  // namespace

absl::StatusOr<PJRT_Buffer_Type> ToPjrtType(hlo::PrimitiveType t) {
  for (const auto& [ours, theirs] : kTypes)
    if (ours == t) return theirs;
  return absl::InvalidArgumentError(absl::StrCat("element type ", hlo::PrimitiveTypeName(t), " has no PjRT buffer type"));
}

absl::StatusOr<hlo::PrimitiveType> FromPjrtType(PJRT_Buffer_Type t) {
  for (const auto& [ours, theirs] : kTypes)
    if (theirs == t) return ours;
  return absl::InvalidArgumentError(absl::StrCat("PjRT buffer type ", static_cast<int>(t), " is not supported"));
}

}  // namespace xonnx::pjrt
