#include "passes/xla_compatibility.h"

#include <vector>

#include "hlo/rewrite.h"

namespace xonnx::passes {

using hlo::Instruction;
using hlo::Opcode;

namespace {

Instruction* BroadcastBounds(hlo::Computation* c, Instruction* clamp) {
  const hlo::Shape& shape = clamp->shape();
  if (shape.rank() == 0) return nullptr;
  std::vector<Instruction*> operands(3, nullptr);
  bool any = false;
  for (int k : {0, 2})
    if (clamp->operand(k)->shape().rank() == 0) {
      operands[k] = hlo::AddBroadcast(c, clamp->operand(k), shape.dims, {}, clamp);
      any = true;
    }
  return any ? hlo::AddCopyOf(c, *clamp, operands, shape) : nullptr;
}

// op(convert<wide>(a), convert<wide>(b)), of op's dims in type `wide`.
Instruction* WideCopy(hlo::Computation* c, Instruction* op, hlo::PrimitiveType wide) {
  hlo::Shape shape = op->shape();
  std::vector<Instruction*> operands;
  for (int k = 0; k < op->operand_count(); ++k) operands.push_back(hlo::AddConvert(c, op->operand(k), wide, op));
  shape.element_type = wide;
  return hlo::AddCopyOf(c, *op, operands, shape);
}

// a / b for f32 a and b, correctly rounded to f32 wherever XLA puts the
// rounding. The quotient is rounded once in f64, then to 24 significant
// bits in f64 arithmetic (Veltkamp's split: with s = q * (2^29 + 1),
// s - (s - q) is q rounded to 24 bits) before the convert to f32.
// Converting alone would not do: XLA's GPU compiler, which allows excess
// precision by default, drops a convert to f32 followed by one back to f64,
// and a later f64 division would see the unrounded quotient. Infinite
// quotients (division by zero) skip the split, which would make them NaN.
Instruction* CorrectlyRoundedDivide(hlo::Computation* c, Instruction* divide) {
  Instruction* q = WideCopy(c, divide, hlo::F64);
  const std::vector<int64_t>& dims = q->shape().dims;
  Instruction* k = hlo::AddBroadcast(c, hlo::AddConstant(c, hlo::Literal::ScalarOf(hlo::F64, 536870913.0)), dims, {},
                                     divide);  // 2^29 + 1
  Instruction* s = hlo::AddBinary(c, Opcode::kMultiply, q, k, divide);
  Instruction* high =
      hlo::AddBinary(c, Opcode::kSubtract, s, hlo::AddBinary(c, Opcode::kSubtract, s, q, divide), divide);
  Instruction* finite = hlo::AddElementwise(c, Opcode::kIsFinite, hlo::Shape(hlo::PRED, dims), {q}, divide);
  Instruction* rounded = hlo::AddElementwise(c, Opcode::kSelect, q->shape(), {finite, high, q}, divide);
  return hlo::AddConvert(c, rounded, hlo::F32, divide);
}

}  // namespace

absl::StatusOr<bool> XlaCompatibility::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    changed |= hlo::ReplaceEach(
        c.get(), {Opcode::kClamp, Opcode::kConvolution, Opcode::kDivide}, [&](Instruction* i) -> Instruction* {
          hlo::PrimitiveType t = i->shape().element_type;
          switch (i->opcode()) {
            case Opcode::kClamp:
              return BroadcastBounds(c.get(), i);
            case Opcode::kConvolution:
              return hlo::IsInteger(t) ? hlo::AddConvert(c.get(), WideCopy(c.get(), i, hlo::F64), t, i) : nullptr;
            default:
              return t == hlo::F32 ? CorrectlyRoundedDivide(c.get(), i) : nullptr;
          }
        });
  }
  return changed;
}

}  // namespace xonnx::passes
