// XONNX_FLAGS for the public API: base/dump_flags.h's parser, in
// DumpOptions' terms.
#include "runtime/xonnx_flags.h"

#include "runtime/public_status.h"

namespace xonnx {

DumpSettings ToDumpSettings(const DumpOptions& o) {
  DumpSettings s{o.to, o.pass_re, o.as_text, o.as_proto, o.as_dot, o.as_html, o.onnx};
  s.as_stablehlo = o.as_stablehlo;
  return s;
}

StatusOr<DumpOptions> ParseXonnxFlags(const std::string& flags, DumpOptions base) {
  return PublicCall("XONNX_FLAGS", [&]() -> absl::StatusOr<DumpOptions> {
    ASSIGN_OR_RETURN(DumpSettings parsed, ParseDumpFlags(flags, ToDumpSettings(base)));
    DumpOptions o{parsed.dir,    parsed.pass_re, parsed.as_text, parsed.as_proto,
                  parsed.as_dot, parsed.as_html, parsed.onnx};
    o.as_stablehlo = parsed.as_stablehlo;
    return o;
  });
}

}  // namespace xonnx
