// Control flow run on the host: stacking and slicing along axes, and
// sessions running If and Loop nodes whose bodies hold data-dependent ops
// (values against hand-computed results, errors naming the node path, and a
// deadline stopping an endless host loop).
#include "runtime/host_control_flow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "base/test_dir.h"
#include "onnx/defs/parser.h"
#include "xonnx/session.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Floats(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::FromVector(DataType::kFloat32, std::move(dims), v);
}

std::vector<float> Values(const Tensor& t) {
  const float* p = t.data_as<float>();
  return {p, p + t.element_count()};
}

TEST(HostControlFlow, StacksAlongAnyAxisInEitherDirection) {
  std::vector<Tensor> parts = {Floats({2, 2}, {1, 2, 3, 4}), Floats({2, 2}, {5, 6, 7, 8})};
  auto a0 = StackTensors(parts, 0, false, DataType::kFloat32, {0});
  ASSERT_TRUE(a0.ok()) << a0.status();
  EXPECT_THAT(a0->dims(), ElementsAre(2, 2, 2));
  EXPECT_THAT(Values(*a0), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  auto a1 = StackTensors(parts, 1, false, DataType::kFloat32, {0});
  ASSERT_TRUE(a1.ok());
  EXPECT_THAT(Values(*a1), ElementsAre(1, 2, 5, 6, 3, 4, 7, 8));
  auto a2r = StackTensors(parts, 2, true, DataType::kFloat32, {0});
  ASSERT_TRUE(a2r.ok());
  EXPECT_THAT(a2r->dims(), ElementsAre(2, 2, 2));
  EXPECT_THAT(Values(*a2r), ElementsAre(5, 1, 6, 2, 7, 3, 8, 4));
  auto empty = StackTensors({}, 0, false, DataType::kInt64, {0, 3});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->dtype(), DataType::kInt64);
  EXPECT_THAT(empty->dims(), ElementsAre(0, 3));
  auto mixed = StackTensors({Floats({2}, {1, 2}), Floats({3}, {1, 2, 3})}, 0, false, DataType::kFloat32, {0});
  EXPECT_FALSE(mixed.ok());
  EXPECT_FALSE(StackTensors(parts, 3, false, DataType::kFloat32, {0}).ok());
}

TEST(HostControlFlow, SlicesAnAxis) {
  Tensor t = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  auto row = SliceAxis(t, 0, 1);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_THAT(row->dims(), ElementsAre(3));
  EXPECT_THAT(Values(*row), ElementsAre(4, 5, 6));
  auto col = SliceAxis(t, 1, 2);
  ASSERT_TRUE(col.ok());
  EXPECT_THAT(Values(*col), ElementsAre(3, 6));
  EXPECT_FALSE(SliceAxis(t, 1, 3).ok());
  EXPECT_FALSE(SliceAxis(t, 2, 0).ok());
}

class HostControlFlowSession : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTestDir("xonnx_host_control_flow_test"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const char* text) {
    onnx::ModelProto m;
    auto st = onnx::OnnxParser::Parse(m, text);
    EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
    std::string path = (dir_ / "m.onnx").string();
    std::ofstream(path, std::ios::binary) << m.SerializeAsString();
    return path;
  }
  fs::path dir_;
};

// The positions of x's positive values, or of its negative ones, as the
// runtime condition says; NonZero inside the branches.
constexpr const char* kIfNonZero = R"(<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[2, 3] x) => (int64[N, 2] y) <float zero = {0.0}> {
  pos = Greater(x, zero)
  y = If(c) <then_branch = t () => (int64[N, 2] a) { nz = NonZero(pos)  a = Transpose<perm = [1, 0]>(nz) },
             else_branch = e () => (int64[N, 2] b) { neg = Less(x, zero)  nz2 = NonZero(neg)
                                                      b = Transpose<perm = [1, 0]>(nz2) }>
})";

TEST_F(HostControlFlowSession, RunsAnIfWhoseBranchesHoldNonZero) {
  auto s = Session::Open(Write(kIfNonZero));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT((*s)->Info().host_nodes, ElementsAre("If 'y' (for NonZero 'nz' in then_branch)"));
  Tensor x = Floats({2, 3}, {1, -2, 3, -4, 5, 0});
  for (bool c : {true, false}) {
    auto out = (*s)->Run({{"c", Tensor::FromVector(DataType::kBool, {}, std::vector<uint8_t>{c})}, {"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    const int64_t* p = (*out)[0].data_as<int64_t>();
    std::vector<int64_t> got(p, p + (*out)[0].element_count());
    if (c)
      EXPECT_THAT(got, ElementsAre(0, 0, 0, 2, 1, 1));
    else
      EXPECT_THAT(got, ElementsAre(0, 1, 1, 0));
  }
  // A condition of the wrong size names the node.
  auto bad = (*s)->Run({{"c", Tensor::FromVector(DataType::kBool, {2}, std::vector<uint8_t>{1, 0})}, {"x", x}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("node If 'y': the condition must have one element"));
}

TEST_F(HostControlFlowSession, ADeadlineStopsAnEndlessHostLoop) {
  // 2^62 iterations, each with a NonZero: the loop runs on the host.
  auto s = Session::Open(Write(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3] x) => (int64 n) <int64 m = {4611686018427387904}, bool t = {1}, int64 zero = {0}> {
  n = Loop(m, t, zero) <body = b (int64 i, bool ci, int64 acc) => (bool co, int64 acc2) {
    co = Identity(ci)
    nz = NonZero(x)
    sh = Shape(nz)
    cnt = ReduceSum<keepdims = 0>(sh)
    acc2 = Add(acc, cnt)
  }>
})"));
  ASSERT_TRUE(s.ok()) << s.status();
  RunOptions run;
  run.deadline_ms = 300;
  auto start = std::chrono::steady_clock::now();
  auto out = (*s)->Run({{"x", Floats({3}, {1, 0, 2})}}, run);
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().code() == StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

TEST_F(HostControlFlowSession, ErrorsInsideABodyNameTheNodePath) {
  // The branch reshapes to a shape that does not fit: the message names the
  // If and its branch, then the node.
  auto s = Session::Open(Write(R"(<ir_version: 8, opset_import: ["" : 17]>
g (bool c, float[4] x, int64[2] s) => (float[N, M] y) {
  s2 = Add(s, s)
  y = If(c) <then_branch = t () => (float[N, M] a) { a = Reshape(x, s2) },
             else_branch = e () => (float[N, M] b) { b = Reshape(x, s) }>
})"));
  ASSERT_TRUE(s.ok()) << s.status();
  Tensor x = Floats({4}, {1, 2, 3, 4});
  auto ok = (*s)->Run({{"c", Tensor::FromVector(DataType::kBool, {}, std::vector<uint8_t>{1})},
                       {"x", x},
                       {"s", Tensor::FromVector(DataType::kInt64, {2}, std::vector<int64_t>{1, 1})}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT((*ok)[0].dims(), ElementsAre(2, 2));
  auto bad = (*s)->Run({{"c", Tensor::FromVector(DataType::kBool, {}, std::vector<uint8_t>{1})},
                        {"x", x},
                        {"s", Tensor::FromVector(DataType::kInt64, {2}, std::vector<int64_t>{3, 1})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("m.onnx: node '' (If) subgraph 't'"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("Reshape"));
}

}  // namespace
}  // namespace xonnx
