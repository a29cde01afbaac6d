// Every elementwise opcode on the CPU backend against the evaluator, for
// every element type it is defined on: the fused loops (with and without
// oneDNN and fusion planning), over enough elements to span several blocks
// and threads, with operands read whole, broadcast from a scalar and
// broadcast along a dim. Integer and logical results must be equal; float
// ones within 1e-5 (relative), the vectorized exp, logistic, tanh and erf's
// accuracy.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"

namespace xonnx::cpu {
namespace {

using namespace hlo;  // NOLINT

constexpr int64_t kRows = 5, kCols = 700;

Literal Random(const Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ints(-9, 40);
  std::uniform_real_distribution<double> reals(-3, 3);
  TypeSwitch(s.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < l.element_count(); ++i)
      l.data<T>()[i] = std::is_integral_v<T> ? ConvertValue<T, int>(ints(rng)) : ConvertValue<T, double>(reals(rng));
  });
  return l;
}

bool IsLogical(Opcode op) {
  return op == Opcode::kNot || op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor;
}
bool IsShift(Opcode op) {
  return op == Opcode::kShiftLeft || op == Opcode::kShiftRightArithmetic || op == Opcode::kShiftRightLogical;
}

// Whether the opcode is defined on element type t.
bool Defined(Opcode op, PrimitiveType t) {
  if (t == PRED) return IsLogical(op);
  bool floating = IsFloatingPoint(t);
  if (OpcodeTraitsOf(op) & kFloatOnly) return floating;
  if (IsLogical(op) || IsShift(op)) return !floating;
  return true;
}

struct Param {
  Opcode op;
  PrimitiveType type;
};

std::vector<Param> Params() {
  std::vector<Param> out;
  for (int k = 0; k < kOpcodeCount; ++k) {
    Opcode op = static_cast<Opcode>(k);
    if (!IsElementwise(op)) continue;
    for (PrimitiveType t : {F32, F64, S32, S64, U8, PRED})
      if (Defined(op, t)) out.push_back({op, t});
  }
  return out;
}

// op applied to x, y (and z) of type t: [kRows, kCols] values, one of them
// a broadcast scalar and one a broadcast row vector where the arity allows.
Instruction* Apply(Builder& b, Opcode op, PrimitiveType t, const std::vector<Instruction*>& p) {
  const std::vector<int64_t> dims = {kRows, kCols};
  Instruction* x = p[0];
  Instruction* y = b.Broadcast(p[1], dims, {1});                // a row vector along the rows
  Instruction* z = b.Broadcast(b.Reshape(p[2], {}), dims, {});  // a scalar
  switch (op) {
    case Opcode::kConvert:
      return b.Convert(x, t == F32 ? S32 : F32);
    case Opcode::kCompare:
      return b.Compare(x, y, ComparisonDirection::kLt);
    case Opcode::kSelect:
      return b.Select(b.Compare(x, z, ComparisonDirection::kGt), x, y);
    case Opcode::kClamp:
      return b.Clamp(b.Unary(Opcode::kNegate, b.Reshape(p[2], {})), x, b.Reshape(p[2], {}));
    default:
      break;
  }
  if (OpcodeArity(op) == 1) return b.Unary(op, x);
  (void)t;
  return b.Binary(op, x, y);
}

class ElementwiseTest : public ::testing::TestWithParam<std::tuple<Param, bool>> {};

TEST_P(ElementwiseTest, MatchesTheEvaluator) {
  auto [param, fast] = GetParam();
  auto m = std::make_unique<Module>("elementwise");
  Builder b(m.get(), "main");
  std::vector<Shape> shapes = {Shape(param.type, {kRows, kCols}), Shape(param.type, {kCols}), Shape(param.type, {1})};
  std::vector<Instruction*> p;
  std::vector<Literal> args;
  for (size_t k = 0; k < shapes.size(); ++k) {
    p.push_back(b.Parameter(k, shapes[k], absl::StrCat("p", k)));
    args.push_back(Random(shapes[k], 31 + k));
  }
  if (param.op == Opcode::kClamp && param.type != PRED) {  // a non-negative bound, so that lo <= hi
    args[2] = Literal(shapes[2]);
    TypeSwitch(param.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      args[2].data<T>()[0] = ConvertValue<T, int>(2);
    });
  }
  auto comp = b.Build(Apply(b, param.op, param.type, p));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  auto want = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  CompileOptions options;
  options.use_dnnl = options.fuse_elementwise = fast;
  auto exe = Executable::Compile(std::move(m), options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) EXPECT_NE(kind.rfind("kernel", 0), 0u) << kind;
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  Literal got((*exe)->output_shapes()[0]);
  void* out = got.untyped_data();
  ASSERT_TRUE((*exe)->Execute(in, {&out, 1}).ok());
  ASSERT_EQ(got.element_count(), want->element_count());
  bool floating = IsFloatingPoint(got.shape().element_type);
  for (int64_t i = 0; i < got.element_count(); ++i) {
    double g = got.GetAsDouble(i), w = want->GetAsDouble(i);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i;
    } else if (floating && std::isfinite(w)) {
      EXPECT_LE(std::fabs(g - w), 1e-5 * std::max(1.0, std::fabs(w))) << "element " << i << ": " << g << " vs " << w;
    } else {
      EXPECT_EQ(g, w) << "element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOp, ElementwiseTest, ::testing::Combine(::testing::ValuesIn(Params()), ::testing::Bool()),
                         [](const auto& info) {
                           const Param& p = std::get<0>(info.param);
                           std::string name = absl::StrCat(OpcodeName(p.op), "_", PrimitiveTypeName(p.type),
                                                           std::get<1>(info.param) ? "_fast" : "");
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace xonnx::cpu
