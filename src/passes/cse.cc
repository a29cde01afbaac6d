#include "passes/cse.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xonnx::passes {

absl::StatusOr<bool> Cse::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    // Bucket by a cheap key; SameAttributes decides within a bucket.
    absl::flat_hash_map<std::string, std::vector<hlo::Instruction*>> buckets;
    // Duplicates found so far and what replaces them. Operands are remapped
    // as the walk reaches their users, and once more at the end, rather
    // than every use rewritten at each find (a sweep of the computation
    // each time: quadratic in a model of thousands of nodes).
    absl::flat_hash_map<hlo::Instruction*, hlo::Instruction*> replaced;
    auto remap = [&](hlo::Instruction* instr) {
      for (int64_t k = 0; k < instr->operand_count(); ++k)
        if (auto r = replaced.find(instr->operand(k)); r != replaced.end()) instr->ReplaceOperand(k, r->second);
    };
    for (const auto& i : c->instructions()) {
      hlo::Instruction* instr = i.get();
      if (!replaced.empty()) remap(instr);
      if (instr->opcode() == hlo::Opcode::kParameter || instr->opcode() == hlo::Opcode::kRngBitGenerator) continue;
      std::vector<int64_t> ids;
      for (hlo::Instruction* op : instr->operands()) ids.push_back(op->id());
      std::string key = absl::StrCat(hlo::OpcodeName(instr->opcode()), "|", absl::StrJoin(ids, ","), "|",
                                     instr->shape().ToString(false));
      if (instr->literal) absl::StrAppend(&key, "|", instr->literal->size_bytes());
      auto& bucket = buckets[key];
      hlo::Instruction* same = nullptr;
      for (hlo::Instruction* cand : bucket)
        if (cand->SameAttributes(*instr)) {
          same = cand;
          break;
        }
      if (same) {
        replaced[instr] = same;
        changed = true;
      } else {
        bucket.push_back(instr);
      }
    }
    if (!replaced.empty()) {
      for (const auto& i : c->instructions()) remap(i.get());
      if (auto r = replaced.find(c->root()); r != replaced.end()) c->set_root(r->second);
    }
    if (changed) c->Canonicalize();
  }
  return changed;
}

}  // namespace xonnx::passes
