// Fusion planning: elementwise chains that run as one fused loop, and row
// fusions (a layer norm, a softmax) that run as one row-by-row kernel.
#include <algorithm>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "backends/cpu/planning/planners.h"
#include "evaluator/kernels.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;
using Read = RowFusionSpec::Read;

namespace {

// Whether i joins elementwise fusions: an elementwise array op with elements.
bool Fusible(const Instruction* i) {
  return hlo::IsElementwise(i->opcode()) && i->shape().IsArray() && i->shape().ElementCount() > 0;
}

// Whether i is a reduce along the last dim of an f32 value (of shape
// `full`, when given) with a scalar init and an add, multiply, max or min
// reducer.
bool RowReduce(const Plan& plan, const Instruction* i, const std::vector<int64_t>* full) {
  if (i->opcode() != Opcode::kReduce || i->operand_count() != 2 || !i->shape().IsArray()) return false;
  const hlo::Shape& xs = i->operand(0)->shape();
  if (xs.element_type != hlo::F32 || xs.rank() < 1 || i->dimensions != std::vector<int64_t>{xs.rank() - 1})
    return false;
  if (full && xs.dims != *full) return false;
  if (i->operand(1)->shape().ElementCount() != 1 || plan.AbsorbedInto(i)) return false;
  return ArithmeticReducer(*i->to_apply()).has_value();
}

// Whether i can be a member: a reduce as above, or an f32 elementwise op
// of one or two operands, of shape `full` or with `rows` elements, not
// already part of an epilogue or another row fusion.
bool RowMember(const Plan& plan, const Instruction* i, const std::vector<int64_t>& full, int64_t rows) {
  if (plan.RowGroupOf(i) >= 0 || plan.AbsorbedInto(i) || plan.EpilogueOf(i)) return false;
  if (RowReduce(plan, i, &full)) return true;
  if (!Fusible(i) || i->shape().element_type != hlo::F32 || i->operand_count() < 1 || i->operand_count() > 2)
    return false;
  for (const Instruction* op : i->operands())
    if (op->shape().element_type != hlo::F32) return false;
  return i->shape().dims == full || i->shape().ElementCount() == rows;
}

// A reshape (any) or a broadcast of a row value, a C-vector or a scalar to
// the full shape or to one element per row: the ways a row fusion reads
// a value other than directly.
std::optional<Read> RowBroadcastRead(const Instruction* b, const std::vector<int64_t>& full, int64_t rows) {
  if (b->opcode() != Opcode::kBroadcast) return std::nullopt;
  const hlo::Shape& src = b->operand(0)->shape();
  if (src.ElementCount() == 1) return Read::kScalar;
  if (b->shape().dims != full) return std::nullopt;
  int64_t r = full.size();
  // The columns' values, perhaps between dims of one (an attention mask
  // [1, 1, slots] spread over [1, heads, 1, slots]): every dim of the
  // source but the one along the last has one element.
  if (src.ElementCount() == full.back()) {
    bool columns = true;
    for (int64_t i = 0; i < src.rank(); ++i) columns &= src.dims[i] == 1 || b->dimensions[i] == r - 1;
    if (columns) return Read::kColumns;
  }
  std::vector<int64_t> lead(r - 1);
  for (int64_t d = 0; d < r - 1; ++d) lead[d] = d;
  if (b->dimensions == lead && src.ElementCount() == rows &&
      std::equal(src.dims.begin(), src.dims.end(), full.begin(), full.end() - 1))
    return Read::kRow;
  return std::nullopt;
}
bool RowView(const Instruction* i, const std::vector<int64_t>& full, int64_t rows) {
  return i->opcode() == Opcode::kReshape || RowBroadcastRead(i, full, rows).has_value();
}

// The value an operand reaches through reshapes and at most one
// broadcast, and how the broadcast (if any) reads it.
struct ThroughViews {
  Instruction* value;
  std::optional<Read> broadcast;
};
ThroughViews ThroughRowViews(Instruction* x, const std::vector<int64_t>& full, int64_t rows) {
  std::optional<Read> b;
  while (true) {
    if (x->opcode() == Opcode::kReshape) {
      x = x->operand(0);
    } else if (!b && (b = RowBroadcastRead(x, full, rows))) {
      x = x->operand(0);
    } else {
      return {x, b};
    }
  }
}

// Resolves the group's operands into its program; false when it cannot
// run as one step (see PlanRowFusions).
bool BuildRowGroup(const Plan& plan, const std::vector<int64_t>& full, int64_t rows,
                   const absl::flat_hash_set<Instruction*>& in_group, RowGroup* group) {
  const Instruction* root = plan.root();
  const int64_t cols = full.back();
  absl::flat_hash_set<Instruction*> views;
  RowFusionSpec& spec = group->spec;
  spec.rows = rows;
  spec.cols = cols;
  absl::flat_hash_map<const Instruction*, int> node_of, input_of;
  auto is_full = [&](const Instruction* i) { return i->opcode() != Opcode::kReduce && i->shape().dims == full; };
  // A value read from outside: written by some kernel (not folded away).
  auto readable = [&](Instruction* v) {
    return v->opcode() != Opcode::kBroadcast && !plan.epilogues.unused.contains(v) && plan.KeptByEpilogues(v) &&
           v->shape().IsArray() && v->shape().element_type == hlo::F32;
  };
  auto input = [&](Instruction* v) {
    auto [it, added] = input_of.try_emplace(v, group->inputs.size());
    if (added) group->inputs.push_back(v);
    return it->second;
  };
  for (Instruction* m : group->members) {
    RowFusionSpec::Node node;
    node.instr = m;
    node.full = is_full(m);
    if (!node.full && m->shape().ElementCount() != rows) return false;
    node.reduce = m->opcode() == Opcode::kReduce;
    if (node.reduce) node.reduce_op = *eval::MatchScalarBinary(*m->to_apply());
    for (int64_t k = 0; k < m->operand_count(); ++k) {
      Instruction* x = m->operand(k);
      RowFusionSpec::Operand o;
      if (node.reduce && k == 1) {  // the init: one value from outside
        if (!readable(x) || in_group.contains(x)) return false;
        o.index = input(x);
        o.read = Read::kScalar;
        node.operands.push_back(o);
        continue;
      }
      auto [v, b] = ThroughRowViews(x, full, rows);
      bool wants_full = node.full || node.reduce;
      if (in_group.contains(v)) {
        auto n = node_of.find(v);
        if (n == node_of.end()) return false;  // read before it is computed
        o.member = true;
        o.index = n->second;
        bool v_full = spec.nodes[n->second].full;
        if (v_full) {
          if (b || !wants_full) return false;
          o.read = Read::kFull;
        } else {
          if (b && *b != Read::kRow && !(*b == Read::kScalar && rows == 1)) return false;
          if (!b && wants_full) return false;
          o.read = Read::kRow;
        }
      } else {
        if (!readable(v)) return false;
        int64_t count = v->shape().ElementCount();
        if (b) {
          o.read = *b;
        } else {
          o.read = wants_full ? Read::kFull : Read::kRow;
        }
        int64_t want = o.read == Read::kFull      ? rows * cols
                       : o.read == Read::kRow     ? rows
                       : o.read == Read::kColumns ? cols
                                                  : 1;
        if (count != want) return false;
        if (!wants_full && o.read != Read::kRow && o.read != Read::kScalar) return false;
        o.index = input(v);
      }
      node.operands.push_back(o);
      // The reshapes and broadcasts between.
      for (Instruction* view = x; view != v; view = view->operand(0))
        if (views.insert(view).second) group->views.push_back(view);
    }
    node_of[m] = spec.nodes.size();
    spec.nodes.push_back(std::move(node));
  }
  // A view that something outside the group reads too stays a kernel (or
  // an alias) of its own; then the member under it is an output.
  auto internal_view = [&](Instruction* view) {
    return plan.OnlyReadThroughViews(
        view, [&](const Instruction* v) { return views.contains(v); },
        [&](const Instruction* u) { return in_group.contains(u); });
  };
  // Outputs: members read by anything outside (directly or through a view
  // that stays), which must all run after the group's last member.
  const int64_t emit = plan.pos(group->members.back());
  for (Instruction* m : group->members) {
    bool output = m == root;
    std::vector<Instruction*> readers = plan.users(m);
    for (size_t r = 0; r < readers.size(); ++r) {
      Instruction* u = readers[r];
      if (in_group.contains(u) || internal_view(u)) continue;
      output = true;
      if (plan.pos(u) <= emit && u->opcode() != Opcode::kReshape) return false;
      if (u->opcode() == Opcode::kReshape) readers.insert(readers.end(), plan.users(u).begin(), plan.users(u).end());
    }
    if (output) {
      spec.outputs.push_back(node_of.at(m));
      group->outputs.push_back(m);
    }
  }
  // The inputs must not depend on the group: each is defined before the
  // group's first member reads it, and none is computed from a member
  // (checked through the outputs' readers above: a value computed from a
  // member would be such a reader positioned before the last member).
  spec.inputs = group->inputs.size();
  // Scratch per thread, a row per full node: keep it within the caches.
  int64_t full_nodes = 0;
  for (const auto& n : spec.nodes) full_nodes += n.full;
  if ((full_nodes + 2) * cols > (1 << 20)) return false;
  return full_nodes > 0;
}

}  // namespace

// Leaves out of a row group its tail: full-shape elementwise members that
// read no row value, whose readers are all elementwise ops of that shape
// that no row group or oneDNN epilogue takes, repeatedly from the end.
// Those readers run as a fused loop anyway, and the tail's work is
// cheaper there: a layer norm's
// beta and the first steps of the quantizer after it (divide, round, add
// zero point; the clamp and convert cannot join) were four more passes
// and two scalars spread per block of rows, where the loop's one-pass
// quantizer does them in registers.
void DropLoopTail(const Plan& plan, const std::vector<int64_t>& full, int64_t rows, std::vector<Instruction*>* members,
                  absl::flat_hash_set<Instruction*>* in_group) {
  auto reads_rows = [&](Instruction* m) {
    for (Instruction* op : m->operands()) {
      Instruction* v = ThroughRowViews(op, full, rows).value;
      if (in_group->contains(v) && v->shape().dims != full) return true;
    }
    return false;
  };
  auto loop_reader = [&](Instruction* u) {
    return !in_group->contains(u) && Fusible(u) && u->shape().dims == full && !RowView(u, full, rows) &&
           plan.RowGroupOf(u) < 0 && !plan.AbsorbedInto(u) && !plan.EpilogueOf(u);
  };
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (size_t k = members->size(); k-- > 0;) {
      Instruction* m = (*members)[k];
      if (m->opcode() == Opcode::kReduce || m->shape().dims != full || reads_rows(m)) continue;
      const std::vector<Instruction*>& users = plan.users(m);
      if (users.empty() || !std::all_of(users.begin(), users.end(), loop_reader)) continue;
      in_group->erase(m);
      members->erase(members->begin() + k);
      dropped = true;
    }
  }
}

// Row fusions: a reduce along the last dim of an f32 value of shape
// [..., C] starts a group; it grows through operands and users that are
// f32 elementwise ops of that shape or with one element per row, and
// other such reduces, reading through reshapes and through broadcasts of
// a row value, a C-vector or a scalar back along the rows. A layer norm
// (two reductions, eight kernels before) or a softmax (two, four) becomes
// one kernel that keeps each row in cache. A group is dropped when it
// cannot run as one step: a value it reads depends on one it writes, or
// it reads a value no kernel writes (one folded into another's epilogue).
void PlanRowFusions(Plan* plan) {
  auto& rf = plan->row_fusions;
  for (Instruction* seed : plan->order()) {
    if (rf.group_of.contains(seed) || !RowReduce(*plan, seed, nullptr)) continue;
    const std::vector<int64_t> full = seed->operand(0)->shape().dims;
    int64_t cols = full.back(), rows = seed->shape().ElementCount();
    if (cols < 2 || cols > (1 << 16)) continue;
    std::vector<Instruction*> members = {seed};
    absl::flat_hash_set<Instruction*> in_group = {seed};
    int64_t first = plan->pos(seed);
    for (size_t k = 0; k < members.size(); ++k) {
      Instruction* m = members[k];
      // x joins when no value it reads from outside depends on a member
      // (as the next layer's attention does, between a layer norm and the
      // residual add after it): the group runs as one step. Values before
      // the first member cannot; those after it are searched back to it.
      auto depends_on_group = [&](Instruction* v) {
        std::vector<Instruction*> stack = {v};
        absl::flat_hash_set<Instruction*> seen;
        while (!stack.empty()) {
          Instruction* y = stack.back();
          stack.pop_back();
          if (in_group.contains(y)) return true;
          if (plan->pos(y) < first || !seen.insert(y).second) continue;
          for (Instruction* op : y->operands()) stack.push_back(op);
        }
        return false;
      };
      auto consider = [&](Instruction* x) {
        if (in_group.contains(x) || !RowMember(*plan, x, full, rows)) return;
        for (Instruction* op : x->operands()) {
          Instruction* v = ThroughRowViews(op, full, rows).value;
          if (!in_group.contains(v) && depends_on_group(v)) return;
        }
        in_group.insert(x);
        members.push_back(x);
        first = std::min(first, plan->pos(x));
      };
      for (Instruction* op : m->operands()) consider(ThroughRowViews(op, full, rows).value);
      std::vector<Instruction*> readers = plan->users(m);
      for (size_t r = 0; r < readers.size(); ++r) {
        Instruction* u = readers[r];
        if (RowView(u, full, rows))
          readers.insert(readers.end(), plan->users(u).begin(), plan->users(u).end());
        else
          consider(u);
      }
    }
    DropLoopTail(*plan, full, rows, &members, &in_group);
    std::sort(members.begin(), members.end(),
              [&](Instruction* a, Instruction* b) { return plan->pos(a) < plan->pos(b); });
    RowGroup group;
    group.members = members;
    if (!BuildRowGroup(*plan, full, rows, in_group, &group)) continue;
    int g = rf.groups.size();
    for (Instruction* m : group.members) rf.group_of[m] = g;
    const int64_t emit = plan->pos(group.members.back());
    for (Instruction* view : group.views) rf.views[view] = std::max(rf.views[view], emit);
    rf.groups.push_back(std::move(group));
  }
  // A reshape or broadcast that only row fusions read (directly or through
  // other such views) is never computed: they read what is under it.
  for (const auto& [view, emit] : rf.views)
    if (plan->OnlyReadThroughViews(
            view, [&](const Instruction* v) { return rf.views.contains(v); },
            [&](const Instruction* u) { return rf.group_of.contains(u); }))
      rf.internal[view] = emit;
}

namespace {

// Whether x has a buffer of its own, as a plain row-major array, which a
// fusion can read in place. (Its own fusion, if it joins one, is decided
// later in this walk, but a value read by a slice or concatenation that no
// fusion takes in is always its fusion's root.)
bool PlainBuffer(const Plan& plan, const Instruction* x) {
  return x->shape().IsArray() && plan.Materialized(x) && !plan.blocked.contains(x);
}

// Whether a fusion can read i from the buffers it starts from: a broadcast
// (its operand's), a slice (its operand's, through strides) or a
// concatenation (each part's, in turn). A DenseNet layer's batch norm
// then reads the features it concatenates where the convolutions wrote
// them, and the concatenation is never written (DenseNet-121 at batch 16:
// the concatenations took 9% of the time, the batch norms' loops now take
// 6-8% more, reading the parts from memory; 0-3% faster in all).
bool AbsorbableRead(const Plan& plan, const Instruction* i) {
  switch (i->opcode()) {
    case Opcode::kBroadcast:
      return true;
    case Opcode::kSlice:
      return PlainBuffer(plan, i->operand(0));
    case Opcode::kConcatenate:
      return !plan.blocked.contains(i) && std::all_of(i->operands().begin(), i->operands().end(),
                                                      [&](const Instruction* x) { return PlainBuffer(plan, x); });
    default:
      return false;
  }
}

}  // namespace

// Groups elementwise chains: an elementwise instruction joins its users'
// fusion when all of them are members of one fusion of the same shape.
void PlanFusions(Plan* plan) {
  Instruction* root = plan->root();
  auto& f = plan->fusions;
  const auto& epilogues = plan->epilogues;
  const auto& rows = plan->row_fusions;
  for (auto it = plan->order().rbegin(); it != plan->order().rend(); ++it) {
    Instruction* i = *it;
    const auto& us = plan->users(i);
    int group = -1;
    bool joinable = i != root && !us.empty();
    for (Instruction* u : us) {
      auto g = f.group_of.find(u);
      if (g == f.group_of.end() || (group >= 0 && g->second != group)) {
        joinable = false;
        break;
      }
      group = g->second;
    }
    if (joinable && f.groups[group].back()->shape().dims != i->shape().dims) joinable = false;
    if (plan->integer_products.read.contains(i) || plan->packed_products.read.contains(i)) joinable = false;
    if (plan->integer_products.replaced.contains(i) || plan->packed_products.replaced.contains(i))
      continue;  // never computed
    if (Fusible(i) && !epilogues.absorbed.contains(i) && !epilogues.of.contains(i) && !rows.group_of.contains(i) &&
        !rows.internal.contains(i)) {
      if (joinable) {
        f.groups[group].push_back(i);
        f.group_of[i] = group;
      } else {
        f.group_of[i] = f.groups.size();
        f.groups.push_back({i});
      }
    } else if (i != root && !us.empty() && i->shape().ElementCount() > 0 && !plan->dot_views.replaced.contains(i) &&
               !rows.internal.contains(i) && AbsorbableRead(*plan, i) &&
               std::all_of(us.begin(), us.end(), [&](Instruction* u) {
                 if (epilogues.absorbed.contains(u)) return i->opcode() == Opcode::kBroadcast;
                 // Row fusions read through the broadcasts they take (a
                 // quantizer's splat shared with a layer norm's).
                 if (plan->RowGroupOf(u) >= 0 || rows.internal.contains(u)) return rows.views.contains(i);
                 auto g = f.group_of.find(u);
                 return g != f.group_of.end() && f.groups[g->second].back()->shape().dims == i->shape().dims;
               })) {
      // A broadcast read only by fusions is recomputed inside each of them
      // (one CSE-merged splat often feeds many fusions) instead of stored;
      // a slice or concatenation read only by fusions is read in place (a
      // recurrent step's gates, sliced from one product; a dense block's
      // features).
      f.absorbed_reads.insert(i);
    }
  }
  // Members were collected root first; store them operand-first.
  for (auto& g : f.groups) std::reverse(g.begin(), g.end());
}

}  // namespace xonnx::cpu
