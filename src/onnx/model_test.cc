// Loading model files: the file read in chunks parses to the same model, with
// the same content fingerprint, as the same bytes parsed in memory; bad files
// are clear errors.
#include "onnx/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "base/test_dir.h"
#include "onnx/tensor_proto.h"
#include "xonnx/session.h"

namespace xonnx::onnx_import {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ModelFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTestDir("xonnx_model_test"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  fs::path dir_;
};

// An opset-17 model with graph `name`, input x and output y, both float
// vectors of `elements`, and no nodes yet.
onnx::ModelProto FloatVectorModel(const char* name, int64_t elements) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name(name);
  for (const char* io : {"x", "y"}) {
    auto* v = io[0] == 'x' ? g->add_input() : g->add_output();
    v->set_name(io);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(elements);
  }
  return m;
}

// y = x + W with a W of `elements` floats in raw data, each a different value,
// so that a byte lost or repeated at a chunk boundary changes the result.
onnx::ModelProto AddModel(int64_t elements) {
  onnx::ModelProto m = FloatVectorModel("add", elements);
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(elements);
  std::string raw(elements * sizeof(float), '\0');
  for (int64_t i = 0; i < elements; ++i) {
    float v = static_cast<float>(i) * 0.5f - 7.0f;
    std::memcpy(&raw[i * sizeof(float)], &v, sizeof(v));
  }
  w->set_raw_data(std::move(raw));
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("W");
  n->add_output("y");
  return m;
}

TEST_F(ModelFileTest, AFileOfManyChunksLoadsLikeTheSameBytesInMemory) {
  // 3 MB of weights and then the node: the file spans several read chunks,
  // and the weight's bytes cross chunk boundaries.
  onnx::ModelProto m = AddModel(3 * 262144 + 123);
  std::string bytes = m.SerializeAsString();
  std::string path = Write("add.onnx", bytes);
  auto from_file = LoadModel(path);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  auto from_bytes = LoadModelFromBytes(bytes, path, dir_.string());
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  EXPECT_EQ((*from_file)->proto.SerializeAsString(), bytes);
  EXPECT_EQ((*from_file)->content_fingerprint, (*from_bytes)->content_fingerprint);
  EXPECT_EQ((*from_file)->default_opset(), 17);
  EXPECT_TRUE(CheckModel(**from_file).ok());

  // One weight byte changed: another fingerprint.
  bytes[bytes.size() / 2] ^= 1;
  auto changed = LoadModel(Write("changed.onnx", bytes));
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_NE((*changed)->content_fingerprint, (*from_file)->content_fingerprint);
}

TEST_F(ModelFileTest, BadFilesAreClearErrors) {
  auto empty = LoadModel(Write("empty.onnx", ""));
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("the file is empty"));

  auto folder = LoadModel(dir_.string());
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(std::string(folder.status().message()), HasSubstr("is a directory"));

  std::string missing = (dir_ / "missing.onnx").string();
  auto none = LoadModel(missing);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr(missing));

  // Cut inside the weight, past the first read chunk.
  std::string bytes = AddModel(3 * 262144).SerializeAsString();
  std::string cut = Write("cut.onnx", bytes.substr(0, bytes.size() - 1000));
  auto truncated = LoadModel(cut);
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(std::string(truncated.status().message()), HasSubstr(cut + ": not a valid ONNX model"));
}

// A model whose nodes are listed in `order` (indices into the chain
// x -> Neg -> a -> Relu -> b -> Abs -> y), as a tool may store them.
onnx::ModelProto ChainModel(const std::vector<int>& order) {
  onnx::ModelProto m = FloatVectorModel("chain", 4);
  auto* g = m.mutable_graph();
  const char* ops[] = {"Neg", "Relu", "Abs"};
  const char* names[] = {"x", "a", "b", "y"};
  for (int k : order) {
    auto* n = g->add_node();
    n->set_op_type(ops[k]);
    n->set_name(absl::StrCat(ops[k], "_", k));
    n->add_input(names[k]);
    n->add_output(names[k + 1]);
  }
  return m;
}

std::vector<std::string> NodeNames(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const auto& n : g.node()) names.push_back(n.name());
  return names;
}

TEST(TopologicalOrder, NodesStoredOutOfOrderAreSortedAndPassTheChecker) {
  auto m = LoadModelFromBytes(ChainModel({2, 0, 1}).SerializeAsString(), "chain.onnx", ".");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(NodeNames((*m)->proto.graph()), ::testing::ElementsAre("Neg_0", "Relu_1", "Abs_2"));
  EXPECT_TRUE(CheckModel(**m).ok());
  // A graph in order keeps its order exactly.
  auto sorted = LoadModelFromBytes(ChainModel({0, 1, 2}).SerializeAsString(), "chain.onnx", ".");
  ASSERT_TRUE(sorted.ok());
  EXPECT_THAT(NodeNames((*sorted)->proto.graph()), ::testing::ElementsAre("Neg_0", "Relu_1", "Abs_2"));
}

TEST(TopologicalOrder, ASubgraphsReadOfAnOuterValueOrdersItsNode) {
  // The If's branches read `a`, which the Neg stored after the If produces.
  onnx::ModelProto m = ChainModel({0});
  auto* g = m.mutable_graph();
  g->mutable_node(0)->set_output(0, "a");
  onnx::NodeProto neg = g->node(0);
  g->clear_node();
  auto* cond = g->add_initializer();
  cond->set_name("c");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_int32_data(1);
  auto* iff = g->add_node();
  iff->set_op_type("If");
  iff->set_name("If_0");
  iff->add_input("c");
  iff->add_output("y");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = iff->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* body = a->mutable_g();
    body->set_name(branch);
    auto* n = body->add_node();
    n->set_op_type("Identity");
    n->add_input("a");
    n->add_output(absl::StrCat(branch, "_out"));
    auto* out = body->add_output();
    out->set_name(absl::StrCat(branch, "_out"));
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  *g->add_node() = neg;
  auto loaded = LoadModelFromBytes(m.SerializeAsString(), "if.onnx", ".");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(NodeNames((*loaded)->proto.graph()), ::testing::ElementsAre("Neg_0", "If_0"));
}

TEST(TopologicalOrder, ACycleIsAnErrorNamingItsNodes) {
  onnx::ModelProto m = ChainModel({0, 1, 2});
  m.mutable_graph()->mutable_node(0)->set_input(0, "b");  // Neg reads Relu's output, which reads Neg's
  auto loaded = LoadModelFromBytes(m.SerializeAsString(), "cycle.onnx", ".");
  ASSERT_FALSE(loaded.ok());
  std::string msg(loaded.status().message());
  EXPECT_THAT(msg, HasSubstr("cycle.onnx: graph 'chain' has a cycle"));
  EXPECT_THAT(msg, HasSubstr("Neg 'Neg_0'"));
  EXPECT_THAT(msg, HasSubstr("Relu 'Relu_1'"));
}

}  // namespace
}  // namespace xonnx::onnx_import

namespace xonnx::onnx_import {
namespace {

// Tensor dims whose product wraps around, or that claim more values than
// the tensor stores, are errors before anything that size is allocated.
TEST(TensorProtos, WrappingOrOverclaimingDimsAreErrors) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(6148914691236517206);
  t.add_dims(3);  // 4 bytes x 3 x that wraps to a small count
  t.set_raw_data(std::string(8, '\0'));
  auto wrapped = LiteralFromTensorProto(t);
  ASSERT_FALSE(wrapped.ok());
  EXPECT_THAT(std::string(wrapped.status().message()), ::testing::HasSubstr("more elements than memory can"));
  onnx::TensorProto huge;
  huge.set_name("h");
  huge.set_data_type(onnx::TensorProto::FLOAT);
  huge.add_dims(1000000000);
  huge.add_float_data(1.0f);
  auto claimed = LiteralFromTensorProto(huge);
  ASSERT_FALSE(claimed.ok());
  EXPECT_THAT(std::string(claimed.status().message()),
              ::testing::HasSubstr("has 1 values, its shape needs 1000000000"));
}

}  // namespace
}  // namespace xonnx::onnx_import

namespace xonnx::onnx_import {
namespace {

// y = If(c) nested `depth` deep: each level's then-branch is the next level,
// its else-branch the constant -level; the innermost then-branch is 42.
onnx::GraphProto NestedIfs(int depth, int level = 0) {
  onnx::GraphProto g;
  g.set_name(absl::StrCat("level", level));
  auto* y = g.add_output();
  y->set_name(absl::StrCat("y", level));
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  y->mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
  auto constant = [&](onnx::GraphProto& graph, const std::string& out, float v) {
    auto* n = graph.add_node();
    n->set_op_type("Constant");
    n->add_output(out);
    auto* a = n->add_attribute();
    a->set_name("value_float");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  };
  if (level == depth) {
    constant(g, y->name(), 42.0f);
    return g;
  }
  auto* n = g.add_node();
  n->set_op_type("If");
  n->add_input("c");
  n->add_output(y->name());
  auto* then_branch = n->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  *then_branch->mutable_g() = NestedIfs(depth, level + 1);
  auto* else_branch = n->add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& e = *else_branch->mutable_g();
  e.set_name(absl::StrCat("else", level));
  auto* ey = e.add_output();
  ey->set_name(absl::StrCat("e", level));
  ey->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  ey->mutable_type()->mutable_tensor_type()->mutable_shape();
  constant(e, ey->name(), -level);
  return g;
}

onnx::ModelProto NestedIfModel(int depth) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  *m.mutable_graph() = NestedIfs(depth);
  auto* c = m.mutable_graph()->add_input();
  c->set_name("c");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  c->mutable_type()->mutable_tensor_type()->mutable_shape();
  return m;
}

// Protobuf's default depth limit stopped at 33 nested Ifs with a message
// about truncated files; 60 load and run, and a model past the raised
// limit says which limit it passed.
TEST_F(ModelFileTest, DeeplyNestedSubgraphsLoadAndTheLimitIsNamed) {
  std::string path = Write("nested.onnx", NestedIfModel(60).SerializeAsString());
  auto loaded = LoadModel(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto session = Session::Open(path);
  ASSERT_TRUE(session.ok()) << session.status();
  for (bool c : {true, false}) {
    Tensor t(DataType::kBool, {});
    *t.data_as<bool>() = c;
    auto out = (*session)->Run({{"c", t}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out->at(0).data_as<float>(), c ? 42.0f : 0.0f);
  }
  std::string deep = NestedIfModel(400).SerializeAsString();
  for (const absl::Status& st :
       {LoadModel(Write("deep.onnx", deep)).status(), LoadModelFromBytes(deep, "deep.onnx", dir_.string()).status()}) {
    ASSERT_FALSE(st.ok());
    EXPECT_THAT(std::string(st.message()), HasSubstr("nests messages deeper than 1000 levels"));
  }
}

}  // namespace
}  // namespace xonnx::onnx_import
