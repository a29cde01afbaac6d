// Splitting graphs at data-dependent ops: which nodes go to the host, what
// crosses each boundary, and a session running the split graph (values
// against a host reference, one compile per distinct shape, not per value).
#include "onnx/graph_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/test_dir.h"
#include "xonnx/session.h"

namespace xonnx::onnx_import {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& in,
                         const std::vector<std::string>& out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out[0]);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

void AddInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void AddInitializer(onnx::GraphProto* g, const std::string& name, int type, const std::vector<int64_t>& dims,
                    const std::vector<double>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (double v : values) {
    if (type == onnx::TensorProto::FLOAT)
      t->add_float_data(static_cast<float>(v));
    else
      t->add_int64_data(static_cast<int64_t>(v));
  }
}

void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name, int type,
              const std::vector<std::string>& dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    if (d.empty() || !isdigit(d[0]))
      shape->add_dim()->set_dim_param(d);
    else
      shape->add_dim()->set_dim_value(std::stoll(d));
  }
}

// x[n] -> positives of x doubled (through NonZero), the compressed
// positives (Compress with a computed condition), the sum of x, and two
// data-dependent ops on known values that stay inside the first program.
onnx::ModelProto SplitModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("split");
  const int f = onnx::TensorProto::FLOAT, i64 = onnx::TensorProto::INT64;
  AddValue(g->mutable_input(), "x", f, {"n"});
  AddInitializer(g, "zero", f, {}, {0});
  AddInitializer(g, "two", f, {}, {2});
  AddInitializer(g, "axis0", i64, {1}, {0});
  AddInitializer(g, "keep", i64, {3}, {1, 0, 1});
  AddNode(g, "Greater", {"x", "zero"}, {"mask"});
  AddNode(g, "NonZero", {"mask"}, {"nz"});
  AddNode(g, "Squeeze", {"nz", "axis0"}, {"idx"});
  AddNode(g, "Gather", {"x", "idx"}, {"picked"});
  AddNode(g, "Mul", {"picked", "two"}, {"doubled"});
  AddInt(AddNode(g, "Compress", {"x", "mask"}, {"compressed"}), "axis", 0);
  AddNode(g, "ReduceSum", {"x"}, {"total"});
  AddNode(g, "Shape", {"x"}, {"shape"});
  AddNode(g, "NonZero", {"shape"}, {"shape_nz"});  // known when compiling
  AddNode(g, "NonZero", {"keep"}, {"keep_nz"});    // an initializer
  AddNode(g, "Concat", {"shape_nz", "keep_nz"}, {"known"});
  AddInt(&g->mutable_node()->at(g->node_size() - 1), "axis", 1);
  AddValue(g->mutable_output(), "doubled", f, {"k"});
  AddValue(g->mutable_output(), "compressed", f, {"k"});
  AddValue(g->mutable_output(), "total", f, {"1"});
  AddValue(g->mutable_output(), "known", i64, {"1", "3"});
  return m;
}

// x[n] -> its k largest values, k being the count of positives: TopK's k is
// computed from the data, so TopK starts a second program that receives k.
// Also x reshaped to a shape given as a small input, which is bound by value
// without a split.
onnx::ModelProto TopPositivesModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("top_positives");
  const int f = onnx::TensorProto::FLOAT, i64 = onnx::TensorProto::INT64;
  AddValue(g->mutable_input(), "x", f, {"n"});
  AddValue(g->mutable_input(), "shape", i64, {"2"});
  AddInitializer(g, "zero", f, {}, {0});
  AddNode(g, "Greater", {"x", "zero"}, {"mask"});
  AddInt(AddNode(g, "Cast", {"mask"}, {"maskf"}), "to", f);
  AddNode(g, "ReduceSum", {"maskf"}, {"count"});  // keepdims: [1]
  AddInt(AddNode(g, "Cast", {"count"}, {"k"}), "to", i64);
  AddNode(g, "TopK", {"x", "k"}, {"top", "top_idx"});
  AddNode(g, "Reshape", {"x", "shape"}, {"grid"});
  AddValue(g->mutable_output(), "top", f, {"k"});
  AddValue(g->mutable_output(), "grid", f, {"a", "b"});
  return m;
}

LoadedModel Loaded(const onnx::ModelProto& proto) {
  LoadedModel m;
  m.path = "split.onnx";
  m.proto = proto;
  m.opsets[""] = 17;
  return m;
}

TEST(GraphSplit, HostNodesAndBoundaries) {
  LoadedModel m = Loaded(SplitModel());
  auto split = SplitGraph(m);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(split->split());
  std::vector<std::string> hosts;
  for (int i : split->host_nodes) hosts.push_back(NodeLabel(m.proto.graph().node(i)));
  EXPECT_THAT(hosts, ElementsAre("NonZero 'nz'", "Compress 'compressed'"));
  ASSERT_EQ(split->segments.size(), 4u);
  const Segment& first = split->segments[0];
  EXPECT_FALSE(first.on_host);
  EXPECT_THAT(first.inputs, ElementsAre("x"));
  EXPECT_THAT(first.initializers, ElementsAre("keep", "zero"));
  EXPECT_THAT(first.outputs, ElementsAre("mask", "total", "known"));
  EXPECT_TRUE(split->segments[1].on_host);
  EXPECT_THAT(split->segments[1].inputs, ElementsAre("mask"));
  EXPECT_THAT(split->segments[1].outputs, ElementsAre("nz"));
  EXPECT_TRUE(split->segments[2].on_host);
  EXPECT_THAT(split->segments[2].inputs, ElementsAre("mask", "x"));
  const Segment& last = split->segments[3];
  EXPECT_FALSE(last.on_host);
  EXPECT_THAT(last.inputs, ElementsAre("nz", "x"));
  EXPECT_THAT(last.initializers, ElementsAre("axis0", "two"));
  EXPECT_THAT(last.outputs, ElementsAre("doubled"));
}

// The split of `p` cut down to its nodes from `first` on and its outputs
// after the first `dropped`.
absl::StatusOr<GraphSplit> SplitOfPart(onnx::ModelProto p, int first, int dropped) {
  auto* nodes = p.mutable_graph()->mutable_node();
  nodes->erase(nodes->begin(), nodes->begin() + first);
  p.mutable_graph()->mutable_output()->DeleteSubrange(0, dropped);
  return SplitGraph(Loaded(p));
}

TEST(GraphSplit, KnownValuesNeedNoSplit) {
  // Only the nodes on known values (Shape, the two NonZero, Concat).
  auto split = SplitOfPart(SplitModel(), 7, 3);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_FALSE(split->split());
  ASSERT_EQ(split->segments.size(), 1u);
  EXPECT_EQ(split->segments[0].nodes.size(), 4u);
}

TEST(GraphSplit, ValueComputedFromDataStartsAProgram) {
  LoadedModel m = Loaded(TopPositivesModel());
  auto split = SplitGraph(m);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(split->split());
  EXPECT_TRUE(split->host_nodes.empty());
  ASSERT_EQ(split->value_nodes.size(), 1u);
  EXPECT_EQ(NodeLabel(m.proto.graph().node(split->value_nodes[0])), "TopK 'top'");
  ASSERT_EQ(split->segments.size(), 2u);
  EXPECT_FALSE(split->segments[1].on_host);
  EXPECT_THAT(split->segments[0].outputs, ElementsAre("k", "grid"));
  EXPECT_THAT(split->segments[1].inputs, ElementsAre("k", "x"));
  EXPECT_THAT(split->segments[1].outputs, ElementsAre("top"));
}

TEST(GraphSplit, ValueFromSmallInputsNeedsNoSplit) {
  // Only the Reshape to the shape input.
  auto split = SplitOfPart(TopPositivesModel(), 5, 1);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_FALSE(split->split());
  EXPECT_TRUE(split->value_nodes.empty());
}

TEST(GraphSplit, RunNodeOnHost) {
  LoadedModel m = Loaded(SplitModel());
  hlo::Literal mask(hlo::Shape(hlo::PRED, {5}));
  bool bits[] = {true, false, true, true, false};
  for (int k = 0; k < 5; ++k) mask.data<bool>()[k] = bits[k];
  auto out = RunNodeOnHost(m, 1, {{"mask", mask}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].shape().dims, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ((*out)[0].ToInt64Vector(), (std::vector<int64_t>{0, 2, 3}));
  auto missing = RunNodeOnHost(m, 1, {});
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("no value for input 'mask'"));
}

// Inputs of one shape: three with three positives each (other values), and
// one with four.
const std::vector<std::vector<float>> kSamples = {
    {1.5f, -1, 2, -3, 0.25f, 0}, {-2, 3, 0, 4, 5, -1}, {7, -1, 1, 2, 3, -4}, {0.5f, 0.75f, -1, -1, 9, -2}};

class SplitSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTestDir("xonnx_split_test");
    path_ = (dir_ / "split.onnx").string();
    std::ofstream f(path_, std::ios::binary);
    SplitModel().SerializeToOstream(&f);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

TEST_F(SplitSessionTest, RunsAndCompilesPerShapeNotPerValue) {
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::Open(path_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ModelInfo info = (*s)->Info();
  EXPECT_THAT(info.host_nodes, ElementsAre("NonZero 'nz'", "Compress 'compressed'"));
  EXPECT_EQ(info.device_programs, 2);
  for (const auto& x : kSamples) {
    auto out = (*s)->Run({{"x", Tensor::FromData(DataType::kFloat32, {6}, x.data())}});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> pos, doubled;
    float total = 0;
    for (float v : x) {
      total += v;
      if (v > 0) pos.push_back(v), doubled.push_back(2 * v);
    }
    const Tensor& d = (*out)[0];
    const Tensor& c = (*out)[1];
    ASSERT_EQ(d.dims(), (std::vector<int64_t>{static_cast<int64_t>(pos.size())}));
    EXPECT_EQ(std::vector<float>(d.data_as<float>(), d.data_as<float>() + pos.size()), doubled);
    ASSERT_EQ(c.dims(), d.dims());
    EXPECT_EQ(std::vector<float>(c.data_as<float>(), c.data_as<float>() + pos.size()), pos);
    EXPECT_FLOAT_EQ((*out)[2].data_as<float>()[0], total);
    const Tensor& known = (*out)[3];
    ASSERT_EQ(known.dims(), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(std::vector<int64_t>(known.data_as<int64_t>(), known.data_as<int64_t>() + 3),
              (std::vector<int64_t>{0, 0, 2}));
  }
  // The first program once (n = 6), the second once per count of positives.
  EXPECT_EQ((*s)->compile_stats().compiled, 3);
  EXPECT_THAT((*s)->LastProgramSummary(), HasSubstr("2 host node(s), 2 device program(s) compiled"));
}

TEST_F(SplitSessionTest, CompilesPerComputedValueNotPerInput) {
  std::string path = (dir_ / "top.onnx").string();
  {
    std::ofstream f(path, std::ios::binary);
    TopPositivesModel().SerializeToOstream(&f);
  }
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::Open(path, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ModelInfo info = (*s)->Info();
  EXPECT_TRUE(info.host_nodes.empty());
  EXPECT_THAT(info.value_nodes, ElementsAre("TopK 'top'"));
  EXPECT_EQ(info.device_programs, 2);
  int64_t shape[] = {2, 3};
  for (const auto& x : kSamples) {
    auto out = (*s)->Run({{"x", Tensor::FromData(DataType::kFloat32, {6}, x.data())},
                          {"shape", Tensor::FromData(DataType::kInt64, {2}, shape)}});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> pos;
    for (float v : x)
      if (v > 0) pos.push_back(v);
    std::sort(pos.rbegin(), pos.rend());
    const Tensor& top = (*out)[0];
    ASSERT_EQ(top.dims(), (std::vector<int64_t>{static_cast<int64_t>(pos.size())}));
    EXPECT_EQ(std::vector<float>(top.data_as<float>(), top.data_as<float>() + pos.size()), pos);
    const Tensor& grid = (*out)[1];
    ASSERT_EQ(grid.dims(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(std::vector<float>(grid.data_as<float>(), grid.data_as<float>() + 6), x);
  }
  // The first program once, the second once per distinct k (3 and 4); not
  // once per input value (four).
  EXPECT_EQ((*s)->compile_stats().compiled, 3);
}

TEST_F(SplitSessionTest, OptionsThatWouldReachHostNodesAreRefused) {
  SessionOptions o;
  o.use_cache = false;
  o.batch_buckets = {2, 4};
  auto s = Session::Open(path_, o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("batch or dimension buckets cannot be used"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("NonZero 'nz', Compress 'compressed'"));
  o.batch_buckets.clear();
  o.io_data_type = DataType::kFloat16;
  s = Session::Open(path_, o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("io_data_type float16"));
}

TEST_F(SplitSessionTest, DumpShowsTheFirstProgram) {
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::Open(path_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  auto dump = (*s)->DumpHlo({{"x", {6}}}, 1, false);
  ASSERT_TRUE(dump.ok()) << dump.status();
  EXPECT_THAT(dump->partial_error, HasSubstr("node NonZero 'nz' runs on the host"));
  EXPECT_THAT(dump->text, HasSubstr("f32[6]"));
}

// x[n] -> two NonZero of one mask (as exporters write x[mask] and
// where(mask)), a Unique of the mask and one more that differs only in its
// attribute; the graph outputs read the repeated node and the input itself.
onnx::ModelProto RepeatedHostNodesModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("repeated");
  const int f = onnx::TensorProto::FLOAT, i64 = onnx::TensorProto::INT64;
  AddValue(g->mutable_input(), "x", f, {"n"});
  AddInitializer(g, "zero", f, {}, {0});
  AddNode(g, "Greater", {"x", "zero"}, {"mask"});
  AddNode(g, "NonZero", {"mask"}, {"first"});
  AddNode(g, "NonZero", {"mask"}, {"again"});
  AddInt(AddNode(g, "Unique", {"x"}, {"sorted"}), "sorted", 1);
  AddInt(AddNode(g, "Unique", {"x"}, {"unsorted"}), "sorted", 0);
  AddValue(g->mutable_output(), "first", i64, {"1", "k"});
  AddValue(g->mutable_output(), "again", i64, {"1", "k"});
  AddValue(g->mutable_output(), "sorted", f, {"u"});
  AddValue(g->mutable_output(), "unsorted", f, {"u"});
  AddValue(g->mutable_output(), "x", f, {"n"});
  return m;
}

TEST(GraphSplit, RepeatedHostNodeRunsOnce) {
  onnx::ModelProto p = RepeatedHostNodesModel();
  LoadedModel m = Loaded(p);
  auto split = SplitGraph(m);
  ASSERT_TRUE(split.ok()) << split.status();
  std::map<std::string, int> segment_of, same_as;
  for (size_t k = 0; k < split->segments.size(); ++k) {
    const Segment& seg = split->segments[k];
    if (!seg.on_host) continue;
    segment_of[m.proto.graph().node(seg.nodes[0]).output(0)] = k;
    same_as[m.proto.graph().node(seg.nodes[0]).output(0)] = seg.same_as;
  }
  EXPECT_EQ(same_as.at("first"), -1);
  EXPECT_EQ(same_as.at("again"), segment_of.at("first"));
  EXPECT_EQ(same_as.at("sorted"), -1);
  EXPECT_EQ(same_as.at("unsorted"), -1);  // another attribute: another result

  // Run: the repeated node's outputs are the first one's, each output the
  // caller's own memory (not a view of a value the call has dropped).
  fs::path dir = MakeTestDir("xonnx_repeated_host_test");
  std::string path = (dir / "repeated.onnx").string();
  {
    std::ofstream out(path, std::ios::binary);
    p.SerializeToOstream(&out);
  }
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::Open(path, o);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<float> x = {3, -1, 2, 3, 0, 5};
  auto out = (*s)->Run({{"x", Tensor::FromData(DataType::kFloat32, {6}, x.data())}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 5u);
  for (int k : {0, 1}) {
    const Tensor& t = (*out)[k];
    EXPECT_FALSE(t.is_view());
    ASSERT_EQ(t.dims(), (std::vector<int64_t>{1, 4}));
    EXPECT_EQ(std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + 4), (std::vector<int64_t>{0, 2, 3, 5}));
  }
  const Tensor& sorted = (*out)[2];
  const Tensor& unsorted = (*out)[3];
  EXPECT_EQ(std::vector<float>(sorted.data_as<float>(), sorted.data_as<float>() + 5),
            (std::vector<float>{-1, 0, 2, 3, 5}));
  EXPECT_EQ(std::vector<float>(unsorted.data_as<float>(), unsorted.data_as<float>() + 5),
            (std::vector<float>{3, -1, 2, 0, 5}));
  EXPECT_FALSE((*out)[4].is_view());
  EXPECT_EQ(std::vector<float>((*out)[4].data_as<float>(), (*out)[4].data_as<float>() + 6), x);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xonnx::onnx_import
