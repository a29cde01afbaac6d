#include "runtime/weight_store.h"

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "onnx/tensor_proto.h"
#include "runtime/dtype.h"

namespace xonnx {

absl::StatusOr<std::shared_ptr<pjrt::Buffer>> WeightStore::Get(const std::string& name, int dev) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto& s = slots_[{name, dev}];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::call_once(slot->once, [&] { slot->buffer = Upload(name, dev); });
  if (!slot->buffer.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = slots_.find({name, dev});
    if (it != slots_.end() && it->second == slot) slots_.erase(it);
  }
  return slot->buffer;
}

absl::StatusOr<std::shared_ptr<pjrt::Buffer>> WeightStore::Upload(const std::string& name, int dev) {
  const onnx::TensorProto* t = onnx_import::FindInitializer(model_->proto.graph(), name);
  if (!t) return Internal("%s: no initializer named '%s'", model_->path, name);
  // Borrowed from the model: raw bytes go to the device with no copy in between.
  auto lit = onnx_import::LiteralFromTensorProto(*t, std::shared_ptr<const void>(model_, t));
  if (!lit.ok()) return Annotate(lit.status(), absl::StrCat(model_->path, ": initializer '", name, "'"));
  // Converted once here; the program takes the weights in its compute type.
  if (lit->shape().element_type == hlo::F32 && data_type_ != DataType::kFloat32) lit = lit->Convert(ToHlo(data_type_));
  // The device buffer may read these bytes in place (a CPU plugin does), so
  // they stay alive, unchanged, as long as the plugin uses them: the
  // model's bytes (never modified after loading) or the converted copy.
  auto value = std::make_shared<const hlo::Literal>(*std::move(lit));
  const void* data = value->untyped_data();  // const access: a borrowed literal is not copied
  ASSIGN_OR_RETURN(DataType dtype, FromHlo(value->shape().element_type));
  ASSIGN_OR_RETURN(PJRT_Buffer_Type type, ToPjrt(dtype));
  ASSIGN_OR_RETURN(std::unique_ptr<pjrt::Buffer> b,
                   client_->BufferFromHostZeroCopy(data, type, value->shape().dims, *devices_[dev], value));
  return std::shared_ptr<pjrt::Buffer>(std::move(b));
}

}  // namespace xonnx
