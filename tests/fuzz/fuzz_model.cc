// Fuzz target: a model's bytes, loaded and converted to HLO (no plugin:
// the importer, its checks and passes are what is fuzzed).
#include <cstddef>
#include <cstdint>

#include "xonnx/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xonnx::SessionOptions o;
  o.plugin = xonnx::SessionOptions::kNoPlugin;
  o.use_cache = false;
  o.allow_unsupported = true;
  auto s = xonnx::Session::OpenFromMemory(data, size, "fuzzed model", o);
  if (!s.ok()) return 0;
  (void)(*s)->Info();
  // Dynamic dimensions at 1 and partial conversion: as far as it goes.
  (void)(*s)->DumpHlo({}, 1, /*allow_partial=*/true);
  return 0;
}
