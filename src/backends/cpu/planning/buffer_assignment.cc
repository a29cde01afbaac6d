#include "backends/cpu/planning/buffer_assignment.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/status.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Places buffers in one arena: a buffer may reuse the bytes of any buffer
// whose last use came before its definition.
class ArenaPlanner {
 public:
  int64_t Place(int64_t size, int64_t def, int64_t last_use) {
    size = AlignUp(std::max<int64_t>(size, 1));
    std::erase_if(live_, [&](const Block& b) { return b.last_use < def; });
    std::sort(live_.begin(), live_.end(), [](const Block& a, const Block& b) { return a.offset < b.offset; });
    int64_t offset = 0;
    for (const Block& b : live_) {
      if (b.offset - offset >= size) break;
      offset = std::max(offset, b.offset + b.size);
    }
    live_.push_back({offset, size, last_use});
    total_ = std::max(total_, offset + size);
    return offset;
  }
  int64_t total() const { return total_; }

 private:
  struct Block {
    int64_t offset, size, last_use;
  };
  std::vector<Block> live_;
  int64_t total_ = 0;
};

// An arena value: the leaf of `owner` it holds, its bytes, and the program
// positions of its definition and last read.
struct Slot {
  Instruction* owner;
  int leaf;
  int64_t size, def, last_use;
};

// The steps of AssignBuffers, over the slots they share.
class BufferAssigner {
 public:
  BufferAssigner(const Plan& plan, bool distinct) : plan_(plan), distinct_(distinct) {}

  absl::StatusOr<BufferAssignment> Run() {
    RETURN_IF_ERROR(MakeSlots());
    ComputeLiveness();
    KeepBranchesApart();
    if (!distinct_) ShareInPlace();
    Place();
    return std::move(out_);
  }

 private:
  // A slot for each leaf of every materialized value; aliases (reshapes,
  // tuples and their elements) take their operands' leaves.
  absl::Status MakeSlots();
  // A use of any alias extends the backing slot's life to the point where
  // its reader runs.
  void ComputeLiveness();
  // Values live during a run of concurrent branches (Plan::concurrent)
  // live through all of it: the two parts run at once, so neither may
  // reuse bytes the other has freed, nor write a result over an input.
  void KeepBranchesApart();
  // Slots a result may overwrite in place.
  void ShareInPlace();
  // The first slot of the bytes s shares: slots written in place over one
  // another form a set, placed once, at its first (earliest) slot, and
  // live from the set's first definition to its last read.
  int Find(int s) {
    while (share_of_[s] >= 0) {
      if (share_of_[share_of_[s]] >= 0) share_of_[s] = share_of_[share_of_[s]];
      s = share_of_[s];
    }
    return s;
  }
  // Result slot o overwrites slot r in place. Chains merge in any order
  // (an epilogue over a fused loop's result may be decided before that
  // loop takes its own input's bytes), so whole sets are merged.
  void Share(int r, int o) {
    int a = Find(r), b = Find(o);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    share_of_[b] = a;
    slots_[a].def = std::min(slots_[a].def, slots_[b].def);
    slots_[a].last_use = std::max(slots_[a].last_use, slots_[b].last_use);
  }
  // Whether result slot o may take r's bytes: nothing held in them (r, or
  // a value r itself overwrote) is read after o is written.
  bool FreeAt(int r, int o) { return slots_[Find(r)].last_use == slots_[o].def; }
  int InPlaceFusionInput(const Instruction* root);
  int InPlaceRowFusionInput(const Instruction* last);
  // Offsets in the arena, then every leaf's buffer.
  void Place();

  const Plan& plan_;
  const bool distinct_;
  BufferAssignment out_;
  std::vector<Slot> slots_;
  // Which arena slots back each value's leaves (following aliases), -1 for
  // parameters and constants.
  absl::flat_hash_map<const Instruction*, std::vector<int>> backing_;
  std::vector<int> share_of_;  // slot -> a slot of its set nearer the first (see Find), or -1
};

absl::Status BufferAssigner::MakeSlots() {
  auto& leaves = out_.leaves;
  for (Instruction* i : plan_.order()) {
    switch (i->opcode()) {
      case Opcode::kParameter:
        leaves[i] = {{BufferRef::kParameter, i->parameter_number}};
        backing_[i] = {-1};
        continue;
      case Opcode::kConstant:
        leaves[i] = {{BufferRef::kConstant, static_cast<int64_t>(out_.constants.size())}};
        // Read-only: a write access would copy a borrowed literal.
        out_.constants.push_back(std::as_const(*i->literal).untyped_data());
        backing_[i] = {-1};
        continue;
      case Opcode::kReshape:
      case Opcode::kBitcastConvert:
        if (plan_.Materialized(i->operand(0))) {
          // Copy before inserting: flat_hash_map insertions move elements.
          std::vector<BufferRef> l = leaves.at(i->operand(0));
          std::vector<int> bk = backing_.at(i->operand(0));
          leaves[i] = std::move(l);
          backing_[i] = std::move(bk);
          continue;
        }
        break;
      case Opcode::kGetTupleElement: {
        BufferRef l = leaves.at(i->operand(0)).at(i->tuple_index);
        int bk = backing_.at(i->operand(0)).at(i->tuple_index);
        leaves[i] = {l};
        backing_[i] = {bk};
        continue;
      }
      case Opcode::kTuple: {
        std::vector<BufferRef> l;
        std::vector<int> bk;
        for (Instruction* op : i->operands()) {
          if (!op->shape().IsArray()) return Unimplemented("nested tuples are not supported");
          if (!plan_.Materialized(op)) return Internal("tuple operand %s is not materialized", op->name());
          l.push_back(leaves.at(op)[0]);
          bk.push_back(backing_.at(op)[0]);
        }
        leaves[i] = l;
        backing_[i] = bk;
        continue;
      }
      default:
        break;
    }
    if (!plan_.Materialized(i)) continue;
    std::vector<hlo::Shape> shapes =
        i->shape().IsTuple() ? i->shape().tuple_shapes : std::vector<hlo::Shape>{i->shape()};
    std::vector<int> bk;
    for (size_t k = 0; k < shapes.size(); ++k) {
      if (!shapes[k].IsArray()) return Unimplemented("%s: nested tuples are not supported", i->name());
      bk.push_back(slots_.size());
      // Defined where it is written: a grouped product's by its group's step.
      slots_.push_back({i, static_cast<int>(k), shapes[k].ByteSize(), plan_.WrittenAt(i), plan_.pos(i)});
    }
    leaves[i] = std::vector<BufferRef>(shapes.size());
    backing_[i] = bk;
  }
  share_of_.assign(slots_.size(), -1);
  return absl::OkStatus();
}

void BufferAssigner::ComputeLiveness() {
  auto read_at = [&](const Instruction* x, int64_t at) {
    auto bk = backing_.find(x);
    if (bk == backing_.end()) return;
    for (int s : bk->second)
      if (s >= 0) slots_[s].last_use = std::max(slots_[s].last_use, at);
  };
  for (Instruction* i : plan_.order()) {
    const int64_t at = plan_.UsePoint(i);
    for (Instruction* op : i->operands()) read_at(op, at);
    for (const Instruction* x : plan_.HiddenReads(i)) read_at(x, at);
  }
  for (int s : backing_.at(plan_.root()))
    if (s >= 0) slots_[s].last_use = INT64_MAX;
}

void BufferAssigner::KeepBranchesApart() {
  for (const Plan::Branches& b : plan_.concurrent)
    for (Slot& s : slots_)
      if (s.def <= b.last && s.last_use >= b.first) {
        s.def = std::min(s.def, b.first);
        s.last_use = std::max(s.last_use, b.last);
      }
}

// An epilogue that reads its residual last writes its result over it:
// oneDNN's sum post-op accumulates into the output buffer, which otherwise
// must first receive a copy of the residual. In program order, so that a
// chain (one block's result is the next one's residual) ends in the first
// slot, which the arena planner places.
void BufferAssigner::ShareInPlace() {
  for (Instruction* op : plan_.order()) {
    if (plan_.IsGroupRoot(op)) {
      if (int r = InPlaceFusionInput(op); r >= 0) Share(r, backing_.at(op).at(0));
      continue;
    }
    if (int r = InPlaceRowFusionInput(op); r >= 0) {
      Share(r, backing_.at(op).at(0));
      continue;
    }
    const Epilogue* found = plan_.EpilogueOf(op);
    if (!found || !found->residual) continue;
    const Epilogue& e = *found;
    const Instruction* last = plan_.ResultOf(op);
    auto rb = backing_.find(e.residual), ob = backing_.find(last);
    if (rb == backing_.end() || ob == backing_.end()) continue;
    int r = rb->second.at(0), o = ob->second.at(0);
    if (r < 0 || o < 0 || slots_[o].owner != last || slots_[r].size != slots_[o].size || !FreeAt(r, o)) continue;
    // Not when the primitive also reads those bytes as an operand, its bias
    // or a view's source: it would read what it has begun to overwrite.
    bool read_otherwise = false;
    auto check = [&](const Instruction* x) {
      if (auto bk = backing_.find(x); bk != backing_.end())
        for (int s : bk->second) read_otherwise |= s == r;
    };
    for (const Instruction* x : op->operands()) check(x);
    for (const Instruction* x : plan_.HiddenReads(op))
      if (x != e.residual) check(x);
    if (read_otherwise) continue;
    Share(r, o);
  }
}

// The arena slot of an input that the fusion rooted at `root` may
// overwrite with its result, or -1. A fused loop reads each input element
// at the index it writes (block by block, every read of a block before its
// write), so its result can take the slot of an input of the same element
// width and count whose last reader it is: the squeeze-and-excitation
// scale then rewrites its input where it lies in cache instead of filling
// a second buffer. Not an input that the loop also reads another way (as
// a broadcast's operand), nor one read twice.
int BufferAssigner::InPlaceFusionInput(const Instruction* root) {
  auto ob = backing_.find(root);
  if (ob == backing_.end() || ob->second.size() != 1 || ob->second[0] < 0) return -1;
  const Slot& out = slots_[ob->second[0]];
  if (out.owner != root) return -1;
  absl::flat_hash_map<int, int> reads;  // slot -> inputs backed by it
  std::vector<int> candidates;
  // Each input once, however many members read it.
  for (const Instruction* op : plan_.FusionInputs(plan_.fusions.group_of.at(root))) {
    // An absorbed read's buffers are its operands' (a concatenation's
    // parts, read in turn); they are never candidates.
    bool absorbed = plan_.fusions.absorbed_reads.contains(op);
    std::vector<const Instruction*> buffers;
    if (absorbed)
      buffers.assign(op->operands().begin(), op->operands().end());
    else
      buffers = {op};
    for (const Instruction* buffer : buffers) {
      auto bk = backing_.find(buffer);
      if (bk == backing_.end() || bk->second.size() != 1 || bk->second[0] < 0) continue;
      int r = bk->second[0];
      ++reads[r];
      if (!absorbed && op->shape().ElementCount() == root->shape().ElementCount() &&
          plan_.BlockOf(op) == plan_.BlockOf(root) &&
          hlo::ByteWidth(op->shape().element_type) == hlo::ByteWidth(root->shape().element_type))
        candidates.push_back(r);
    }
  }
  for (int r : candidates)
    if (reads[r] == 1 && slots_[r].size == out.size && FreeAt(r, ob->second[0])) return r;
  return -1;
}

// The arena slot of an input that the row fusion ending at `last` may
// overwrite with its last node's result, or -1. The thunk reads and writes
// whole rows a block at a time, and a block's last node writes after every
// other node has read the block's rows, so that node's result can take the
// slot of an input read only as whole rows, of its size, which no later
// step reads: a softmax or layer norm then writes where its input lies in
// cache instead of streaming into a second buffer.
int BufferAssigner::InPlaceRowFusionInput(const Instruction* last) {
  const int g = plan_.RowGroupOf(last);
  if (g < 0) return -1;
  const RowGroup& group = plan_.row_fusions.groups[g];
  const RowFusionSpec& spec = group.spec;
  const int last_node = static_cast<int>(spec.nodes.size()) - 1;
  if (group.members.back() != last || spec.nodes.back().instr != last ||
      std::find(spec.outputs.begin(), spec.outputs.end(), last_node) == spec.outputs.end())
    return -1;
  auto ob = backing_.find(last);
  if (ob == backing_.end() || ob->second.size() != 1 || ob->second[0] < 0) return -1;
  const int o = ob->second[0];
  if (slots_[o].owner != last) return -1;
  // How each input is read: only whole rows, or otherwise too.
  std::vector<bool> rows_only(group.inputs.size(), true);
  for (const auto& node : spec.nodes)
    for (const auto& operand : node.operands)
      if (!operand.member && operand.read != RowFusionSpec::Read::kFull) rows_only[operand.index] = false;
  absl::flat_hash_map<int, int> inputs_in;  // slot -> inputs it backs
  for (const Instruction* in : group.inputs)
    if (auto bk = backing_.find(in); bk != backing_.end())
      for (int s : bk->second) ++inputs_in[s];
  for (size_t k = 0; k < group.inputs.size(); ++k) {
    const Instruction* in = group.inputs[k];
    auto bk = backing_.find(in);
    if (!rows_only[k] || bk == backing_.end() || bk->second.size() != 1 || bk->second[0] < 0) continue;
    const int r = bk->second[0];
    if (inputs_in[r] == 1 && slots_[r].size == slots_[o].size && FreeAt(r, o)) return r;
  }
  return -1;
}

void BufferAssigner::Place() {
  auto& leaves = out_.leaves;
  ArenaPlanner planner;
  std::vector<int64_t> offsets(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    // A distinct slot lives through the whole program, so no other takes
    // its bytes.
    const int64_t def = distinct_ ? 0 : slots_[s].def, last = distinct_ ? INT64_MAX : slots_[s].last_use;
    // A set's first slot comes before its other slots, so it is placed first.
    const int first = Find(s);
    offsets[s] = first != static_cast<int>(s) ? offsets[first] : planner.Place(slots_[s].size, def, last);
  }
  out_.arena_bytes = planner.total();
  // Resolve arena refs of owners, then re-resolve aliases in order.
  for (size_t s = 0; s < slots_.size(); ++s) leaves[slots_[s].owner][slots_[s].leaf] = {BufferRef::kArena, offsets[s]};
  for (Instruction* i : plan_.order()) {
    switch (i->opcode()) {
      case Opcode::kReshape:
      case Opcode::kBitcastConvert:
        if (plan_.Materialized(i->operand(0)) && backing_.at(i) == backing_.at(i->operand(0))) {
          std::vector<BufferRef> l = leaves.at(i->operand(0));
          leaves[i] = std::move(l);
        }
        break;
      case Opcode::kGetTupleElement: {
        BufferRef l = leaves.at(i->operand(0)).at(i->tuple_index);
        leaves[i] = {l};
        break;
      }
      case Opcode::kTuple: {
        std::vector<BufferRef> l;
        for (Instruction* op : i->operands()) l.push_back(leaves.at(op)[0]);
        leaves[i] = l;
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace

absl::StatusOr<BufferAssignment> AssignBuffers(const Plan& plan, bool distinct) {
  return BufferAssigner(plan, distinct).Run();
}

}  // namespace xonnx::cpu
