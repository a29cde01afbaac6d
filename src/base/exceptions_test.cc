#include "base/exceptions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "absl/status/statusor.h"

namespace xonnx {
namespace {

using ::testing::HasSubstr;

TEST(CatchExceptions, ResultsAndErrorsPassThrough) {
  absl::StatusOr<int> v = CatchExceptions("f", []() -> absl::StatusOr<int> { return 7; });
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 7);
  absl::Status st = CatchExceptions("f", [] { return absl::NotFoundError("gone"); });
  EXPECT_TRUE(absl::IsNotFound(st));
  EXPECT_EQ(st.message(), "gone");
}

TEST(CatchExceptions, AllocationFailureIsResourceExhausted) {
  absl::StatusOr<std::string> s =
      CatchExceptions("model.onnx", []() -> absl::StatusOr<std::string> { throw std::bad_alloc(); });
  EXPECT_TRUE(absl::IsResourceExhausted(s.status()));
  EXPECT_THAT(s.status().message(), HasSubstr("model.onnx: out of memory"));
}

TEST(CatchExceptions, OtherExceptionsAreInternalAndSayWhere) {
  absl::Status st = CatchExceptions("model.onnx", []() -> absl::Status {
    std::map<std::string, int> m;
    return absl::InvalidArgumentError(std::to_string(m.at("missing")));  // throws out_of_range
  });
  EXPECT_TRUE(absl::IsInternal(st));
  EXPECT_THAT(st.message(), HasSubstr("model.onnx: unexpected error ("));
  st = CatchExceptions("x", []() -> absl::Status { throw 42; });
  EXPECT_TRUE(absl::IsInternal(st));
  EXPECT_THAT(st.message(), HasSubstr("x: unexpected error of unknown type"));
}

}  // namespace
}  // namespace xonnx
