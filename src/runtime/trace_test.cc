// The profile a session records (SessionOptions::profile_file): a Chrome
// trace JSON that parses, with the calls, their phases, the compile and, on
// xonnx's CPU plugin, kernels named by the model's own nodes.
#include "runtime/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/test_dir.h"
#include "onnx/defs/parser.h"
#include "xonnx/session.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;

TEST(Trace, ASessionsProfileNamesItsNodes) {
  fs::path dir = MakeTestDir("xonnx_trace_test");
  onnx::ModelProto m;
  auto parsed = onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,8] x) => (float[2,8] y) <float[8,8] w = {1.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0, 0.0,1.0,0.0,0.0,0.0,0.0,0.0,0.0,
  0.0,0.0,1.0,0.0,0.0,0.0,0.0,0.0, 0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0, 0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,
  0.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0, 0.0,0.0,0.0,0.0,0.0,0.0,1.0,0.0, 0.0,0.0,0.0,0.0,0.0,0.0,0.0,1.0}> {
  product = MatMul(x, w)
  y = Softmax <axis = 1> (product)
})");
  ASSERT_TRUE(parsed.IsOK()) << parsed.ErrorMessage();
  std::string path = (dir / "m.onnx").string();
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  SessionOptions o;
  o.use_cache = false;
  o.profile_file = (dir / "trace.json").string();
  {
    auto s = Session::Open(path, o);
    ASSERT_TRUE(s.ok()) << s.status();
    for (int k = 0; k < 3; ++k) ASSERT_TRUE((*s)->Run({{"x", Tensor(DataType::kFloat32, {2, 8})}}).ok());
  }  // written when the session goes
  std::ifstream in(o.profile_file);
  nlohmann::json trace = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(trace.is_discarded());
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<std::string, int> by_name;
  std::set<std::string> op_types, op_names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["dur"].get<double>(), 0);
    EXPECT_GE(e["ts"].get<double>(), 0);
    by_name[e["name"]]++;
    if (e["cat"] == "kernel" && e.contains("args") && e["args"].contains("op_type")) {
      op_types.insert(e["args"]["op_type"].get<std::string>());
      op_names.insert(e["args"]["op_name"].get<std::string>());
    }
  }
  EXPECT_EQ(by_name["call"], 3);
  EXPECT_EQ(by_name["execute"], 3);
  EXPECT_EQ(by_name["compile"], 1);
  // The softmax is the node the model names "y"; the product may be fused
  // into it or run as its own kernel.
  EXPECT_TRUE(op_types.count("Softmax")) << ::testing::PrintToString(op_types);
  EXPECT_TRUE(op_names.count("y")) << ::testing::PrintToString(op_names);
  for (const std::string& t : op_types) EXPECT_TRUE(t == "MatMul" || t == "Softmax" || t == "Input") << t;
  fs::remove_all(dir);
}

TEST(Trace, WithoutAProfileFileWriteProfileSaysSo) {
  fs::path dir = MakeTestDir("xonnx_trace_test2");
  onnx::ModelProto m;
  ASSERT_TRUE(onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) { y = Relu(x) })")
                  .IsOK());
  std::string path = (dir / "m.onnx").string();
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok()) << s.status();
  Status st = (*s)->WriteProfile();
  EXPECT_TRUE(st.code() == StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("set SessionOptions::profile_file"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xonnx
