#include "evaluator/evaluator.h"

#include "absl/container/flat_hash_map.h"
#include "base/status.h"
#include "evaluator/kernels.h"

namespace xonnx::eval {

using hlo::Literal;
using hlo::Opcode;

namespace {

CallComputation Caller() {
  return [](const hlo::Computation& c, std::vector<Literal> args) { return Evaluate(c, std::move(args)); };
}

// Leaf buffers of a literal: its own data, or its tuple elements' data.
std::vector<void*> Leaves(Literal& l) {
  if (!l.shape().IsTuple()) return {l.untyped_data()};
  std::vector<void*> v;
  for (Literal& e : l.tuple_elements()) v.push_back(e.untyped_data());
  return v;
}

}  // namespace

absl::StatusOr<Literal> EvaluateInstruction(const hlo::Instruction& instr,
                                            const std::vector<const Literal*>& operands) {
  switch (instr.opcode()) {
    case Opcode::kTuple: {
      std::vector<Literal> elems;
      for (const Literal* l : operands) elems.push_back(*l);
      return Literal::MakeTuple(std::move(elems));
    }
    case Opcode::kGetTupleElement:
      return operands[0]->tuple_elements().at(instr.tuple_index);
    case Opcode::kCall: {
      std::vector<Literal> args;
      for (const Literal* l : operands) args.push_back(*l);
      return Evaluate(*instr.to_apply(), std::move(args));
    }
    case Opcode::kWhile: {
      const hlo::Computation* body = instr.called_computations()[0];
      const hlo::Computation* cond = instr.called_computations()[1];
      Literal state = *operands[0];
      while (true) {
        ASSIGN_OR_RETURN(Literal c, Evaluate(*cond, {state}));
        if (!c.data<bool>()[0]) break;
        ASSIGN_OR_RETURN(state, Evaluate(*body, {std::move(state)}));
      }
      return state;
    }
    case Opcode::kConditional: {
      const Literal& sel = *operands[0];
      int64_t n = instr.called_computations().size();
      int64_t branch;
      if (sel.shape().element_type == hlo::PRED) {
        branch = sel.data<bool>()[0] ? 0 : 1;
      } else {
        branch = sel.GetAsInt64(0);
        if (branch < 0 || branch >= n) branch = n - 1;  // XLA: out of range runs the last branch
      }
      return Evaluate(*instr.called_computations()[branch], {*operands[branch + 1]});
    }
    case Opcode::kParameter:
      return Internal("parameters are bound, not evaluated");
    case Opcode::kRngBitGenerator:
      return Unimplemented("the evaluator has no rng-bit-generator");
    default:
      break;
  }
  Literal out(instr.shape());
  std::vector<const void*> ops;
  for (const Literal* l : operands) ops.push_back(l->untyped_data());
  std::vector<void*> outs = Leaves(out);
  RETURN_IF_ERROR(RunKernel(instr, ops, outs, Caller()));
  return out;
}

absl::StatusOr<Literal> Evaluate(const hlo::Computation& c, std::vector<Literal> args) {
  std::vector<hlo::Instruction*> params = c.parameters();
  if (params.size() != args.size())
    return InvalidArgument("computation '%s' takes %d arguments, got %d", c.name(), params.size(), args.size());
  absl::flat_hash_map<const hlo::Instruction*, Literal> values;
  for (size_t k = 0; k < params.size(); ++k) {
    if (!args[k].shape().Compatible(params[k]->shape()))
      return InvalidArgument("argument %d of '%s' has shape %s, expected %s", k, c.name(), args[k].shape().ToString(),
                             params[k]->shape().ToString());
    values[params[k]] = std::move(args[k]);
  }
  // Free a value after its last use so large graphs stay within memory.
  absl::flat_hash_map<const hlo::Instruction*, int64_t> remaining_uses;
  for (const auto& i : c.instructions())
    for (hlo::Instruction* op : i->operands()) ++remaining_uses[op];
  for (const auto& i : c.instructions()) {
    if (i->opcode() == Opcode::kParameter) continue;
    std::vector<const Literal*> ops;
    for (hlo::Instruction* op : i->operands()) ops.push_back(&values.at(op));
    auto r = EvaluateInstruction(*i, ops);
    if (!r.ok()) return Annotate(r.status(), i->name());
    values[i.get()] = *std::move(r);
    for (hlo::Instruction* op : i->operands())
      if (--remaining_uses[op] == 0 && op != c.root()) values.erase(op);
  }
  return std::move(values.at(c.root()));
}

absl::StatusOr<Literal> EvaluateModule(const hlo::Module& m, std::vector<Literal> args) {
  return Evaluate(*m.entry(), std::move(args));
}

}  // namespace xonnx::eval
