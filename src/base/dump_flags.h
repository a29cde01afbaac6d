// What to dump and where (XONNX_FLAGS' --dump_* flags), shared by the
// importer's pipeline, xonnx's CPU plugin and the public DumpOptions.
#ifndef XONNX_BASE_DUMP_FLAGS_H_
#define XONNX_BASE_DUMP_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace xonnx {

struct DumpSettings {
  std::string dir;      // empty: no dumps
  std::string pass_re;  // passes after which to write (ECMAScript regex); empty: none
  bool as_text = true, as_proto = false, as_dot = false, as_html = false;
  bool onnx = false;          // the model as imported, beside the modules
  bool as_stablehlo = false;  // StableHLO MLIR text (.mlir)
  bool enabled() const { return !dir.empty(); }
};

// Parses XONNX_FLAGS' syntax into `base`: whitespace-separated
// --dump_to=DIR, --dump_pass_re=REGEX, --dump_as_text, --dump_as_proto,
// --dump_as_dot, --dump_as_html, --dump_as_stablehlo, --dump_onnx (booleans also take =true or =false; choosing
// a format replaces the default, text). An unknown flag is an error listing
// the known ones.
absl::StatusOr<DumpSettings> ParseDumpFlags(absl::string_view flags, DumpSettings base = {});

// XONNX_FLAGS of the process, parsed once: what a component without session
// options (xonnx's CPU plugin) dumps. Bad flags are reported on stderr once
// and dump nothing.
const DumpSettings& DumpSettingsFromEnv();

}  // namespace xonnx

#endif  // XONNX_BASE_DUMP_FLAGS_H_
