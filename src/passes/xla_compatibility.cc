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

// a / b for f32 a and b, correctly rounded to f32 whatever XLA does to
// the float arithmetic around it. The quotient is taken in f64, then its
// bits are rounded to f32's 24 significant bits (half to even) with integer
// operations, and only then converted to f32. Two things of XLA's GPU
// compiler rule out doing that rounding in float arithmetic:
//  - with excess precision allowed (its default), it drops a convert to f32
//    followed by one back to f64, so a later f64 division would see the
//    unrounded quotient;
//  - its algebraic simplifier turns a division by a constant into a product
//    with the reciprocal and folds chains of constant factors, and its code
//    generator may fuse a product and the subtraction after it into one
//    fused multiply-add, which undoes a float splitting trick such as
//    s - (s - q) with s = q * (2^29 + 1) (emulated on the grid of
//    xla_compatibility_test, it flips 2 values of 601).
// (The same folding of constant factors also changes products before a
// division: (q * scale) * alpha becomes q * (scale * alpha). No rewrite of
// the division can undo that; microsoft_quant.cc's table lookups avoid it
// for QLinear activations.)
// The f64 quotient, even as a product with a rounded reciprocal, is within
// a relative 2^-52 of a / b, while a / b, with 24-bit significands A and B,
// is at least 2^-49 (relative) away from any point halfway between two f32
// values: A * 2^i - M * B * 2^j is a nonzero multiple of 2^j for an odd
// 25-bit M. So the rounded bits are the correctly rounded f32 quotient
// (also checked on 6e7 pairs, random and on quantization grids, against
// numpy's f32 division). Infinite and NaN quotients skip the rounding.
// Quotients below f32's normal range are rounded twice (to 24 bits, then
// to the subnormal), which can differ from a direct f32 division in its
// last place.
Instruction* CorrectlyRoundedDivide(hlo::Computation* c, Instruction* divide) {
  Instruction* q = WideCopy(c, divide, hlo::F64);
  const std::vector<int64_t>& dims = q->shape().dims;
  const hlo::Shape bits_shape(hlo::S64, dims);
  auto splat = [&](int64_t v) {
    return hlo::AddBroadcast(c, hlo::AddConstant(c, hlo::Literal::Scalar<int64_t>(v)), dims, {}, divide);
  };
  auto binary = [&](Opcode op, Instruction* x, Instruction* y) { return hlo::AddBinary(c, op, x, y, divide); };
  // f64 has 52 fraction bits and f32 23: the low 29 go, rounding half to
  // even (the bias is one less than half, plus the lowest bit kept).
  constexpr int kDropped = 52 - 23;
  Instruction* bits = hlo::AddElementwise(c, Opcode::kBitcastConvert, bits_shape, {q}, divide);
  Instruction* kept_lsb = binary(Opcode::kAnd, binary(Opcode::kShiftRightLogical, bits, splat(kDropped)), splat(1));
  Instruction* bias = binary(Opcode::kAdd, kept_lsb, splat((int64_t{1} << (kDropped - 1)) - 1));
  Instruction* rounded_bits =
      binary(Opcode::kAnd, binary(Opcode::kAdd, bits, bias), splat(~((int64_t{1} << kDropped) - 1)));
  Instruction* rounded = hlo::AddElementwise(c, Opcode::kBitcastConvert, q->shape(), {rounded_bits}, divide);
  Instruction* finite = hlo::AddElementwise(c, Opcode::kIsFinite, hlo::Shape(hlo::PRED, dims), {q}, divide);
  Instruction* chosen = hlo::AddElementwise(c, Opcode::kSelect, q->shape(), {finite, rounded, q}, divide);
  return hlo::AddConvert(c, chosen, hlo::F32, divide);
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
