#include "hlo/opcode.h"

#include "base/status.h"

namespace xonnx::hlo {

namespace {
struct OpcodeInfo {
  absl::string_view name;
  int arity;
  uint32_t traits;
  absl::string_view stablehlo;
};
constexpr OpcodeInfo kInfo[] = {
#define V(name, text, arity, traits, stablehlo) {text, arity, traits, stablehlo},
#include "hlo/opcodes.def"
#undef V
};
static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == kOpcodeCount);
constexpr absl::string_view kDirections[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
}  // namespace

absl::string_view OpcodeName(Opcode op) { return kInfo[static_cast<int>(op)].name; }
int OpcodeArity(Opcode op) { return kInfo[static_cast<int>(op)].arity; }
uint32_t OpcodeTraitsOf(Opcode op) { return kInfo[static_cast<int>(op)].traits; }

absl::string_view StableHloOpName(Opcode op) { return kInfo[static_cast<int>(op)].stablehlo; }

absl::StatusOr<Opcode> OpcodeFromStableHloName(absl::string_view name) {
  for (int i = 0; i < kOpcodeCount; ++i)
    if (!kInfo[i].stablehlo.empty() && kInfo[i].stablehlo == name) return static_cast<Opcode>(i);
  return Unimplemented("unsupported StableHLO op '%s'", name);
}

absl::StatusOr<Opcode> OpcodeFromName(absl::string_view name) {
  for (int i = 0; i < kOpcodeCount; ++i)
    if (kInfo[i].name == name) return static_cast<Opcode>(i);
  return Unimplemented("unsupported HLO opcode '%s'", name);
}

absl::string_view ComparisonDirectionName(ComparisonDirection d) { return kDirections[static_cast<int>(d)]; }

absl::StatusOr<ComparisonDirection> ComparisonDirectionFromName(absl::string_view s) {
  for (int i = 0; i < 6; ++i)
    if (kDirections[i] == s) return static_cast<ComparisonDirection>(i);
  return InvalidArgument("unknown comparison direction '%s'", s);
}

}  // namespace xonnx::hlo
