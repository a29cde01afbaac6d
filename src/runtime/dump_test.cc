// Dumps for looking inside: XONNX_FLAGS' syntax, and the files a session
// writes with DumpOptions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/test_dir.h"
#include "onnx/onnx_pb.h"
#include "runtime/dump_test_model.h"
#include "xonnx/session.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(XonnxFlags, ParsesTheDumpFlagsAndRefusesOthers) {
  auto d = ParseXonnxFlags("  --dump_to=/tmp/x --dump_pass_re=cse|dce\n--dump_as_dot --dump_onnx=true ");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->to, "/tmp/x");
  EXPECT_EQ(d->pass_re, "cse|dce");
  EXPECT_TRUE(d->as_dot);
  EXPECT_FALSE(d->as_text);  // choosing a format replaces the default
  EXPECT_TRUE(d->onnx);
  EXPECT_TRUE(ParseXonnxFlags("")->as_text);
  EXPECT_TRUE(ParseXonnxFlags("--dump_as_stablehlo")->as_stablehlo);
  auto unknown = ParseXonnxFlags("--dump_to=/x --xla_dump_to=/y");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("unknown flag --xla_dump_to (known: --dump_to=..., --dump_pass_re=..., --dump_as_text"));
  EXPECT_THAT(std::string(ParseXonnxFlags("--dump_to").status().message()), HasSubstr("needs a value"));
  EXPECT_THAT(std::string(ParseXonnxFlags("--dump_as_dot=yes").status().message()), HasSubstr("true or false"));
  EXPECT_THAT(std::string(ParseXonnxFlags("dump_to=/x").status().message()), HasSubstr("is not a flag"));
}

TEST(Dumps, ASessionWritesItsModulesInOrder) {
  fs::path dir = MakeTestDir("xonnx_dump_test");
  std::string path = (dir / "m.onnx").string();
  std::ofstream(path, std::ios::binary) << TwoNodes().SerializeAsString();
  SessionOptions o;
  o.use_cache = false;
  o.dump.to = (dir / "dumps").string();
  o.dump.pass_re = "^cse$";
  o.dump.as_dot = true;
  o.dump.as_html = true;
  o.dump.as_stablehlo = true;
  o.dump.onnx = true;
  auto s = Session::Open(path, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->Run({{"x", Tensor(DataType::kFloat32, {2})}}).ok());
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(o.dump.to)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  // imported, after each cse round, final; each as text, dot and html; and the model.
  ASSERT_GE(files.size(), 10u) << ::testing::PrintToString(files);
  EXPECT_THAT(files.front(), ::testing::MatchesRegex("dumped\\.[0-9]+\\.00\\.imported\\.dot"));
  EXPECT_THAT(files, ::testing::Contains(::testing::MatchesRegex(".*\\.01\\.cse\\.txt")));
  EXPECT_THAT(files, ::testing::Contains(::testing::MatchesRegex(".*\\.final\\.txt")));
  EXPECT_THAT(files, ::testing::Contains("m.onnx"));
  for (const auto& f : files) EXPECT_THAT(f, ::testing::Not(HasSubstr("dce")));  // not named by the regex
  auto read = [&](const std::string& name) {
    std::ifstream in(fs::path(o.dump.to) / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  auto mlir_file = std::find_if(files.begin(), files.end(), [](const std::string& f) {
    return f.size() > 5 && f.compare(f.size() - 5, 5, ".mlir") == 0;
  });
  ASSERT_NE(mlir_file, files.end());
  EXPECT_THAT(read(*mlir_file), HasSubstr("func.func public @main"));
  std::string dot = read(files.front());
  EXPECT_THAT(dot, HasSubstr("digraph"));
  EXPECT_THAT(dot, HasSubstr("Relu t"));  // instructions carry their ONNX node
  // The page: self-contained (nothing fetched), a box per instruction with
  // its ONNX node, the HLO text after the graphs.
  auto html_file = std::find_if(files.begin(), files.end(), [](const std::string& f) {
    return f.size() > 5 && f.compare(f.size() - 5, 5, ".html") == 0;
  });
  ASSERT_NE(html_file, files.end());
  std::string html = read(*html_file);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_THAT(html, HasSubstr("Relu t"));
  EXPECT_THAT(html, HasSubstr("<path d="));  // edges
  EXPECT_THAT(html, HasSubstr("HloModule"));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("<script")));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("src=")));
  onnx::ModelProto dumped;
  ASSERT_TRUE(dumped.ParseFromString(read("m.onnx")));
  EXPECT_EQ(dumped.graph().node_size(), 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xonnx
