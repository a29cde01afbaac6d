// HLO opcodes, generated from opcodes.def.
#ifndef XONNX_HLO_OPCODE_H_
#define XONNX_HLO_OPCODE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace xonnx::hlo {

// Opcode traits (bit flags).
enum OpcodeTraits : uint32_t {
  kNoTraits = 0,
  kElementwise = 1u << 0,  // output[i] depends only on operands[*][i]
  kBinary = 1u << 1,       // two operands of the output's type
  kFloatOnly = 1u << 2,    // defined for floating-point types only
};

enum class Opcode : int {
#define V(name, text, arity, traits, stablehlo) name,
#include "hlo/opcodes.def"
#undef V
};

inline constexpr int kOpcodeCount = 0
#define V(name, text, arity, traits, stablehlo) +1
#include "hlo/opcodes.def"
#undef V
    ;
static_assert(kOpcodeCount == 68, "update kOpcodeCount users when adding opcodes");

// HLO text name, e.g. "add".
absl::string_view OpcodeName(Opcode op);
absl::StatusOr<Opcode> OpcodeFromName(absl::string_view name);
// The StableHLO op name ("stablehlo.add"), or "" for opcodes that have none
// of their own (see opcodes.def).
absl::string_view StableHloOpName(Opcode op);
// The opcode of a StableHLO op name; error for names not in the table.
absl::StatusOr<Opcode> OpcodeFromStableHloName(absl::string_view name);
// Fixed operand count, or -1 when variadic.
int OpcodeArity(Opcode op);
uint32_t OpcodeTraitsOf(Opcode op);
inline bool IsElementwise(Opcode op) { return OpcodeTraitsOf(op) & kElementwise; }
inline bool IsElementwiseBinary(Opcode op) { return OpcodeTraitsOf(op) & kBinary; }

// compare's directions (HLO text: EQ NE GE GT LE LT).
enum class ComparisonDirection { kEq, kNe, kGe, kGt, kLe, kLt };
absl::string_view ComparisonDirectionName(ComparisonDirection d);
absl::StatusOr<ComparisonDirection> ComparisonDirectionFromName(absl::string_view s);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_OPCODE_H_
