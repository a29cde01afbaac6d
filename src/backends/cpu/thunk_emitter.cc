#include "backends/cpu/thunk_emitter.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/kernel_table.h"
#include "base/status.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

std::vector<BufferRef> EmitContext::InputsOf(const Instruction* i) const {
  std::vector<BufferRef> in;
  if (auto n = plan.integer_products.of.find(i); n != plan.integer_products.of.end()) {
    for (const NarrowOperand& o : n->second)
      for (const Instruction* x : {o.source, o.zero_point})
        if (x) in.push_back(LeavesOf(x).at(0));
    return in;
  }
  if (auto p = plan.packed_products.of.find(i); p != plan.packed_products.of.end()) {
    in.push_back(LeavesOf(i->operand(0)).at(0));
    for (const Instruction* x : {p->second.packed, p->second.scales, p->second.zeros})
      if (x) in.push_back(LeavesOf(x).at(0));
    return in;
  }
  auto v = plan.dot_views.of.find(i);
  for (int64_t k = 0; k < i->operand_count(); ++k) {
    bool viewed = v != plan.dot_views.of.end() && v->second[k];
    for (const BufferRef& r : LeavesOf(viewed ? v->second[k]->source : i->operand(k))) in.push_back(r);
  }
  return in;
}

namespace {

// Whether a value has no elements at all (an array, or a tuple of such).
bool Empty(const hlo::Shape& s) {
  if (s.IsArray()) return s.ElementCount() == 0;
  if (s.tuple_shapes.empty()) return false;
  for (const hlo::Shape& e : s.tuple_shapes)
    if (!Empty(e)) return false;
  return true;
}

class Emitter {
 public:
  explicit Emitter(const EmitContext& ctx) : ctx_(ctx), plan_(ctx.plan) {
    for (const Instruction* i : plan_.order())
      if (const Instruction* op = plan_.AbsorbedInto(i)) absorbed_by_[op].push_back(i);
  }

  absl::StatusOr<EmittedThunks> Run() {
    for (Instruction* i : plan_.order()) RETURN_IF_ERROR(Emit(i));
    return std::move(out_);
  }

 private:
  void Add(Thunk t, std::string kind) {
    if (current_) Label(&t);
    out_.kinds.push_back(t.kind.empty() ? std::move(kind) : t.kind);
    out_.positions.push_back(current_ ? plan_.pos(current_) : -1);
    out_.writes.push_back(current_ ? Writes(current_) : "");
    out_.thunks.push_back(std::move(t));
  }

  // The ONNX nodes a step computes, in program order: a fused convolution
  // and ReLU is "Conv+Relu" with both nodes' names, so that a profile puts
  // its time under both instead of under the last.
  void Label(Thunk* t) {
    std::vector<const Instruction*> covered;
    if (int rg = plan_.RowGroupOf(current_); rg >= 0) {
      const auto& m = plan_.row_fusions.groups[rg].members;
      covered.assign(m.begin(), m.end());
    } else if (const Instruction* op = plan_.AbsorbedInto(current_)) {
      covered.push_back(op);
      if (auto a = absorbed_by_.find(op); a != absorbed_by_.end())
        covered.insert(covered.end(), a->second.begin(), a->second.end());
    } else if (plan_.IsGroupRoot(current_)) {
      for (const Instruction* m : plan_.FusionMembers(plan_.fusions.group_of.at(current_))) covered.push_back(m);
    } else if (int pg = plan_.PackedGroupOf(current_); pg >= 0) {
      const auto& m = plan_.packed_products.groups[pg];
      covered.assign(m.begin(), m.end());
    }
    covered.push_back(current_);
    // A fused loop may cover a whole chain of thousands of nodes: linear in
    // them, and the label names the first few.
    constexpr size_t kNamed = 4;
    std::vector<std::string> types, names;
    absl::flat_hash_set<std::string> seen_types, seen_names;
    for (const Instruction* c : covered) {
      const hlo::OpMetadata& md = c->metadata;
      if (md.op_name.empty() || md.op_type == hlo::kWeightParameterOpType) continue;
      if (!seen_names.insert(md.op_name).second) continue;
      if (names.size() < kNamed) names.push_back(md.op_name);
      if (seen_types.insert(md.op_type).second && types.size() < kNamed) types.push_back(md.op_type);
    }
    t->op_type = absl::StrCat(absl::StrJoin(types, "+"), seen_types.size() > kNamed ? "+..." : "");
    t->op_name = absl::StrJoin(names, " + ");
    if (seen_names.size() > kNamed) absl::StrAppend(&t->op_name, " + ", seen_names.size() - kNamed, " more");
  }

  // Where the step at i writes its value in the arena (a group of packed
  // products, every member's).
  std::string Writes(const Instruction* i) const {
    if (int pg = plan_.PackedGroupOf(i); pg >= 0 && plan_.packed_products.groups[pg].front() == i) {
      std::vector<std::string> all;
      for (const Instruction* m : plan_.packed_products.groups[pg]) all.push_back(WritesOf(m));
      return absl::StrJoin(all, " ");
    }
    return WritesOf(i);
  }
  std::string WritesOf(const Instruction* i) const {
    auto l = ctx_.buffers.leaves.find(i);
    if (l == ctx_.buffers.leaves.end()) return "";
    std::vector<hlo::Shape> shapes =
        i->shape().IsTuple() ? i->shape().tuple_shapes : std::vector<hlo::Shape>{i->shape()};
    std::string out;
    for (size_t k = 0; k < l->second.size() && k < shapes.size(); ++k)
      if (l->second[k].kind == BufferRef::kArena)
        absl::StrAppend(&out, out.empty() ? "" : " ", "[", l->second[k].index, ", ",
                        l->second[k].index + shapes[k].ByteSize(), ")");
    return out;
  }

  // The thunk that computes i, if i is where a step of the plan runs.
  absl::Status Emit(Instruction* i) {
    current_ = i;
    if (!plan_.RunsStep(i)) return absl::OkStatus();
    if (int rg = plan_.RowGroupOf(i); rg >= 0) return EmitRowFusion(plan_.row_fusions.groups[rg]);
    if (const Instruction* op = plan_.AbsorbedInto(i)) return EmitWithEpilogue(op, i);
    if (plan_.IsGroupRoot(i)) return EmitFusion(i);
    if (int pg = plan_.PackedGroupOf(i); pg >= 0) return EmitPackedGroup(plan_.packed_products.groups[pg]);
    return EmitFromTable(i);
  }

  // Packed products of one activation, at the first: it writes every
  // member's result (buffer assignment defines them there).
  absl::Status EmitPackedGroup(const std::vector<Instruction*>& members) {
    std::vector<const Instruction*> dots;
    std::vector<ThunkIo> io;
    std::vector<const PackedWeights*> weights;
    for (const Instruction* m : members) {
      dots.push_back(m);
      io.push_back({ctx_.InputsOf(m), ctx_.LeavesOf(m)});
      weights.push_back(&plan_.packed_products.of.at(m));
    }
    if (std::optional<Thunk> t = MakePackedGroupThunk(dots, io, weights)) {
      Add(*std::move(t), "packed-matmul");
      return absl::OkStatus();
    }
    // Members that read the activation through buffers of their own (a
    // reshape copied): each on its own, all here.
    for (size_t m = 0; m < dots.size(); ++m) {
      std::optional<Thunk> t = MakePackedDotThunk(*dots[m], io[m], *weights[m]);
      if (!t)
        return Internal("%s: a product planned on packed weights has operands the kernel does not take",
                        dots[m]->name());
      Add(*std::move(t), "packed-matmul");
    }
    return absl::OkStatus();
  }

  // The first kernel of i's row in the kernel table that takes its form;
  // nothing to run for a result without elements, whatever the opcode.
  absl::Status EmitFromTable(const Instruction* i) {
    if (Empty(i->shape())) {
      Thunk t;
      t.name = i->name();
      t.run = [](Frame&) { return absl::OkStatus(); };
      Add(std::move(t), "empty");
      return absl::OkStatus();
    }
    ThunkIo io{ctx_.InputsOf(i), ctx_.LeavesOf(i)};
    absl::Span<const KernelMaker> makers = KernelMakersFor(i->opcode());
    // The reference device takes each row's last maker: the reference
    // kernel, or the evaluator for control flow.
    if (ctx_.options.reference) makers = makers.last(1);
    for (const KernelMaker& maker : makers) {
      ASSIGN_OR_RETURN(std::optional<Thunk> t, maker.make(ctx_, *i, io));
      if (!t) continue;
      if (t->name.empty()) t->name = i->name();
      Add(*std::move(t), maker.kind);
      return absl::OkStatus();
    }
    return Internal("%s: no kernel in the table takes this %s", i->name(), hlo::OpcodeName(i->opcode()));
  }

  // The conv or dot and its epilogue in one oneDNN primitive. The planner
  // only chose forms oneDNN takes, so a refusal is an internal error.
  absl::Status EmitWithEpilogue(const Instruction* op, const Instruction* last) {
    bool conv = op->opcode() == Opcode::kConvolution;
    ThunkIo io{ctx_.InputsOf(op), ctx_.LeavesOf(last)};
    const Epilogue& e = *plan_.EpilogueOf(op);
    if (e.bias) io.inputs.push_back(ctx_.LeavesOf(e.bias).at(0));
    if (e.residual) io.inputs.push_back(ctx_.LeavesOf(e.residual).at(0));
    const Instruction* w = op->operand(1);
    const hlo::Literal* cw = w->opcode() == Opcode::kConstant ? &*w->literal : nullptr;
    std::optional<Thunk> t =
        conv ? MakeDnnlConvThunk(*op, io, cw, e, ctx_.options.winograd, plan_.LayoutsOf(op), ctx_.keep_alive)
             : MakeDnnlDotThunk(*op, io, cw, e, plan_.ViewsOf(op), ctx_.keep_alive);
    if (!t)
      return Unimplemented("%s: oneDNN rejected a %s it was planned for", op->name(), conv ? "convolution" : "dot");
    Add(*std::move(t), conv ? "dnnl-conv" : "dnnl-matmul");
    return absl::OkStatus();
  }

  // A row fusion, emitted at its last member in program order.
  absl::Status EmitRowFusion(const RowGroup& group) {
    ThunkIo io;
    for (const Instruction* in : group.inputs) {
      auto l = ctx_.buffers.leaves.find(in);
      if (l == ctx_.buffers.leaves.end() || l->second.empty())
        return Internal("row fusion at %s reads %s, which no kernel writes", group.members.back()->name(), in->name());
      io.inputs.push_back(l->second[0]);
    }
    for (const Instruction* out : group.outputs) io.outputs.push_back(ctx_.LeavesOf(out).at(0));
    ASSIGN_OR_RETURN(Thunk t, MakeRowFusionThunk(group.spec, io));
    Add(std::move(t), "row-fusion");
    return absl::OkStatus();
  }

  // A fused elementwise loop, emitted at its root; a broadcast, slice or
  // concatenation absorbed into it is read from its operands' buffers.
  absl::Status EmitFusion(const Instruction* root) {
    int g = plan_.fusions.group_of.at(root);
    FusionSpec spec;
    for (const Instruction* m : plan_.FusionMembers(g)) spec.members.push_back(m);
    ThunkIo io;
    for (const Instruction* op : plan_.FusionInputs(g)) {
      spec.inputs.push_back(op);
      bool absorbed = plan_.fusions.absorbed_reads.contains(op);
      spec.strided.push_back(absorbed);
      // An absorbed read's buffers are its operands' (a broadcast's or
      // slice's one, a concatenation's parts).
      if (!absorbed)
        io.inputs.push_back(ctx_.LeavesOf(op).at(0));
      else
        for (const Instruction* buffer : op->operands()) io.inputs.push_back(ctx_.LeavesOf(buffer).at(0));
    }
    io.outputs = ctx_.LeavesOf(root);
    // A blocked loop reads its inputs of its shape in its own order: the
    // planner blocks them all alike, or none.
    spec.block = plan_.BlockOf(root);
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const Instruction* in = spec.inputs[k];
      if (!spec.strided[k] && in->shape().ElementCount() != 1 && plan_.BlockOf(in) != spec.block)
        return Internal("fusion at %s is planned on blocks of %d channels but reads %s in blocks of %d", root->name(),
                        spec.block, in->name(), plan_.BlockOf(in));
    }
    ASSIGN_OR_RETURN(Thunk t, MakeFusionThunk(spec, io));
    Add(std::move(t), "fusion");
    return absl::OkStatus();
  }

  const EmitContext& ctx_;
  const Plan& plan_;
  EmittedThunks out_;
  const Instruction* current_ = nullptr;  // the instruction being emitted
  // A convolution's or product's epilogue ops, in program order.
  absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>> absorbed_by_;
};

}  // namespace

absl::StatusOr<EmittedThunks> EmitThunks(const EmitContext& ctx) { return Emitter(ctx).Run(); }

}  // namespace xonnx::cpu
