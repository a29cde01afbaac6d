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
    for (const auto& i : c->instructions()) {
      hlo::Instruction* instr = i.get();
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
        c->ReplaceAllUsesWith(instr, same);
        changed = true;
      } else {
        bucket.push_back(instr);
      }
    }
    if (changed) c->Canonicalize();
  }
  return changed;
}

}  // namespace xonnx::passes
