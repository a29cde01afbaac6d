// Tracing C++ functions into programs, calling programs inside traces, and
// the transformations (autodiff) of programs.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autodiff/vjp.h"
#include "base/status.h"
#include "hlo/printer.h"
#include "hlo/proto_codec.h"
#include "hlo/rewrite.h"
#include "hlo/stablehlo.h"
#include "hlo/verifier.h"
#include "program/trace_state.h"
#include "runtime/dtype.h"
#include "runtime/public_status.h"

namespace xonnx::program {

using hlo::Instruction;
using internal::Access;
using internal::ProgramData;
using internal::TraceState;

namespace {

using internal::CurrentTraceScope;

absl::StatusOr<Spec> SpecOfShape(const hlo::Shape& s) {
  ASSIGN_OR_RETURN(DataType t, FromHlo(s.element_type));
  return Spec{t, s.dims};
}

// A program of `module` (its entry's parameters and root give the specs).
absl::StatusOr<Program> Finish(std::unique_ptr<hlo::Module> module) {
  RETURN_IF_ERROR(hlo::Verify(*module));
  auto d = std::make_shared<ProgramData>();
  for (const Instruction* p : module->entry()->parameters()) {
    ASSIGN_OR_RETURN(Spec s, SpecOfShape(p->shape()));
    d->inputs.push_back(std::move(s));
  }
  const hlo::Shape& root = module->entry()->root()->shape();
  for (const hlo::Shape& s : root.IsTuple() ? root.tuple_shapes : std::vector<hlo::Shape>{root}) {
    ASSIGN_OR_RETURN(Spec spec, SpecOfShape(s));
    d->outputs.push_back(std::move(spec));
  }
  d->module = std::move(module);
  return Access::MakeProgram(std::move(d));
}

absl::StatusOr<Program> TraceImpl(const Program::Fn& fn, const std::vector<Spec>& inputs, const std::string& name) {
  auto t = std::make_shared<TraceState>();
  t->module = std::make_unique<hlo::Module>(name);
  t->builder = std::make_unique<hlo::Builder>(t->module.get(), "main");
  std::vector<Value> args;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Spec& s = inputs[k];
    if (s.dtype == DataType::kString) return InvalidArgument("program '%s': input %d is a string tensor", name, k);
    for (int64_t d : s.dims)
      if (d < 0) return InvalidArgument("program '%s': input %d has a negative dimension", name, k);
    args.push_back(
        internal::ValueOf(t, t->builder->Parameter(k, hlo::Shape(ToHlo(s.dtype), s.dims), absl::StrCat("input_", k))));
  }
  std::vector<Value> outs;
  {
    CurrentTraceScope scope(t);
    outs = fn(args);
  }
  t->finished = true;
  auto failed = [&](const absl::Status& st) { return Annotate(st, absl::StrCat("tracing program '", name, "'")); };
  if (!t->error.ok()) return failed(t->error);
  RETURN_IF_ERROR(failed(t->builder->status()));
  if (outs.empty()) return failed(InvalidArgument("the function returned no values"));
  std::vector<Instruction*> roots;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (Access::trace(outs[k]) != t || !outs[k].valid())
      return failed(InvalidArgument("output %d is not a value of this trace", k));
    roots.push_back(internal::InstructionOf(outs[k]));
  }
  Instruction* root = roots.size() == 1 ? roots[0] : t->builder->Tuple(roots);
  absl::StatusOr<hlo::Computation*> entry = t->builder->Build(root);
  if (!entry.ok()) return failed(entry.status());
  t->module->set_entry(*entry);
  return Finish(std::move(t->module));
}

// Copies `callee`'s entry into the computation `b` builds, on `args`;
// returns the copies of its outputs.
std::vector<Instruction*> Inline(hlo::Builder& b, const hlo::Module& callee, const std::vector<Instruction*>& args) {
  hlo::Module* m = b.module();
  std::map<const hlo::Computation*, hlo::Computation*> comps;
  auto remap = [&](Instruction* i) {
    for (size_t k = 0; k < i->called_computations().size(); ++k) {
      auto it = comps.find(i->called_computations()[k]);
      if (it != comps.end()) i->ReplaceCalledComputation(k, it->second);
    }
  };
  for (const auto& comp : callee.computations()) {
    if (comp.get() == callee.entry()) continue;
    std::unique_ptr<hlo::Computation> copy = comp->Clone(m, comp->name());
    for (const auto& i : copy->instructions()) {
      remap(i.get());
      i->set_name(m->UniqueName(i->name()));  // names are unique in the whole module
    }
    comps[comp.get()] = m->AddComputation(std::move(copy));
  }
  std::map<const Instruction*, Instruction*> mapped;
  for (const auto& i : callee.entry()->instructions()) {
    if (i->opcode() == hlo::Opcode::kParameter) {
      mapped[i.get()] = args[i->parameter_number];
      continue;
    }
    std::vector<Instruction*> ops;
    for (const Instruction* o : i->operands()) ops.push_back(mapped.at(o));
    Instruction* n = hlo::AddCopyOf(b.computation(), *i, ops, i->shape());
    remap(n);
    mapped[i.get()] = n;
  }
  const Instruction* root = callee.entry()->root();
  if (root->opcode() != hlo::Opcode::kTuple) return {mapped.at(root)};
  std::vector<Instruction*> outs;
  for (const Instruction* o : root->operands()) outs.push_back(mapped.at(o));
  return outs;
}

}  // namespace

Program::Program() = default;

StatusOr<Program> Program::Trace(const Fn& fn, const std::vector<Spec>& inputs, const std::string& name) {
  return PublicCall("Program::Trace", [&] { return TraceImpl(fn, inputs, name); });
}

const std::string& Program::name() const {
  static const std::string kNone;
  return data_ ? data_->module->name() : kNone;
}
const std::vector<Spec>& Program::inputs() const {
  static const std::vector<Spec> kNone;
  return data_ ? data_->inputs : kNone;
}
const std::vector<Spec>& Program::outputs() const {
  static const std::vector<Spec> kNone;
  return data_ ? data_->outputs : kNone;
}
std::string Program::HloText() const { return data_ ? hlo::ToText(*data_->module) : ""; }
std::string Program::HloProto() const { return data_ ? hlo::SerializeModule(*data_->module) : ""; }
StatusOr<std::string> Program::StableHlo() const {
  return PublicCall("Program::StableHlo", [&]() -> absl::StatusOr<std::string> {
    if (!data_) return absl::FailedPreconditionError("an empty program");
    return hlo::ToStableHlo(*data_->module);
  });
}

std::vector<Value> Program::operator()(const std::vector<Value>& args) const {
  std::vector<Instruction*> outs;
  const std::string api = absl::StrCat("call of program '", name(), "'");
  Value first =
      internal::Record(api.c_str(), args, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
        if (!data_) return b.ReportError(absl::FailedPreconditionError("an empty program"));
        if (ops.size() != data_->inputs.size())
          return b.ReportError(InvalidArgument("%d arguments for %d inputs", ops.size(), data_->inputs.size()));
        for (size_t k = 0; k < ops.size(); ++k)
          if (!(ops[k]->shape() == data_->module->entry()->parameter(k)->shape()))
            return b.ReportError(InvalidArgument("argument %d is %s, the input %s", k, ops[k]->shape().ToString(),
                                                 data_->inputs[k].ToString()));
        outs = Inline(b, *data_->module, ops);
        return outs[0];
      });
  return internal::Results(first, outs, data_ ? data_->outputs.size() : 1);
}

namespace {

using Transform = std::function<absl::StatusOr<std::unique_ptr<hlo::Module>>(const hlo::Module&)>;

StatusOr<Program> Transformed(const char* what, const Program& f, const Transform& transform) {
  return PublicCall(what, [&]() -> absl::StatusOr<Program> {
    const auto& d = Access::data(f);
    if (!d) return absl::FailedPreconditionError(absl::StrCat(what, " of an empty program"));
    absl::StatusOr<std::unique_ptr<hlo::Module>> m = transform(*d->module);
    if (!m.ok()) return Annotate(m.status(), absl::StrCat(what, " of program '", d->module->name(), "'"));
    return Finish(*std::move(m));
  });
}

}  // namespace

StatusOr<Program> Vjp(const Program& f, const std::vector<int64_t>& wrt) {
  return Transformed("Vjp", f, [&](const hlo::Module& m) { return autodiff::Vjp(m, wrt); });
}
StatusOr<Program> Jvp(const Program& f, const std::vector<int64_t>& wrt) {
  return Transformed("Jvp", f, [&](const hlo::Module& m) { return autodiff::Jvp(m, wrt); });
}
StatusOr<Program> Grad(const Program& f, const std::vector<int64_t>& wrt) {
  return Transformed("Grad", f, [&](const hlo::Module& m) { return autodiff::Grad(m, wrt, false); });
}
StatusOr<Program> ValueAndGrad(const Program& f, const std::vector<int64_t>& wrt) {
  return Transformed("ValueAndGrad", f, [&](const hlo::Module& m) { return autodiff::Grad(m, wrt, true); });
}

}  // namespace xonnx::program
