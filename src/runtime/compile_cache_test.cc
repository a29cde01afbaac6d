// The compile cache's files: entries that are not regular files (reading
// one must neither block, a FIFO, nor run away, a link to a device: each
// is damage, removed), and the bound stores keep the folder to.
#include "runtime/compile_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>

#include "absl/strings/str_cat.h"
#include "base/test_dir.h"
#include "xonnx/cache.h"

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

// Stores keep the folder to its bound: the least recently stored entries
// go, the newest stay, and what is left fits. Unbounded, nothing goes.
TEST(CompileCacheFiles, StoresKeepTheFolderToItsBound) {
  fs::path dir = MakeTestDir("xonnx_cache_bound_test");
  for (uint64_t bound : {uint64_t{10000}, uint64_t{0}}) {
    fs::remove_all(dir);
    auto c = CompileCache::Open(dir.string(), bound);
    ASSERT_TRUE(c.ok()) << c.status();
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(c->Store(absl::StrCat("key ", i), std::string(1500, 'x')).ok());
    auto files = c->List();
    ASSERT_TRUE(files.ok()) << files.status();
    uint64_t total = 0;
    for (const auto& f : *files) total += f.bytes;
    EXPECT_TRUE(c->Load("key 19").ok()) << bound;
    if (bound) {
      EXPECT_LE(total, bound);
      EXPECT_GE(files->size(), 5u);  // 1.5 KB entries: the bound holds six
      EXPECT_TRUE(absl::IsNotFound(c->Load("key 0").status()));
    } else {
      EXPECT_EQ(files->size(), 20u);
    }
  }
  fs::remove_all(dir);
}

TEST(CompileCacheFiles, SizesReadAsWritten) {
  uint64_t bytes = 1;
  EXPECT_TRUE(ParseCacheSize("500M", &bytes));
  EXPECT_EQ(bytes, uint64_t{500} << 20);
  EXPECT_TRUE(ParseCacheSize("1.5GiB", &bytes));
  EXPECT_EQ(bytes, uint64_t{3} << 29);
  EXPECT_TRUE(ParseCacheSize("2G", &bytes));
  EXPECT_EQ(bytes, uint64_t{2} << 30);
  EXPECT_TRUE(ParseCacheSize("4096", &bytes));
  EXPECT_EQ(bytes, 4096u);
  EXPECT_TRUE(ParseCacheSize("0", &bytes));
  EXPECT_EQ(bytes, 0u);
  for (const char* bad : {"", "G", "-1G", "five", "1X", "nan", "9e30T"})
    EXPECT_FALSE(ParseCacheSize(bad, &bytes)) << bad;
}

}  // namespace
}  // namespace xonnx
