// A model's weights on the devices: each initializer uploaded on first use
// per device and shared by every program that takes it.
#ifndef XONNX_RUNTIME_WEIGHT_STORE_H_
#define XONNX_RUNTIME_WEIGHT_STORE_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "onnx/model.h"
#include "pjrt/client.h"
#include "xonnx/tensor.h"

namespace xonnx {

class WeightStore {
 public:
  // Weights of `model` on `devices` of `client`; float32 initializers are
  // converted to `data_type` (the programs' compute type) once, on upload.
  WeightStore(std::shared_ptr<const onnx_import::LoadedModel> model, DataType data_type,
              std::shared_ptr<pjrt::Client> client, std::vector<const pjrt::Device*> devices)
      : model_(std::move(model)), data_type_(data_type), client_(std::move(client)), devices_(std::move(devices)) {}

  // The buffer of initializer `name` on devices[dev], uploaded now if it is
  // not there yet. Programs compiling in parallel wait only for the weights
  // they need. A failed upload is not kept: a later call tries again (the
  // device may have been short of memory only for a while).
  absl::StatusOr<std::shared_ptr<pjrt::Buffer>> Get(const std::string& name, int dev);

 private:
  absl::StatusOr<std::shared_ptr<pjrt::Buffer>> Upload(const std::string& name, int dev);

  struct Slot {
    std::once_flag once;
    absl::StatusOr<std::shared_ptr<pjrt::Buffer>> buffer = absl::UnknownError("not uploaded");
  };
  std::shared_ptr<const onnx_import::LoadedModel> model_;
  DataType data_type_;
  std::shared_ptr<pjrt::Client> client_;
  std::vector<const pjrt::Device*> devices_;
  std::mutex mu_;
  std::map<std::pair<std::string, int>, std::shared_ptr<Slot>> slots_;
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_WEIGHT_STORE_H_
