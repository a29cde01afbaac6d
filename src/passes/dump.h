// Modules written between passes, in XLA's --xla_dump_to spirit: the
// importer's pipeline writes the module before its first pass, after every
// pass whose name matches a regular expression, and as it leaves, each file
// numbered in order, as HLO text, as a serialized HloModuleProto, as a
// Graphviz graph and as an HTML page (SessionOptions::dump, XONNX_FLAGS'
// --dump_*).
#ifndef XONNX_PASSES_DUMP_H_
#define XONNX_PASSES_DUMP_H_

#include <memory>
#include <regex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "base/dump_flags.h"
#include "hlo/ir.h"

namespace xonnx::passes {

using DumpSettings = ::xonnx::DumpSettings;

// The module as a Graphviz digraph: one node per instruction (its name,
// opcode, shape and the ONNX node it came from), an edge per operand, one
// cluster per computation.
std::string ToDot(const hlo::Module& module);

// The module as one self-contained HTML page: each computation's graph as
// inline SVG (a box per instruction with its ONNX node, an edge per
// operand), then the HLO text.
std::string ToHtml(const hlo::Module& module);

// Writes one import's modules: <dir>/<label>.<NN>.<step>.<ext>, NN counting
// the files of this import in order. The label is unique in the process.
class Dumper {
 public:
  Dumper(DumpSettings settings, absl::string_view module_name);
  // Writes `module` after `step` (a pass's name) when the step matches
  // pass_re, or always (the module as it arrives and as it leaves).
  void Dump(const hlo::Module& module, absl::string_view step, bool always = false);
  // The first write error, if any (dumping never stops the import).
  const absl::Status& status() const { return status_; }

 private:
  DumpSettings settings_;
  std::string label_;
  std::unique_ptr<std::regex> pass_re_;
  int seq_ = 0;
  absl::Status status_;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_DUMP_H_
