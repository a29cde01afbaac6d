// The table of differentiation rules: for each opcode, the cotangents of
// its operands given the cotangent of its result, and an example module
// from which autodiff_test checks the rule against finite differences.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "autodiff/vjp.h"
#include "base/status.h"

namespace xonnx::autodiff {

namespace {

using hlo::Instruction;
using hlo::Opcode;
using Ops = std::vector<Instruction*>;

// An example applying `op` elementwise to f64[2,3] parameters; `positive`
// takes the absolute value of each first (the test's inputs are at least
// 0.5 in magnitude), for ops defined on positive numbers.
std::string Elementwise(const std::string& op, int arity, bool positive = false) {
  std::string params, args;
  for (int k = 0; k < arity; ++k) {
    absl::StrAppend(&params, "  p", k, " = f64[2,3] parameter(", k, ")\n");
    if (positive) {
      absl::StrAppend(&params, "  x", k, " = f64[2,3] abs(p", k, ")\n");
    } else {
      absl::StrAppend(&params, "  x", k, " = f64[2,3] copy(p", k, ")\n");
    }
    absl::StrAppend(&args, k ? ", " : "", "x", k);
  }
  return absl::StrCat("HloModule ", op, "\nENTRY main {\n", params, "  ROOT y = f64[2,3] ", op, "(", args, ")\n}\n");
}

Instruction* Mul(Graph& g, Instruction* a, Instruction* b) { return g.Binary(Opcode::kMultiply, a, b); }
Instruction* Full(Graph& g, double v, const Instruction* like) { return g.Full(v, like->shape()); }

std::vector<Rule> MakeArithmetic() {
  return {
      {Opcode::kAdd,
       [](Graph&, Instruction&, Instruction* ct) {
         return Ops{ct, ct};
       },
       Elementwise("add", 2)},
      {Opcode::kSubtract,
       [](Graph& g, Instruction&, Instruction* ct) {
         return Ops{ct, g.Unary(Opcode::kNegate, ct)};
       },
       Elementwise("subtract", 2)},
      {Opcode::kMultiply,
       [](Graph& g, Instruction& y, Instruction* ct) {
         return Ops{Mul(g, ct, y.operand(1)), Mul(g, ct, y.operand(0))};
       },
       Elementwise("multiply", 2)},
      {Opcode::kDivide,
       [](Graph& g, Instruction& y, Instruction* ct) {
         Instruction* da = g.Binary(Opcode::kDivide, ct, y.operand(1));
         Instruction* db = g.Unary(Opcode::kNegate, g.Binary(Opcode::kDivide, Mul(g, ct, &y), y.operand(1)));
         return Ops{da, db};
       },
       Elementwise("divide", 2)},
      {Opcode::kNegate, [](Graph& g, Instruction&, Instruction* ct) { return Ops{g.Unary(Opcode::kNegate, ct)}; },
       Elementwise("negate", 1)},
      {Opcode::kCopy, [](Graph&, Instruction&, Instruction* ct) { return Ops{ct}; }, Elementwise("copy", 1)},
      {Opcode::kAbs,
       [](Graph& g, Instruction& y, Instruction* ct) { return Ops{Mul(g, ct, g.Unary(Opcode::kSign, y.operand(0)))}; },
       Elementwise("abs", 1)},
      {Opcode::kMaximum,
       [](Graph& g, Instruction& y, Instruction* ct) {
         Instruction* a_wins = g.Op(Opcode::kCompare, {y.operand(0), y.operand(1)},
                                    [](Instruction* i) { i->comparison_direction = hlo::ComparisonDirection::kGe; });
         return Ops{g.KeepWhere(a_wins, ct), g.KeepWhere(g.Unary(Opcode::kNot, a_wins), ct)};
       },
       Elementwise("maximum", 2)},
      {Opcode::kMinimum,
       [](Graph& g, Instruction& y, Instruction* ct) {
         Instruction* a_wins = g.Op(Opcode::kCompare, {y.operand(0), y.operand(1)},
                                    [](Instruction* i) { i->comparison_direction = hlo::ComparisonDirection::kLe; });
         return Ops{g.KeepWhere(a_wins, ct), g.KeepWhere(g.Unary(Opcode::kNot, a_wins), ct)};
       },
       Elementwise("minimum", 2)},
      {Opcode::kPower,
       [](Graph& g, Instruction& y, Instruction* ct) {
         Instruction *a = y.operand(0), *b = y.operand(1);
         Instruction* b1 = g.Binary(Opcode::kSubtract, b, Full(g, 1, b));
         Instruction* da = Mul(g, ct, Mul(g, b, g.Binary(Opcode::kPower, a, b1)));
         Instruction* db = Mul(g, ct, Mul(g, g.Unary(Opcode::kLog, a), &y));
         return Ops{da, db};
       },
       Elementwise("power", 2, /*positive=*/true)},
      {Opcode::kAtan2,
       [](Graph& g, Instruction& y, Instruction* ct) {
         Instruction *a = y.operand(0), *b = y.operand(1);
         Instruction* r2 = g.Binary(Opcode::kAdd, Mul(g, a, a), Mul(g, b, b));
         Instruction* k = g.Binary(Opcode::kDivide, ct, r2);
         return Ops{Mul(g, k, b), g.Unary(Opcode::kNegate, Mul(g, k, a))};
       },
       Elementwise("atan2", 2)},
  };
}

// d/dx f(x) as a function of x and y = f(x), for unary elementwise ops.
struct Derivative {
  Opcode op;
  std::function<Instruction*(Graph&, Instruction* x, Instruction* y)> d;
  bool positive;
};

std::vector<Rule> MakeUnary() {
  auto one = [](Graph& g, Instruction* v) { return Full(g, 1, v); };
  std::vector<Derivative> ds = {
      {Opcode::kExp, [](Graph&, Instruction*, Instruction* y) { return y; }, false},
      {Opcode::kExpm1, [=](Graph& g, Instruction*, Instruction* y) { return g.Binary(Opcode::kAdd, y, one(g, y)); },
       false},
      {Opcode::kLog, [=](Graph& g, Instruction* x, Instruction*) { return g.Binary(Opcode::kDivide, one(g, x), x); },
       true},
      {Opcode::kLog1p,
       [=](Graph& g, Instruction* x, Instruction*) {
         return g.Binary(Opcode::kDivide, one(g, x), g.Binary(Opcode::kAdd, one(g, x), x));
       },
       true},
      {Opcode::kSin, [](Graph& g, Instruction* x, Instruction*) { return g.Unary(Opcode::kCos, x); }, false},
      {Opcode::kCos,
       [](Graph& g, Instruction* x, Instruction*) { return g.Unary(Opcode::kNegate, g.Unary(Opcode::kSin, x)); },
       false},
      {Opcode::kTan,
       [=](Graph& g, Instruction*, Instruction* y) { return g.Binary(Opcode::kAdd, one(g, y), Mul(g, y, y)); }, false},
      {Opcode::kTanh,
       [=](Graph& g, Instruction*, Instruction* y) { return g.Binary(Opcode::kSubtract, one(g, y), Mul(g, y, y)); },
       false},
      {Opcode::kLogistic,
       [=](Graph& g, Instruction*, Instruction* y) { return Mul(g, y, g.Binary(Opcode::kSubtract, one(g, y), y)); },
       false},
      {Opcode::kSqrt,
       [](Graph& g, Instruction*, Instruction* y) { return g.Binary(Opcode::kDivide, Full(g, 0.5, y), y); }, true},
      {Opcode::kRsqrt,
       [](Graph& g, Instruction* x, Instruction* y) {
         return g.Binary(Opcode::kDivide, Mul(g, Full(g, -0.5, y), y), x);
       },
       true},
      {Opcode::kCbrt,
       [](Graph& g, Instruction*, Instruction* y) {
         return g.Binary(Opcode::kDivide, Full(g, 1.0 / 3, y), Mul(g, y, y));
       },
       true},
      {Opcode::kErf,
       [](Graph& g, Instruction* x, Instruction*) {
         Instruction* e = g.Unary(Opcode::kExp, g.Unary(Opcode::kNegate, Mul(g, x, x)));
         return Mul(g, Full(g, 2 / std::sqrt(M_PI), x), e);
       },
       false},
  };
  std::vector<Rule> rules;
  for (const Derivative& d : ds) {
    auto fn = d.d;
    rules.push_back(
        {d.op, [fn](Graph& g, Instruction& y, Instruction* ct) { return Ops{Mul(g, ct, fn(g, y.operand(0), &y))}; },
         Elementwise(std::string(hlo::OpcodeName(d.op)), 1, d.positive)});
  }
  return rules;
}

}  // namespace

const std::vector<Rule>& Rules() {
  static const std::vector<Rule>* rules = [] {
    auto* r = new std::vector<Rule>(MakeArithmetic());
    for (std::vector<Rule> more : {MakeUnary(), StructuralRules()}) r->insert(r->end(), more.begin(), more.end());
    return r;
  }();
  return *rules;
}

}  // namespace xonnx::autodiff
