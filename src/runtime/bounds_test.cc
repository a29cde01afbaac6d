// Bounds on calls: deadlines and cancellation stop a Loop that would run
// for ever, on xonnx's CPU plugin, and closing a session stops its calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/test_dir.h"
#include "onnx/defs/parser.h"
#include "xonnx/session.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// y = x + 1, 2^62 times: no call finishes on its own.
constexpr const char* kEndlessLoop = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1] x) => (float[1] y) {
  m = Constant <value = int64 {4611686018427387904}> ()
  c = Constant <value = bool {1}> ()
  y = Loop (m, c, x) <body = b (int64 i, bool cin, float[1] v) => (bool cout, float[1] w) {
    cout = Identity(cin)
    one = Constant <value = float[1] {1.0}> ()
    w = Add(v, one)
  }>
})";

class BoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTestDir("xonnx_bounds_test");
    onnx::ModelProto m;
    auto st = onnx::OnnxParser::Parse(m, kEndlessLoop);
    ASSERT_TRUE(st.IsOK()) << st.ErrorMessage();
    path_ = (dir_ / "loop.onnx").string();
    std::ofstream(path_, std::ios::binary) << m.SerializeAsString();
    x_ = Tensor(DataType::kFloat32, {1});
  }
  void TearDown() override { fs::remove_all(dir_); }

  static double Seconds(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  fs::path dir_;
  std::string path_;
  Tensor x_;
};

TEST_F(BoundsTest, ADeadlineStopsAnEndlessLoop) {
  auto s = Session::Open(path_);
  ASSERT_TRUE(s.ok()) << s.status();
  RunOptions run;
  run.deadline_ms = 200;
  auto start = std::chrono::steady_clock::now();
  auto out = (*s)->Run({{"x", x_}}, run);
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().code() == StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("loop.onnx: the call passed its deadline of 200 ms"));
  EXPECT_LT(Seconds(start), 10.0);
}

TEST_F(BoundsTest, TheSessionsDeadlineAppliesUnlessTheCallSetsItsOwn) {
  SessionOptions o;
  o.deadline_ms = 100;
  auto s = Session::Open(path_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  auto out = (*s)->Run({{"x", x_}});
  EXPECT_TRUE(out.status().code() == StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("deadline of 100 ms"));
  RunOptions run;
  run.deadline_ms = 150;
  out = (*s)->Run({{"x", x_}}, run);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("deadline of 150 ms"));
}

TEST_F(BoundsTest, CancellingFromAnotherThreadStopsTheCall) {
  auto s = Session::Open(path_);
  ASSERT_TRUE(s.ok()) << s.status();
  RunOptions run;
  run.cancel = std::make_shared<CancelToken>();
  std::thread canceller([token = run.cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    token->Cancel();
  });
  auto start = std::chrono::steady_clock::now();
  auto out = (*s)->Run({{"x", x_}}, run);
  canceller.join();
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().code() == StatusCode::kCancelled) << out.status();
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("loop.onnx: the call was cancelled"));
  EXPECT_LT(Seconds(start), 10.0);
  // A cancelled token stops later calls at once.
  EXPECT_TRUE((*s)->Run({{"x", x_}}, run).status().code() == StatusCode::kCancelled);
}

TEST_F(BoundsTest, ClosingTheSessionCancelsItsCallsInFlight) {
  auto s = Session::Open(path_);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<std::future<StatusOr<std::vector<Tensor>>>> calls;
  for (int k = 0; k < 3; ++k) calls.push_back((*s)->RunAsync({{"x", x_}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  s->reset();
  EXPECT_LT(Seconds(start), 10.0);
  for (auto& c : calls) {
    auto out = c.get();
    EXPECT_TRUE(out.status().code() == StatusCode::kCancelled) << out.status();
  }
}

}  // namespace
}  // namespace xonnx
