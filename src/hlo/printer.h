// Prints a module in XLA's HLO text syntax (as `--xla_dump_to` writes it).
#ifndef XONNX_HLO_PRINTER_H_
#define XONNX_HLO_PRINTER_H_

#include <string>

#include "hlo/ir.h"

namespace xonnx::hlo {

struct PrintOptions {
  // Constants with more elements print as "{...}".
  int64_t max_constant_elements = 16;
  bool print_metadata = true;
};

std::string ToText(const Module& module, const PrintOptions& options = {});
std::string ToText(const Instruction& instr, const PrintOptions& options = {});

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_PRINTER_H_
