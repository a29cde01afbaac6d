// Parses the HLO text that printer.h writes (XLA's syntax for the subset of
// attributes xonnx uses), so tests can state programs as text.
#ifndef XONNX_HLO_PARSER_H_
#define XONNX_HLO_PARSER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hlo/ir.h"

namespace xonnx::hlo {

// Reads a module; errors name the line. The result is verified.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Module>> ParseText(absl::string_view text);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_PARSER_H_
