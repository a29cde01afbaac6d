// XONNX_FLAGS in the environment: the importer's and xonnx's CPU plugin's
// passes are both dumped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/test_dir.h"
#include "onnx/onnx_pb.h"
#include "runtime/dump_test_model.h"
#include "xonnx/session.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;

// A process of its own: xonnx's CPU plugin reads XONNX_FLAGS once, when it
// first compiles, and keeps dumping where it says for the process's life.
TEST(XonnxFlags, TheEnvironmentDumpsTheImportersAndThePluginsPasses) {
  fs::path dir = MakeTestDir("xonnx_dump_env_test");
  std::string path = (dir / "m.onnx").string();
  std::ofstream(path, std::ios::binary) << TwoNodes().SerializeAsString();
  std::string flags = "--dump_to=" + (dir / "dumps").string() + " --dump_pass_re=^(cse|layout)$";
  ::setenv("XONNX_FLAGS", flags.c_str(), 1);
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::Open(path, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->Run({{"x", Tensor(DataType::kFloat32, {2})}}).ok());
  ::unsetenv("XONNX_FLAGS");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "dumps")) files.push_back(e.path().filename().string());
  using ::testing::Contains;
  using ::testing::MatchesRegex;
  EXPECT_THAT(files, Contains(MatchesRegex("dumped\\.[0-9]+\\.00\\.imported\\.txt")));
  EXPECT_THAT(files, Contains(MatchesRegex("dumped\\.[0-9]+\\.[0-9]+\\.cse\\.txt")));
  EXPECT_THAT(files, Contains(MatchesRegex("dumped-cpu\\.[0-9]+\\.00\\.received\\.txt")));
  EXPECT_THAT(files, Contains(MatchesRegex("dumped-cpu\\.[0-9]+\\.[0-9]+\\.layout\\.txt")));
  EXPECT_THAT(files, Contains(MatchesRegex("dumped-cpu\\.[0-9]+\\.[0-9]+\\.final\\.txt")));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xonnx
