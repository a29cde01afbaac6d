// Uses xonnx's public C++ API as an installed package: consumer MODEL.onnx
// opens the model, runs it on a generated input of the declared shape, and
// prints where the CPU plugin was found and the outputs' shapes, then the
// derivative of sin(x) * x at 0 through the program API. Built with
// find_package(xonnx) and with pkg-config by tests/install/install_test.sh.
#include <iostream>
#include <vector>

#include "xonnx/program.h"
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
    // Copy-assigned (the headers are C++17: the allocator states != too).
    xonnx::Tensor zeros(in.dtype, dims);
    inputs[in.name] = zeros;
  }
  auto outputs = (*session)->Run(inputs);
  if (!outputs.ok()) {
    std::cerr << "consumer: " << outputs.status() << "\n";
    return 1;
  }
  std::cout << "plugin " << xonnx::DefaultPluginPath() << "\n";
  for (const xonnx::Tensor& t : *outputs) std::cout << "output " << t.ShapeString() << "\n";
  using xonnx::program::Value;
  auto f = xonnx::program::Program::Trace(
      [](const std::vector<Value>& x) -> std::vector<Value> { return {Sin(x[0]) * x[0] + x[0]}; },
      {{xonnx::DataType::kFloat32, {}}});
  if (!f.ok()) {
    std::cerr << "consumer: " << f.status() << "\n";
    return 1;
  }
  auto df = xonnx::program::Grad(*f, {0});
  if (!df.ok()) {
    std::cerr << "consumer: " << df.status() << "\n";
    return 1;
  }
  auto jit = xonnx::program::Jit::Of(
      [&](const std::vector<xonnx::program::Spec>&) -> xonnx::StatusOr<xonnx::program::Program> { return *df; });
  auto g = jit.ok() ? jit->Run({xonnx::Tensor::FromVector<float>(xonnx::DataType::kFloat32, {}, {0.f})})
                    : xonnx::StatusOr<std::vector<xonnx::Tensor>>(jit.status());
  if (!g.ok()) {
    std::cerr << "consumer: " << g.status() << "\n";
    return 1;
  }
  std::cout << "derivative " << (*g)[0].data_as<float>()[0] << "\n";  // cos(0)·0 + sin(0) + 1
  return 0;
}
