// Control flow on the CPU backend: while loops and conditionals whose
// computations compile as programs of their own, and the reference
// evaluator's kernels for what no native kernel runs yet.
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/kernel_table.h"
#include "base/status.h"
#include "evaluator/evaluator.h"
#include "evaluator/kernels.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// A copy of the module whose entry is `comp` with its tuple parameter
// split into one parameter per element, compiled on its own.
absl::StatusOr<std::shared_ptr<Executable>> CompileFlattened(const EmitContext& ctx, const hlo::Computation* comp) {
  std::unique_ptr<hlo::Module> m = ctx.module.Clone();
  hlo::Computation* c = nullptr;
  for (const auto& k : m->computations())
    if (k->name() == comp->name()) c = k.get();
  if (!c || c->num_parameters() != 1 || !c->parameter(0)->shape().IsTuple())
    return Unimplemented("%s: not a single tuple parameter", comp->name());
  Instruction* p = c->parameter(0);
  const auto& shapes = p->shape().tuple_shapes;
  std::vector<Instruction*> params;
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (!shapes[k].IsArray()) return Unimplemented("%s: nested tuple state", comp->name());
    auto np = std::make_unique<Instruction>(Opcode::kParameter, shapes[k]);
    np->parameter_number = k + 1;  // renumbered once the tuple parameter is gone
    np->set_name(absl::StrCat("state_", k));
    params.push_back(c->AddInstruction(std::move(np)));
  }
  std::vector<Instruction*> gtes;
  for (const auto& i : c->instructions())
    if (i->opcode() == Opcode::kGetTupleElement && i->operand(0) == p) gtes.push_back(i.get());
  for (Instruction* g : gtes) c->ReplaceAllUsesWith(g, params[g->tuple_index]);
  for (const auto& i : c->instructions())
    for (Instruction* op : i->operands())
      if (op == p && i->opcode() != Opcode::kGetTupleElement)
        return Unimplemented("%s: the state tuple is used whole", comp->name());
  if (c->root() == p) return Unimplemented("%s: returns its parameter", comp->name());
  c->Canonicalize();  // drops the replaced get-tuple-elements
  c->RemoveInstruction(p);
  for (Instruction* np : params) np->parameter_number -= 1;
  m->set_entry(c);
  m->RemoveUnreachableComputations();
  ASSIGN_OR_RETURN(std::unique_ptr<Executable> e, Executable::Compile(std::move(m), ctx.options));
  return std::shared_ptr<Executable>(std::move(e));
}

}  // namespace

// while: the condition and body run as compiled programs over two state
// buffers that swap every iteration.
absl::StatusOr<std::optional<Thunk>> MakeNativeWhileThunk(const EmitContext& ctx, const Instruction& instr,
                                                          const ThunkIo& io) {
  const Instruction* i = &instr;
  auto body = CompileFlattened(ctx, i->called_computations()[0]);
  auto cond = CompileFlattened(ctx, i->called_computations()[1]);
  if (!body.ok() || !cond.ok()) return std::nullopt;
  std::shared_ptr<Executable> b = *body, c = *cond;
  ctx.keep_alive->push_back(b);
  ctx.keep_alive->push_back(c);
  std::vector<int64_t> sizes;
  for (const hlo::Shape& s : i->shape().tuple_shapes) sizes.push_back(s.ByteSize());
  Thunk t;
  t.name = i->name();
  t.run = [b, c, io, sizes](Frame& f) -> absl::Status {
    size_t n = sizes.size();
    std::vector<std::vector<uint8_t>> cur(n), next(n);
    for (size_t k = 0; k < n; ++k) {
      cur[k].resize(std::max<int64_t>(sizes[k], 1));
      next[k].resize(std::max<int64_t>(sizes[k], 1));
      std::memcpy(cur[k].data(), f.Ptr(io.inputs[k]), sizes[k]);
    }
    std::vector<const void*> args(n);
    std::vector<void*> outs(n);
    while (true) {
      for (size_t k = 0; k < n; ++k) args[k] = cur[k].data();
      bool go = false;
      void* pred = &go;
      // Every iteration checks the call's bounds: a loop of 2^62 steps or
      // one whose condition never fails stops when told to.
      if (f.control()) RETURN_IF_ERROR(f.control()->Check());
      RETURN_IF_ERROR(c->Execute(args, absl::Span<void* const>(&pred, 1), f.control()));
      if (!go) break;
      for (size_t k = 0; k < n; ++k) outs[k] = next[k].data();
      RETURN_IF_ERROR(b->Execute(args, outs, f.control()));
      std::swap(cur, next);
    }
    for (size_t k = 0; k < n; ++k) std::memcpy(f.Ptr(io.outputs[k]), cur[k].data(), sizes[k]);
    return absl::OkStatus();
  };
  return t;
}

// conditional: every branch compiled as a program over the leaves of its
// operand; the predicate (true runs branch 0) or s32 index picks one per
// run, out-of-range indices the last branch (XLA's rule). Results go
// through scratch buffers because the arena may give an output the slot of
// an operand whose last use this is.
absl::StatusOr<std::optional<Thunk>> MakeNativeConditionalThunk(const EmitContext& ctx, const Instruction& instr,
                                                                const ThunkIo& io) {
  const Instruction* i = &instr;
  hlo::PrimitiveType selector = i->operand(0)->shape().element_type;
  if (selector != hlo::PRED && selector != hlo::S32) return std::nullopt;
  std::vector<std::shared_ptr<Executable>> branches;
  for (const hlo::Computation* c : i->called_computations()) {
    auto e = CompileFlattened(ctx, c);
    if (!e.ok()) return std::nullopt;
    branches.push_back(*std::move(e));
  }
  if (branches.size() + 1 != static_cast<size_t>(i->operand_count())) return std::nullopt;
  for (const auto& e : branches) ctx.keep_alive->push_back(e);
  std::vector<std::pair<size_t, size_t>> ranges;  // each branch operand's first leaf in io.inputs, and count
  for (size_t k = 1, at = 1; k < static_cast<size_t>(i->operand_count()); ++k) {
    size_t n = ctx.LeavesOf(i->operand(k)).size();
    ranges.push_back({at, n});
    at += n;
  }
  std::vector<int64_t> sizes;
  if (i->shape().IsTuple())
    for (const hlo::Shape& s : i->shape().tuple_shapes) sizes.push_back(s.ByteSize());
  else
    sizes.push_back(i->shape().ByteSize());
  if (sizes.size() != io.outputs.size()) return std::nullopt;
  Thunk t;
  t.name = i->name();
  t.run = [branches, ranges, sizes, io, selector](Frame& f) -> absl::Status {
    const void* sel = f.Ptr(io.inputs[0]);
    int64_t n = branches.size(), k;
    if (selector == hlo::PRED) {
      k = *static_cast<const bool*>(sel) ? 0 : 1;
    } else {
      k = *static_cast<const int32_t*>(sel);
      if (k < 0 || k >= n) k = n - 1;
    }
    std::vector<const void*> args;
    for (size_t j = 0; j < ranges[k].second; ++j) args.push_back(f.Ptr(io.inputs[ranges[k].first + j]));
    std::vector<std::vector<uint8_t>> scratch(sizes.size());
    std::vector<void*> outs;
    for (size_t j = 0; j < sizes.size(); ++j) {
      scratch[j].resize(std::max<int64_t>(sizes[j], 1));
      outs.push_back(scratch[j].data());
    }
    RETURN_IF_ERROR(branches[k]->Execute(args, outs, f.control()));
    for (size_t j = 0; j < sizes.size(); ++j) std::memcpy(f.Ptr(io.outputs[j]), scratch[j].data(), sizes[j]);
    return absl::OkStatus();
  };
  return t;
}

// Calls run on the reference evaluator (and control flow the native thunks
// decline): operands are copied into literals and the result leaves copied
// back.
absl::StatusOr<std::optional<Thunk>> MakeEvaluatorThunk(const EmitContext&, const Instruction& instr,
                                                        const ThunkIo& io) {
  const Instruction* i = &instr;
  Thunk t;
  t.name = i->name();
  t.run = [i, io](Frame& f) -> absl::Status {
    std::vector<hlo::Literal> vals;
    size_t leaf = 0;
    for (Instruction* op : i->operands()) {
      hlo::Literal l(op->shape());
      std::vector<void*> dst;
      if (l.shape().IsTuple())
        for (auto& e : l.tuple_elements()) dst.push_back(e.untyped_data());
      else
        dst.push_back(l.untyped_data());
      std::vector<hlo::Shape> shapes =
          op->shape().IsTuple() ? op->shape().tuple_shapes : std::vector<hlo::Shape>{op->shape()};
      for (size_t k = 0; k < dst.size(); ++k) std::memcpy(dst[k], f.Ptr(io.inputs[leaf++]), shapes[k].ByteSize());
      vals.push_back(std::move(l));
    }
    std::vector<const hlo::Literal*> ptrs;
    for (auto& v : vals) ptrs.push_back(&v);
    ASSIGN_OR_RETURN(hlo::Literal r, eval::EvaluateInstruction(*i, ptrs));
    if (r.shape().IsTuple()) {
      for (size_t k = 0; k < r.tuple_elements().size(); ++k)
        std::memcpy(f.Ptr(io.outputs[k]), r.tuple_elements()[k].untyped_data(), r.tuple_elements()[k].size_bytes());
    } else {
      std::memcpy(f.Ptr(io.outputs[0]), r.untyped_data(), r.size_bytes());
    }
    return absl::OkStatus();
  };
  return t;
}

absl::StatusOr<std::optional<Thunk>> MakeReferenceKernelThunk(const EmitContext&, const Instruction& instr,
                                                              const ThunkIo& io) {
  const Instruction* i = &instr;
  Thunk t;
  t.kind = absl::StrCat("kernel:", hlo::OpcodeName(i->opcode()));
  t.name = i->name();
  t.run = [i, io](Frame& f) -> absl::Status {
    std::vector<const void*> ins;
    for (const BufferRef& r : io.inputs) ins.push_back(f.Ptr(r));
    std::vector<void*> outs;
    for (const BufferRef& r : io.outputs) outs.push_back(f.Ptr(r));
    return eval::RunKernel(*i, ins, outs, [](const hlo::Computation& c, std::vector<hlo::Literal> args) {
      return eval::Evaluate(c, std::move(args));
    });
  };
  return t;
}

}  // namespace xonnx::cpu
