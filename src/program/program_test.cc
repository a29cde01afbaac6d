// Programs traced from C++: tracing and its errors, Jit on the CPU plugin,
// and the transformations checked against closed forms and finite
// differences.
#include "xonnx/program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace xonnx::program {
namespace {

using Values = std::vector<Value>;

Tensor F64(std::vector<int64_t> dims, std::vector<double> v) {
  return Tensor::FromVector<double>(DataType::kFloat64, std::move(dims), v);
}
Tensor F32(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::FromVector<float>(DataType::kFloat32, std::move(dims), v);
}

Program MustTrace(const Program::Fn& fn, const std::vector<Spec>& specs) {
  StatusOr<Program> p = Program::Trace(fn, specs);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : Program();
}

// Runs program `p` once on the CPU plugin.
std::vector<Tensor> RunOnce(const Program& p, const std::vector<Tensor>& inputs) {
  StatusOr<Jit> jit = Jit::Of([p](const std::vector<Spec>&) -> StatusOr<Program> { return p; });
  EXPECT_TRUE(jit.ok()) << jit.status().message();
  if (!jit.ok()) return {};
  StatusOr<std::vector<Tensor>> out = jit->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : std::vector<Tensor>{};
}

TEST(Program, TracesShapesAndTypes) {
  Program p = MustTrace(
      [](const Values& x) -> Values {
        Value y = x[0] * x[1] + 1.0;  // [2,3] * [3] broadcasts
        EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
        return {y, Sum(y, {1}), MatMul(x[0], x[1])};
      },
      {{DataType::kFloat32, {2, 3}}, {DataType::kFloat32, {3}}});
  ASSERT_EQ(p.outputs().size(), 3u);
  EXPECT_EQ(p.outputs()[0].ToString(), "float32[2,3]");
  EXPECT_EQ(p.outputs()[1].ToString(), "float32[2]");
  EXPECT_EQ(p.outputs()[2].ToString(), "float32[2]");
  EXPECT_NE(p.HloText().find("multiply"), std::string::npos);
  StatusOr<std::string> mlir = p.StableHlo();
  ASSERT_TRUE(mlir.ok()) << mlir.status().message();
  EXPECT_NE(mlir->find("stablehlo.dot_general"), std::string::npos);
  std::vector<Tensor> out = RunOnce(p, {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({3}, {1, 0, -1})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FLOAT_EQ(out[0].data_as<float>()[5], -5.f);  // 6 * -1 + 1
  EXPECT_FLOAT_EQ(out[1].data_as<float>()[0], 1.f);   // 2 + 1 + -2
  EXPECT_FLOAT_EQ(out[2].data_as<float>()[1], -2.f);  // 4 - 6
}

TEST(Program, ErrorsNameTheOperationAndShapes) {
  StatusOr<Program> p = Program::Trace([](const Values& x) -> Values { return {Exp(x[0] + x[1])}; },
                                       {{DataType::kFloat32, {3}}, {DataType::kFloat32, {4}}}, "bad");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("tracing program 'bad'"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("Add(float32[3], float32[4])"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("do not broadcast"), std::string::npos) << p.status().message();

  p = Program::Trace([](const Values& x) -> Values { return {x[0] * x[1]}; },
                     {{DataType::kFloat32, {3}}, {DataType::kFloat64, {3}}});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("types differ"), std::string::npos) << p.status().message();

  p = Program::Trace([](const Values& x) -> Values { return {MatMul(x[0], x[0])}; }, {{DataType::kFloat32, {2, 3}}});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("MatMul(float32[2,3], float32[2,3])"), std::string::npos);

  Value escaped;
  ASSERT_TRUE(Program::Trace(
                  [&](const Values& x) -> Values {
                    escaped = x[0];
                    return {x[0]};
                  },
                  {{DataType::kFloat32, {1}}})
                  .ok());
  p = Program::Trace([&](const Values& x) -> Values { return {x[0] + escaped}; }, {{DataType::kFloat32, {1}}});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("another trace (one that has finished)"), std::string::npos)
      << p.status().message();

  p = Program::Trace([](const Values&) -> Values { return {}; }, {});
  EXPECT_FALSE(p.ok());
  EXPECT_FALSE(Constant(F32({1}, {1})).valid());  // outside any trace
}

TEST(Program, JitCompilesOncePerInputShapes) {
  StatusOr<Jit> jit = Jit::OfFunction([](const Values& x) -> Values { return {Sum(Square(x[0]))}; });
  ASSERT_TRUE(jit.ok()) << jit.status().message();
  for (int k = 0; k < 3; ++k) {
    auto out = jit->Run({F32({2}, {3, 4})});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_FLOAT_EQ((*out)[0].data_as<float>()[0], 25.f);
  }
  EXPECT_EQ(jit->compiled(), 1);
  auto out = jit->Run({F32({3}, {1, 2, 2})});
  ASSERT_TRUE(out.ok());
  EXPECT_FLOAT_EQ((*out)[0].data_as<float>()[0], 9.f);
  EXPECT_EQ(jit->compiled(), 2);
}

TEST(Program, JitUsesThePersistentCache) {
  SessionOptions o;
  o.cache_dir = (std::filesystem::temp_directory_path() / ("xonnx_program_test_" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(o.cache_dir);
  auto fn = [](const Values& x) -> Values { return {Tanh(x[0]) * 2.0}; };
  for (int round = 0; round < 2; ++round) {
    StatusOr<Jit> jit = Jit::OfFunction(fn, o);
    ASSERT_TRUE(jit.ok());
    auto out = jit->Run({F32({1}, {0.5f})});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_NEAR((*out)[0].data_as<float>()[0], 2 * std::tanh(0.5), 1e-6);
    EXPECT_EQ(jit->loaded_from_cache(), round);
  }
  std::filesystem::remove_all(o.cache_dir);
}

// Values kept on the device between runs give what host runs give.
TEST(Program, DeviceValuesChainRunsWithoutCopies) {
  StatusOr<Jit> jit = Jit::OfFunction([](const Values& x) -> Values { return {x[0] * x[1], Sum(x[0])}; });
  ASSERT_TRUE(jit.ok());
  auto a = jit->Upload(F32({3}, {1, 2, 3}));
  auto b = jit->Upload(F32({3}, {2, 2, 2}));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->spec().ToString(), "float32[3]");
  DeviceValue v = *a;
  for (int k = 0; k < 3; ++k) {  // v = v * b, three times
    auto out = jit->RunOnDevice({v, *b});
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_EQ(out->size(), 2u);
    v = (*out)[0];
  }
  auto host = v.ToHost();
  ASSERT_TRUE(host.ok()) << host.status().message();
  EXPECT_FLOAT_EQ(host->data_as<float>()[2], 24.f);
  EXPECT_EQ(jit->compiled(), 1);
  // Wrong inputs are refused by name.
  EXPECT_FALSE(jit->RunOnDevice({v, DeviceValue()}).ok());
  EXPECT_FALSE(DeviceValue().ToHost().ok());
}

// The seeds' example: f(x) = -2·sin(x) + x, its derivative and the second.
TEST(Program, GradOfTheSeedsExampleAndOfItsGradient) {
  Program f =
      MustTrace([](const Values& x) -> Values { return {Sum(-2.0 * Sin(x[0]) + x[0])}; }, {{DataType::kFloat64, {}}});
  StatusOr<Program> df = Grad(f, {0});
  ASSERT_TRUE(df.ok()) << df.status().message();
  StatusOr<Program> ddf = Grad(*df, {0});
  ASSERT_TRUE(ddf.ok()) << ddf.status().message();
  StatusOr<Program> vg = ValueAndGrad(f, {0});
  ASSERT_TRUE(vg.ok());
  for (double x : {-1.3, 0.0, 0.7, 2.5}) {
    EXPECT_NEAR(RunOnce(*df, {F64({}, {x})})[0].data_as<double>()[0], -2 * std::cos(x) + 1, 1e-15);
    EXPECT_NEAR(RunOnce(*ddf, {F64({}, {x})})[0].data_as<double>()[0], 2 * std::sin(x), 1e-15);
    std::vector<Tensor> both = RunOnce(*vg, {F64({}, {x})});
    ASSERT_EQ(both.size(), 2u);
    EXPECT_NEAR(both[0].data_as<double>()[0], -2 * std::sin(x) + x, 1e-15);
  }
  EXPECT_FALSE(Grad(MustTrace([](const Values& x) -> Values { return {x[0] * 2.0}; }, {{DataType::kFloat64, {2}}}))
                   .ok());  // not one element
}

TEST(Program, VjpAndJvpOfAProduct) {
  Program f = MustTrace([](const Values& x) -> Values { return {MatMul(x[0], x[1])}; },
                        {{DataType::kFloat64, {2, 3}}, {DataType::kFloat64, {3}}});
  StatusOr<Program> vjp = Vjp(f, {0, 1});
  ASSERT_TRUE(vjp.ok()) << vjp.status().message();
  Tensor a = F64({2, 3}, {1, 2, 3, 4, 5, 6}), v = F64({3}, {1, -1, 2}), u = F64({2}, {0.5, -2});
  std::vector<Tensor> r = RunOnce(*vjp, {a, v, u});
  ASSERT_EQ(r.size(), 3u);
  // d/dA = u vᵀ, d/dv = Aᵀ u.
  EXPECT_DOUBLE_EQ(r[1].data_as<double>()[5], -2 * 2);
  EXPECT_DOUBLE_EQ(r[2].data_as<double>()[0], 0.5 * 1 - 2 * 4);
  StatusOr<Program> jvp = Jvp(f, {1});
  ASSERT_TRUE(jvp.ok()) << jvp.status().message();
  r = RunOnce(*jvp, {a, v, F64({3}, {0, 1, 0})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[1].data_as<double>()[0], 2);  // A's second column
  EXPECT_DOUBLE_EQ(r[1].data_as<double>()[1], 5);
}

TEST(Program, StopGradientPassesNoDerivative) {
  Program f = MustTrace([](const Values& x) -> Values { return {Sum(x[0] * StopGradient(x[0]))}; },
                        {{DataType::kFloat64, {2}}});
  StatusOr<Program> g = Grad(f);
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<Tensor> r = RunOnce(*g, {F64({2}, {3, -4})});
  EXPECT_DOUBLE_EQ(r[0].data_as<double>()[0], 3);  // not 2x
  EXPECT_DOUBLE_EQ(r[0].data_as<double>()[1], -4);
}

// A small convolutional classifier's loss, its gradient with respect to
// every weight checked against central differences (f64).
TEST(Program, GradOfAConvNetMatchesFiniteDifferences) {
  auto loss = [](const Values& x) -> Values {
    const Value &img = x[0], &labels = x[1], &w1 = x[2], &w2 = x[3], &bias = x[4];
    Conv2DOptions o;
    o.padding = {1, 1, 1, 1};
    Value h = Relu(Conv2D(img, w1, o) + Reshape(bias, {1, 2, 1, 1}));
    h = AvgPool2D(MaxPool2D(h, 3, 1, 1), 2, 2);     // [2, 2, 2, 2]
    Value logits = MatMul(Reshape(h, {2, 8}), w2);  // [2, 3]
    Value nll = -Sum(LogSoftmax(logits, 1) * OneHot(labels, 3, DataType::kFloat64), {1});
    return {Mean(nll)};
  };
  std::vector<Spec> specs = {{DataType::kFloat64, {2, 1, 4, 4}},
                             {DataType::kInt32, {2}},
                             {DataType::kFloat64, {2, 1, 3, 3}},
                             {DataType::kFloat64, {8, 3}},
                             {DataType::kFloat64, {2}}};
  Program f = MustTrace(loss, specs);
  StatusOr<Program> g = Grad(f, {2, 3, 4});
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::vector<Tensor> in;
  for (const Spec& s : specs) {
    if (s.dtype == DataType::kInt32) {
      in.push_back(Tensor::FromVector<int32_t>(DataType::kInt32, s.dims, {2, 0}));
      continue;
    }
    Tensor t(s.dtype, s.dims);
    for (int64_t k = 0; k < t.element_count(); ++k) t.data_as<double>()[k] = normal(rng);
    in.push_back(t);
  }
  StatusOr<Jit> fj = Jit::Of([f](const std::vector<Spec>&) -> StatusOr<Program> { return f; });
  ASSERT_TRUE(fj.ok());
  std::vector<Tensor> grads = RunOnce(*g, in);
  ASSERT_EQ(grads.size(), 3u);
  const double h = 1e-6;
  int checked = 0;
  for (int w = 0; w < 3; ++w) {
    Tensor& p = in[2 + w];
    for (int64_t k = 0; k < p.element_count(); ++k) {
      double saved = p.data_as<double>()[k];
      p.data_as<double>()[k] = saved + h;
      double up = (*fj->Run(in))[0].data_as<double>()[0];
      p.data_as<double>()[k] = saved - h;
      double down = (*fj->Run(in))[0].data_as<double>()[0];
      p.data_as<double>()[k] = saved;
      EXPECT_NEAR(grads[w].data_as<double>()[k], (up - down) / (2 * h), 1e-7) << "weight " << w << " element " << k;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 18 + 24 + 2);
  EXPECT_EQ(fj->compiled(), 1);
}

TEST(Program, ProgramsCallProgramsAndStayDifferentiable) {
  Program inner = MustTrace(
      [](const Values& x) -> Values {
        return {Sin(x[0]), x[0] * 3.0};
      },
      {{DataType::kFloat64, {2}}});
  Program outer = MustTrace(
      [&](const Values& x) -> Values {
        Values r = inner({x[0] * x[0]});
        return {Sum(r[0] + r[1])};
      },
      {{DataType::kFloat64, {2}}});
  StatusOr<Program> g = Grad(outer);
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<Tensor> r = RunOnce(*g, {F64({2}, {0.3, -1.1})});
  for (int k = 0; k < 2; ++k) {
    double x = k ? -1.1 : 0.3;
    EXPECT_NEAR(r[0].data_as<double>()[k], 2 * x * std::cos(x * x) + 6 * x, 1e-14);
  }
  StatusOr<Program> wrong =
      Program::Trace([&](const Values& x) -> Values { return inner({x[0]}); }, {{DataType::kFloat64, {3}}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("argument 0"), std::string::npos) << wrong.status().message();
}

TEST(Program, ShapeOperations) {
  Program p = MustTrace(
      [](const Values& x) -> Values {
        Value idx = Constant(Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {2, 0}));
        Value rows = Take(x[0], idx, 0);                              // rows 2 and 0: [2, 2]
        Value both = Concat({rows, Slice(x[0], {0, 1}, {2, 2})}, 1);  // [[5,6,2],[1,2,4]]
        Value flat = Reshape(Transpose(x[0], {1, 0}), {-1});          // [1,3,5,2,4,6]
        Value soft = Sum(Softmax(x[0], 1), {1});
        Value picked = Where(Greater(x[0], Full(DataType::kFloat32, {}, 3)), x[0],
                             BroadcastTo(Full(DataType::kFloat32, {1}, 0), {3, 2}));
        return {rows, both, flat, soft, picked, Iota(DataType::kInt32, {2, 3}, 1)};
      },
      {{DataType::kFloat32, {3, 2}}});
  std::vector<Tensor> r = RunOnce(p, {F32({3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0].dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_FLOAT_EQ(r[0].data_as<float>()[0], 5);
  EXPECT_FLOAT_EQ(r[0].data_as<float>()[3], 2);
  EXPECT_EQ(r[1].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_FLOAT_EQ(r[1].data_as<float>()[2], 2);  // x[0][1]
  EXPECT_FLOAT_EQ(r[2].data_as<float>()[1], 3);
  EXPECT_NEAR(r[3].data_as<float>()[1], 1, 1e-6);
  EXPECT_FLOAT_EQ(r[4].data_as<float>()[2], 0);  // 3 is not > 3
  EXPECT_FLOAT_EQ(r[4].data_as<float>()[3], 4);
  EXPECT_EQ(r[5].data_as<int32_t>()[4], 1);
}

TEST(Program, LoopsAndBranchesRunOnTheDevice) {
  // x -> x * 0.5 + i, five times; then the larger of two sums chosen by a
  // branch on the device.
  Program p = MustTrace(
      [](const Values& x) -> Values {
        Values r = ForLoop(5,
                           [](const Value& i, const Values& v) -> Values {
                             return {v[0] * 0.5 + Cast(i, DataType::kFloat64), v[1]};
                           },
                           {x[0], x[1]});
        Values c = Cond(
            Greater(Sum(r[0]), Sum(r[1])), [](const Values& o) -> Values { return {o[0] * 2.0}; },
            [](const Values& o) -> Values { return {o[1] - 1.0}; }, {r[0], r[1]});
        return {r[0], c[0]};
      },
      {{DataType::kFloat64, {2}}, {DataType::kFloat64, {2}}});
  EXPECT_NE(p.HloText().find("while("), std::string::npos);
  EXPECT_NE(p.HloText().find("conditional("), std::string::npos);
  for (double big : {0.0, 100.0}) {
    std::vector<Tensor> r = RunOnce(p, {F64({2}, {16, -8}), F64({2}, {big, big})});
    ASSERT_EQ(r.size(), 2u);
    double x = 16;
    for (int i = 0; i < 5; ++i) x = x * 0.5 + i;
    EXPECT_DOUBLE_EQ(r[0].data_as<double>()[0], x);
    EXPECT_DOUBLE_EQ(r[1].data_as<double>()[0], big == 0 ? 2 * x : big - 1);
  }
  // Bodies see only their arguments; a body must keep the values' specs.
  StatusOr<Program> bad = Program::Trace(
      [](const Values& x) -> Values {
        return ForLoop(2, [&](const Value&, const Values& v) -> Values { return {v[0] + x[0]}; }, {x[0]});
      },
      {{DataType::kFloat64, {2}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("another trace"), std::string::npos) << bad.status().message();
  bad = Program::Trace(
      [](const Values& x) -> Values {
        return ForLoop(2, [](const Value&, const Values& v) -> Values { return {Sum(v[0])}; }, {x[0]});
      },
      {{DataType::kFloat64, {2}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("the body returns (float64[]) for values (float64[2])"), std::string::npos)
      << bad.status().message();
  // A loop that fails still gives one (invalid) result per value it carries.
  bad = Program::Trace(
      [](const Values& x) -> Values {
        Values r = ForLoop(2, [](const Value&, const Values& v) -> Values { return {v[1], v[0]}; }, {x[0], x[1]});
        EXPECT_EQ(r.size(), 2u);
        EXPECT_FALSE(r[1].valid());
        return r;
      },
      {{DataType::kFloat64, {2}}, {DataType::kFloat64, {3}}});
  EXPECT_FALSE(bad.ok());
  // Not differentiated through yet: the error names the loop.
  Program loop = MustTrace(
      [](const Values& x) -> Values {
        return {Sum(ForLoop(3, [](const Value&, const Values& v) -> Values { return {v[0] * v[0]}; }, {x[0]})[0])};
      },
      {{DataType::kFloat64, {2}}});
  StatusOr<Program> g = Grad(loop);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("ForLoop"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace xonnx::program
