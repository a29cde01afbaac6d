// Many threads on several sessions at once: Run and RunAsync mixed, batches
// split across devices (the session's one thread pool, nested under
// asynchronous calls), every result bit-identical to the same call made
// alone.
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "xonnx/session.h"

namespace xonnx {
namespace {

Tensor Image(int64_t batch, int seed) {
  Tensor t(DataType::kFloat32, {batch, 3, 32, 32});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.element_count(); ++i) t.data_as<float>()[i] = u(rng);
  return t;
}

bool Same(const Tensor& a, const Tensor& b) {
  return a.dims() == b.dims() && a.byte_size() == b.byte_size() && std::memcmp(a.data(), b.data(), a.byte_size()) == 0;
}

TEST(StressTest, ThreadsSessionsRunAndRunAsyncAgreeBitForBit) {
  SessionOptions plain;
  plain.use_cache = false;
  SessionOptions split = plain;
  split.create_options.push_back({"cpu_device_count", int64_t{3}});
  split.device = SessionOptions::kAllDevices;
  split.batch_buckets = {1, 2, 4};
  std::vector<std::unique_ptr<Session>> sessions;
  for (const SessionOptions* o : {&plain, &split}) {
    auto s = Session::Open(XONNX_EXAMPLE_MODEL, *o);
    ASSERT_TRUE(s.ok()) << s.status();
    sessions.push_back(*std::move(s));
  }
  // Each session's answer to each input, asked alone.
  constexpr int kInputs = 6;
  std::vector<Tensor> inputs;
  std::vector<std::vector<Tensor>> expected(sessions.size());
  for (int k = 0; k < kInputs; ++k) {
    inputs.push_back(Image(1 + k, 100 + k));
    for (size_t s = 0; s < sessions.size(); ++s) {
      auto out = sessions[s]->Run({{"image", inputs[k]}});
      ASSERT_TRUE(out.ok()) << out.status();
      expected[s].push_back((*out)[0]);
    }
  }
  std::atomic<int> mismatches{0}, failures{0}, calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 24; ++i) {
        int k = (t * 7 + i) % kInputs;
        size_t s = (t + i) % sessions.size();
        StatusOr<std::vector<Tensor>> out =
            i % 3 == 2 ? sessions[s]->RunAsync({{"image", inputs[k]}}).get() : sessions[s]->Run({{"image", inputs[k]}});
        ++calls;
        if (!out.ok())
          ++failures;
        else if (!Same((*out)[0], expected[s][k]))
          ++mismatches;
      }
    });
  }
  // Meanwhile a burst of asynchronous calls, more than a session runs at once.
  std::vector<std::pair<int, std::future<StatusOr<std::vector<Tensor>>>>> burst;
  for (int i = 0; i < 64; ++i) burst.emplace_back(i % kInputs, sessions[1]->RunAsync({{"image", inputs[i % kInputs]}}));
  for (auto& [k, f] : burst) {
    auto out = f.get();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(Same((*out)[0], expected[1][k])) << "burst input " << k;
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(calls.load(), 8 * 24);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace xonnx
