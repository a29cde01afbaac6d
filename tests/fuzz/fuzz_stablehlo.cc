// Fuzz target: the StableHLO reader xonnx's CPU plugin runs on every program
// it is given as format "mlir" (PJRT_Client_Compile), then the verifier
// and the writer.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "hlo/stablehlo.h"
#include "hlo/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = xonnx::hlo::ParseStableHlo(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!m.ok()) return 0;
  if (xonnx::hlo::Verify(**m).ok()) (void)xonnx::hlo::ToStableHlo(**m);
  return 0;
}
