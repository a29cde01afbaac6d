#include "hlo/verifier.h"

#include "absl/container/flat_hash_set.h"
#include "base/status.h"
#include "hlo/builder.h"

namespace xonnx::hlo {

absl::Status Verify(const Module& module) {
  if (!module.entry()) return InvalidArgument("module '%s' has no entry computation", module.name());
  absl::flat_hash_set<std::string> names;
  absl::flat_hash_set<const Computation*> seen_computations;
  for (const auto& c : module.computations()) {
    if (!names.insert(c->name()).second) return InvalidArgument("duplicate name '%s'", c->name());
    if (!c->root()) return InvalidArgument("computation '%s' has no root", c->name());
    absl::flat_hash_set<const Instruction*> defined;
    std::vector<Instruction*> params = c->parameters();
    for (size_t k = 0; k < params.size(); ++k)
      if (params[k]->parameter_number != static_cast<int64_t>(k))
        return InvalidArgument("computation '%s': parameters are not numbered 0..%d", c->name(), params.size() - 1);
    for (const auto& i : c->instructions()) {
      if (!names.insert(i->name()).second) return InvalidArgument("duplicate name '%s'", i->name());
      for (Instruction* op : i->operands())
        if (!defined.contains(op))
          return InvalidArgument("%s: operand %s is not defined before its use in '%s'", i->name(),
                                 op ? op->name() : "null", c->name());
      for (Computation* callee : i->called_computations())
        if (!seen_computations.contains(callee))
          return InvalidArgument("%s: called computation is not defined before '%s'", i->name(), c->name());
      auto inferred = InferShape(*i);
      if (!inferred.ok()) return Annotate(inferred.status(), i->name());
      if (!inferred->Compatible(i->shape()))
        return InvalidArgument("%s: shape %s differs from the inferred %s", i->name(), i->shape().ToString(),
                               inferred->ToString());
      defined.insert(i.get());
    }
    if (!defined.contains(c->root())) return InvalidArgument("computation '%s': root is not in it", c->name());
    seen_computations.insert(c.get());
  }
  if (!seen_computations.contains(module.entry())) return InvalidArgument("entry is not in the module");
  // An alias joins a parameter to a result of its very shape, each used once.
  const Computation& entry = *module.entry();
  const Shape& result = entry.root()->shape();
  absl::flat_hash_set<int64_t> outputs, parameters;
  for (const Module::Alias& a : module.aliases()) {
    const int64_t results = result.IsTuple() ? static_cast<int64_t>(result.tuple_shapes.size()) : 1;
    if (a.output < 0 || a.output >= results || a.parameter < 0 || a.parameter >= entry.num_parameters())
      return InvalidArgument("alias of parameter %d to result %d: out of range", a.parameter, a.output);
    const Shape& out = result.IsTuple() ? result.tuple_shapes[a.output] : result;
    if (!(out == entry.parameter(a.parameter)->shape()))
      return InvalidArgument("alias of parameter %d to result %d: shapes %s and %s differ", a.parameter, a.output,
                             entry.parameter(a.parameter)->shape().ToString(), out.ToString());
    if (!outputs.insert(a.output).second || !parameters.insert(a.parameter).second)
      return InvalidArgument("alias of parameter %d to result %d: each may be aliased once", a.parameter, a.output);
  }
  return absl::OkStatus();
}

}  // namespace xonnx::hlo
