// Instructions made by passes that rewrite a computation in place: each is
// added to the computation (its shape given, not inferred) with the
// metadata of the instruction it stands in for, so that profiles and dumps
// still name the ONNX node.
#ifndef XONNX_HLO_REWRITE_H_
#define XONNX_HLO_REWRITE_H_

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "hlo/ir.h"

namespace xonnx::hlo {

// A constant holding `value`.
Instruction* AddConstant(Computation* c, Literal value);
// convert(x) to `type`.
Instruction* AddConvert(Computation* c, Instruction* x, PrimitiveType type, const Instruction* like);
// op(a, b), of a's shape.
Instruction* AddBinary(Computation* c, Opcode op, Instruction* a, Instruction* b, const Instruction* like);
// op(operands...) of shape `shape`, for any elementwise op (unary, select).
Instruction* AddElementwise(Computation* c, Opcode op, Shape shape, const std::vector<Instruction*>& operands,
                            const Instruction* like);
// broadcast(x) to `dims`, x's dim k becoming dim map[k].
Instruction* AddBroadcast(Computation* c, Instruction* x, std::vector<int64_t> dims, std::vector<int64_t> map,
                          const Instruction* like);
// reshape(x) to `dims`.
Instruction* AddReshape(Computation* c, Instruction* x, std::vector<int64_t> dims, const Instruction* like);
// transpose(x) by `perm` (result dim k is x's dim perm[k]).
Instruction* AddTranspose(Computation* c, Instruction* x, std::vector<int64_t> perm, const Instruction* like);
// A copy of `original` (its opcode and attributes, unnamed) of shape
// `shape`, with operand k replaced by `operands[k]` where that is not null.
Instruction* AddCopyOf(Computation* c, const Instruction& original, const std::vector<Instruction*>& operands,
                       Shape shape);

// Replaces every instruction of `c` whose opcode is one of `ops` and for
// which `rewrite` returns a replacement, visiting those present before the
// first one is replaced (so a rewrite's own new instructions are not
// visited), then puts `c` in order; whether any was replaced.
template <typename Rewrite>
bool ReplaceEach(Computation* c, std::initializer_list<Opcode> ops, Rewrite&& rewrite) {
  std::vector<Instruction*> found;
  for (const auto& i : c->instructions())
    if (std::find(ops.begin(), ops.end(), i->opcode()) != ops.end()) found.push_back(i.get());
  bool any = false;
  for (Instruction* i : found)
    if (Instruction* r = rewrite(i)) {
      c->ReplaceAllUsesWith(i, r);
      any = true;
    }
  if (any) c->Canonicalize();
  return any;
}

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_REWRITE_H_
