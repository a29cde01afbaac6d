// For tests: a folder of one's own under the system's temporary folder.
#ifndef XONNX_BASE_TEST_DIR_H_
#define XONNX_BASE_TEST_DIR_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace xonnx {

// Creates and returns <tmp>/<prefix>_<pid>_<running test's name>: tests of
// one binary, and binaries that ctest runs in parallel, never share a folder.
// The caller removes it (fs::remove_all) when the test ends.
inline std::filesystem::path MakeTestDir(const std::string& prefix) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()) + "_" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace xonnx

#endif  // XONNX_BASE_TEST_DIR_H_
