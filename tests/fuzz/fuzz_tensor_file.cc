// Fuzz target: the .npy and .pb (TensorProto) readers, through the file a
// user would give `xonnx run --input`. The first byte picks the format.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "xonnx/tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string base = "/tmp/xonnx_fuzz_tensor_" + std::to_string(::getpid());
  const std::string path = base + ((data[0] & 1) ? ".npy" : ".pb");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data + 1), size - 1);
  auto t = xonnx::ReadTensorFile(path);
  if (t.ok()) (void)t->ShapeString();
  std::remove(path.c_str());
  return 0;
}
