// Serving features of Session: batch and dimension buckets, the persistent
// compile cache (hits, damaged and stale entries), all devices, RunAsync.
// Results are checked against a host reference, never against themselves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/test_dir.h"
#include "onnx/onnx_pb.h"
#include "runtime/batching.h"
#include "runtime/compile_cache.h"
#include "xonnx/float16.h"
#include "xonnx/session.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int kIn = 64, kOut = 32;  // W has 2048 elements: an uploaded weight

class ServingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTestDir("xonnx_serving_test");
    model_ = (dir_ / "model.onnx").string();
    WriteModel(0.5f);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // y[b, s, :] = Relu(x[b, s, :] @ W + bias) with x [batch, seq, 64] and
  // y [batch, seq, 32]; W and bias = scale * fixed patterns. W is uploaded
  // as a device buffer, bias is compiled into the program.
  void WriteModel(float scale) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("serving");
    for (auto [vi, name, last] : {std::tuple{g->add_input(), "x", kIn}, std::tuple{g->add_output(), "y", kOut}}) {
      vi->set_name(name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx::TensorProto::FLOAT);
      tt->mutable_shape()->add_dim()->set_dim_param("batch");
      tt->mutable_shape()->add_dim()->set_dim_param("seq");
      tt->mutable_shape()->add_dim()->set_dim_value(last);
    }
    w_.assign(kIn * kOut, 0);
    for (int i = 0; i < kIn * kOut; ++i) w_[i] = scale * (((i * 7) % 13) - 6) / 13.0f;
    bias_.assign(kOut, 0);
    for (int j = 0; j < kOut; ++j) bias_[j] = scale * (0.2f * (j % 5) - 0.4f);
    auto* w = g->add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(kIn);
    w->add_dims(kOut);
    for (float v : w_) w->add_float_data(v);
    auto* b = g->add_initializer();
    b->set_name("bias");
    b->set_data_type(onnx::TensorProto::FLOAT);
    b->add_dims(kOut);
    for (float v : bias_) b->add_float_data(v);
    auto node = [&](const char* op, std::vector<std::string> in, const char* out) {
      auto* n = g->add_node();
      n->set_op_type(op);
      n->set_name(std::string(op) + "_1");
      for (const auto& i : in) n->add_input(i);
      n->add_output(out);
    };
    node("MatMul", {"x", "W"}, "h");
    node("Add", {"h", "bias"}, "z");
    node("Relu", {"z"}, "y");
    std::ofstream f(model_, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&f));
  }

  Tensor Input(int64_t batch, int64_t seq, int seed) {
    Tensor t(DataType::kFloat32, {batch, seq, kIn});
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < t.element_count(); ++i) t.data_as<float>()[i] = u(rng);
    return t;
  }

  // The model's output for an f32 x, computed on the host in double.
  std::vector<double> Reference(const Tensor& x) {
    int64_t rows = x.dims()[0] * x.dims()[1];
    std::vector<double> y(rows * kOut);
    for (int64_t r = 0; r < rows; ++r)
      for (int j = 0; j < kOut; ++j) {
        double acc = bias_[j];
        for (int k = 0; k < kIn; ++k) acc += x.data_as<float>()[r * kIn + k] * w_[k * kOut + j];
        y[r * kOut + j] = std::max(acc, 0.0);
      }
    return y;
  }

  void ExpectMatchesReference(const Tensor& x, const Tensor& y) {
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{x.dims()[0], x.dims()[1], kOut}));
    std::vector<double> want = Reference(x);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(y.data_as<float>()[i], want[i], 1e-4) << "row " << i / kOut << " column " << i % kOut;
  }

  // ||y - reference|| / ||reference|| for y of any float type.
  double RelativeError(const Tensor& x, const Tensor& y) {
    std::vector<double> want = Reference(x);
    double err = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      double d = y.GetAsDouble(i) - want[i];
      err += d * d;
      norm += want[i] * want[i];
    }
    return std::sqrt(err / norm);
  }

  SessionOptions Options() {
    SessionOptions o;
    o.cache_dir = (dir_ / "cache").string();
    return o;
  }

  // One batch bucket (2) and one seq bucket (2): one program.
  SessionOptions OneBucketOptions() {
    SessionOptions o = Options();
    o.batch_buckets = {2};
    o.dim_buckets["seq"] = {2};
    return o;
  }

  // Opens the model once with `o`, which fills its cache, and runs a call.
  void FillCache(const SessionOptions& o) {
    auto s = Session::Open(model_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    RunAndCheck(**s, 2, 2);
  }

  // Fills cache `c` with one program through `o` and returns its
  // executable's key ("" after a failed expectation).
  std::string FillCacheWithOneExecutable(const SessionOptions& o, const CompileCache& c) {
    FillCache(o);
    std::vector<std::string> keys;
    auto listed = c.List();
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (listed.ok())
      for (const auto& f : *listed)
        if (absl::StartsWith(f.key, "executable ")) keys.push_back(f.key);
    EXPECT_EQ(keys.size(), 1u);
    return keys.size() == 1 ? keys[0] : "";
  }

  void RunAndCheck(Session& s, int64_t batch, int64_t seq, int seed = 1) {
    Tensor x = Input(batch, seq, seed);
    auto out = s.Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectMatchesReference(x, (*out)[0]);
  }

  fs::path dir_;
  std::string model_;
  std::vector<float> w_, bias_;
};

TEST(BatchingTest, BucketRules) {
  EXPECT_EQ(*BatchBuckets(64, 8, {}), (std::vector<int64_t>{8, 16, 24, 32, 40, 48, 56, 64}));
  EXPECT_EQ(*BatchBuckets(10, 3, {}), (std::vector<int64_t>{4, 7, 10}));
  EXPECT_EQ(*BatchBuckets(0, 1, {64, 1, 8, 8}), (std::vector<int64_t>{1, 8, 64}));
  EXPECT_TRUE(BatchBuckets(0, 1, {})->empty());
  EXPECT_THAT(BatchBuckets(8, 9, {}).status().message(), HasSubstr("steps must be between 1 and max_batch"));
  EXPECT_THAT(BatchBuckets(0, 1, {4, 0}).status().message(), HasSubstr("sizes must be >= 1"));
  EXPECT_THAT(BatchBuckets(16, 1, {4, 8}).status().message(), HasSubstr("disagree"));
  EXPECT_EQ(PickBucket({2, 4, 8}, 3), 4);
  EXPECT_EQ(PickBucket({2, 4, 8}, 8), 8);
  EXPECT_EQ(PickBucket({2, 4, 8}, 9), -1);
}

TEST(BatchingTest, ResizeSliceConcat) {
  Tensor t = Tensor::FromVector<float>(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor grown = *ResizeAxis(t, 1, 4);
  EXPECT_EQ(std::vector<float>(grown.data_as<float>(), grown.data_as<float>() + 8),
            (std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0}));
  Tensor cut = *ResizeAxis(grown, 1, 2);
  EXPECT_EQ(std::vector<float>(cut.data_as<float>(), cut.data_as<float>() + 4), (std::vector<float>{1, 2, 4, 5}));
  Tensor rows = *SliceRows(t, 1, 1);
  EXPECT_EQ(rows.dims(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(rows.data_as<float>()[0], 4);
  Tensor joined = *ConcatRows({rows, t});
  EXPECT_EQ(joined.dims(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(joined.data_as<float>()[3], 1);
  EXPECT_FALSE(SliceRows(t, 1, 2).ok());
  EXPECT_THAT(ConcatRows({t, cut}).status().message(), HasSubstr("cannot concatenate"));
  Tensor s = Tensor::FromStrings({2}, {"a", "b"});
  Tensor s3 = *ResizeAxis(s, 0, 3);
  EXPECT_EQ(s3.strings(), (std::vector<std::string>{"a", "b", ""}));
}

TEST_F(ServingTest, BatchBucketsPadCutAndSplit) {
  SessionOptions o = Options();
  o.use_cache = false;
  o.max_batch = 4;
  o.steps = 2;
  o.dim_buckets["seq"] = {3};
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->batch_buckets(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ((*s)->compile_stats().compiled, 2);  // both buckets, at Open
  for (int64_t batch : {1, 2, 3, 4, 5, 9}) RunAndCheck(**s, batch, 3, static_cast<int>(batch));
  EXPECT_EQ((*s)->compile_stats().compiled, 2) << "a call compiled a new shape instead of using a bucket";
  // An empty batch still runs (on the smallest bucket) and returns no rows.
  auto empty = (*s)->Run({{"x", Tensor(DataType::kFloat32, {0, 3, kIn})}});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].dims(), (std::vector<int64_t>{0, 3, kOut}));
}

TEST_F(ServingTest, DimBucketsPadAndCut) {
  SessionOptions o = Options();
  o.use_cache = false;
  o.batch_buckets = {2};
  o.dim_buckets["seq"] = {4, 8};
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->compile_stats().compiled, 2);
  for (int64_t seq : {1, 3, 4, 6, 8}) RunAndCheck(**s, 2, seq, static_cast<int>(seq));
  EXPECT_EQ((*s)->compile_stats().compiled, 2);
  auto too_long = (*s)->Run({{"x", Input(1, 9, 0)}});
  EXPECT_THAT(too_long.status().message(), HasSubstr("dimension 'seq' is 9, larger than its largest bucket 8"));
}

TEST_F(ServingTest, BadBucketOptionsAreClearErrors) {
  SessionOptions o = Options();
  o.dim_buckets["sequence"] = {8};
  EXPECT_THAT(Session::Open(model_, o).status().message(),
              HasSubstr("no input has a dynamic dimension named 'sequence' (dynamic dimensions: seq)"));
  o = Options();
  o.dim_buckets["batch"] = {8};
  EXPECT_THAT(Session::Open(model_, o).status().message(), HasSubstr("names the batch dimension"));
  o = Options();
  o.max_batch = 4;
  o.steps = 5;
  EXPECT_THAT(Session::Open(model_, o).status().message(), HasSubstr("steps must be between 1 and max_batch (4)"));
}

TEST_F(ServingTest, WithoutBucketsEachShapeCompilesOnce) {
  SessionOptions o = Options();
  o.use_cache = false;
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->compile_stats().compiled, 0);
  RunAndCheck(**s, 3, 2);
  RunAndCheck(**s, 3, 2, 5);
  RunAndCheck(**s, 5, 2);
  EXPECT_EQ((*s)->compile_stats().compiled, 2);
}

TEST_F(ServingTest, PersistentCacheIsReusedAndDamageIsDetected) {
  SessionOptions o = Options();
  o.batch_buckets = {1, 4};
  o.dim_buckets["seq"] = {2};
  {
    auto s = Session::Open(model_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->compile_stats().compiled, 2);
    EXPECT_EQ((*s)->compile_stats().from_cache, 0);
    RunAndCheck(**s, 3, 2);
  }
  {
    auto s = Session::Open(model_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->compile_stats().compiled, 0);
    EXPECT_EQ((*s)->compile_stats().from_cache, 2);
    RunAndCheck(**s, 3, 2);
    RunAndCheck(**s, 1, 1);
  }
  // Damage every entry (flip a byte in the middle, truncate another).
  int damaged = 0;
  for (const auto& e : fs::directory_iterator(o.cache_dir)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    int64_t size = f.tellg();
    if (damaged % 2 == 0) {
      f.seekp(size / 2);
      char c;
      f.seekg(size / 2);
      f.get(c);
      f.seekp(size / 2);
      f.put(static_cast<char>(c ^ 0x5a));
      f.close();
    } else {
      f.close();
      fs::resize_file(e.path(), size - 3);
    }
    ++damaged;
  }
  ASSERT_GT(damaged, 0);
  {
    auto s = Session::Open(model_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_GE((*s)->compile_stats().cache_rejected, 1);
    EXPECT_EQ((*s)->compile_stats().compiled, 2);
    EXPECT_THAT((*s)->compile_stats().cache_messages, ::testing::Contains(HasSubstr("damaged compile cache entry")));
    RunAndCheck(**s, 4, 2);
  }
  {
    auto s = Session::Open(model_, o);  // the damaged entries were replaced
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->compile_stats().from_cache, 2);
    EXPECT_EQ((*s)->compile_stats().cache_rejected, 0);
  }
}

TEST_F(ServingTest, ChangedModelIsNotServedFromTheCache) {
  SessionOptions o = OneBucketOptions();
  FillCache(o);
  WriteModel(-0.75f);  // same file, same shapes, other weights and bias
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->compile_stats().from_cache, 0);
  EXPECT_EQ((*s)->compile_stats().compiled, 1);
  RunAndCheck(**s, 2, 2);
}

// A plugin's create options may choose its kernels (the CPU plugin's
// winograd, use_dnnl): an executable cached under other options is not reused.
TEST_F(ServingTest, OtherCreateOptionsDoNotReuseTheCache) {
  SessionOptions o = OneBucketOptions();
  FillCache(o);
  o.create_options.push_back({"winograd", false});
  {
    auto s = Session::Open(model_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->compile_stats().from_cache, 0);
    EXPECT_EQ((*s)->compile_stats().compiled, 1);
    RunAndCheck(**s, 2, 2);
  }
  auto s = Session::Open(model_, o);  // the same options again: cached now
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->compile_stats().from_cache, 1);
  EXPECT_EQ((*s)->compile_stats().compiled, 0);
}

TEST_F(ServingTest, CacheEntriesAreCheckedAndAtomic) {
  auto c = CompileCache::Open((dir_ / "raw").string());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(absl::IsNotFound(c->Load("k").status()));
  ASSERT_TRUE(c->Store("k", "payload").ok());
  EXPECT_EQ(*c->Load("k"), "payload");
  ASSERT_TRUE(c->Store("k", "second").ok());
  EXPECT_EQ(*c->Load("k"), "second");
  // An entry copied under another key's name is refused, and removed.
  fs::copy_file(c->PathFor("k"), c->PathFor("other"));
  EXPECT_THAT(c->Load("other").status().message(), HasSubstr("written for another key"));
  EXPECT_FALSE(fs::exists(c->PathFor("other")));
  // Writers racing on one key leave one complete entry and no temporaries.
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i)
        ASSERT_TRUE(c->Store("race", std::string(1000 + t, static_cast<char>('a' + t))).ok());
    });
  for (auto& w : writers) w.join();
  auto v = c->Load("race");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->size(), 1000 + ((*v)[0] - 'a'));
  int files = 0;
  for (const auto& e : fs::directory_iterator(c->dir())) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".xcache") << e.path();
  }
  EXPECT_EQ(files, 2);
}

TEST_F(ServingTest, CacheListsAndPrunesLeastRecentlyUsedFirst) {
  auto c = CompileCache::Open((dir_ / "lru").string());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->Store("old", std::string(1000, 'o')).ok());
  ASSERT_TRUE(c->Store("middle", std::string(1000, 'm')).ok());
  ASSERT_TRUE(c->Store("new", std::string(1000, 'n')).ok());
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(c->PathFor("old"), now - std::chrono::hours(3));
  fs::last_write_time(c->PathFor("middle"), now - std::chrono::hours(2));
  fs::last_write_time(c->PathFor("new"), now - std::chrono::hours(1));
  ASSERT_TRUE(c->Load("old").ok());  // now the most recently used
  // A damaged entry, a temporary left by a writer that died, a writer's
  // fresh temporary, and a file that is not the cache's.
  std::ofstream(c->dir() + "/0123.xcache") << "not an entry";
  std::ofstream(c->dir() + "/0123.xcache.tmp.1.2.3") << "partial";
  fs::last_write_time(c->dir() + "/0123.xcache.tmp.1.2.3", now - std::chrono::hours(2));
  std::ofstream(c->dir() + "/0456.xcache.tmp.4.5.6") << "being written";
  std::ofstream(c->dir() + "/notes.txt") << "mine";

  auto listed = c->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> keys;
  int temporaries = 0;
  for (const auto& f : *listed) {
    if (f.temporary) {
      ++temporaries;
    } else if (!f.key.empty()) {
      keys.push_back(f.key);
    }
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"middle", "new", "old"}));
  EXPECT_EQ(temporaries, 2);
  EXPECT_EQ(listed->size(), 6u);

  uint64_t entry_bytes = fs::file_size(c->PathFor("new"));
  auto removed = c->Prune(2 * entry_bytes);
  ASSERT_TRUE(removed.ok()) << removed.status();
  std::vector<std::string> gone;
  for (const auto& f : *removed) gone.push_back(fs::path(f.path).filename().string());
  std::sort(gone.begin(), gone.end());
  std::vector<std::string> want{"0123.xcache", "0123.xcache.tmp.1.2.3",
                                fs::path(c->PathFor("middle")).filename().string()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(gone, want);
  EXPECT_TRUE(c->Load("old").ok());
  EXPECT_TRUE(c->Load("new").ok());
  EXPECT_TRUE(absl::IsNotFound(c->Load("middle").status()));
  EXPECT_TRUE(fs::exists(c->dir() + "/0456.xcache.tmp.4.5.6"));
  EXPECT_TRUE(fs::exists(c->dir() + "/notes.txt"));

  removed = c->Prune(0);  // clearing keeps the live writer's file and others' files
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(removed->size(), 2u);
  EXPECT_TRUE(fs::exists(c->dir() + "/0456.xcache.tmp.4.5.6"));
  EXPECT_TRUE(fs::exists(c->dir() + "/notes.txt"));
}

// Pruning may remove a program's executable and keep its description: the
// next start converts the model again, quietly, as for any miss.
TEST_F(ServingTest, PrunedExecutableIsAMissNotDamage) {
  SessionOptions o = OneBucketOptions();
  auto c = CompileCache::Open(o.cache_dir);
  ASSERT_TRUE(c.ok()) << c.status();
  std::string key = FillCacheWithOneExecutable(o, *c);
  ASSERT_FALSE(key.empty());
  c->Remove(key);
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->compile_stats().compiled, 1);
  EXPECT_EQ((*s)->compile_stats().cache_rejected, 0);
  EXPECT_TRUE((*s)->compile_stats().cache_messages.empty());
  RunAndCheck(**s, 2, 2);
}

// The cache entry's checks pass but the plugin refuses the program when it
// first runs it (its module does not take the weights the entry lists): the
// session drops the entries, recompiles, and the call still succeeds.
TEST_F(ServingTest, ProgramRefusedAtFirstRunIsRecompiled) {
  SessionOptions o = OneBucketOptions();
  auto c = CompileCache::Open(o.cache_dir);
  ASSERT_TRUE(c.ok()) << c.status();
  std::string key = FillCacheWithOneExecutable(o, *c);
  ASSERT_FALSE(key.empty());
  auto payload = c->Load(key);
  ASSERT_TRUE(payload.ok()) << payload.status();
  // The CPU plugin's serialized form: line 5 lists the weight parameters.
  std::vector<std::string> lines = absl::StrSplit(*payload, absl::MaxSplits('\n', 5));
  ASSERT_EQ(lines.size(), 6u);
  ASSERT_EQ(lines[4], "1");
  lines[4] = "";
  ASSERT_TRUE(c->Store(key, absl::StrJoin(lines, "\n")).ok());
  {
    auto s = Session::Open(model_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->compile_stats().from_cache, 1);
    RunAndCheck(**s, 2, 2);
    RunAndCheck(**s, 1, 2);
    EXPECT_EQ((*s)->compile_stats().compiled, 1);
    EXPECT_THAT((*s)->compile_stats().cache_messages,
                ::testing::Contains(HasSubstr("the plugin refused the cached program when it first ran it")));
  }
  auto s = Session::Open(model_, o);  // the entries were replaced
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->compile_stats().from_cache, 1);
  RunAndCheck(**s, 2, 2);
  EXPECT_EQ((*s)->compile_stats().compiled, 0);
  EXPECT_TRUE((*s)->compile_stats().cache_messages.empty());
}

TEST_F(ServingTest, AllDevicesSplitTheBatch) {
  SessionOptions o = Options();
  o.use_cache = false;
  o.create_options.push_back({"cpu_device_count", int64_t{3}});
  o.device = SessionOptions::kAllDevices;
  o.batch_buckets = {1, 2};
  o.dim_buckets["seq"] = {2};
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->num_devices(), 3);
  EXPECT_EQ((*s)->compile_stats().compiled, 6);  // 2 buckets x 3 devices
  EXPECT_THAT((*s)->DeviceSummary(), HasSubstr("devices CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2)"));
  for (int64_t batch : {1, 2, 3, 7, 10}) RunAndCheck(**s, batch, 2, static_cast<int>(batch));
  EXPECT_EQ((*s)->compile_stats().compiled, 6);
}

TEST_F(ServingTest, RunAsyncCallsOverlapAndAgree) {
  SessionOptions o = Options();
  o.use_cache = false;
  o.batch_buckets = {2, 4};
  o.dim_buckets["seq"] = {3};
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<Tensor> xs;
  std::vector<std::future<StatusOr<std::vector<Tensor>>>> futures;
  for (int i = 0; i < 12; ++i) {
    xs.push_back(Input(1 + i % 6, 3, 100 + i));
    futures.push_back((*s)->RunAsync({{"x", xs.back()}}));
  }
  for (int i = 0; i < 12; ++i) {
    auto out = futures[i].get();
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectMatchesReference(xs[i], (*out)[0]);
  }
  auto bad = (*s)->RunAsync({{"nope", xs[0]}}).get();
  EXPECT_THAT(bad.status().message(), HasSubstr("no input named 'nope'"));
  // More calls than workers, then the session goes away: each call has
  // finished, with the right result, or was cancelled; none is lost.
  futures.clear();
  for (int i = 0; i < 12; ++i) futures.push_back((*s)->RunAsync({{"x", xs[i]}}));
  s->reset();
  for (int i = 0; i < 12; ++i) {
    auto out = futures[i].get();
    if (!out.ok()) {
      EXPECT_TRUE(out.status().code() == StatusCode::kCancelled) << out.status();
      continue;
    }
    ExpectMatchesReference(xs[i], (*out)[0]);
  }
}

// 16-bit compute: f16 host tensors in and out (io f16), or f32 at the
// boundary with bf16 inside; both close to the f32 reference.
TEST_F(ServingTest, SixteenBitComputeAndTransfers) {
  for (auto [compute, io, tol] : {std::tuple{DataType::kFloat16, DataType::kFloat16, 2e-2},
                                  std::tuple{DataType::kBFloat16, DataType::kFloat32, 6e-2}}) {
    SessionOptions o = Options();
    o.use_cache = false;
    o.data_type = compute;
    o.io_data_type = io;
    o.batch_buckets = {4};
    o.dim_buckets["seq"] = {2};
    auto s = Session::Open(model_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->inputs()[0].dtype, io);
    EXPECT_EQ((*s)->outputs()[0].dtype, io);
    Tensor x = Input(3, 2, 9);
    Tensor host_x(io, x.dims());
    for (int64_t i = 0; i < x.element_count(); ++i) {
      float v = x.data_as<float>()[i];
      if (io == DataType::kFloat16)
        host_x.data_as<Half>()[i] = Half(v);
      else
        host_x.data_as<float>()[i] = v;
    }
    // The reference sees the inputs as rounded to the host type.
    for (int64_t i = 0; i < x.element_count(); ++i) x.data_as<float>()[i] = static_cast<float>(host_x.GetAsDouble(i));
    if (io == DataType::kFloat32) continue;  // covered by Bf16ComputeWithF32Transfers
    EXPECT_THAT((*s)->Run({{"x", x}}).status().message(), HasSubstr("has type float32, the model expects float16"));
    auto out = (*s)->Run({{"x", host_x}});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& y = (*out)[0];
    ASSERT_EQ(y.dtype(), io);
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 2, kOut}));
    double rel = RelativeError(x, y);
    EXPECT_LT(rel, tol) << DataTypeName(compute);
    EXPECT_GT(rel, 0) << "no rounding at all: the program did not compute in " << DataTypeName(compute);
  }
}

TEST_F(ServingTest, Bf16ComputeWithF32Transfers) {
  SessionOptions o = Options();
  o.use_cache = false;
  o.data_type = DataType::kBFloat16;
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  Tensor x = Input(2, 3, 4);
  auto out = (*s)->Run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0];
  ASSERT_EQ(y.dtype(), DataType::kFloat32);
  double rel = RelativeError(x, y);
  EXPECT_LT(rel, 6e-2);
  EXPECT_GT(rel, 1e-5) << "no bf16 rounding: the program did not compute in bf16";
  o.data_type = DataType::kInt8;
  EXPECT_THAT(Session::Open(model_, o).status().message(),
              HasSubstr("data types must be float32, float16 or bfloat16"));
}

TEST_F(ServingTest, ProgressIsReportedPerBucket) {
  SessionOptions o = Options();
  o.use_cache = false;
  o.max_batch = 6;
  o.steps = 3;
  o.dim_buckets["seq"] = {1, 2};
  std::vector<std::pair<int, int>> calls;
  o.compile_progress = [&](int done, int total) { calls.emplace_back(done, total); };
  auto s = Session::Open(model_, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(calls.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(calls[i], std::make_pair(i + 1, 6));
}

}  // namespace
}  // namespace xonnx
