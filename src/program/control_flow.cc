// Loops and branches of traced programs: their bodies traced into
// computations of their own, then a while or conditional instruction.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "program/trace_state.h"

namespace xonnx::program {

using hlo::Instruction;
using internal::Access;
using internal::TraceState;

namespace {

// Traces fn into a new computation of `module` taking one tuple of
// `shapes` (fn gets its elements); its root is the tuple of fn's results,
// or the one result when !tuple_root.
absl::StatusOr<hlo::Computation*> TraceComputation(
    hlo::Module* module, const std::string& name, const std::vector<hlo::Shape>& shapes,
    const std::function<std::vector<Value>(const std::vector<Value>&)>& fn, bool tuple_root) {
  auto child = std::make_shared<TraceState>();
  child->builder = std::make_unique<hlo::Builder>(module, module->UniqueName(name));
  Instruction* p = child->builder->Parameter(0, hlo::Shape::Tuple(shapes), "args");
  std::vector<Value> args;
  for (size_t k = 0; k < shapes.size(); ++k)
    args.push_back(internal::ValueOf(child, child->builder->GetTupleElement(p, k)));
  std::vector<Value> outs;
  {
    internal::CurrentTraceScope scope(child);
    outs = fn(args);
  }
  child->finished = true;
  auto in_body = [&](const absl::Status& st) { return Annotate(st, absl::StrCat("in its ", name)); };
  if (!child->error.ok()) return in_body(child->error);
  RETURN_IF_ERROR(in_body(child->builder->status()));
  std::vector<Instruction*> roots;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (Access::trace(outs[k]) != child || !outs[k].valid())
      return in_body(InvalidArgument("result %d is not a value of the %s (a value from outside it?)", k, name));
    roots.push_back(internal::InstructionOf(outs[k]));
  }
  if (!tuple_root && roots.size() != 1) return in_body(InvalidArgument("returns %d values, not 1", roots.size()));
  return child->builder->Build(tuple_root ? child->builder->Tuple(roots) : roots[0]);
}

std::string SpecsOf(const std::vector<hlo::Shape>& shapes) {
  std::string s;
  for (const hlo::Shape& sh : shapes) absl::StrAppend(&s, s.empty() ? "" : ", ", sh.ToString());
  return s;
}

}  // namespace

std::vector<Value> ForLoop(int64_t n, const LoopBody& body, const std::vector<Value>& init) {
  std::vector<Instruction*> outs;
  Value first =
      internal::Record("ForLoop", init, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
        if (ops.empty()) return b.ReportError(InvalidArgument("a loop carries at least one value"));
        if (n < 0 || n > INT32_MAX) return b.ReportError(InvalidArgument("%d iterations", n));
        std::vector<hlo::Shape> shapes = {hlo::Shape::Scalar(hlo::S32)};
        for (Instruction* o : ops) shapes.push_back(o->shape());
        auto cond = TraceComputation(
            b.module(), "loop condition", shapes,
            [&](const std::vector<Value>& a) -> std::vector<Value> {
              return {Less(a[0], Full(DataType::kInt32, {}, static_cast<double>(n)))};
            },
            false);
        if (!cond.ok()) return b.ReportError(cond.status());
        auto loop = TraceComputation(
            b.module(), "loop body", shapes,
            [&](const std::vector<Value>& a) -> std::vector<Value> {
              std::vector<Value> values(a.begin() + 1, a.end());
              std::vector<Value> next = body(a[0], values);
              bool same = next.size() == values.size();
              for (size_t k = 0; same && k < next.size(); ++k)
                same = next[k].spec() == values[k].spec() && next[k].valid();
              if (!same && internal::CurrentTrace() && internal::CurrentTrace()->error.ok()) {
                std::string got, want;
                for (const Value& v : next) absl::StrAppend(&got, got.empty() ? "" : ", ", v.spec().ToString());
                for (const Value& v : values) absl::StrAppend(&want, want.empty() ? "" : ", ", v.spec().ToString());
                internal::Fail(*internal::CurrentTrace(), "ForLoop",
                               absl::StrCat("the body returns (", got, ") for values (", want, ")"));
              }
              next.insert(next.begin(), a[0] + Full(DataType::kInt32, {}, 1));
              return next;
            },
            true);
        if (!loop.ok()) return b.ReportError(loop.status());
        std::vector<Instruction*> state = {b.ScalarConstant(hlo::S32, 0)};
        state.insert(state.end(), ops.begin(), ops.end());
        Instruction* w = b.While(*cond, *loop, b.Tuple(state));
        for (size_t k = 0; k < ops.size(); ++k) outs.push_back(b.GetTupleElement(w, k + 1));
        return outs[0];
      });
  return internal::Results(first, outs, init.size());
}

std::vector<Value> Cond(const Value& pred, const Branch& then_branch, const Branch& else_branch,
                        const std::vector<Value>& operands) {
  std::vector<Value> all = {pred};
  all.insert(all.end(), operands.begin(), operands.end());
  std::vector<Instruction*> outs;
  Value first =
      internal::Record("Cond", all, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
        if (!(ops[0]->shape() == hlo::Shape::Scalar(hlo::PRED)))
          return b.ReportError(InvalidArgument("the condition must be a boolean scalar"));
        std::vector<Instruction*> args(ops.begin() + 1, ops.end());
        std::vector<hlo::Shape> shapes;
        for (Instruction* o : args) shapes.push_back(o->shape());
        auto then_c = TraceComputation(b.module(), "then branch", shapes, then_branch, true);
        if (!then_c.ok()) return b.ReportError(then_c.status());
        auto else_c = TraceComputation(b.module(), "else branch", shapes, else_branch, true);
        if (!else_c.ok()) return b.ReportError(else_c.status());
        const hlo::Shape &ts = (*then_c)->root()->shape(), &es = (*else_c)->root()->shape();
        if (!(ts == es))
          return b.ReportError(
              InvalidArgument("the branches return (%s) and (%s)", SpecsOf(ts.tuple_shapes), SpecsOf(es.tuple_shapes)));
        if (ts.tuple_shapes.empty()) return b.ReportError(InvalidArgument("the branches return nothing"));
        Instruction* operand = b.Tuple(args);
        Instruction* c = b.Conditional(ops[0], {*then_c, *else_c}, {operand, operand});
        for (size_t k = 0; k < ts.tuple_shapes.size(); ++k) outs.push_back(b.GetTupleElement(c, k));
        return outs[0];
      });
  // Unknown when the branches could not be traced: one per operand.
  return internal::Results(first, outs, outs.empty() ? std::max<size_t>(1, operands.size()) : outs.size());
}

}  // namespace xonnx::program
