// XONNX_FLAGS for the public API: base/dump_flags.h's parser, in
// DumpOptions' terms.
#include "base/dump_flags.h"
#include "xonnx/options.h"

namespace xonnx {

StatusOr<DumpOptions> ParseXonnxFlags(const std::string& flags, DumpOptions base) {
  DumpSettings s{base.to, base.pass_re, base.as_text, base.as_proto, base.as_dot, base.onnx};
  absl::StatusOr<DumpSettings> parsed = ParseDumpFlags(flags, s);
  if (!parsed.ok()) return parsed.status();
  return DumpOptions{parsed->dir, parsed->pass_re, parsed->as_text, parsed->as_proto, parsed->as_dot, parsed->onnx};
}

}  // namespace xonnx
