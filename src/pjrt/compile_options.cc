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
    return absl::UnimplementedError(
        absl::StrFormat("%d replicas x %d partitions requested; this plugin runs one of each", build.num_replicas(),
                        build.num_partitions()));
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

}  // namespace xonnx::pjrt
