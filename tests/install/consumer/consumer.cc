// Uses xonnx's public C++ API as an installed package: consumer MODEL.onnx
// opens the model, runs it on a generated input of the declared shape, and
// prints where the CPU plugin was found and the outputs' shapes. Built with
// find_package(xonnx) and with pkg-config by tests/install/install_test.sh.
#include <iostream>

#include "xonnx/session.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer MODEL.onnx\n";
    return 2;
  }
  auto session = xonnx::Session::Open(argv[1]);
  if (!session.ok()) {
    std::cerr << "consumer: " << session.status() << "\n";
    return 1;
  }
  std::map<std::string, xonnx::Tensor> inputs;
  for (const xonnx::TensorSpec& in : (*session)->inputs()) {
    std::vector<int64_t> dims = in.dims;
    for (int64_t& d : dims)
      if (d < 0) d = 1;
    inputs[in.name] = xonnx::Tensor(in.dtype, dims);
  }
  auto outputs = (*session)->Run(inputs);
  if (!outputs.ok()) {
    std::cerr << "consumer: " << outputs.status() << "\n";
    return 1;
  }
  std::cout << "plugin " << xonnx::DefaultPluginPath() << "\n";
  for (const xonnx::Tensor& t : *outputs) std::cout << "output " << t.ShapeString() << "\n";
  return 0;
}
