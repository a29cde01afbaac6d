// Fuzz target: a compile-cache entry whose file holds arbitrary bytes (a
// damaged or forged entry): it must load as the entry or be refused.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/compile_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = "/tmp/xonnx_fuzz_cache_" + std::to_string(::getpid());
  static auto cache = xonnx::CompileCache::Open(dir);
  if (!cache.ok()) return 0;
  const std::string key = "program fuzz";
  std::ofstream(cache->PathFor(key), std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), size);
  auto payload = cache->Load(key);
  if (payload.ok()) (void)payload->size();
  cache->Remove(key);
  return 0;
}
