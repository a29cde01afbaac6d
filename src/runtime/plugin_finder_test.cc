// Plugins by name: the lookup order over the variables, xonnx's plugin
// folders and JAX's installed plugins, in a fake home and virtual
// environment.
#include "runtime/plugin_finder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/test_dir.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class PluginFinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTestDir("xonnx_plugin_finder_test");
    for (const char* v :
         {"HOME", "VIRTUAL_ENV", "PATH", "PYTHONPATH", "XONNX_PLUGINS", "PJRT_NAMES_AND_LIBRARY_PATHS"}) {
      const char* old = std::getenv(v);
      saved_.emplace_back(v, old ? std::optional<std::string>(old) : std::nullopt);
      ::unsetenv(v);
    }
    ::setenv("HOME", (dir_ / "home").c_str(), 1);
    ::setenv("VIRTUAL_ENV", (dir_ / "venv").c_str(), 1);
    ::setenv("PATH", "", 1);
  }
  void TearDown() override {
    for (const auto& [v, old] : saved_) old ? ::setenv(v.c_str(), old->c_str(), 1) : ::unsetenv(v.c_str());
    fs::remove_all(dir_);
  }
  std::string Touch(const fs::path& rel) {
    fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
    return p.string();
  }
  fs::path dir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(PluginFinderTest, PathsAndFileNamesAreUsedAsGiven) {
  EXPECT_EQ(*ResolvePlugin("/opt/x/plugin.so", "/default.so"), "/opt/x/plugin.so");
  EXPECT_EQ(*ResolvePlugin("libtpu.so", "/default.so"), "libtpu.so");
  EXPECT_EQ(*ResolvePlugin("", "/default.so"), "/default.so");
  EXPECT_EQ(*ResolvePlugin("cpu", "/default.so"), "/default.so");
  EXPECT_TRUE(IsPluginName("cuda"));
  EXPECT_FALSE(IsPluginName("./cuda"));
  EXPECT_FALSE(IsPluginName("pjrt_cuda.so.1"));
}

TEST_F(PluginFinderTest, JaxPluginsAreFoundInTheVirtualEnvironment) {
  std::string cuda = Touch("venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so");
  std::string tpu = Touch("venv/lib/python3.12/site-packages/libtpu/libtpu.so");
  EXPECT_EQ(*ResolvePlugin("cuda", "/default.so"), cuda);
  EXPECT_EQ(*ResolvePlugin("tpu", "/default.so"), tpu);
  std::vector<PluginCandidate> all;  // those of this test (the system may have its own)
  for (auto& c : FindPluginCandidates(""))
    if (c.path.rfind(dir_.string(), 0) == 0) all.push_back(c);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "tpu");
  EXPECT_EQ(all[1].name, "cuda");
  EXPECT_THAT(all[1].source, HasSubstr("jax plugins in"));
}

TEST_F(PluginFinderTest, VariablesComeFirstThenXonnxFolders) {
  std::string jax = Touch("venv/lib/python3.11/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so");
  std::string local = Touch("home/.local/lib/xonnx/plugins/pjrt_cuda.so");
  EXPECT_EQ(*ResolvePlugin("cuda", "/default.so"), local);
  ::setenv("PJRT_NAMES_AND_LIBRARY_PATHS", "cuda:/from/jax_names.so", 1);
  EXPECT_EQ(*ResolvePlugin("cuda", "/default.so"), "/from/jax_names.so");
  ::setenv("XONNX_PLUGINS", "tpu:/t.so,cuda:/from/xonnx_plugins.so", 1);
  EXPECT_EQ(*ResolvePlugin("cuda", "/default.so"), "/from/xonnx_plugins.so");
  std::vector<PluginCandidate> c = FindPluginCandidates("cuda");
  ASSERT_GE(c.size(), 4u);
  EXPECT_EQ(c[0].source, "XONNX_PLUGINS");
  EXPECT_EQ(c[1].source, "PJRT_NAMES_AND_LIBRARY_PATHS");
  EXPECT_EQ(c[2].path, local);
  EXPECT_EQ(c[3].path, jax);
  // A folder of plugins is listed by the names its files carry.
  Touch("home/.local/lib/xonnx/plugins/libpjrt_metal.so");
  bool metal = false;
  for (const auto& p : FindPluginCandidates("")) metal |= p.name == "metal";
  EXPECT_TRUE(metal);
}

TEST_F(PluginFinderTest, AnUnknownNameSaysWhereItLooked) {
  auto r = ResolvePlugin("rocm", "/default.so");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status()));
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("no PjRT plugin named 'rocm' (looked in XONNX_PLUGINS, PJRT_NAMES_AND_LIBRARY_PATHS"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("xonnx devices --all"));
}

}  // namespace
}  // namespace xonnx
