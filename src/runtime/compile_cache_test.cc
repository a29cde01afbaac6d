// Cache entries that are not regular files: reading one must neither block
// (a FIFO) nor run away (a link to a device); each is damage, removed.
#include "runtime/compile_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>

#include "base/test_dir.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(CompileCacheFiles, FifosAndDevicesAreDamageNotReads) {
  fs::path dir = MakeTestDir("xonnx_cache_files_test");
  auto c = CompileCache::Open(dir.string());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(::mkfifo(c->PathFor("fifo").c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", c->PathFor("zero"));
  for (const char* key : {"fifo", "zero"}) {
    // On a thread, so that a read that blocks fails the test instead of hanging it.
    auto load = std::async(std::launch::async, [&] { return c->Load(key).status(); });
    ASSERT_EQ(load.wait_for(std::chrono::seconds(10)), std::future_status::ready) << key;
    absl::Status st = load.get();
    EXPECT_TRUE(absl::IsDataLoss(st)) << key << ": " << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr("not a regular file")) << key;
    EXPECT_FALSE(fs::exists(fs::symlink_status(c->PathFor(key)))) << key << " was not removed";
  }
  // Listing a folder with a FIFO in it does not block either.
  ASSERT_EQ(::mkfifo(c->PathFor("fifo2").c_str(), 0600), 0);
  auto list = std::async(std::launch::async, [&] { return c->List().status(); });
  ASSERT_EQ(list.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xonnx
