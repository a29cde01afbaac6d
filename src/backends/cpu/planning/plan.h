// The CPU compiler's plan (internal header): the entry computation in
// program order, and every decision the planners make about it, read by
// buffer assignment and thunk emission through named queries. Each planner
// writes only its own part (XLA keeps fusion, buffer assignment and thunk
// emission apart the same way); the queries combine the parts.
#ifndef XONNX_BACKENDS_CPU_PLANNING_PLAN_H_
#define XONNX_BACKENDS_CPU_PLANNING_PLAN_H_

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "backends/cpu/kernels/strided_view.h"
#include "backends/cpu/runtime/executable.h"
#include "backends/cpu/runtime/thunks.h"
#include "hlo/ir.h"

namespace xonnx::cpu {

// A row fusion's members and how it reads and writes (see PlanRowFusions).
struct RowGroup {
  std::vector<hlo::Instruction*> members;  // program order
  std::vector<hlo::Instruction*> inputs;   // the values read from outside, in spec order
  std::vector<hlo::Instruction*> outputs;  // members read outside, in spec order
  std::vector<hlo::Instruction*> views;    // the reshapes and broadcasts it reads through
  RowFusionSpec spec;
};

// A dot operand read in place through a strided view of another value.
struct PlannedView {
  hlo::Instruction* source;  // the materialized value the view reads
  StridedView view;
};

class Plan {
 public:
  // The entry computation of `module`, in program order.
  explicit Plan(hlo::Computation* entry);

  // --- the program ---
  const std::vector<hlo::Instruction*>& order() const { return order_; }
  // Runs the program in `order`, a permutation of order() in which every
  // step still comes after the steps that write what it reads (an op never
  // computed, such as the unpacking a packed product replaces, may come
  // after its readers). Only before the planners that record positions
  // (all but the packed products').
  void Reorder(std::vector<hlo::Instruction*> order);
  hlo::Instruction* root() const { return root_; }
  int64_t pos(const hlo::Instruction* i) const { return pos_.at(i); }
  const std::vector<hlo::Instruction*>& users(const hlo::Instruction* i) const { return users_.at(i); }

  // --- decisions, each written by one planner ---
  // oneDNN epilogues (PlanEpilogues): convolutions and dots that run their
  // users' bias, residual add and activation as post-ops.
  struct Epilogues {
    absl::flat_hash_map<const hlo::Instruction*, Epilogue> of;                 // conv or dot -> its epilogue
    absl::flat_hash_map<const hlo::Instruction*, hlo::Instruction*> last;      // conv or dot -> last absorbed op
    absl::flat_hash_map<const hlo::Instruction*, hlo::Instruction*> absorbed;  // absorbed op -> its conv or dot
    // Values only absorbed ops read (the bias broadcast, the relu zero):
    // never computed.
    absl::flat_hash_set<const hlo::Instruction*> unused;
  } epilogues;
  // Convolution results kept in oneDNN's blocked layout, with their channel
  // block (PlanBlockedLayouts).
  absl::flat_hash_map<const hlo::Instruction*, int> blocked;
  // Dot operands read through views (PlanDotViews), a stem's source read
  // channels-first under the layout pass's transpose (PlanBlockedLayouts),
  // and the ops those views replace, which are never computed.
  struct DotViewPlan {
    absl::flat_hash_map<const hlo::Instruction*, std::array<std::optional<PlannedView>, 2>> of;
    absl::flat_hash_set<const hlo::Instruction*> replaced;
  } dot_views;
  // Integer products that run on oneDNN's 8-bit primitives
  // (PlanIntegerProducts): their operands as 8-bit values, and the converts,
  // zero-point subtractions and views those replace, which are never
  // computed.
  struct IntegerProducts {
    absl::flat_hash_map<const hlo::Instruction*, std::array<NarrowOperand, 2>> of;
    absl::flat_hash_set<const hlo::Instruction*> replaced;
    // The 8-bit values and zero points the primitives read: each must
    // have a buffer of its own, not be folded into a fusion.
    absl::flat_hash_set<const hlo::Instruction*> read;
  } integer_products;
  // Products by block-quantized weights that read them packed
  // (PlanPackedProducts): the unpacking and dequantizing ops they replace
  // are never computed; the packed bytes, scales and zero points they read
  // each keep a buffer of their own.
  struct PackedProducts {
    absl::flat_hash_map<const hlo::Instruction*, PackedWeights> of;
    absl::flat_hash_set<const hlo::Instruction*> replaced;
    absl::flat_hash_set<const hlo::Instruction*> read;
    // Products of one activation run as one step (PlanSiblingProducts):
    // each group's members are adjacent in program order, and the step
    // runs at the first, which writes every member's result.
    std::vector<std::vector<hlo::Instruction*>> groups;
    absl::flat_hash_map<const hlo::Instruction*, int> group_of;
  } packed_products;
  // Elementwise fusions (PlanFusions): groups in operand-first order, the
  // last member being the group's root.
  struct Fusions {
    std::vector<std::vector<hlo::Instruction*>> groups;
    absl::flat_hash_map<const hlo::Instruction*, int> group_of;
    // Broadcasts, slices and concatenations only fusions read: each fusion
    // reads their operands' buffers instead (through strides, or part by
    // part), and they are never stored.
    absl::flat_hash_set<const hlo::Instruction*> absorbed_reads;
  } fusions;
  // Row fusions (PlanRowFusions).
  struct RowFusions {
    std::vector<RowGroup> groups;
    absl::flat_hash_map<const hlo::Instruction*, int> group_of;
    absl::flat_hash_map<const hlo::Instruction*, int64_t> views;     // view -> last emit position reading it
    absl::flat_hash_map<const hlo::Instruction*, int64_t> internal;  // view only row fusions read -> that position
  } row_fusions;

  // Runs of the program whose two parts run at once, one per thread
  // (PlanConcurrentBranches): the steps at positions [first, split) read
  // nothing the steps at [split, last] write, and the other way round.
  struct Branches {
    int64_t first, split, last;
  };
  std::vector<Branches> concurrent;

  // --- queries ---
  // Whether i's value is written to a buffer of its own (or aliases one):
  // not folded into a fusion, an epilogue or a view.
  bool Materialized(const hlo::Instruction* i) const;
  // Whether a step of the program (one thunk, or a few for one oneDNN
  // primitive) runs at i: i's own kernel, or the fusion, row fusion or
  // epilogue i ends.
  bool RunsStep(const hlo::Instruction* i) const;
  // Whether i is the last member (the result) of an elementwise fusion.
  bool IsGroupRoot(const hlo::Instruction* i) const;
  // The members of elementwise fusion `group` in program order, and the
  // values they read from outside it (its inputs), each once, in the order
  // those members first read them.
  std::vector<hlo::Instruction*> FusionMembers(int group) const;
  std::vector<hlo::Instruction*> FusionInputs(int group) const;
  // Whether the epilogues planned so far leave i's value in a buffer: not
  // a conv or dot whose epilogue writes its result, nor an op folded into
  // one before its last.
  bool KeptByEpilogues(const hlo::Instruction* i) const;
  // The epilogue of a conv or dot, or null.
  const Epilogue* EpilogueOf(const hlo::Instruction* op) const;
  // The conv or dot an absorbed op belongs to, or null.
  const hlo::Instruction* AbsorbedInto(const hlo::Instruction* i) const;
  // The value a convolution or dot writes: its epilogue's last op, or itself.
  const hlo::Instruction* ResultOf(const hlo::Instruction* op) const;
  // The channel block of a value kept in oneDNN's blocked layout, or 0.
  int BlockOf(const hlo::Instruction* v) const;
  // Where a convolution keeps its source and result.
  ConvLayouts LayoutsOf(const hlo::Instruction* conv) const;
  // The views a dot reads its operands through.
  DotViews ViewsOf(const hlo::Instruction* dot) const;
  // The index of the row fusion i is a member of, or -1.
  int RowGroupOf(const hlo::Instruction* i) const;
  // The index of the group of packed products i is a member of, or -1.
  int PackedGroupOf(const hlo::Instruction* i) const;
  // Where i's value is written: at the step of its group of packed
  // products, else at i.
  int64_t WrittenAt(const hlo::Instruction* i) const;
  // Values a oneDNN primitive reads that are not operands of its anchor:
  // an epilogue's bias and residual (operands of the broadcast and adds,
  // which are never emitted), the sources of a dot's views and an integer
  // product's 8-bit operands and zero points. The
  // primitive reads them when it runs, so they live until then.
  std::vector<const hlo::Instruction*> HiddenReads(const hlo::Instruction* i) const;
  // Where in the program `user` reads its operands: a fused or absorbed op
  // reads them when its fusion or primitive runs, and a row fusion reads
  // the value under a view it reads through when it runs.
  int64_t UsePoint(const hlo::Instruction* user) const;
  // The same without the row fusions' reads through views.
  int64_t DirectUsePoint(const hlo::Instruction* user) const;
  // The positions of the steps that write the bytes a read of x reads: the
  // step that writes x's buffer (a row fusion writes all its outputs when
  // it runs, at its last member), or, for a value read in place (an alias,
  // a view, an absorbed read such as a concatenation read part by part),
  // those of every value under it. None for constants and parameters, which
  // no step writes. Never after the UsePoint of a reader of x.
  std::vector<int64_t> WritingSteps(const hlo::Instruction* x) const;

  // Whether `view` (not the root) is read only by `reader`s, directly or
  // through other views (`is_view`) read the same way.
  template <typename IsView, typename IsReader>
  bool OnlyReadThroughViews(const hlo::Instruction* view, const IsView& is_view, const IsReader& reader) const {
    if (view == root_ || !is_view(view)) return false;
    for (hlo::Instruction* u : users(view))
      if (!reader(u) && !OnlyReadThroughViews(u, is_view, reader)) return false;
    return true;
  }

 private:
  std::vector<hlo::Instruction*> order_;
  hlo::Instruction* root_;
  absl::flat_hash_map<const hlo::Instruction*, int64_t> pos_;
  absl::flat_hash_map<const hlo::Instruction*, std::vector<hlo::Instruction*>> users_;
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_PLANNING_PLAN_H_
