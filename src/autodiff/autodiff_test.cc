// Every differentiation rule against central finite differences in f64 on
// the reference evaluator (one test per rule of the table, from the rule's
// own example), compositions of rules, a second derivative, and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autodiff/vjp.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"
#include "hlo/printer.h"

namespace xonnx::autodiff {
namespace {

using hlo::Literal;

// The scalar adder the tests' reductions apply.
// A computation `name` combining two f64 scalars by `op` (maximum, minimum).
std::string Reducer(const std::string& name, const std::string& op) {
  return absl::StrCat(name, " {\n  p = f64[] parameter(0)\n  q = f64[] parameter(1)\n  ROOT s = f64[] ", op,
                      "(p, q)\n}\n");
}

const char kAdder[] = "add {\n  p = f64[] parameter(0)\n  q = f64[] parameter(1)\n  ROOT s = f64[] add(p, q)\n}\n";

// Values of magnitude 0.5 to 1.5 and either sign: away from zero, where
// abs, sign and the positive-domain examples have their kinks.
Literal Random(const hlo::Shape& s, std::mt19937* rng) {
  Literal l(s);
  std::uniform_real_distribution<double> mag(0.5, 1.5);
  for (int64_t k = 0; k < s.ElementCount(); ++k) l.data<double>()[k] = ((*rng)() & 1 ? 1 : -1) * mag(*rng);
  return l;
}

double Dot(const Literal& a, const Literal& b) {
  double s = 0;
  for (int64_t k = 0; k < a.shape().ElementCount(); ++k) s += a.GetAsDouble(k) * b.GetAsDouble(k);
  return s;
}

// <cotangent, f(args)> (f's root, or its tuple's elements).
double Pairing(const hlo::Module& f, const std::vector<Literal>& args, const std::vector<Literal>& cts) {
  auto out = eval::EvaluateModule(f, args);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return NAN;
  if (!out->shape().IsTuple()) return Dot(*out, cts[0]);
  double s = 0;
  for (size_t k = 0; k < cts.size(); ++k) s += Dot(out->tuple_elements()[k], cts[k]);
  return s;
}

// The step and tolerance of central differences for `f`: a module that
// rounds to f32 somewhere (convert) gets ones f32's rounding does not swamp.
struct Differences {
  double step, tolerance;
};
Differences DifferencesFor(const hlo::Module& f) {
  bool f32 = false;
  for (const auto& c : f.computations())
    for (const auto& i : c->instructions()) f32 |= i->shape().element_type == hlo::F32;
  return f32 ? Differences{1e-2, 1e-4} : Differences{1e-6, 1e-6};
}

// Random arguments for f's parameters, and the f64 ones to differentiate.
struct Point {
  std::vector<Literal> args;
  std::vector<int64_t> wrt;
};
Point RandomPoint(const hlo::Module& f, std::mt19937* rng) {
  Point p;
  std::vector<hlo::Instruction*> params = f.entry()->parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    p.args.push_back(Random(params[k]->shape(), rng));
    if (params[k]->shape().element_type == hlo::F64) p.wrt.push_back(k);
  }
  return p;
}

// Checks Vjp(f, every f64 parameter) against central differences.
void ExpectMatchesFiniteDifferences(const hlo::Module& f, uint32_t seed = 1) {
  const auto [step, tolerance] = DifferencesFor(f);
  std::mt19937 rng(seed);
  auto [args, wrt] = RandomPoint(f, &rng);
  const hlo::Shape& root = f.entry()->root()->shape();
  std::vector<Literal> cts;
  if (root.IsTuple()) {
    for (const hlo::Shape& s : root.tuple_shapes) cts.push_back(Random(s, &rng));
  } else {
    cts.push_back(Random(root, &rng));
  }
  auto vjp = Vjp(f, wrt);
  ASSERT_TRUE(vjp.ok()) << vjp.status() << "\n" << hlo::ToText(f);
  std::vector<Literal> vjp_args;
  for (const Literal& a : args) vjp_args.push_back(Literal(a));
  for (const Literal& c : cts) vjp_args.push_back(Literal(c));
  auto got = eval::EvaluateModule(**vjp, vjp_args);
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << hlo::ToText(**vjp);
  const size_t first_grad = root.IsTuple() ? root.tuple_shapes.size() : 1;
  for (size_t w = 0; w < wrt.size(); ++w) {
    const Literal& grad = got->tuple_elements()[first_grad + w];
    for (int64_t e = 0; e < grad.shape().ElementCount(); ++e) {
      std::vector<Literal> plus, minus;
      for (const Literal& a : args) {
        plus.push_back(Literal(a));
        minus.push_back(Literal(a));
      }
      double x = args[wrt[w]].data<double>()[e], h = step * std::max(1.0, std::abs(x));
      plus[wrt[w]].data<double>()[e] = x + h;
      minus[wrt[w]].data<double>()[e] = x - h;
      double fd = (Pairing(f, plus, cts) - Pairing(f, minus, cts)) / (2 * h);
      double ad = grad.data<double>()[e];
      EXPECT_NEAR(ad, fd, tolerance * std::max(1.0, std::abs(fd))) << "parameter " << wrt[w] << " element " << e << "\n"
                                                                   << hlo::ToText(**vjp);
    }
  }
}

class RuleTest : public ::testing::TestWithParam<size_t> {};

TEST_P(RuleTest, MatchesCentralDifferences) {
  const Rule& r = Rules()[GetParam()];
  SCOPED_TRACE(std::string(hlo::OpcodeName(r.opcode)));
  auto f = hlo::ParseText(r.example);
  ASSERT_TRUE(f.ok()) << f.status() << "\n" << r.example;
  ExpectMatchesFiniteDifferences(**f);
}

INSTANTIATE_TEST_SUITE_P(EveryRule, RuleTest, ::testing::Range<size_t>(0, Rules().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string n(hlo::OpcodeName(Rules()[info.param].opcode));
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Jvp(f) against central differences along a random direction, for the
// same examples: J v ≈ (f(x + h v) - f(x - h v)) / 2h.
TEST_P(RuleTest, ForwardModeMatchesDirectionalDifferences) {
  const Rule& r = Rules()[GetParam()];
  SCOPED_TRACE(std::string(hlo::OpcodeName(r.opcode)));
  auto f = hlo::ParseText(r.example);
  ASSERT_TRUE(f.ok()) << f.status();
  std::mt19937 rng(21);
  auto [args, wrt] = RandomPoint(**f, &rng);
  std::vector<Literal> tangents;
  for (int64_t k : wrt) tangents.push_back(Random(args[k].shape(), &rng));
  auto jvp = Jvp(**f, wrt);
  ASSERT_TRUE(jvp.ok()) << jvp.status();
  std::vector<Literal> jvp_args;
  for (const Literal& a : args) jvp_args.push_back(Literal(a));
  for (const Literal& t : tangents) jvp_args.push_back(Literal(t));
  auto got = eval::EvaluateModule(**jvp, jvp_args);
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << hlo::ToText(**jvp);
  const auto [h, tolerance] = DifferencesFor(**f);
  auto shifted = [&](double sign) {
    std::vector<Literal> a;
    for (size_t k = 0; k < args.size(); ++k) a.push_back(Literal(args[k]));
    for (size_t w = 0; w < wrt.size(); ++w)
      for (int64_t e = 0; e < a[wrt[w]].shape().ElementCount(); ++e)
        a[wrt[w]].data<double>()[e] += sign * h * tangents[w].data<double>()[e];
    auto out = eval::EvaluateModule(**f, a);
    EXPECT_TRUE(out.ok());
    return out.ok() ? *std::move(out) : Literal();
  };
  Literal plus = shifted(1), minus = shifted(-1);
  const Literal& jv = got->tuple_elements()[1];
  for (int64_t e = 0; e < jv.shape().ElementCount(); ++e) {
    double fd = (plus.GetAsDouble(e) - minus.GetAsDouble(e)) / (2 * h);
    EXPECT_NEAR(jv.GetAsDouble(e), fd, tolerance * std::max(1.0, std::abs(fd))) << "element " << e;
  }
}

TEST(Autodiff, EveryRuleIsForADistinctOpcode) {
  std::set<hlo::Opcode> seen;
  for (const Rule& r : Rules()) EXPECT_TRUE(seen.insert(r.opcode).second) << hlo::OpcodeName(r.opcode);
  EXPECT_GE(Rules().size(), 35u);
}

// Average pooling's windowed sum, whose windows tile the input: the rule's
// broadcast form (the table's example covers the general one).
TEST(Autodiff, WindowedSumsThatTileTheInput) {
  auto f = hlo::ParseText(absl::StrCat("HloModule pool\n", kAdder, R"(ENTRY main {
  x = f64[2,3,4,6] parameter(0)
  z = f64[] parameter(1)
  ROOT y = f64[2,3,2,2] reduce-window(x, z), window={size=1x1x2x3 stride=1x1x2x3}, to_apply=add
}
)"));
  ASSERT_TRUE(f.ok()) << f.status();
  auto vjp = Vjp(**f, {0, 1});
  ASSERT_TRUE(vjp.ok()) << vjp.status();
  EXPECT_EQ(hlo::ToText(**vjp).find("reduce-window(cotangent"), std::string::npos) << hlo::ToText(**vjp);
  ExpectMatchesFiniteDifferences(**f, 3);
}

// A derivative's path through a tuple (what loops, branches and calls pass
// on) is an error until there are rules for them, never silently zero.
TEST(Autodiff, PathsThroughTuplesAreRefusedNotCut) {
  auto f = hlo::ParseText(R"(HloModule t
ENTRY main {
  x = f64[2] parameter(0)
  t = (f64[2]) tuple(x)
  g = f64[2] get-tuple-element(t), index=0
  ROOT y = f64[2] multiply(g, g)
}
)");
  ASSERT_TRUE(f.ok()) << f.status();
  auto vjp = Vjp(**f, {0});
  ASSERT_FALSE(vjp.ok());
  EXPECT_NE(vjp.status().message().find("no differentiation rule"), std::string::npos) << vjp.status();
}

// Max and min pooling: overlapping windows, padding and a dilated window;
// the chosen element of each window gets its cotangent.
TEST(Autodiff, WindowedMaximaAndMinima) {
  for (const char* op : {"maximum", "minimum"}) {
    auto f = hlo::ParseText(absl::StrCat("HloModule pool\n", Reducer("pick", op), R"(ENTRY main {
  x = f64[2,7,6] parameter(0)
  z = f64[] constant()",
                                         std::string(op) == "maximum" ? "-inf" : "inf", R"()
  ROOT y = f64[2,4,2] reduce-window(x, z), window={size=1x3x2 stride=1x2x2 pad=0_0x1_1x0_0 rhs_dilate=1x1x2}, to_apply=pick
}
)"));
    ASSERT_TRUE(f.ok()) << f.status();
    ExpectMatchesFiniteDifferences(**f, 11);
  }
}

TEST(Autodiff, ALayerWithALossAndTwoOutputs) {
  auto f = hlo::ParseText(absl::StrCat(R"(HloModule mlp
)",
                                       kAdder, R"(ENTRY main {
  x = f64[4,3] parameter(0)
  w = f64[3,2] parameter(1)
  b = f64[2] parameter(2)
  xw = f64[4,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f64[4,2] broadcast(b), dimensions={1}
  pre = f64[4,2] add(xw, bb)
  h = f64[4,2] tanh(pre)
  sq = f64[4,2] multiply(h, h)
  z = f64[] constant(0)
  loss = f64[] reduce(sq, z), dimensions={0,1}, to_apply=add
  ROOT out = (f64[], f64[4,2]) tuple(loss, h)
}
)"));
  ASSERT_TRUE(f.ok()) << f.status();
  ExpectMatchesFiniteDifferences(**f, 7);
}

TEST(Autodiff, SecondDerivativeIsTheVjpOfTheVjp) {
  // f(x) = sum(sin(x) * x); the VJP module (x, ct) -> (f, ct * f'(x)) is
  // itself differentiated, giving ct * f''(x) against differences of f'.
  auto f = hlo::ParseText(absl::StrCat(R"(HloModule f
)",
                                       kAdder, R"(ENTRY main {
  x = f64[3] parameter(0)
  sn = f64[3] sine(x)
  m = f64[3] multiply(sn, x)
  z = f64[] constant(0)
  ROOT r = f64[] reduce(m, z), dimensions={0}, to_apply=add
}
)"));
  ASSERT_TRUE(f.ok());
  auto first = Vjp(**f, {0});
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectMatchesFiniteDifferences(**first, 3);
}

TEST(Autodiff, ConvolutionsOfOtherLayoutsAndInputDilation) {
  // Channels-last with a transposed convolution's input dilation, and a
  // 1-D one with a 1x1 kernel: the rule's paddings and dimension swaps in
  // cases the table's example does not reach.
  for (const char* conv :
       {"  x = f64[1,4,3,2] parameter(0)\n  w = f64[2,2,2,3] parameter(1)\n"
        "  ROOT y = f64[1,9,5,3] convolution(x, w), window={size=2x2 pad=1_2x0_1 lhs_dilate=2x2}, "
        "dim_labels=b01f_01io->b01f\n",
        "  x = f64[3,2,7] parameter(0)\n  w = f64[4,2,1] parameter(1)\n"
        "  ROOT y = f64[3,4,3] convolution(x, w), window={size=1 stride=3}, dim_labels=bf0_oi0->bf0\n",
        // Two groups of 2 input and 3 output features, and a depthwise one.
        "  x = f64[2,4,5,4] parameter(0)\n  w = f64[6,2,3,2] parameter(1)\n"
        "  ROOT y = f64[2,6,3,3] convolution(x, w), window={size=3x2 stride=2x1 pad=1_1x0_0}, "
        "dim_labels=bf01_oi01->bf01, feature_group_count=2\n",
        "  x = f64[1,5,4,3] parameter(0)\n  w = f64[3,3,1,3] parameter(1)\n"
        "  ROOT y = f64[1,5,4,3] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
        "dim_labels=b01f_01io->b01f, feature_group_count=3\n"}) {
    auto f = hlo::ParseText(absl::StrCat("HloModule c\nENTRY main {\n", conv, "}\n"));
    ASSERT_TRUE(f.ok()) << f.status() << conv;
    ExpectMatchesFiniteDifferences(**f, 5);
  }
}

TEST(Autodiff, MaximaAndMinimaSendTheCotangentToTheChosenElements) {
  for (const char* op : {"maximum", "minimum"}) {
    auto f = hlo::ParseText(absl::StrCat("HloModule r\n", Reducer("pick", op), R"(ENTRY main {
  x = f64[3,4] parameter(0)
  z = f64[] constant(0)
  ROOT y = f64[3] reduce(x, z), dimensions={1}, to_apply=pick
}
)"));
    ASSERT_TRUE(f.ok()) << f.status();
    ExpectMatchesFiniteDifferences(**f, 9);
  }
  // A tie splits the cotangent: max(2, 2, 1) sends half to each 2.
  auto f = hlo::ParseText(absl::StrCat("HloModule t\n", Reducer("pick", "maximum"), R"(ENTRY main {
  x = f64[3] parameter(0)
  z = f64[] constant(-inf)
  ROOT y = f64[] reduce(x, z), dimensions={0}, to_apply=pick
}
)"));
  ASSERT_TRUE(f.ok()) << f.status();
  auto v = Vjp(**f, {0});
  ASSERT_TRUE(v.ok()) << v.status();
  std::vector<Literal> args;
  args.push_back(Literal::Vector<double>({2, 2, 1}));
  args.push_back(Literal::Scalar<double>(1));
  auto out = eval::EvaluateModule(**v, args);
  ASSERT_TRUE(out.ok()) << out.status();
  const Literal& grad = out->tuple_elements()[1];
  EXPECT_EQ(grad.data<double>()[0], 0.5);
  EXPECT_EQ(grad.data<double>()[1], 0.5);
  EXPECT_EQ(grad.data<double>()[2], 0);
}

TEST(Autodiff, AWindowedSumOverADilatedInput) {
  // Dilation holes and padding read the init value: its cotangent counts them.
  auto f = hlo::ParseText(absl::StrCat(R"(HloModule w
)",
                                       kAdder, R"(ENTRY main {
  x = f64[4,3] parameter(0)
  z = f64[] parameter(1)
  ROOT y = f64[4,3] reduce-window(x, z), window={size=2x2 stride=2x1 pad=1_0x0_1 lhs_dilate=2x1}, to_apply=add
}
)"));
  ASSERT_TRUE(f.ok()) << f.status();
  ExpectMatchesFiniteDifferences(**f, 13);
}

TEST(Autodiff, TheSeedsExample) {
  // f(x) = -2 sin(x) + x, whose derivative is -2 cos(x) + 1.
  auto f = hlo::ParseText(R"(HloModule f
ENTRY main {
  x = f64[5] parameter(0)
  two = f64[] constant(-2)
  t = f64[5] broadcast(two), dimensions={}
  sn = f64[5] sine(x)
  m = f64[5] multiply(t, sn)
  ROOT y = f64[5] add(m, x)
}
)");
  ASSERT_TRUE(f.ok()) << f.status();
  auto df = Vjp(**f, {0});
  ASSERT_TRUE(df.ok()) << df.status();
  std::vector<Literal> args;
  args.push_back(Literal::Vector<double>({-2, -0.5, 0, 1, 3}));
  args.push_back(Literal::Vector<double>({1, 1, 1, 1, 1}));  // the cotangent: each element's own derivative
  auto out = eval::EvaluateModule(**df, args);
  ASSERT_TRUE(out.ok()) << out.status();
  const Literal& grad = out->tuple_elements()[1];
  for (int k = 0; k < 5; ++k) {
    double x = args[0].data<double>()[k];
    EXPECT_NEAR(grad.data<double>()[k], -2 * std::cos(x) + 1, 1e-15) << x;
  }
}

TEST(Autodiff, AnOpWithoutARuleIsNamed) {
  auto f = hlo::ParseText(R"(HloModule f
less {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT l = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f64[4] parameter(0), metadata={op_type="Input" op_name="x"}
  ROOT s = f64[4] sort(x), dimensions={0}, to_apply=less, metadata={op_type="Sort" op_name="my_sort"}
}
)");
  ASSERT_TRUE(f.ok()) << f.status();
  auto v = Vjp(**f, {0});
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()), ::testing::HasSubstr("no differentiation rule for"));
  EXPECT_THAT(std::string(v.status().message()), ::testing::HasSubstr("(sort) from ONNX node 'my_sort' (Sort)"));
  EXPECT_FALSE(Vjp(**f, {3}).ok());
}

TEST(Autodiff, ValuesThatDoNotReachTheParameterNeedNoRule) {
  // The sort sees only a constant: no cotangent flows through it.
  auto f = hlo::ParseText(R"(HloModule f
less {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT l = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f64[4] parameter(0)
  c = f64[4] constant({3, 1, 2, 0})
  s = f64[4] sort(c), dimensions={0}, to_apply=less
  ROOT y = f64[4] multiply(x, s)
}
)");
  ASSERT_TRUE(f.ok());
  ExpectMatchesFiniteDifferences(**f);
}

}  // namespace
}  // namespace xonnx::autodiff
