#include "plugins/cpu/element_types.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace xonnx::pjrt_cpu {

namespace {

// The one table of the plugin's element types.
constexpr std::pair<hlo::PrimitiveType, PJRT_Buffer_Type> kTypes[] = {
    {hlo::PRED, PJRT_Buffer_Type_PRED}, {hlo::S8, PJRT_Buffer_Type_S8},   {hlo::S16, PJRT_Buffer_Type_S16},
    {hlo::S32, PJRT_Buffer_Type_S32},   {hlo::S64, PJRT_Buffer_Type_S64}, {hlo::U8, PJRT_Buffer_Type_U8},
    {hlo::U16, PJRT_Buffer_Type_U16},   {hlo::U32, PJRT_Buffer_Type_U32}, {hlo::U64, PJRT_Buffer_Type_U64},
    {hlo::F16, PJRT_Buffer_Type_F16},   {hlo::F32, PJRT_Buffer_Type_F32}, {hlo::F64, PJRT_Buffer_Type_F64},
    {hlo::BF16, PJRT_Buffer_Type_BF16},
};

}  // namespace

absl::StatusOr<PJRT_Buffer_Type> ToPjrtType(hlo::PrimitiveType t) {
  for (const auto& [ours, theirs] : kTypes)
    if (ours == t) return theirs;
  return absl::InvalidArgumentError(
      absl::StrCat("element type ", hlo::PrimitiveTypeName(t), " has no PjRT buffer type"));
}

absl::StatusOr<hlo::PrimitiveType> FromPjrtType(PJRT_Buffer_Type t) {
  for (const auto& [ours, theirs] : kTypes)
    if (theirs == t) return ours;
  return absl::InvalidArgumentError(absl::StrCat("PjRT buffer type ", static_cast<int>(t), " is not supported"));
}

}  // namespace xonnx::pjrt_cpu
