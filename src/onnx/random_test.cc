// Random ops: reproducible for a seed, independent across seeds, and with
// the right statistics (values cannot match another generator's).
#include <gtest/gtest.h>

#include <cmath>

#include "evaluator/evaluator.h"
#include "onnx/importer.h"

namespace xonnx::onnx_import {
namespace {

// A one-node model `op` with no inputs (or one float input of `in_dims`).
LoadedModel OneNode(const std::string& op, std::vector<std::pair<std::string, double>> float_attrs,
                    std::vector<int64_t> shape, int64_t opset = 17, std::vector<int64_t> in_dims = {}) {
  LoadedModel m;
  m.path = op + ".onnx";
  m.opsets[""] = opset;
  auto* g = m.proto.mutable_graph();
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("rand_1");
  n->add_output("y");
  if (!in_dims.empty()) {
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : in_dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
    n->add_input("x");
  }
  for (auto& [k, v] : float_attrs) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  if (!shape.empty()) {
    auto* a = n->add_attribute();
    a->set_name(op == "Multinomial" ? "sample_size" : "shape");
    if (op == "Multinomial") {
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(shape[0]);
    } else {
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t d : shape) a->add_ints(d);
    }
  }
  g->add_output()->set_name("y");
  return m;
}

hlo::Literal Sample(const LoadedModel& m, std::vector<hlo::Literal> args = {}) {
  auto r = Import(m, {});
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return hlo::Literal();
  auto out = eval::EvaluateModule(*r->module, std::move(args));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->tuple_elements()[0] : hlo::Literal();
}

void MeanStd(const hlo::Literal& l, double* mean, double* std) {
  double s = 0, s2 = 0;
  int64_t n = l.element_count();
  for (int64_t i = 0; i < n; ++i) {
    double v = l.GetAsDouble(i);
    s += v;
    s2 += v * v;
  }
  *mean = s / n;
  *std = std::sqrt(s2 / n - *mean * *mean);
}

TEST(Random, NormalHasTheRequestedMomentsAndIsReproducible) {
  auto m = OneNode("RandomNormal", {{"mean", 2.0}, {"scale", 3.0}, {"seed", 7.0}}, {20000});
  hlo::Literal a = Sample(m), b = Sample(m);
  double mean, std;
  MeanStd(a, &mean, &std);
  EXPECT_NEAR(mean, 2.0, 0.1);  // 5 standard errors at n = 20000
  EXPECT_NEAR(std, 3.0, 0.1);
  EXPECT_TRUE(a == b);
  hlo::Literal c = Sample(OneNode("RandomNormal", {{"mean", 2.0}, {"scale", 3.0}, {"seed", 8.0}}, {20000}));
  EXPECT_FALSE(a == c);
}

TEST(Random, UniformStaysInRangeAndFillsIt) {
  hlo::Literal u = Sample(OneNode("RandomUniform", {{"low", -1.0}, {"high", 3.0}, {"seed", 1.0}}, {20000}));
  double lo = 1e9, hi = -1e9, mean, std;
  for (int64_t i = 0; i < u.element_count(); ++i) {
    lo = std::min(lo, u.GetAsDouble(i));
    hi = std::max(hi, u.GetAsDouble(i));
  }
  MeanStd(u, &mean, &std);
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 3.0);
  EXPECT_LT(lo, -0.99);
  EXPECT_GT(hi, 2.99);
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(std, 4.0 / std::sqrt(12.0), 0.05);
}

TEST(Random, BernoulliFrequencyFollowsTheProbability) {
  auto m = OneNode("Bernoulli", {{"seed", 3.0}}, {}, 17, {20000});
  hlo::Literal p(hlo::Shape(hlo::F32, {20000}));
  for (int i = 0; i < 20000; ++i) p.data<float>()[i] = i < 10000 ? 0.2f : 0.9f;
  hlo::Literal y = Sample(m, {p});
  double low = 0, high = 0;
  for (int i = 0; i < 20000; ++i) (i < 10000 ? low : high) += y.GetAsDouble(i);
  EXPECT_NEAR(low / 10000, 0.2, 0.02);
  EXPECT_NEAR(high / 10000, 0.9, 0.02);
}

TEST(Random, MultinomialSamplesTheSoftmax) {
  auto m = OneNode("Multinomial", {{"seed", 5.0}}, {20000}, 17, {1, 3});
  hlo::Literal logits = hlo::Literal::Vector<float>({0.0f, std::log(2.0f), std::log(7.0f)}).Reshape({1, 3});
  hlo::Literal y = Sample(m, {logits});
  double count[3] = {0, 0, 0};
  for (int64_t i = 0; i < y.element_count(); ++i) count[y.GetAsInt64(i)] += 1;
  EXPECT_NEAR(count[0] / 20000, 0.1, 0.015);
  EXPECT_NEAR(count[1] / 20000, 0.2, 0.015);
  EXPECT_NEAR(count[2] / 20000, 0.7, 0.015);
}

TEST(Random, TrainingDropoutKeepsAndScales) {
  LoadedModel m = OneNode("Dropout", {{"seed", 9.0}}, {}, 13, {20000});
  auto* g = m.proto.mutable_graph();
  auto* n = g->mutable_node(0);
  n->add_input("ratio");
  n->add_input("training");
  n->add_output("mask");
  auto* ratio = g->add_initializer();
  ratio->set_name("ratio");
  ratio->set_data_type(onnx::TensorProto::FLOAT);
  ratio->add_float_data(0.25f);
  auto* training = g->add_initializer();
  training->set_name("training");
  training->set_data_type(onnx::TensorProto::BOOL);
  training->add_int32_data(1);
  hlo::Literal x(hlo::Shape(hlo::F32, {20000}));
  for (int i = 0; i < 20000; ++i) x.data<float>()[i] = 3.0f;
  hlo::Literal y = Sample(m, {x});
  double kept = 0;
  for (int64_t i = 0; i < y.element_count(); ++i) {
    double v = y.GetAsDouble(i);
    EXPECT_TRUE(v == 0 || std::abs(v - 4.0) < 1e-6) << v;
    kept += v != 0;
  }
  EXPECT_NEAR(kept / 20000, 0.75, 0.02);
}

}  // namespace
}  // namespace xonnx::onnx_import
