// GELU's exact form in a fused loop: each way exporters write it becomes
// one GELU node (GeluErfF32), whose results must equal running its five
// steps one after another with the loop's own kernels, bit for bit, and
// stay within the evaluator's (std::erf) tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/vector_math.h"
#include "backends/cpu/runtime/executable.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"

namespace xonnx::cpu {
namespace {

using hlo::Builder;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;
using hlo::Shape;

// Values over erf's three ranges (series, tail, saturated), signed zeros,
// infinities, a NaN and subnormals.
std::vector<float> Values(int64_t n) {
  std::vector<float> v(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-9.0f, 9.0f);
  for (float& x : v) x = d(rng);
  const float special[] = {0.0f,
                           -0.0f,
                           1e-40f,
                           -1e-40f,
                           0.75f,
                           -0.75f,
                           1.0606f,
                           4.0f * 1.41421354f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           3e38f,
                           -3e38f};
  for (size_t k = 0; k < std::size(special) && static_cast<int64_t>(k * 7) < n; ++k) v[k * 7] = special[k];
  return v;
}

// The five steps as separate kernels, as the fused loop's nodes ran them.
std::vector<float> Steps(const GeluErfForm& f, const std::vector<float>& x) {
  const int64_t n = x.size();
  std::vector<float> c(n, f.c), h(n, f.h), one(n, 1.0f), u(n), v(n), y(n);
  ArithF32(f.divide ? Arith::kDivide : Arith::kMultiply, x.data(), c.data(), u.data(), n);
  ErfF32(u.data(), u.data(), n);
  ArithF32(Arith::kAdd, u.data(), one.data(), u.data(), n);
  ArithF32(Arith::kMultiply, x.data(), f.half_first ? h.data() : u.data(), v.data(), n);
  ArithF32(Arith::kMultiply, v.data(), f.half_first ? u.data() : h.data(), y.data(), n);
  return y;
}

TEST(GeluKernel, EqualsItsStepsBitForBit) {
  for (bool divide : {true, false})
    for (bool half_first : {true, false}) {
      GeluErfForm f;
      f.c = divide ? 1.41421354f : 0.707106769f;
      f.h = 0.5f;
      f.divide = divide;
      f.half_first = half_first;
      for (int64_t n : {1, 15, 16, 17, 1000, 1024}) {
        std::vector<float> x = Values(n), got(n);
        GeluErfF32(f, x.data(), got.data(), n);
        std::vector<float> want = Steps(f, x);
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), n * sizeof(float)))
            << "divide " << divide << " half_first " << half_first << " n " << n;
      }
    }
}

struct GeluCase {
  std::string name;
  // GELU of x as an exporter writes it, with scalar constants splat to x's shape.
  std::function<Instruction*(Builder&, Instruction* x, std::function<Instruction*(double)> k)> gelu;
};

std::vector<GeluCase> Cases() {
  auto erf_plus_one = [](Builder& b, Instruction* s, auto k) {
    return b.Binary(Opcode::kAdd, b.Unary(Opcode::kErf, s), k(1.0));
  };
  return {
      // torch.nn.GELU: x * 0.5 * (1 + erf(x / sqrt 2)), the half first.
      {"half_first_divided",
       [=](Builder& b, Instruction* x, auto k) {
         auto* u = erf_plus_one(b, b.Binary(Opcode::kDivide, x, k(1.41421354)), k);
         return b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, x, k(0.5)), u);
       }},
      // The half last: (x * (1 + erf(x / sqrt 2))) * 0.5 (ConvNeXt's export).
      {"half_last_divided",
       [=](Builder& b, Instruction* x, auto k) {
         auto* u = erf_plus_one(b, b.Binary(Opcode::kDivide, x, k(1.41421354)), k);
         return b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, x, u), k(0.5));
       }},
      // 1 / sqrt 2 as a factor, the operands of each op the other way round.
      {"half_last_multiplied_operands_swapped",
       [=](Builder& b, Instruction* x, auto k) {
         auto* s = b.Binary(Opcode::kMultiply, k(0.707106769), x);
         auto* u = b.Binary(Opcode::kAdd, k(1.0), b.Unary(Opcode::kErf, s));
         return b.Binary(Opcode::kMultiply, k(0.5), b.Binary(Opcode::kMultiply, u, x));
       }},
  };
}

class GeluInALoop : public ::testing::TestWithParam<int> {};

TEST_P(GeluInALoop, IsOneNodeWithinTheEvaluatorsTolerance) {
  const GeluCase c = Cases()[GetParam()];
  auto m = std::make_unique<hlo::Module>(c.name);
  Builder b(m.get(), "main");
  const std::vector<int64_t> dims = {3, 700};
  Instruction* p0 = b.Parameter(0, Shape(hlo::F32, dims), "p0");
  Instruction* p1 = b.Parameter(1, Shape(hlo::F32, dims), "p1");
  auto k = [&](double v) { return b.Broadcast(b.ScalarConstant(hlo::F32, v), dims, {}); };
  // A bias added first, so that the GELU is a loop of its own, not an epilogue.
  Instruction* x = b.Binary(Opcode::kAdd, p0, p1);
  auto comp = b.Build(c.gelu(b, x, k));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);

  FusionSpec spec;
  for (const auto& in : (*comp)->instructions()) {
    if (in->opcode() == Opcode::kBroadcast) {
      spec.inputs.push_back(in.get());
      spec.strided.push_back(true);
    } else if (in->opcode() != Opcode::kParameter && in->opcode() != Opcode::kConstant) {
      spec.members.push_back(in.get());
    }
  }
  spec.inputs.push_back(p0);
  spec.strided.push_back(false);
  spec.inputs.push_back(p1);
  spec.strided.push_back(false);
  auto sum = SummarizeFusion(spec);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->gelus, 1) << c.name;
  EXPECT_EQ(sum->computed_ops, 2) << c.name;  // the bias add and the GELU

  std::vector<Literal> args;
  for (int i = 0; i < 2; ++i) {
    Literal a(Shape(hlo::F32, dims));
    std::vector<float> v = Values(a.element_count());
    std::memcpy(a.untyped_data(), v.data(), v.size() * sizeof(float));
    if (i == 1) std::memset(a.untyped_data(), 0, v.size() * sizeof(float));
    args.push_back(std::move(a));
  }
  auto exe = Executable::Compile(m->Clone(), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) EXPECT_EQ(kind, "fusion") << (*exe)->KernelListing();
  std::vector<const void*> in = {args[0].untyped_data(), args[1].untyped_data()};
  Literal got((*exe)->output_shapes().at(0));
  void* out = got.untyped_data();
  ASSERT_TRUE((*exe)->Execute(in, absl::MakeSpan(&out, 1)).ok());
  auto want = eval::EvaluateModule(*m, std::move(args));
  ASSERT_TRUE(want.ok()) << want.status();
  for (int64_t i = 0; i < got.element_count(); ++i) {
    double g = got.GetAsDouble(i), w = want->GetAsDouble(i);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << c.name << " at " << i;
    } else if (std::isinf(w)) {
      EXPECT_EQ(g, w) << c.name << " at " << i;
    } else {
      EXPECT_NEAR(g, w, 1e-6 * std::max(1.0, std::fabs(w))) << c.name << " at " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, GeluInALoop, ::testing::Range(0, static_cast<int>(Cases().size())),
                         [](const ::testing::TestParamInfo<int>& info) { return Cases()[info.param].name; });

}  // namespace
}  // namespace xonnx::cpu
