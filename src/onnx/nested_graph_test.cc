// Which control flow must run on the host, and the models its bodies run
// as, on graphs written in ONNX's text syntax.
#include "onnx/nested_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "onnx/defs/parser.h"
#include "onnx/graph_split.h"

namespace xonnx::onnx_import {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

LoadedModel Parse(const char* text) {
  LoadedModel m;
  m.path = "m.onnx";
  auto st = onnx::OnnxParser::Parse(m.proto, text);
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  for (const auto& o : m.proto.opset_import()) m.opsets[o.domain()] = o.version();
  return m;
}

// Why each host node of the model's split is on the host ("" when it is
// not control flow).
std::vector<std::string> HostReasons(const char* text) {
  LoadedModel m = Parse(text);
  auto split = SplitGraph(m);
  EXPECT_TRUE(split.ok()) << split.status();
  std::vector<std::string> out;
  for (int i : split->host_nodes) {
    auto it = split->host_control_flow.find(i);
    out.push_back(NodeLabel(m.proto.graph().node(i)) + ": " + (it == split->host_control_flow.end() ? "" : it->second));
  }
  return out;
}

TEST(NestedGraph, DataDependentOpInABranchPutsTheIfOnTheHost) {
  EXPECT_THAT(HostReasons(R"(<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[4] x) => (int64[1, N] y) {
  y = If(c) <then_branch = t () => (int64[1, N] a) { a = NonZero(x) },
             else_branch = e () => (int64[1, N] b) { nx = Neg(x)  b = NonZero(nx) }>
})"),
              ElementsAre("If 'y': NonZero 'a' in then_branch"));
}

TEST(NestedGraph, BranchesOfDifferentRanksPutTheIfOnTheHostWhenTheConditionIsData) {
  // A two-stage detector's RoI head: one box squeezed to [150], the other
  // branch [150, 1]. On a known condition the importer picks the branch.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[150, 1] x) => (float[N] y, float[M] z) <int64[1] one = {1}, bool yes = {1}> {
  y = If(c) <then_branch = t () => (float[150] a) { a = Squeeze(x, one) },
             else_branch = e () => (float[150, 1] b) { b = Identity(x) }>
  z = If(yes) <then_branch = t2 () => (float[150] a2) { a2 = Squeeze(x, one) },
               else_branch = e2 () => (float[150, 1] b2) { b2 = Identity(x) }>
})";
  EXPECT_THAT(HostReasons(text),
              ElementsAre("If 'y': branches whose output 0 has different shapes ([150] and [150,1])"));
}

TEST(NestedGraph, DataDependentOpOnKnownValuesStaysInTheProgram) {
  // NonZero of an initializer and of a shape fold when compiling.
  EXPECT_THAT(HostReasons(R"(<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[4] x) => (int64[1, N] y) <int64[3] k = {1, 0, 2}> {
  y = If(c) <then_branch = t () => (int64[1, N] a) { a = NonZero(k) },
             else_branch = e () => (int64[1, N] b) { s = Shape(x)  b = NonZero(s) }>
})"),
              ::testing::IsEmpty());
}

TEST(NestedGraph, RuntimeShapeInputInABranchButNotInALoopBody) {
  // A Reshape whose shape is computed from data cannot compile inside a
  // branch; inside a loop body the importer unrolls it instead.
  EXPECT_THAT(HostReasons(R"(<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[4] x, int64[2] s) => (float[N, M] y) {
  s2 = Mul(s, s)
  y = If(c) <then_branch = t () => (float[N, M] a) { a = Reshape(x, s2) },
             else_branch = e () => (float[N, M] b) { b = Reshape(x, s) }>
})"),
              ElementsAre("If 'y': Reshape 'a', whose input 's2' is computed at run time in then_branch"));
  EXPECT_THAT(HostReasons(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) <int64 n = {3}, bool t = {1}, int64[1] zero = {0}> {
  y = Loop(n, t, x) <body = b (int64 i, bool ci, float[4] v) => (bool co, float[4] w) {
    co = Identity(ci)
    k = Unsqueeze(i, zero)
    part = Slice(v, zero, k)
    w = Identity(v)
  }>
})"),
              ::testing::IsEmpty());
}

TEST(NestedGraph, DepthAndLoopConditions) {
  // Two Ifs deep: the outer If runs on the host, its body splits again.
  EXPECT_THAT(HostReasons(R"(<ir_version: 8, opset_import: ["" : 17]>
g (bool c1, bool c2, float[4] x) => (int64[1, N] y) {
  y = If(c1) <then_branch = t () => (int64[1, N] a) {
      a = If(c2) <then_branch = t2 () => (int64[1, N] p) { p = NonZero(x) },
                  else_branch = e2 () => (int64[1, N] q) { q = Identity(k) }>
    },
    else_branch = e () => (int64[1, N] b) { b = Identity(k) }>
} )"),
              ElementsAre("If 'y': NonZero 'p' in then_branch of If 'a' in then_branch"));
  // A Loop whose body decides when to stop, with a scan output.
  EXPECT_THAT(HostReasons(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3] x) => (float[3] y, float[N, 3] ys) <float lim = {100.0}, bool t = {1}, int64 most = {1000}> {
  y, ys = Loop(most, t, x) <body = b (int64 i, bool ci, float[3] v) => (bool co, float[3] w, float[3] z) {
    w = Add(v, v)
    s = ReduceSum(w)
    co = Less(s, lim)
    z = Identity(w)
  }>
})"),
              ElementsAre("Loop 'y': scan outputs whose length the body's condition decides"));
}

TEST(NestedGraph, BodyModelTakesFormalThenCapturedInputsAndCopiesInitializers) {
  LoadedModel m = Parse(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3] x) => (float[3] y) <float two = {2.0}, int64 n = {2}, bool t = {1}> {
  x2 = Relu(x)
  y = Loop(n, t, x) <body = b (int64 i, bool ci, float[3] v) => (bool co, float[3] w) {
    co = Identity(ci)
    m = Mul(v, two)
    w = Add(m, x2)
  }>
})");
  EXPECT_THAT(CapturedNames(m.proto.graph().node(1).attribute(0).g()), ElementsAre("two", "x2"));
  auto body = BodyModel(m, 1, "body",
                        {{"i", onnx::TensorProto::INT64},
                         {"ci", onnx::TensorProto::BOOL},
                         {"v", onnx::TensorProto::FLOAT},
                         {"x2", onnx::TensorProto::FLOAT}});
  ASSERT_TRUE(body.ok()) << body.status();
  const onnx::GraphProto& g = (*body)->proto.graph();
  std::vector<std::string> inputs, inits, outputs;
  for (const auto& v : g.input()) inputs.push_back(v.name());
  for (const auto& t : g.initializer()) inits.push_back(t.name());
  for (const auto& v : g.output()) outputs.push_back(v.name());
  EXPECT_THAT(inputs, ElementsAre("i", "ci", "v", "x2"));
  EXPECT_THAT(inits, ElementsAre("two"));
  EXPECT_THAT(outputs, ElementsAre("co", "w"));
  EXPECT_NE((*body)->content_fingerprint, m.content_fingerprint);
  // A captured value without a type is an error naming it.
  auto missing = BodyModel(m, 1, "body", {{"i", onnx::TensorProto::INT64}});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("no element type for input 'ci'"));
}

}  // namespace
}  // namespace xonnx::onnx_import
