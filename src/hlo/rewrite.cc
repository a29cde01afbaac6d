#include "hlo/rewrite.h"

#include <memory>
#include <utility>

namespace xonnx::hlo {

namespace {
Instruction* Add(Computation* c, std::unique_ptr<Instruction> i, const Instruction* like) {
  if (like) i->metadata = like->metadata;
  return c->AddInstruction(std::move(i));
}
}  // namespace

Instruction* AddConstant(Computation* c, Literal value) {
  auto i = std::make_unique<Instruction>(Opcode::kConstant, value.shape());
  i->literal = std::move(value);
  return c->AddInstruction(std::move(i));
}

Instruction* AddConvert(Computation* c, Instruction* x, PrimitiveType type, const Instruction* like) {
  auto i = std::make_unique<Instruction>(Opcode::kConvert, Shape(type, x->shape().dims));
  i->AppendOperand(x);
  return Add(c, std::move(i), like);
}

Instruction* AddBinary(Computation* c, Opcode op, Instruction* a, Instruction* b, const Instruction* like) {
  auto i = std::make_unique<Instruction>(op, a->shape());
  i->AppendOperand(a);
  i->AppendOperand(b);
  return Add(c, std::move(i), like);
}

Instruction* AddElementwise(Computation* c, Opcode op, Shape shape, const std::vector<Instruction*>& operands,
                            const Instruction* like) {
  auto i = std::make_unique<Instruction>(op, std::move(shape));
  for (Instruction* o : operands) i->AppendOperand(o);
  return Add(c, std::move(i), like);
}

Instruction* AddBroadcast(Computation* c, Instruction* x, std::vector<int64_t> dims, std::vector<int64_t> map,
                          const Instruction* like) {
  auto i = std::make_unique<Instruction>(Opcode::kBroadcast, Shape(x->shape().element_type, std::move(dims)));
  i->AppendOperand(x);
  i->dimensions = std::move(map);
  return Add(c, std::move(i), like);
}

Instruction* AddReshape(Computation* c, Instruction* x, std::vector<int64_t> dims, const Instruction* like) {
  auto i = std::make_unique<Instruction>(Opcode::kReshape, Shape(x->shape().element_type, std::move(dims)));
  i->AppendOperand(x);
  return Add(c, std::move(i), like);
}

Instruction* AddTranspose(Computation* c, Instruction* x, std::vector<int64_t> perm, const Instruction* like) {
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(x->shape().dims[p]);
  auto i = std::make_unique<Instruction>(Opcode::kTranspose, Shape(x->shape().element_type, std::move(dims)));
  i->AppendOperand(x);
  i->dimensions = std::move(perm);
  return Add(c, std::move(i), like);
}

Instruction* AddCopyOf(Computation* c, const Instruction& original, const std::vector<Instruction*>& operands,
                       Shape shape) {
  // The copy registers with the operands it reads only: `original` may
  // belong to a module other threads read.
  std::vector<Instruction*> reads = original.operands();
  for (size_t k = 0; k < operands.size(); ++k)
    if (operands[k]) reads[k] = operands[k];
  auto i = Instruction::CopyReading(original, reads);
  i->set_name("");
  i->set_shape(std::move(shape));
  return c->AddInstruction(std::move(i));
}

}  // namespace xonnx::hlo
