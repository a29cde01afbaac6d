// The structural checks that stand in for libonnx's checker where it cannot
// run, on graphs written in ONNX's text syntax.
#include "onnx/structure.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/test_dir.h"
#include "onnx/defs/parser.h"
#include "xonnx/session.h"

namespace xonnx::onnx_import {
namespace {

using ::testing::HasSubstr;

onnx::ModelProto Parse(const char* text) {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return m;
}

std::string Check(const char* text) {
  absl::Status st = CheckStructure(Parse(text).graph(), "m.onnx");
  return st.ok() ? "ok" : std::string(st.message());
}

TEST(Structure, AWellFormedGraphWithSubgraphsPasses) {
  EXPECT_EQ(Check(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x, bool c) => (float[2] y) <float[2] x = {1.0, 2.0}> {
  t = Relu(x)
  y = If(c) <then_branch = then_g () => (float[2] a) { a = Neg(t) },
             else_branch = else_g () => (float[2] b) { b = Identity(t) }>
})"),
            "ok");  // an initializer may give an input its default; subgraphs read outer values
}

TEST(Structure, EveryValueIsDefinedOnce) {
  EXPECT_THAT(Check(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y) {
  y = Relu(x)
  y = Neg(x)
})"),
              HasSubstr("m.onnx: graph 'g': node Neg 'y' defines 'y', already defined by node Relu 'y'"));
  EXPECT_THAT(Check(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y) {
  x = Relu(x)
  y = Neg(x)
})"),
              HasSubstr("defines 'x', already defined by a graph input"));
  EXPECT_THAT(Check(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}, float[2] w = {3.0, 4.0}> {
  y = Add(x, w)
})"),
              HasSubstr("initializer 'w' is given twice"));
}

TEST(Structure, EveryValueReadIsInScope) {
  EXPECT_THAT(Check(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y) {
  y = Add(x, nowhere)
})"),
              HasSubstr("graph 'g': node Add 'y' reads 'nowhere', which nothing in scope defines"));
  EXPECT_THAT(Check(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y, float[2] z) {
  y = Relu(x)
})"),
              HasSubstr("graph output 'z' is not defined"));
  // A value of one branch is not visible in the other.
  EXPECT_THAT(
      Check(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x, bool c) => (float[2] y) {
  y = If(c) <then_branch = then_g () => (float[2] a) { a = Neg(x) },
             else_branch = else_g () => (float[2] b) { b = Identity(a) }>
})"),
      HasSubstr("graph 'g', node If 'y', attribute 'else_branch': graph 'else_g': node Identity 'b' reads 'a'"));
}

// A model of an opset newer than libonnx's checker knows is checked by these
// rules when it is opened.
TEST(Structure, SessionsOfNewerOpsetsAreChecked) {
  std::filesystem::path dir = MakeTestDir("xonnx_structure_test");
  std::string path = (dir / "dup.onnx").string();
  std::ofstream(path, std::ios::binary) << Parse(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y) {
  y = Relu(x)
  y = Neg(x)
})")
                                               .SerializeAsString();
  auto s = Session::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("defines 'y', already defined by node Relu 'y'"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xonnx::onnx_import
