// Fuzz target: the HloModuleProto decoder xonnx's CPU plugin runs on every
// program it is given (PJRT_Client_Compile), then the verifier and printer.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "hlo/printer.h"
#include "hlo/proto_codec.h"
#include "hlo/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = xonnx::hlo::ParseModule(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!m.ok()) return 0;
  if (xonnx::hlo::Verify(**m).ok()) (void)xonnx::hlo::ToText(**m);
  return 0;
}
