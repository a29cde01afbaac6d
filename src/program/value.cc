// Values of a trace and the elementwise operations on them.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "hlo/broadcast.h"
#include "program/trace_state.h"
#include "runtime/dtype.h"

namespace xonnx::program {

using hlo::Instruction;
using hlo::Opcode;
using internal::Access;
using internal::Record;
using internal::TraceState;

namespace internal {

namespace {
thread_local std::weak_ptr<TraceState> current_trace;
}  // namespace

std::shared_ptr<TraceState> CurrentTraceShared() { return current_trace.lock(); }
TraceState* CurrentTrace() { return CurrentTraceShared().get(); }
void SetCurrentTrace(std::weak_ptr<TraceState> t) { current_trace = std::move(t); }
std::weak_ptr<TraceState> CurrentTraceWeak() { return current_trace; }

Instruction* InstructionOf(const Value& v) {
  const auto& t = Access::trace(v);
  int64_t i = Access::index(v);
  return t && i >= 0 ? t->instructions[i] : nullptr;
}

Value ValueOf(const std::shared_ptr<TraceState>& t, Instruction* i) {
  if (!i) return Access::Make(t, -1);
  Spec s;
  auto dtype = FromHlo(i->shape().element_type);
  s.dtype = dtype.ok() ? *dtype : DataType::kFloat32;
  s.dims = i->shape().dims;
  t->instructions.push_back(i);
  t->specs.push_back(std::move(s));
  return Access::Make(t, static_cast<int64_t>(t->instructions.size()) - 1);
}

std::vector<Value> Results(const Value& first, const std::vector<Instruction*>& outs, size_t count) {
  std::vector<Value> r{first};
  for (size_t k = 1; k < count; ++k)
    r.push_back(first.valid() && k < outs.size() ? ValueOf(Access::trace(first), outs[k]) : first);
  return r;
}

void Fail(TraceState& t, const char* api, const std::string& message) {
  if (t.error.ok()) t.error = absl::InvalidArgumentError(absl::StrCat(api, ": ", message));
}

Value Record(const char* api, const std::vector<Value>& operands, const BuildFn& build) {
  std::shared_ptr<TraceState> t;
  for (const Value& v : operands)
    if (Access::trace(v)) {
      t = Access::trace(v);
      break;
    }
  if (!t || t->finished) {
    std::shared_ptr<TraceState> current = CurrentTraceShared();
    if (t && current) {
      Fail(*current, api, "an operand belongs to a trace that has finished");
      return Access::Make(current, -1);
    }
    if (t) return Access::Make(t, -1);  // values of a finished trace, outside any trace
    t = std::move(current);
  }
  if (!t) return Value();  // nowhere to record: outside any trace
  std::vector<Instruction*> ops;
  std::vector<std::string> specs;
  for (size_t k = 0; k < operands.size(); ++k) {
    const Value& v = operands[k];
    if (Access::trace(v) && Access::trace(v) != t) {
      Fail(*t, api,
           absl::StrCat("operand ", k, " belongs to another trace",
                        Access::trace(v)->finished ? " (one that has finished)" : ""));
      return Access::Make(t, -1);
    }
    Instruction* i = InstructionOf(v);
    if (!i) {
      // An invalid operand of this trace carries an error already.
      if (!Access::trace(v))
        Fail(*t, api, absl::StrCat("operand ", k, " is not a value (default-constructed, or made outside a trace)"));
      return Access::Make(t, -1);
    }
    ops.push_back(i);
    specs.push_back(v.spec().ToString());
  }
  hlo::OpMetadata m;
  m.op_type = api;
  m.op_name = absl::StrCat(api, "#", t->ops++);
  t->builder->set_metadata(m);
  const bool was_ok = t->builder->status().ok();
  Instruction* r = build(*t->builder, ops);
  if (!r && t->error.ok()) {
    std::string why = was_ok && !t->builder->status().ok() ? std::string(t->builder->status().message())
                                                           : "the operation does not apply";
    t->error = absl::InvalidArgumentError(absl::StrCat(api, "(", absl::StrJoin(specs, ", "), "): ", why));
  }
  return ValueOf(t, r);
}

}  // namespace internal

std::string Spec::ToString() const { return absl::StrCat(DataTypeName(dtype), "[", absl::StrJoin(dims, ","), "]"); }

Spec SpecOf(const Tensor& t) { return {t.dtype(), t.dims()}; }

bool Value::valid() const { return internal::InstructionOf(*this) != nullptr; }

DataType Value::dtype() const { return valid() ? trace_->specs[index_].dtype : DataType::kFloat32; }

const std::vector<int64_t>& Value::dims() const {
  static const std::vector<int64_t> kNone;
  return valid() ? trace_->specs[index_].dims : kNone;
}

Value Constant(const Tensor& t) {
  return Record("Constant", {}, [&](hlo::Builder& b, const std::vector<Instruction*>&) -> Instruction* {
    if (t.dtype() == DataType::kString)
      return b.ReportError(absl::InvalidArgumentError("string tensors are not numbers"));
    return b.Constant(LiteralOf(t));
  });
}

Value Full(DataType dtype, const std::vector<int64_t>& dims, double value) {
  return Record("Full", {}, [&](hlo::Builder& b, const std::vector<Instruction*>&) -> Instruction* {
    for (int64_t d : dims)
      if (d < 0) return b.ReportError(absl::InvalidArgumentError("a dimension is negative"));
    return b.Broadcast(b.ScalarConstant(ToHlo(dtype), value), dims, {});
  });
}

Value Iota(DataType dtype, const std::vector<int64_t>& dims, int64_t axis) {
  return Record("Iota", {}, [&](hlo::Builder& b, const std::vector<Instruction*>&) -> Instruction* {
    if (axis < 0 || axis >= static_cast<int64_t>(dims.size()))
      return b.ReportError(
          absl::InvalidArgumentError(absl::StrCat("axis ", axis, " of a rank-", dims.size(), " tensor")));
    return b.Iota(hlo::Shape(ToHlo(dtype), dims), axis);
  });
}

namespace {

// op(a, b) after numpy broadcasting, for operands of one type.
Instruction* Broadcasting(hlo::Builder& b, const std::vector<Instruction*>& ops,
                          const std::function<Instruction*(Instruction*, Instruction*)>& op) {
  if (ops[0]->shape().element_type != ops[1]->shape().element_type)
    return b.ReportError(absl::InvalidArgumentError("the operands' types differ (Cast one of them)"));
  absl::StatusOr<std::vector<int64_t>> dims = hlo::BroadcastDims(ops[0]->shape().dims, ops[1]->shape().dims);
  if (!dims.ok()) return b.ReportError(absl::InvalidArgumentError("the shapes do not broadcast"));
  return op(hlo::BroadcastTo(b, ops[0], *dims), hlo::BroadcastTo(b, ops[1], *dims));
}

Value Binary(const char* api, Opcode op, const Value& a, const Value& b) {
  return Record(api, {a, b}, [&](hlo::Builder& bl, const std::vector<Instruction*>& ops) {
    return Broadcasting(bl, ops, [&](Instruction* x, Instruction* y) { return bl.Binary(op, x, y); });
  });
}

// A scalar constant of `like`'s type.
Value ScalarLike(const Value& like, double v) {
  return Record("Constant", {like}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) {
    return b.ScalarConstant(ops[0]->shape().element_type, v);
  });
}

Value Compare(const char* api, hlo::ComparisonDirection dir, const Value& a, const Value& b) {
  return Record(api, {a, b}, [&](hlo::Builder& bl, const std::vector<Instruction*>& ops) {
    return Broadcasting(bl, ops, [&](Instruction* x, Instruction* y) { return bl.Compare(x, y, dir); });
  });
}

Value Unary(const char* api, Opcode op, const Value& x, bool float_only = true) {
  return Record(api, {x}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    if (float_only && !hlo::IsFloatingPoint(ops[0]->shape().element_type))
      return b.ReportError(absl::InvalidArgumentError("needs a floating-point value"));
    return b.Unary(op, ops[0]);
  });
}

}  // namespace

Value operator+(const Value& a, const Value& b) { return Binary("Add", Opcode::kAdd, a, b); }
Value operator-(const Value& a, const Value& b) { return Binary("Sub", Opcode::kSubtract, a, b); }
Value operator*(const Value& a, const Value& b) { return Binary("Mul", Opcode::kMultiply, a, b); }
Value operator/(const Value& a, const Value& b) { return Binary("Div", Opcode::kDivide, a, b); }
Value operator+(const Value& a, double b) { return a + ScalarLike(a, b); }
Value operator-(const Value& a, double b) { return a - ScalarLike(a, b); }
Value operator*(const Value& a, double b) { return a * ScalarLike(a, b); }
Value operator/(const Value& a, double b) { return a / ScalarLike(a, b); }
Value operator+(double a, const Value& b) { return ScalarLike(b, a) + b; }
Value operator-(double a, const Value& b) { return ScalarLike(b, a) - b; }
Value operator*(double a, const Value& b) { return ScalarLike(b, a) * b; }
Value operator/(double a, const Value& b) { return ScalarLike(b, a) / b; }
Value operator-(const Value& a) { return Unary("Neg", Opcode::kNegate, a, false); }
Value Maximum(const Value& a, const Value& b) { return Binary("Maximum", Opcode::kMaximum, a, b); }
Value Minimum(const Value& a, const Value& b) { return Binary("Minimum", Opcode::kMinimum, a, b); }
Value Pow(const Value& a, const Value& b) { return Binary("Pow", Opcode::kPower, a, b); }
Value Pow(const Value& a, double b) { return Pow(a, ScalarLike(a, b)); }

Value Exp(const Value& x) { return Unary("Exp", Opcode::kExp, x); }
Value Log(const Value& x) { return Unary("Log", Opcode::kLog, x); }
Value Sin(const Value& x) { return Unary("Sin", Opcode::kSin, x); }
Value Cos(const Value& x) { return Unary("Cos", Opcode::kCos, x); }
Value Tanh(const Value& x) { return Unary("Tanh", Opcode::kTanh, x); }
Value Sqrt(const Value& x) { return Unary("Sqrt", Opcode::kSqrt, x); }
Value Rsqrt(const Value& x) { return Unary("Rsqrt", Opcode::kRsqrt, x); }
Value Abs(const Value& x) { return Unary("Abs", Opcode::kAbs, x, false); }
Value Sigmoid(const Value& x) { return Unary("Sigmoid", Opcode::kLogistic, x); }
Value Relu(const Value& x) { return Maximum(x, ScalarLike(x, 0)); }
Value Square(const Value& x) { return x * x; }

Value Less(const Value& a, const Value& b) { return Compare("Less", hlo::ComparisonDirection::kLt, a, b); }
Value LessEqual(const Value& a, const Value& b) { return Compare("LessEqual", hlo::ComparisonDirection::kLe, a, b); }
Value Greater(const Value& a, const Value& b) { return Compare("Greater", hlo::ComparisonDirection::kGt, a, b); }
Value GreaterEqual(const Value& a, const Value& b) {
  return Compare("GreaterEqual", hlo::ComparisonDirection::kGe, a, b);
}
Value Equal(const Value& a, const Value& b) { return Compare("Equal", hlo::ComparisonDirection::kEq, a, b); }
Value NotEqual(const Value& a, const Value& b) { return Compare("NotEqual", hlo::ComparisonDirection::kNe, a, b); }

Value Where(const Value& cond, const Value& a, const Value& b) {
  return Record("Where", {cond, a, b}, [&](hlo::Builder& bl, const std::vector<Instruction*>& ops) -> Instruction* {
    if (ops[0]->shape().element_type != hlo::PRED)
      return bl.ReportError(absl::InvalidArgumentError("the condition must be boolean"));
    if (ops[1]->shape().element_type != ops[2]->shape().element_type)
      return bl.ReportError(absl::InvalidArgumentError("the operands' types differ (Cast one of them)"));
    absl::StatusOr<std::vector<int64_t>> d = hlo::BroadcastDims(ops[1]->shape().dims, ops[2]->shape().dims);
    if (d.ok()) d = hlo::BroadcastDims(ops[0]->shape().dims, *d);
    if (!d.ok()) return bl.ReportError(absl::InvalidArgumentError("the shapes do not broadcast"));
    return bl.Select(hlo::BroadcastTo(bl, ops[0], *d), hlo::BroadcastTo(bl, ops[1], *d),
                     hlo::BroadcastTo(bl, ops[2], *d));
  });
}

Value Cast(const Value& x, DataType dtype) {
  return Record("Cast", {x}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    if (dtype == DataType::kString) return b.ReportError(absl::InvalidArgumentError("no cast to strings"));
    return b.Convert(ops[0], ToHlo(dtype));
  });
}

Value StopGradient(const Value& x) {
  // A copy marked in its metadata: autodiff treats it as a constant
  // (autodiff::kStopGradient).
  return Record("StopGradient", {x},
                [&](hlo::Builder& b, const std::vector<Instruction*>& ops) { return b.Unary(Opcode::kCopy, ops[0]); });
}

}  // namespace xonnx::program
