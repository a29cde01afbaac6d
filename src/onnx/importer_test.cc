// Importer: shape subgraphs fold to constants at import, every instruction
// carries the ONNX node's metadata, and partial conversion stops cleanly.
#include "onnx/importer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "evaluator/evaluator.h"
#include "hlo/printer.h"
#include "passes/pipeline.h"

namespace xonnx::onnx_import {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// An empty model named `path` importing the default domain at `opset`.
LoadedModel NewModel(const std::string& path, int64_t opset) {
  LoadedModel m;
  m.path = path;
  m.opsets[""] = opset;
  return m;
}

void AddInput(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims) {
  auto* in = g->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) {
    if (d < 0)
      tt->mutable_shape()->add_dim()->set_dim_param("batch");
    else
      tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op, const std::string& name,
                         std::vector<std::string> ins, std::vector<std::string> outs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

void AddIntsConst(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> v, bool scalar = false) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(v.size());
  for (int64_t x : v) t->add_int64_data(x);
}

// Flatten the way exporters do with dynamic batch:
// Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])).
LoadedModel FlattenModel() {
  LoadedModel m = NewModel("flatten.onnx", 13);
  m.proto.set_ir_version(8);
  auto* g = m.proto.mutable_graph();
  AddInput(g, "x", {-1, 2, 3});
  AddIntsConst(g, "zero", {0}, true);
  AddIntsConst(g, "axes", {0});
  AddIntsConst(g, "minus_one", {-1});
  AddNode(g, "Shape", "shape_1", {"x"}, {"s"});
  AddNode(g, "Gather", "gather_1", {"s", "zero"}, {"b"});
  AddNode(g, "Unsqueeze", "unsqueeze_1", {"b", "axes"}, {"b1"});
  AddNode(g, "Concat", "concat_1", {"b1", "minus_one"}, {"shape"})->add_attribute()->set_name("axis");
  AddNode(g, "Reshape", "reshape_1", {"x", "shape"}, {"flat"});
  AddNode(g, "Relu", "relu_1", {"flat"}, {"y"});
  g->add_output()->set_name("y");
  return m;
}

TEST(Importer, FoldsShapeSubgraphsAndKeepsMetadata) {
  LoadedModel m = FlattenModel();
  m.proto.mutable_graph()->mutable_node(3)->mutable_attribute(0)->set_i(0);
  m.proto.mutable_graph()->mutable_node(3)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  ImportOptions o;
  o.input_shapes["x"] = {5, 2, 3};
  auto r = Import(m, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(passes::RunStandardPipeline(r->module.get(), true).ok());
  std::string text = hlo::ToText(*r->module);
  EXPECT_THAT(text, HasSubstr("f32[5,6]{1,0} reshape(x), metadata={op_type=\"Reshape\" op_name=\"reshape_1\"}"));
  EXPECT_THAT(text, HasSubstr("metadata={op_type=\"Relu\" op_name=\"relu_1\"}"));
  // No shape arithmetic survives.
  EXPECT_THAT(text, Not(HasSubstr("gather")));
  EXPECT_THAT(text, Not(HasSubstr("concatenate")));
  EXPECT_EQ(r->outputs[0].dims, (std::vector<int64_t>{5, 6}));
}

// Large initializers are weight parameters, uploaded once and shared by
// every program of a session, where a constant would be copied into each:
// floating point and the 8- and 16-bit integers quantized weights come in
// (a 4-bit model's packed bytes are uint8). Wider integers (index tables)
// and small tensors stay constants.
TEST(Importer, QuantizedWeightsAreWeightParametersAndIndexTablesConstants) {
  LoadedModel m = NewModel("weights.onnx", 17);
  m.proto.set_ir_version(8);
  auto* g = m.proto.mutable_graph();
  AddInput(g, "x", {1, 2048});
  auto add_initializer = [&](const std::string& name, onnx::TensorProto::DataType type, int64_t n, int width) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_dims(n);
    t->set_raw_data(std::string(n * width, '\1'));
  };
  add_initializer("packed", onnx::TensorProto::UINT8, 2048, 1);
  add_initializer("signed", onnx::TensorProto::INT8, 2048, 1);
  add_initializer("halves", onnx::TensorProto::INT16, 2048, 2);
  add_initializer("scales", onnx::TensorProto::FLOAT, 2048, 4);
  add_initializer("small", onnx::TensorProto::UINT8, 1000, 1);
  add_initializer("table", onnx::TensorProto::INT64, 2048, 8);
  std::vector<std::string> sum = {"x"};
  for (const char* name : {"packed", "signed", "halves", "scales", "small", "table"}) {
    AddNode(g, "Cast", std::string("cast_") + name, {name}, {std::string(name) + "_f"})
        ->add_attribute()
        ->set_name("to");
    g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
    g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_i(onnx::TensorProto::FLOAT);
    std::string out = std::string("sum_") + name;
    if (std::string(name) == "small") continue;  // cast only: 1000 values do not add to x's row
    AddNode(g, "Add", std::string("add_") + name, {sum.back(), std::string(name) + "_f"}, {out});
    sum.push_back(out);
  }
  g->add_output()->set_name(sum.back());
  ImportOptions o;
  o.weights_as_parameters = true;
  auto r = Import(m, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->weights, (std::vector<std::string>{"packed", "signed", "halves", "scales"}));
  std::string text = hlo::ToText(*r->module);
  EXPECT_THAT(text, HasSubstr("u8[2048]{0} parameter(1)"));
  // The index table is folded with its Cast, as a constant.
  EXPECT_THAT(text, HasSubstr("f32[2048]{0} constant({...}), metadata={op_type=\"Cast\" op_name=\"cast_table\"}"));
}

TEST(Importer, DynamicInputWithoutShapeIsAnError) {
  LoadedModel m = FlattenModel();
  auto r = Import(m, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("input 'x' dimension 0 ('batch') is dynamic"));
}

TEST(Importer, PartialConversionStopsAtTheFailingNode) {
  LoadedModel m = FlattenModel();
  // Concat without its required axis attribute is fine for the importer
  // (axis defaults to 0), so break the graph with a bad Reshape instead.
  auto* g = m.proto.mutable_graph();
  AddIntsConst(g, "bad_shape", {7, 7});
  g->mutable_node(4)->set_input(1, "bad_shape");
  ImportOptions o;
  o.input_shapes["x"] = {5, 2, 3};
  auto full = Import(m, o);
  ASSERT_FALSE(full.ok());
  EXPECT_THAT(std::string(full.status().message()), HasSubstr("flatten.onnx: node 'reshape_1' (Reshape, opset 13)"));
  o.allow_partial = true;
  auto partial = Import(m, o);
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_THAT(partial->partial_error, HasSubstr("reshape_1"));
  ASSERT_FALSE(partial->outputs.empty());
}

TEST(Importer, LegacyBroadcastAlignsAtAxis) {
  // Opset 6: Add(a [2,3,2], b [3]) with broadcast=1, axis=1 adds b along dim 1
  // (numpy's right alignment would pair b with the last dim instead).
  LoadedModel m = NewModel("legacy.onnx", 6);
  auto* g = m.proto.mutable_graph();
  AddInput(g, "a", {2, 3, 2});
  auto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(3);
  for (float v : {10.f, 20.f, 30.f}) b->add_float_data(v);
  auto* add = AddNode(g, "Add", "add_1", {"a", "b"}, {"y"});
  auto* bc = add->add_attribute();
  bc->set_name("broadcast");
  bc->set_type(onnx::AttributeProto::INT);
  bc->set_i(1);
  auto* ax = add->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(1);
  g->add_output()->set_name("y");
  auto r = Import(m, {});
  ASSERT_TRUE(r.ok()) << r.status();
  hlo::Literal a(hlo::Shape(hlo::F32, {2, 3, 2}));
  for (int i = 0; i < 12; ++i) a.data<float>()[i] = i;
  auto out = eval::EvaluateModule(*r->module, {a});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->tuple_elements()[0].ValuesToString(),
            "{{{10, 11}, {22, 23}, {34, 35}}, {{16, 17}, {28, 29}, {40, 41}}}");
  // Without broadcast=1, differing shapes are an error at opset 6.
  add->mutable_attribute(0)->set_i(0);
  auto bad = Import(m, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("broadcast=0"));
}

// One node of `op` at `opset` over float input x of `dims` (plus float
// initializers), evaluated by the reference evaluator.
hlo::Literal EvalNode(const std::string& op, int64_t opset, std::vector<int64_t> dims, const hlo::Literal& x,
                      std::vector<std::pair<std::string, std::vector<float>>> inits,
                      std::function<void(onnx::NodeProto*)> attrs,
                      std::vector<std::pair<std::string, std::vector<int64_t>>> int_inits = {}) {
  LoadedModel m = NewModel(op + ".onnx", opset);
  auto* g = m.proto.mutable_graph();
  AddInput(g, "x", dims);
  std::vector<std::string> ins = {"x"};
  for (auto& [name, vals] : inits) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(vals.size());
    for (float v : vals) t->add_float_data(v);
    ins.push_back(name);
  }
  for (auto& [name, vals] : int_inits) {
    AddIntsConst(g, name, vals);
    ins.push_back(name);
  }
  attrs(AddNode(g, op, op + "_1", ins, {"y"}));
  g->add_output()->set_name("y");
  auto r = Import(m, {});
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return hlo::Literal();
  auto out = eval::EvaluateModule(*r->module, {x});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->tuple_elements()[0] : hlo::Literal();
}

void IntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

TEST(Importer, LegacyPReluSlopePerChannel) {
  // Opset 6: a slope of [C] goes along dim 1 of x [1, 3, 2] (numpy would
  // pair it with the last dim, of 2); one value is shared; at opset 7 the
  // same [C] slope is numpy's and does not fit.
  hlo::Literal x = hlo::Literal::Vector<float>({-1, 2, -3, 4, -5, 6}).Reshape({1, 3, 2});
  auto none = [](onnx::NodeProto*) {};
  EXPECT_EQ(EvalNode("PRelu", 6, {1, 3, 2}, x, {{"slope", {0.5f, 0.25f, 2}}}, none).ValuesToString(),
            "{{{-0.5, 2}, {-0.75, 4}, {-10, 6}}}");
  EXPECT_EQ(EvalNode("PRelu", 6, {1, 3, 2}, x, {{"slope", {0.5f}}}, none).ValuesToString(),
            "{{{-0.5, 2}, {-1.5, 4}, {-2.5, 6}}}");
  LoadedModel m = NewModel("prelu7.onnx", 7);
  auto* g = m.proto.mutable_graph();
  AddInput(g, "x", {1, 3, 2});
  auto* t = g->add_initializer();
  t->set_name("slope");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(3);
  for (float v : {0.5f, 0.25f, 2.f}) t->add_float_data(v);
  AddNode(g, "PRelu", "prelu_1", {"x", "slope"}, {"y"});
  g->add_output()->set_name("y");
  EXPECT_FALSE(Import(m, {}).ok());
}

// ONNX Runtime's fused ops check their vectors against the hidden size and
// say which input is wrong, on which node.
TEST(Importer, SkipLayerNormalizationNamesAWrongGamma) {
  LoadedModel m = NewModel("skip_ln.onnx", 17);
  m.opsets["com.microsoft"] = 1;
  auto* g = m.proto.mutable_graph();
  AddInput(g, "x", {2, 4});
  AddInput(g, "skip", {2, 4});
  auto* t = g->add_initializer();
  t->set_name("gamma");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(3);
  for (float v : {1.f, 2.f, 3.f}) t->add_float_data(v);
  AddNode(g, "SkipLayerNormalization", "sln_1", {"x", "skip", "gamma"}, {"y"})->set_domain("com.microsoft");
  g->add_output()->set_name("y");
  auto r = Import(m, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("sln_1"));
  EXPECT_THAT(std::string(r.status().message()),
              ::testing::HasSubstr("gamma (input 2) must have 4 elements, the input's last dimension; it has 3"));
}

// A form of ONNX Runtime's attention that is not converted says which one,
// at load time, instead of computing something else.
TEST(Importer, MultiHeadAttentionRefusesPackedInputsByName) {
  LoadedModel m = NewModel("mha.onnx", 17);
  m.opsets["com.microsoft"] = 1;
  auto* g = m.proto.mutable_graph();
  AddInput(g, "q", {1, 4, 8});
  auto* n = AddNode(g, "MultiHeadAttention", "mha_1", {"q"}, {"y"});
  n->set_domain("com.microsoft");
  IntAttr(n, "num_heads", 2);
  g->add_output()->set_name("y");
  auto r = Import(m, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("mha_1"));
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("key and value must both be given"));
}

// A shape whose element count wraps around int64 is an error naming the
// node, not a value that claims that shape and holds nothing.
TEST(Importer, ShapesTooLargeToHoldAreErrors) {
  LoadedModel m = NewModel("huge.onnx", 17);
  auto* g = m.proto.mutable_graph();
  auto* t = g->add_initializer();
  t->set_name("shape");
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(2);
  t->add_int64_data(int64_t{1} << 40);
  t->add_int64_data(int64_t{1} << 40);
  AddNode(g, "ConstantOfShape", "fill_1", {"shape"}, {"y"});
  g->add_output()->set_name("y");
  auto r = Import(m, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("fill_1"));
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("more elements than memory can hold"));
}

TEST(Importer, GroupNormalizationPerGroupAndPerChannel) {
  // x [1, 4, 2]: groups {c0,c1} and {c2,c3}; each group holds 0..3 + offset.
  hlo::Literal x = hlo::Literal::Vector<float>({0, 1, 2, 3, 10, 11, 12, 13}).Reshape({1, 4, 2});
  double inv = 1 / std::sqrt(1.25 + 1e-5);  // variance of {0,1,2,3} is 1.25
  // Opset 18: scale/bias per group.
  hlo::Literal y18 = EvalNode("GroupNormalization", 18, {1, 4, 2}, x, {{"scale", {1, 2}}, {"bias", {0, 1}}},
                              [](onnx::NodeProto* n) { IntAttr(n, "num_groups", 2); });
  EXPECT_NEAR(y18.GetAsDouble(0), -1.5 * inv, 1e-5);
  EXPECT_NEAR(y18.GetAsDouble(7), 2 * 1.5 * inv + 1, 1e-5);
  // Opset 21: per channel.
  hlo::Literal y21 = EvalNode("GroupNormalization", 21, {1, 4, 2}, x, {{"scale", {1, 1, 1, 3}}, {"bias", {0, 0, 0, 0}}},
                              [](onnx::NodeProto* n) { IntAttr(n, "num_groups", 2); });
  EXPECT_NEAR(y21.GetAsDouble(6), 3 * 0.5 * inv, 1e-5);
  EXPECT_NEAR(y21.GetAsDouble(5), -0.5 * inv, 1e-5);  // x = 11 in group {10..13}
}

TEST(Importer, GeluMatchesItsDefinition) {
  hlo::Literal x = hlo::Literal::Vector<float>({-2, -0.5, 0, 0.7, 3});
  hlo::Literal exact = EvalNode("Gelu", 20, {5}, x, {}, [](onnx::NodeProto*) {});
  hlo::Literal approx = EvalNode("Gelu", 20, {5}, x, {}, [](onnx::NodeProto* n) {
    auto* a = n->add_attribute();
    a->set_name("approximate");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s("tanh");
  });
  for (int i = 0; i < 5; ++i) {
    double v = x.GetAsDouble(i);
    EXPECT_NEAR(exact.GetAsDouble(i), 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
    EXPECT_NEAR(approx.GetAsDouble(i), 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))),
                1e-6);
  }
}

TEST(Importer, LpPoolTakesThePNormOfEachWindow) {
  hlo::Literal x = hlo::Literal::Vector<float>({3, -4, 1, 2, 2, 1, 0, -2}).Reshape({1, 1, 2, 4});
  hlo::Literal y = EvalNode("LpPool", 18, {1, 1, 2, 4}, x, {}, [](onnx::NodeProto* n) {
    auto* k = n->add_attribute();
    k->set_name("kernel_shape");
    k->set_type(onnx::AttributeProto::INTS);
    k->add_ints(2);
    k->add_ints(2);
    auto* s = n->add_attribute();
    s->set_name("strides");
    s->set_type(onnx::AttributeProto::INTS);
    s->add_ints(2);
    s->add_ints(2);
  });
  // Windows {3,-4,2,1} and {1,2,0,-2}: sqrt(30) and 3.
  EXPECT_NEAR(y.GetAsDouble(0), std::sqrt(30.0), 1e-5);
  EXPECT_NEAR(y.GetAsDouble(1), 3.0, 1e-5);
  hlo::Literal g = EvalNode("GlobalLpPool", 17, {1, 1, 2, 4}, x, {}, [](onnx::NodeProto* n) { IntAttr(n, "p", 1); });
  EXPECT_NEAR(g.GetAsDouble(0), 15.0, 1e-5);
}

TEST(Importer, CenterCropPadCropsAndPadsAroundTheCentre) {
  hlo::Literal x = hlo::Literal::Vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).Reshape({2, 5});
  hlo::Literal y = EvalNode("CenterCropPad", 18, {2, 5}, x, {}, [](onnx::NodeProto*) {}, {{"shape", {4, 3}}});
  EXPECT_EQ(y.ValuesToString(), "{{0, 0, 0}, {2, 3, 4}, {7, 8, 9}, {0, 0, 0}}");
}

// If on a runtime condition: an HLO conditional whose branches read the
// captured input through the operand tuple and outer constants (a Reshape
// target shape) as constants; only the branch taken runs.
TEST(Importer, IfOnARuntimeConditionIsAConditional) {
  LoadedModel m = NewModel("if.onnx", 13);
  auto* g = m.proto.mutable_graph();
  AddInput(g, "x", {2, 3});
  AddIntsConst(g, "flat", {6});
  AddNode(g, "ReduceSum", "sum_1", {"x"}, {"s"});
  auto* zero = g->add_initializer();
  zero->set_name("zero");
  zero->set_data_type(onnx::TensorProto::FLOAT);
  zero->add_float_data(0);
  AddNode(g, "Greater", "gt_1", {"s", "zero"}, {"c"});
  onnx::GraphProto then_g, else_g;
  then_g.set_name("then");
  AddNode(&then_g, "Reshape", "then_reshape", {"x", "flat"}, {"t"});
  then_g.add_output()->set_name("t");
  else_g.set_name("else");
  AddNode(&else_g, "Neg", "else_neg", {"x"}, {"n"});
  AddNode(&else_g, "Reshape", "else_reshape", {"n", "flat"}, {"e"});
  else_g.add_output()->set_name("e");
  auto* node = AddNode(g, "If", "if_1", {"c"}, {"y"});
  auto* a = node->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = then_g;
  a = node->add_attribute();
  a->set_name("else_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = else_g;
  g->add_output()->set_name("y");
  auto r = Import(m, {});
  ASSERT_TRUE(r.ok()) << r.status();
  std::string text = hlo::ToText(*r->module);
  EXPECT_THAT(text, HasSubstr("conditional("));
  EXPECT_THAT(text, Not(HasSubstr("select(")));
  for (float sign : {1.0f, -1.0f}) {
    hlo::Literal x(hlo::Shape(hlo::F32, {2, 3}));
    for (int i = 0; i < 6; ++i) x.data<float>()[i] = sign * (i + 1);
    auto out = eval::EvaluateModule(*r->module, {x});
    ASSERT_TRUE(out.ok()) << out.status();
    // Positive sum: x flattened; negative: -x flattened (positive values).
    EXPECT_EQ(out->tuple_elements()[0].ValuesToString(), "{1, 2, 3, 4, 5, 6}") << sign;
  }
}

// The sequence ops the ONNX 1.12 node tests do not cover on their own:
// SplitToSequence (sizes, keepdims), SequenceErase and SequenceAt with
// negative positions, SequenceLength, ConcatFromSequence with new_axis.
TEST(Importer, SequenceOpsSplitEraseAndConcat) {
  LoadedModel m = NewModel("seq.onnx", 17);
  auto* g = m.proto.mutable_graph();
  AddInput(g, "x", {5, 2});
  AddIntsConst(g, "two", {2}, true);
  AddIntsConst(g, "minus_two", {-2}, true);
  AddIntsConst(g, "minus_one", {-1}, true);
  AddNode(g, "SplitToSequence", "split_1", {"x", "two"}, {"s"});
  AddNode(g, "SequenceErase", "erase_1", {"s", "minus_two"}, {"e"});
  AddNode(g, "SequenceLength", "len_1", {"e"}, {"l"});
  AddNode(g, "ConcatFromSequence", "concat_1", {"e"}, {"c"})->add_attribute()->set_name("axis");
  AddNode(g, "SequenceAt", "at_1", {"s", "minus_one"}, {"a"});
  auto* cols = AddNode(g, "SplitToSequence", "split_2", {"x"}, {"k"});
  IntAttr(cols, "axis", 1);
  IntAttr(cols, "keepdims", 0);
  auto* stack = AddNode(g, "ConcatFromSequence", "concat_2", {"k"}, {"n"});
  IntAttr(stack, "axis", 0);
  IntAttr(stack, "new_axis", 1);
  for (const char* o : {"l", "c", "a", "n"}) g->add_output()->set_name(o);
  auto r = Import(m, {});
  ASSERT_TRUE(r.ok()) << r.status();
  hlo::Literal x(hlo::Shape(hlo::F32, {5, 2}));
  for (int i = 0; i < 10; ++i) x.data<float>()[i] = i;
  auto out = eval::EvaluateModule(*r->module, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  const auto& o = out->tuple_elements();
  EXPECT_EQ(o[0].ValuesToString(), "2");
  EXPECT_EQ(o[1].ValuesToString(), "{{0, 1}, {2, 3}, {8, 9}}");  // parts [0:2] and [4:5]
  EXPECT_EQ(o[2].ValuesToString(), "{{8, 9}}");
  EXPECT_EQ(o[3].ValuesToString(), "{{0, 2, 4, 6, 8}, {1, 3, 5, 7, 9}}");
  // A position past the end is an error naming the node.
  g->mutable_initializer(1)->set_int64_data(0, -4);
  auto bad = Import(m, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("position -4 is out of range for a sequence of length 3"));
}

}  // namespace
}  // namespace xonnx::onnx_import

namespace xonnx::onnx_import {
namespace {

// loss = ReduceSum(Sin(a * b)) and Gradient(xs = [a, b], y = loss).
LoadedModel GradientModel() {
  LoadedModel m = NewModel("gradient.onnx", 13);
  m.opsets["ai.onnx.preview.training"] = 1;
  auto* g = m.proto.mutable_graph();
  AddInput(g, "a", {3});
  AddInput(g, "b", {3});
  AddNode(g, "Mul", "mul", {"a", "b"}, {"c"});
  AddNode(g, "Sin", "sin", {"c"}, {"d"});
  auto* sum = AddNode(g, "ReduceSum", "sum", {"d"}, {"loss"});
  auto* keep = sum->add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(0);
  auto* grad = AddNode(g, "Gradient", "grad", {"a", "b"}, {"da", "db"});
  grad->set_domain("ai.onnx.preview.training");
  auto* xs = grad->add_attribute();
  xs->set_name("xs");
  xs->set_type(onnx::AttributeProto::STRINGS);
  xs->add_strings("a");
  xs->add_strings("b");
  auto* y = grad->add_attribute();
  y->set_name("y");
  y->set_type(onnx::AttributeProto::STRING);
  y->set_s("loss");
  for (const char* out : {"loss", "da", "db"}) g->add_output()->set_name(out);
  return m;
}

TEST(Importer, GradientDifferentiatesTheGraph) {
  LoadedModel m = GradientModel();
  auto r = Import(m, {});
  ASSERT_TRUE(r.ok()) << r.status();
  hlo::Literal a = hlo::Literal::Vector<float>({0.5f, -1.f, 2.f}),
               b = hlo::Literal::Vector<float>({1.5f, 0.25f, -0.75f});
  auto out = eval::EvaluateModule(*r->module, {a, b});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int k = 0; k < 3; ++k) {
    float av = a.data<float>()[k], bv = b.data<float>()[k];
    EXPECT_NEAR(out->tuple_elements()[1].data<float>()[k], std::cos(av * bv) * bv, 1e-6) << k;
    EXPECT_NEAR(out->tuple_elements()[2].data<float>()[k], std::cos(av * bv) * av, 1e-6) << k;
  }
}

TEST(Importer, GradientRefusesWhatItCannotDifferentiate) {
  // Fed with other values than the tensors xs names.
  LoadedModel m = GradientModel();
  m.proto.mutable_graph()->mutable_node(3)->set_input(1, "c");
  auto fed = Import(m, {});
  ASSERT_FALSE(fed.ok());
  EXPECT_THAT(std::string(fed.status().message()), HasSubstr("input 1 is 'c', not 'b'"));
  // With respect to a constant folded into what it feeds.
  LoadedModel folded = GradientModel();
  auto* g = folded.proto.mutable_graph();
  g->mutable_input()->RemoveLast();
  auto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(3);
  for (float v : {1.f, 2.f, 3.f}) b->add_float_data(v);
  auto constant = Import(folded, {});
  ASSERT_FALSE(constant.ok());
  EXPECT_THAT(std::string(constant.status().message()), HasSubstr("xs 'b' is a constant"));
}

}  // namespace
}  // namespace xonnx::onnx_import
