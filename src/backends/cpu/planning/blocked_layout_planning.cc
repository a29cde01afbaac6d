// Blocked-layout planning: which activations stay in oneDNN's blocked
// layout between the convolutions, concatenations and max pools that read
// and write them, and then through the fused loops and global pools
// between such convolutions.
#include <algorithm>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "backends/cpu/kernels/strided_view.h"
#include "backends/cpu/planning/planners.h"
#include "backends/cpu/runtime/thunks.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Whether i moves blocked values as they are: a concatenation of
// channels-last channels whose every part is a whole number of blocks, or
// a max pool over the spatial dims (oneDNN pools blocked activations
// natively). Its operands and result then share one layout.
bool MovesBlocked(const Plan& plan, const Instruction* i) {
  if (i == plan.root() || i->shape().rank() != 4 || i->shape().element_type != hlo::F32) return false;
  if (i->opcode() == Opcode::kConcatenate) {
    if (i->dimensions != std::vector<int64_t>{3}) return false;
    for (const Instruction* op : i->operands())
      if (DnnlChannelBlock(op->shape().dims[3]) == 0) return false;
    return true;
  }
  return DnnlChannelsLastMaxPool(*i) && DnnlChannelBlock(i->shape().dims[3]) != 0;
}

// The operands a mover reads as blocked values: a pool's source, every
// part of a concatenation.
std::vector<Instruction*> MovedOperands(Instruction* m) {
  if (m->opcode() == Opcode::kReduceWindow) return {m->operand(0)};
  return m->operands();
}

// Whether a convolution whose result a concatenation joins may run on
// blocked activations: the branches of an inception or fire module (3x3
// convolutions among them, which run as fast blocked as channels-last)
// can then write their blocks straight into the module's blocked output.
bool BranchOfBlockedJoin(const Plan& plan, const Instruction* c) {
  if (!DnnlConvEligible(*c) || c->window.dimensions.size() != 2 || c->feature_group_count != 1) return false;
  if (c->conv_dnums.input_feature_dimension != 3) return false;
  int64_t in_channels = c->operand(0)->shape().dims[3], out_channels = c->operand(1)->shape().dims[0];
  if (in_channels % 16 != 0 || out_channels % 16 != 0) return false;
  for (const Instruction* u : plan.users(plan.ResultOf(c)))
    if (u->opcode() == Opcode::kConcatenate) return true;
  return false;
}

// Whether u is a convolution that runs blocked with v as its source (and
// not also its weights).
bool SourceOfBlocked(const absl::flat_hash_set<const Instruction*>& runs_blocked, const Instruction* u,
                     const Instruction* v) {
  return runs_blocked.contains(u) && u->operand(0) == v && u->operand(1) != v;
}

// The channel block of each blocked value, and the channels-first sources
// of `stems` whose results stay blocked (PlanBlockedLayouts' last steps).
void AssignChannelBlocks(const absl::flat_hash_set<const Instruction*>& runs_blocked,
                         const absl::flat_hash_set<Instruction*>& movers,
                         const absl::flat_hash_set<const Instruction*>& stems, Plan* plan) {
  auto& blocked = plan->blocked;
  // Values take blocks of 16 channels where their count allows, else 8.
  // A convolution runs on one block size, a residual shares its result's
  // bytes, and a mover's operands and result share a layout: where the
  // two sides of any of these differ, both take 8 (every blocked count is
  // a multiple of 8), until none differ.
  auto same_block = [&](const Instruction* a, const Instruction* b) {
    auto x = blocked.find(a), y = blocked.find(b);
    if (x == blocked.end() || y == blocked.end() || x->second == y->second) return false;
    x->second = y->second = 8;
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (Instruction* c : plan->order()) {
      if (movers.contains(c)) {
        for (Instruction* op : MovedOperands(c))
          if (same_block(op, c)) changed = true;
      }
      if (!runs_blocked.contains(c)) continue;
      if (same_block(c->operand(0), plan->ResultOf(c))) changed = true;
      const Epilogue* e = plan->EpilogueOf(c);
      if (e && e->residual && same_block(e->residual, plan->ResultOf(c))) changed = true;
    }
  }
  // A stem whose result stays blocked reads the value its source
  // transposes, channels-first, and the transpose is never made; one
  // whose result stays plain reads the transpose.
  for (Instruction* c : plan->order()) {
    if (!stems.contains(c) || !blocked.contains(plan->ResultOf(c))) continue;
    Instruction* t = c->operand(0);
    std::optional<StridedView> v = Apply(*t, StridedView::RowMajor(t->operand(0)->shape().dims));
    if (!v) continue;
    plan->dot_views.of[c][0] = PlannedView{t->operand(0), *v};
    plan->dot_views.replaced.insert(t);
  }
}

// Only the layout of a group blocked for nothing would change twice:
// where no convolution producing or reading a member as its source runs
// blocked on both sides, or runs Winograd's algorithm (which changes
// layouts anyway), the group stays plain. (At batch 1, MobileNet's 1x1
// convolutions each sit between a depthwise one, which runs plain there,
// and a value they would block.)
void DropGroupsBlockedForNothing(const absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>>& groups,
                                 const absl::flat_hash_map<const Instruction*, const Instruction*>& producer,
                                 const absl::flat_hash_set<const Instruction*>& runs_blocked,
                                 const absl::flat_hash_set<const Instruction*>& stems, bool allow_winograd,
                                 Plan* plan) {
  auto& blocked = plan->blocked;
  auto winograd = [&](const Instruction* c) {
    return DnnlConvRunsWinograd(*c, c->operand(1)->opcode() == Opcode::kConstant, allow_winograd);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [g, members] : groups) {
      if (!blocked.contains(members[0])) continue;
      bool pays = false;
      for (const Instruction* v : members) {
        const Instruction* c = producer.at(v);
        // A stem pays by itself: its source's transpose is never made.
        if (c->opcode() == Opcode::kConvolution &&
            (winograd(c) || blocked.contains(c->operand(0)) || stems.contains(c)))
          pays = true;
        for (Instruction* u : plan->users(v))
          if (SourceOfBlocked(runs_blocked, u, v) && (winograd(u) || blocked.contains(plan->ResultOf(u)))) pays = true;
      }
      if (!pays) {
        for (const Instruction* v : members) blocked.erase(v);
        changed = true;
      }
    }
  }
}

}  // namespace

// Results of convolutions that run faster on oneDNN's blocked layout
// (DnnlConvRunsBlocked) stay in it when every reader is such a
// convolution, reading it as its source or as the residual its epilogue
// adds, or a mover (MovesBlocked) whose operands and result all stay
// blocked: a ResNet stage's 1x1 and Winograd convolutions, and a fire or
// inception module's branches, concatenation and pools, then pass blocked
// activations along and never change layouts between them. A convolution
// with a residual writes its result over the residual's bytes, so the two
// must share a layout; where they would not, both stay plain. Elsewhere
// (the first convolution after an elementwise op, the last before one)
// the convolution changes the layout on its way in or out.
void PlanBlockedLayouts(const CompileOptions& options, Plan* plan) {
  Instruction* root = plan->root();
  auto& blocked = plan->blocked;
  absl::flat_hash_set<const Instruction*> runs_blocked;
  absl::flat_hash_set<const Instruction*> stems;  // of them, those that can read channels-first
  absl::flat_hash_set<Instruction*> movers;
  for (Instruction* c : plan->order()) {
    if (MovesBlocked(*plan, c) && !plan->AbsorbedInto(c)) movers.insert(c);
    if (c->opcode() != Opcode::kConvolution) continue;
    bool constant_weights = c->operand(1)->opcode() == Opcode::kConstant;
    if (DnnlConvRunsBlocked(*c, constant_weights, options.winograd) || BranchOfBlockedJoin(*plan, c))
      runs_blocked.insert(c);
    // A stem writes blocked results from its channels-first source.
    if (DnnlConvReadsChannelsFirst(*c) && plan->users(c->operand(0)).size() == 1 &&
        plan->Materialized(c->operand(0)->operand(0))) {
      runs_blocked.insert(c);
      stems.insert(c);
    }
  }
  // The candidates: results of such convolutions and of movers that only
  // such convolutions (as their source or their residual) and movers read.
  absl::flat_hash_map<const Instruction*, const Instruction*> producer;  // candidate -> its convolution or mover
  auto readers_take_blocks = [&](const Instruction* v) {
    for (Instruction* u : plan->users(v)) {
      if (SourceOfBlocked(runs_blocked, u, v) || movers.contains(u)) continue;
      const Instruction* a = plan->AbsorbedInto(u);
      if (a && runs_blocked.contains(a) && plan->EpilogueOf(a)->residual == v) continue;
      return false;
    }
    return true;
  };
  for (Instruction* c : plan->order()) {
    if (!runs_blocked.contains(c) && !movers.contains(c)) continue;
    const Instruction* v = plan->ResultOf(c);
    if (v == root || v->shape().dims != c->shape().dims || !readers_take_blocks(v)) continue;
    producer[v] = c;
  }
  // A mover runs blocked only with its operands and result all blocked:
  // drop movers missing one, and the values only they kept, until none does.
  for (bool changed = true; changed;) {
    changed = false;
    for (Instruction* m : movers) {
      if (!producer.contains(m)) continue;
      bool whole = true;
      for (Instruction* op : MovedOperands(m)) whole &= producer.contains(op);
      if (whole) continue;
      producer.erase(m);
      changed = true;
    }
    for (auto it = producer.begin(); it != producer.end();) {
      bool keeps = true;
      for (Instruction* u : plan->users(it->first))
        if (movers.contains(u) && !producer.contains(u)) keeps = false;
      if (keeps) {
        ++it;
      } else {
        producer.erase(it++);
        changed = true;
      }
    }
  }
  // A residual and the result written over it share a layout, so values
  // linked by residuals (a ResNet stage's outputs) form one group, blocked
  // as a whole or not at all; so do a mover's operands and result.
  absl::flat_hash_map<const Instruction*, const Instruction*> parent;
  auto find = [&](const Instruction* v) {
    while (true) {
      auto p = parent.find(v);
      if (p == parent.end() || p->second == v) return v;
      v = p->second;
    }
  };
  auto link = [&](const Instruction* a, const Instruction* b) {
    const Instruction *x = find(a), *y = find(b);
    if (x != y) parent[x] = y;
  };
  absl::flat_hash_set<const Instruction*> linked;  // every value a residual links
  for (Instruction* c : plan->order()) {
    if (movers.contains(c) && producer.contains(c))
      for (Instruction* op : MovedOperands(c)) link(op, c);
    const Epilogue* e = plan->EpilogueOf(c);
    if (!e || !e->residual || !runs_blocked.contains(c)) continue;
    linked.insert(plan->ResultOf(c));
    linked.insert(e->residual);
    link(plan->ResultOf(c), e->residual);
  }
  // Members include values that are only residuals (a pool's result read
  // by the first block of a stage): a group with one stays plain.
  absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>> groups;  // root -> members
  for (Instruction* i : plan->order())
    if (producer.contains(i) || linked.contains(i)) groups[find(i)].push_back(i);
  for (const auto& [g, members] : groups)
    if (std::all_of(members.begin(), members.end(), [&](const Instruction* v) { return producer.contains(v); }))
      for (const Instruction* v : members) blocked[v] = DnnlChannelBlock(v->shape().dims[3]);
  DropGroupsBlockedForNothing(groups, producer, runs_blocked, stems, options.winograd, plan);
  AssignChannelBlocks(runs_blocked, movers, stems, plan);
}

namespace {

// Whether v's shape can be kept blocked: a rank-4 channels-last f32 value
// of whole blocks, not the program's result.
bool BlockableShape(const Plan& plan, const Instruction* v) {
  const hlo::Shape& s = v->shape();
  return v != plan.root() && s.IsArray() && s.rank() == 4 && s.element_type == hlo::F32 &&
         DnnlChannelBlock(s.dims[3]) != 0;
}

}  // namespace

// Values stay blocked through elementwise loops and global pools too: a
// depthwise convolution's blocked result read by a squeeze-excitation
// block's pool and by the loop that scales it, whose result the
// projection after it reads, never changes layout on the way. A
// candidate is the result of a convolution running on a blocked source
// (with no residual, whose layout its result shares) or of a fusion; it
// stays one while every reader takes it blocked with its block: a fusion
// whose result is blocked alike (its loop then runs in blocked order,
// reading its broadcasts through strides), a global pool
// (FastReduceTakesBlocked), or a convolution that runs faster blocked
// reading it as its source. A fusion's result stays one only while its
// other inputs of its shape are blocked alike.
void PlanBlockedLoops(const CompileOptions& options, Plan* plan) {
  auto& blocked = plan->blocked;
  const auto& fusions = plan->fusions;
  absl::flat_hash_map<const Instruction*, int> candidates;              // value -> its block
  absl::flat_hash_map<const Instruction*, const Instruction*> conv_of;  // candidate -> the convolution writing it
  absl::flat_hash_map<const Instruction*, std::vector<Instruction*>> inputs_of;  // candidate fusion -> its inputs
  auto block_of = [&](const Instruction* v) {
    if (int b = plan->BlockOf(v)) return b;
    auto c = candidates.find(v);
    return c == candidates.end() ? 0 : c->second;
  };
  for (Instruction* i : plan->order()) {
    if (i->opcode() == Opcode::kConvolution && !plan->integer_products.of.contains(i)) {
      const Instruction* v = plan->ResultOf(i);
      int b = plan->BlockOf(i->operand(0));
      const Epilogue* e = plan->EpilogueOf(i);
      if (b && !blocked.contains(v) && BlockableShape(*plan, v) && v->shape().dims[3] % b == 0 && !(e && e->residual)) {
        candidates[v] = b;
        conv_of[v] = i;
      }
    }
    if (!plan->IsGroupRoot(i) || blocked.contains(i) || !BlockableShape(*plan, i)) continue;
    // The block of its inputs of its shape, where one has one.
    std::vector<Instruction*> inputs = plan->FusionInputs(fusions.group_of.at(i));
    int b = DnnlChannelBlock(i->shape().dims[3]);
    for (const Instruction* in : inputs)
      if (int ib = in->shape().dims == i->shape().dims ? block_of(in) : 0) b = ib;
    candidates[i] = b;
    inputs_of[i] = std::move(inputs);
  }
  auto reader_takes = [&](const Instruction* v, int b, const Instruction* u) {
    if (auto g = fusions.group_of.find(u); g != fusions.group_of.end())
      return u->shape().dims == v->shape().dims && block_of(fusions.groups[g->second].back()) == b;
    if (u->opcode() == Opcode::kReduce)
      return u->operand(0) == v && FastReduceTakesBlocked(*u) && plan->RowGroupOf(u) < 0 && !plan->AbsorbedInto(u);
    if (u->opcode() != Opcode::kConvolution || u->operand(0) != v || u->operand(1) == v) return false;
    if (plan->integer_products.of.contains(u) || !DnnlConvEligible(*u) || u->window.dimensions.size() != 2 ||
        u->conv_dnums.input_feature_dimension != 3)
      return false;
    int result_block = block_of(plan->ResultOf(u));
    if (result_block) return result_block == b;
    return DnnlConvRunsBlocked(*u, u->operand(1)->opcode() == Opcode::kConstant, options.winograd);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = candidates.begin(); it != candidates.end();) {
      const Instruction* v = it->first;
      const int b = it->second;
      bool keeps = true;
      for (const Instruction* u : plan->users(v)) keeps = keeps && reader_takes(v, b, u);
      if (auto f = inputs_of.find(v); keeps && f != inputs_of.end()) {
        for (const Instruction* in : f->second) {
          if (fusions.absorbed_reads.contains(in)) {
            keeps = keeps && in->opcode() == Opcode::kBroadcast;
          } else if (in->shape().ElementCount() != 1) {
            keeps = keeps && in->shape().dims == v->shape().dims && block_of(in) == b;
          }
        }
      }
      if (auto c = conv_of.find(v); keeps && c != conv_of.end()) keeps = block_of(c->second->operand(0)) == b;
      if (keeps) {
        ++it;
      } else {
        candidates.erase(it++);
        changed = true;
      }
    }
  }
  for (const auto& [v, b] : candidates) blocked[v] = b;
}

}  // namespace xonnx::cpu
