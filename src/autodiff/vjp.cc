#include "autodiff/vjp.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "hlo/rewrite.h"
#include "hlo/shape_inference.h"
#include "hlo/verifier.h"

namespace xonnx::autodiff {

using hlo::Instruction;
using hlo::Opcode;
using hlo::Shape;

Instruction* Graph::Op(Opcode op, const std::vector<Instruction*>& operands,
                       const std::function<void(Instruction*)>& attrs, const Shape* shape) {
  for (Instruction* o : operands)
    if (!o) return nullptr;  // an earlier error
  auto i = std::make_unique<Instruction>(op, shape ? *shape : Shape());
  for (Instruction* o : operands) i->AppendOperand(o);
  if (attrs) attrs(i.get());
  if (!shape) {
    absl::StatusOr<Shape> s = hlo::InferShape(*i);
    if (!s.ok()) {
      if (status_.ok()) status_ = Annotate(s.status(), absl::StrCat("autodiff: ", hlo::OpcodeName(op)));
      return nullptr;
    }
    i->set_shape(*s);
  }
  return c_->AddInstruction(std::move(i));
}

Instruction* Graph::Full(double value, const Shape& shape) {
  Instruction* scalar = hlo::AddConstant(c_, hlo::Literal::ScalarOf(shape.element_type, value));
  return shape.rank() == 0 ? scalar : Broadcast(scalar, shape.dims, {});
}

Instruction* Graph::Broadcast(Instruction* x, const std::vector<int64_t>& dims, const std::vector<int64_t>& map) {
  if (!x) return nullptr;
  Shape s(x->shape().element_type, dims);
  return Op(
      Opcode::kBroadcast, {x}, [&](Instruction* i) { i->dimensions = map; }, &s);
}

Instruction* Graph::Reshape(Instruction* x, const std::vector<int64_t>& dims) {
  if (!x) return nullptr;
  if (x->shape().dims == dims) return x;
  Shape s(x->shape().element_type, dims);
  return Op(Opcode::kReshape, {x}, nullptr, &s);
}

Instruction* Graph::Transpose(Instruction* x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k) identity &= perm[k] == static_cast<int64_t>(k);
  if (!x || identity) return x;
  return Op(Opcode::kTranspose, {x}, [&](Instruction* i) { i->dimensions = perm; });
}

hlo::Computation* Graph::Adder(hlo::PrimitiveType t) {
  hlo::Computation*& cached = adders_[t];
  if (cached) return cached;
  // A two-parameter adder, put in front of the module's computations (it
  // calls nothing, and the entry that uses it comes later).
  auto adder = std::make_unique<hlo::Computation>("autodiff_add");
  hlo::Computation* a = module_->AddComputation(std::move(adder));
  Instruction* p0 = a->AddInstruction(std::make_unique<Instruction>(Opcode::kParameter, Shape(t, {})));
  Instruction* p1 = a->AddInstruction(std::make_unique<Instruction>(Opcode::kParameter, Shape(t, {})));
  p0->parameter_number = 0;
  p1->parameter_number = 1;
  auto sum = std::make_unique<Instruction>(Opcode::kAdd, Shape(t, {}));
  sum->AppendOperand(p0);
  sum->AppendOperand(p1);
  a->set_root(a->AddInstruction(std::move(sum)));
  module_->MoveLeafToFront(a);
  return cached = a;
}

Instruction* Graph::ReduceSum(Instruction* x, const std::vector<int64_t>& dims) {
  if (!x || dims.empty()) return x;
  hlo::PrimitiveType t = x->shape().element_type;
  hlo::Computation* a = Adder(t);
  Instruction* zero = hlo::AddConstant(c_, hlo::Literal::ScalarOf(t, 0));
  return Op(Opcode::kReduce, {x, zero}, [&](Instruction* i) {
    i->dimensions = dims;
    i->AppendCalledComputation(a);
  });
}

Instruction* Graph::KeepWhere(Instruction* pred, Instruction* x) {
  if (!x) return nullptr;
  return Op(Opcode::kSelect, {pred, x, Full(0, x->shape())});
}

const Rule* FindRule(Opcode op) {
  for (const Rule& r : Rules())
    if (r.opcode == op) return &r;
  return nullptr;
}

namespace {

bool Differentiable(const Shape& s) { return s.IsArray() && hlo::IsFloatingPoint(s.element_type); }

// Whether a value of shape `s` can carry a derivative: a floating-point
// array, or a tuple holding one (what a while, conditional or call passes
// on, which must not silently cut the derivative's path).
bool Carries(const Shape& s) {
  if (!s.IsTuple()) return Differentiable(s);
  for (const Shape& e : s.tuple_shapes)
    if (Carries(e)) return true;
  return false;
}

// Makes a tuple of `results` the root of `c` and drops what it no longer
// reaches.
void SetTupleRoot(hlo::Computation* c, const std::vector<Instruction*>& results) {
  std::vector<Shape> shapes;
  for (const Instruction* r : results) shapes.push_back(r->shape());
  auto tuple = std::make_unique<Instruction>(Opcode::kTuple, Shape::Tuple(std::move(shapes)));
  for (Instruction* r : results) tuple->AppendOperand(r);
  c->set_root(c->AddInstruction(std::move(tuple)));
  c->Canonicalize();
}

std::string Where(const Instruction& i) {
  std::string s = absl::StrCat("'", i.name(), "' (", hlo::OpcodeName(i.opcode()), ")");
  if (!i.metadata.op_name.empty())
    absl::StrAppend(&s, " from ONNX node '", i.metadata.op_name, "' (", i.metadata.op_type, ")");
  return s;
}

}  // namespace

absl::StatusOr<std::vector<Instruction*>> Backward(hlo::Module* module, hlo::Computation* c,
                                                   const std::vector<Instruction*>& outputs,
                                                   const std::vector<Instruction*>& seeds,
                                                   const std::vector<Instruction*>& wrt) {
  std::set<const Instruction*> active;
  for (const Instruction* w : wrt) {
    if (!Differentiable(w->shape()))
      return InvalidArgument("autodiff: %s is %s, not a floating-point array", Where(*w), w->shape().ToString());
    active.insert(w);
  }
  std::vector<Instruction*> order;
  for (const auto& i : c->instructions()) order.push_back(i.get());
  for (Instruction* i : order) {
    if (i->opcode() == Opcode::kCopy && i->metadata.op_type == kStopGradient) continue;
    for (const Instruction* o : i->operands())
      if (active.count(o) && Carries(i->shape())) active.insert(i);
  }
  std::map<const Instruction*, Instruction*> ct;
  Graph g(module, c);
  auto accumulate = [&](const Instruction* at, Instruction* v) {
    auto [it, fresh] = ct.try_emplace(at, v);
    if (!fresh) it->second = g.Binary(Opcode::kAdd, it->second, v);
  };
  for (size_t k = 0; k < outputs.size(); ++k)
    if (active.count(outputs[k])) accumulate(outputs[k], seeds[k]);
  std::set<const Instruction*> targets(wrt.begin(), wrt.end());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Instruction* y = *it;
    auto found = ct.find(y);
    // A cotangent stops at the values differentiated for, and at parameters.
    if (found == ct.end() || targets.count(y) || y->opcode() == Opcode::kParameter) continue;
    const Rule* rule = FindRule(y->opcode());
    if (!rule) return Unimplemented("autodiff: no differentiation rule for %s", Where(*y));
    std::vector<Instruction*> contributions = rule->vjp(g, *y, found->second);
    RETURN_IF_ERROR(Annotate(g.status(), Where(*y)));
    for (size_t k = 0; k < contributions.size() && k < static_cast<size_t>(y->operand_count()); ++k)
      if (contributions[k] && active.count(y->operand(k))) accumulate(y->operand(k), contributions[k]);
  }
  std::vector<Instruction*> grads;
  for (const Instruction* w : wrt) {
    auto it = ct.find(w);
    grads.push_back(it != ct.end() ? it->second : g.Full(0, w->shape()));
  }
  RETURN_IF_ERROR(g.status());
  return grads;
}

absl::StatusOr<std::unique_ptr<hlo::Module>> Vjp(const hlo::Module& f, const std::vector<int64_t>& wrt) {
  std::unique_ptr<hlo::Module> m = f.Clone();
  hlo::Computation* c = m->entry();
  c->Canonicalize();
  std::vector<Instruction*> params = c->parameters();
  for (int64_t k : wrt) {
    if (k < 0 || k >= static_cast<int64_t>(params.size()))
      return InvalidArgument("autodiff: the computation has no parameter %d", k);
    if (!Differentiable(params[k]->shape()))
      return InvalidArgument("autodiff: parameter %d is %s, not a floating-point array", k,
                             params[k]->shape().ToString());
  }
  // Outputs and their cotangents, which are new parameters after f's.
  Instruction* root = c->root();
  std::vector<Instruction*> outputs;
  if (root->shape().IsTuple()) {
    if (root->opcode() != Opcode::kTuple) return Unimplemented("autodiff: a tuple root must be a tuple instruction");
    outputs = root->operands();
  } else {
    outputs = {root};
  }
  std::vector<Instruction*> seeds, targets;
  for (size_t k = 0; k < outputs.size(); ++k) {
    auto p = std::make_unique<Instruction>(Opcode::kParameter, outputs[k]->shape());
    p->parameter_number = params.size() + k;
    p->set_name(absl::StrCat("cotangent_", k));
    seeds.push_back(c->AddInstruction(std::move(p)));
  }
  for (int64_t k : wrt) targets.push_back(params[k]);
  ASSIGN_OR_RETURN(std::vector<Instruction*> grads, Backward(m.get(), c, outputs, seeds, targets));
  std::vector<Instruction*> results = outputs;
  results.insert(results.end(), grads.begin(), grads.end());
  SetTupleRoot(c, results);
  RETURN_IF_ERROR(hlo::Verify(*m));
  return m;
}

absl::StatusOr<std::unique_ptr<hlo::Module>> Grad(const hlo::Module& f, const std::vector<int64_t>& wrt,
                                                  bool with_value) {
  const hlo::Shape& out = f.entry()->root()->shape();
  if (!out.IsArray() || out.ElementCount() != 1 || !hlo::IsFloatingPoint(out.element_type))
    return InvalidArgument("autodiff: a gradient needs one floating-point output of one element, not %s",
                           out.ToString());
  const int64_t n = f.entry()->num_parameters();
  ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> vjp, Vjp(f, wrt));
  // The cotangent of the one output is 1.
  hlo::Literal one = hlo::Literal::ScalarOf(out.element_type, 1);
  if (out.rank() > 0) one = one.Reshape(out.dims);
  std::vector<std::pair<int64_t, hlo::Literal>> seed;
  seed.emplace_back(n, std::move(one));
  RETURN_IF_ERROR(vjp->BindParameters(std::move(seed)));
  hlo::Computation* c = vjp->entry();
  std::vector<Instruction*> results = c->root()->operands();
  if (!with_value) results.erase(results.begin());
  if (results.size() == 1) {
    // One gradient is the root itself, so that it can be differentiated
    // again.
    c->set_root(results[0]);
    c->Canonicalize();
  } else {
    SetTupleRoot(c, results);
  }
  RETURN_IF_ERROR(hlo::Verify(*vjp));
  return vjp;
}

absl::StatusOr<std::unique_ptr<hlo::Module>> Jvp(const hlo::Module& f, const std::vector<int64_t>& wrt) {
  const int64_t n = f.entry()->num_parameters();
  const hlo::Shape& root = f.entry()->root()->shape();
  const int64_t outs = root.IsTuple() ? root.tuple_shapes.size() : 1, m = wrt.size();
  // vjp(x, u) = (f(x), Jᵀu); its VJP with respect to u, seeded with
  // (0, v), is J v.
  ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> vjp, Vjp(f, wrt));
  std::vector<int64_t> cotangents;
  for (int64_t k = 0; k < outs; ++k) cotangents.push_back(n + k);
  ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> jvp, Vjp(*vjp, cotangents));
  // Parameters: x (n), u (outs), then seeds for vjp's outputs f(x) (outs)
  // and Jᵀu (m). u and the seeds of f(x) are zeros (the result is linear in
  // u and f(x) does not depend on it); the seeds of Jᵀu are the tangents.
  std::vector<hlo::Instruction*> params = jvp->entry()->parameters();
  std::vector<std::pair<int64_t, hlo::Literal>> zeros;
  for (int64_t k = n; k < n + 2 * outs; ++k) zeros.emplace_back(k, hlo::Literal(params[k]->shape()));
  RETURN_IF_ERROR(jvp->BindParameters(std::move(zeros)));
  // Its root: f(x) (outs), Jᵀu (m), then J v per output (outs).
  hlo::Computation* c = jvp->entry();
  const hlo::Instruction* old_root = c->root();
  std::vector<Instruction*> results;
  for (int64_t k = 0; k < outs; ++k) results.push_back(old_root->operand(k));
  for (int64_t k = 0; k < outs; ++k) results.push_back(old_root->operand(outs + m + k));
  SetTupleRoot(c, results);
  RETURN_IF_ERROR(hlo::Verify(*jvp));
  return jvp;
}

}  // namespace xonnx::autodiff
