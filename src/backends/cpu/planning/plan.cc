#include "backends/cpu/planning/plan.h"

#include <algorithm>

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

Plan::Plan(hlo::Computation* entry) : root_(entry->root()) {
  for (const auto& i : entry->instructions()) order_.push_back(i.get());
  for (size_t k = 0; k < order_.size(); ++k) pos_[order_[k]] = k;
  auto users = entry->ComputeUsers();
  for (size_t k = 0; k < order_.size(); ++k) users_[order_[k]] = users[k];
}

void Plan::Reorder(std::vector<Instruction*> order) {
  order_ = std::move(order);
  for (size_t k = 0; k < order_.size(); ++k) pos_[order_[k]] = k;
  // Users stay listed in program order.
  for (auto& [i, us] : users_)
    std::sort(us.begin(), us.end(), [&](const Instruction* a, const Instruction* b) { return pos(a) < pos(b); });
}

bool Plan::IsGroupRoot(const Instruction* i) const {
  auto g = fusions.group_of.find(i);
  return g != fusions.group_of.end() && fusions.groups[g->second].back() == i;
}

std::vector<Instruction*> Plan::FusionMembers(int group) const {
  std::vector<Instruction*> members = fusions.groups[group];
  std::sort(members.begin(), members.end(),
            [&](const Instruction* a, const Instruction* b) { return pos(a) < pos(b); });
  return members;
}

std::vector<Instruction*> Plan::FusionInputs(int group) const {
  std::vector<Instruction*> inputs;
  absl::flat_hash_set<const Instruction*> seen;
  for (const Instruction* m : FusionMembers(group))
    for (Instruction* op : m->operands()) {
      auto g = fusions.group_of.find(op);
      if ((g == fusions.group_of.end() || g->second != group) && seen.insert(op).second) inputs.push_back(op);
    }
  return inputs;
}

bool Plan::Materialized(const Instruction* i) const {
  if (fusions.absorbed_reads.contains(i) || epilogues.unused.contains(i) || dot_views.replaced.contains(i) ||
      integer_products.replaced.contains(i) || packed_products.replaced.contains(i))
    return false;
  if (row_fusions.internal.contains(i)) return false;
  if (int rg = RowGroupOf(i); rg >= 0) {
    const auto& outs = row_fusions.groups[rg].outputs;
    return std::find(outs.begin(), outs.end(), i) != outs.end();
  }
  // A conv or dot with an epilogue writes the epilogue's last buffer.
  if (epilogues.of.contains(i)) return false;
  if (const Instruction* a = AbsorbedInto(i)) return epilogues.last.at(a) == i;
  auto g = fusions.group_of.find(i);
  return g == fusions.group_of.end() || fusions.groups[g->second].back() == i;
}

bool Plan::RunsStep(const Instruction* i) const {
  switch (i->opcode()) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kGetTupleElement:
    case Opcode::kTuple:
      return false;  // buffers of their own or aliases
    case Opcode::kReshape:
    case Opcode::kBitcastConvert:
      if (Materialized(i->operand(0))) return false;  // an alias
      break;
    default:
      break;
  }
  if (int rg = RowGroupOf(i); rg >= 0) return row_fusions.groups[rg].members.back() == i;
  if (row_fusions.internal.contains(i)) return false;
  if (int pg = PackedGroupOf(i); pg >= 0) return packed_products.groups[pg].front() == i;
  if (const Instruction* op = AbsorbedInto(i)) return ResultOf(op) == i;
  return Materialized(i);
}

bool Plan::KeptByEpilogues(const Instruction* i) const {
  if (epilogues.of.contains(i)) return false;
  const Instruction* a = AbsorbedInto(i);
  return a == nullptr || epilogues.last.at(a) == i;
}

const Epilogue* Plan::EpilogueOf(const Instruction* op) const {
  auto e = epilogues.of.find(op);
  return e == epilogues.of.end() ? nullptr : &e->second;
}

const Instruction* Plan::AbsorbedInto(const Instruction* i) const {
  auto a = epilogues.absorbed.find(i);
  return a == epilogues.absorbed.end() ? nullptr : a->second;
}

const Instruction* Plan::ResultOf(const Instruction* op) const {
  auto e = epilogues.last.find(op);
  return e == epilogues.last.end() ? op : e->second;
}

int Plan::BlockOf(const Instruction* v) const {
  auto b = blocked.find(v);
  return b == blocked.end() ? 0 : b->second;
}

ConvLayouts Plan::LayoutsOf(const Instruction* conv) const {
  // A convolution that reads through a view reads its channels-first
  // source (PlanBlockedLayouts).
  bool channels_first = dot_views.of.contains(conv);
  return {channels_first ? 0 : BlockOf(conv->operand(0)), BlockOf(ResultOf(conv)), channels_first};
}

DotViews Plan::ViewsOf(const Instruction* dot) const {
  DotViews views;
  if (auto v = dot_views.of.find(dot); v != dot_views.of.end()) {
    if (v->second[0]) views.lhs = v->second[0]->view;
    if (v->second[1]) views.rhs = v->second[1]->view;
  }
  return views;
}

int Plan::RowGroupOf(const Instruction* i) const {
  auto g = row_fusions.group_of.find(i);
  return g == row_fusions.group_of.end() ? -1 : g->second;
}

int Plan::PackedGroupOf(const Instruction* i) const {
  auto g = packed_products.group_of.find(i);
  return g == packed_products.group_of.end() ? -1 : g->second;
}

int64_t Plan::WrittenAt(const Instruction* i) const {
  if (int pg = PackedGroupOf(i); pg >= 0) return pos(packed_products.groups[pg].front());
  return pos(i);
}

std::vector<const Instruction*> Plan::HiddenReads(const Instruction* i) const {
  std::vector<const Instruction*> reads;
  if (const Epilogue* e = EpilogueOf(i)) {
    if (e->bias) reads.push_back(e->bias);
    if (e->residual) reads.push_back(e->residual);
  }
  if (auto v = dot_views.of.find(i); v != dot_views.of.end())
    for (const auto& pv : v->second)
      if (pv) reads.push_back(pv->source);
  if (auto n = integer_products.of.find(i); n != integer_products.of.end())
    for (const NarrowOperand& o : n->second)
      for (const Instruction* x : {o.source, o.zero_point})
        if (x) reads.push_back(x);
  if (auto p = packed_products.of.find(i); p != packed_products.of.end())
    for (const Instruction* x : {p->second.packed, p->second.scales, p->second.zeros})
      if (x) reads.push_back(x);
  return reads;
}

int64_t Plan::UsePoint(const Instruction* user) const {
  int64_t at = DirectUsePoint(user);
  // A row fusion reads the value under a reshape or broadcast when it runs,
  // whether or not the view is computed for other readers too.
  if (auto rv = row_fusions.views.find(user); rv != row_fusions.views.end()) at = std::max(at, rv->second);
  return at;
}

int64_t Plan::DirectUsePoint(const Instruction* user) const {
  // A grouped packed product reads its operands when its group runs.
  if (int pg = PackedGroupOf(user); pg >= 0) return pos(packed_products.groups[pg].front());
  // A row fusion reads its inputs when it runs, at its last member.
  if (int rg = RowGroupOf(user); rg >= 0) return pos(row_fusions.groups[rg].members.back());
  if (auto ri = row_fusions.internal.find(user); ri != row_fusions.internal.end()) return ri->second;
  if (auto e = epilogues.last.find(user); e != epilogues.last.end()) return pos(e->second);
  if (const Instruction* a = AbsorbedInto(user)) return pos(epilogues.last.at(a));
  auto g = fusions.group_of.find(user);
  if (g != fusions.group_of.end()) return pos(fusions.groups[g->second].back());
  if (fusions.absorbed_reads.contains(user)) {
    int64_t last = pos(user);
    for (Instruction* u : users(user))
      if (auto ug = fusions.group_of.find(u); ug != fusions.group_of.end())
        last = std::max(last, pos(fusions.groups[ug->second].back()));
    // Row fusions that read through it read its operand when they run.
    if (auto v = row_fusions.views.find(user); v != row_fusions.views.end()) last = std::max(last, v->second);
    return last;
  }
  return pos(user);
}

std::vector<int64_t> Plan::WritingSteps(const Instruction* x) const {
  switch (x->opcode()) {
    case Opcode::kParameter:
    case Opcode::kConstant:
      return {};
    default:
      break;
  }
  if (int rg = RowGroupOf(x); rg >= 0) return {pos(row_fusions.groups[rg].members.back())};
  if (PackedGroupOf(x) >= 0) return {WrittenAt(x)};
  if (RunsStep(x)) return {pos(x)};
  // A fused member or an op inside an epilogue: written by its step.
  if (auto g = fusions.group_of.find(x); g != fusions.group_of.end()) return {pos(fusions.groups[g->second].back())};
  if (const Instruction* a = AbsorbedInto(x)) return {pos(ResultOf(a))};
  if (epilogues.of.contains(x)) return {pos(ResultOf(x))};
  // Aliases and views hold no bytes of their own: a read of one reads what
  // is under it, all of it.
  std::vector<int64_t> steps;
  auto add = [&](const Instruction* op) {
    std::vector<int64_t> more = WritingSteps(op);
    steps.insert(steps.end(), more.begin(), more.end());
  };
  for (const Instruction* op : x->operands()) add(op);
  for (const Instruction* op : HiddenReads(x)) add(op);
  return steps;
}

}  // namespace xonnx::cpu
