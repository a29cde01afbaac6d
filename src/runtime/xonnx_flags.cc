// XONNX_FLAGS for the public API: base/dump_flags.h's parser, in
// DumpOptions' terms.
#include "runtime/xonnx_flags.h"

namespace xonnx {

DumpSettings ToDumpSettings(const DumpOptions& o) {
  return DumpSettings{o.to, o.pass_re, o.as_text, o.as_proto, o.as_dot, o.onnx};
}

StatusOr<DumpOptions> ParseXonnxFlags(const std::string& flags, DumpOptions base) {
  absl::StatusOr<DumpSettings> parsed = ParseDumpFlags(flags, ToDumpSettings(base));
  if (!parsed.ok()) return parsed.status();
  return DumpOptions{parsed->dir, parsed->pass_re, parsed->as_text, parsed->as_proto, parsed->as_dot, parsed->onnx};
}

}  // namespace xonnx
