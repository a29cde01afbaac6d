#include "backends/cpu/canonicalization/position_constants.h"

#include <vector>

#include "evaluator/evaluator.h"
#include "hlo/rewrite.h"

namespace xonnx::cpu {

namespace {

// Positions past this many elements stay an iota: a constant of them would
// take more memory than the per-call write saves.
constexpr int64_t kMaxConstantPositions = int64_t{1} << 22;

// A constant of the positions `iota` (an iota instruction) holds, with the
// metadata of `like`; null where the evaluator cannot make them.
hlo::Instruction* PositionsConstant(hlo::Computation* c, const hlo::Instruction& iota, const hlo::Instruction& like) {
  absl::StatusOr<hlo::Literal> positions = eval::EvaluateInstruction(iota, {});
  if (!positions.ok()) return nullptr;
  hlo::Instruction* constant = hlo::AddConstant(c, *std::move(positions));
  constant->metadata = like.metadata;
  return constant;
}

// The iotas of `c` not read by a sort that repeat a row of positions across
// other dims, as broadcasts of that row made constant. Returns whether any.
bool RowsOfPositions(hlo::Computation* c) {
  std::vector<hlo::Instruction*> iotas;
  for (const auto& i : c->instructions())
    if (i->opcode() == hlo::Opcode::kIota && i->shape().IsArray()) iotas.push_back(i.get());
  bool any = false;
  for (hlo::Instruction* iota : iotas) {
    const hlo::Shape& s = iota->shape();
    const int64_t d = iota->dimensions.at(0), n = s.dims[d];
    if (s.ElementCount() <= n || n > kMaxConstantPositions) continue;  // one row already
    // Only where loops read it (a sort takes its whole constant, below; a
    // broadcast written out would cost what the iota does).
    bool fusible = iota != c->root();
    for (const hlo::Instruction* u : iota->users()) fusible &= hlo::IsElementwise(u->opcode());
    if (!fusible) continue;
    hlo::Instruction one_row(hlo::Opcode::kIota, hlo::Shape(s.element_type, {n}));
    one_row.dimensions = {0};
    hlo::Instruction* row = PositionsConstant(c, one_row, *iota);
    if (!row) continue;
    c->ReplaceAllUsesWith(iota, hlo::AddBroadcast(c, row, s.dims, {d}, iota));
    any = true;
  }
  return any;
}

}  // namespace

absl::StatusOr<bool> PositionConstants::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    bool here = RowsOfPositions(c.get());
    // The sorts first: adding constants grows the instruction list.
    std::vector<hlo::Instruction*> sorts;
    for (const auto& i : c->instructions())
      if (i->opcode() == hlo::Opcode::kSort) sorts.push_back(i.get());
    for (hlo::Instruction* i : sorts) {
      for (int64_t k = 1; k < i->operand_count(); ++k) {
        hlo::Instruction* iota = i->operand(k);
        if (iota->opcode() != hlo::Opcode::kIota || iota->dimensions != i->dimensions ||
            iota->shape().ElementCount() > kMaxConstantPositions)
          continue;
        hlo::Instruction* constant = PositionsConstant(c.get(), *iota, *iota);
        if (!constant) continue;
        i->ReplaceOperand(k, constant);
        here = true;
      }
    }
    if (here) c->Canonicalize();
    changed |= here;
  }
  return changed;
}

}  // namespace xonnx::cpu
