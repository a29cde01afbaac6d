// The server's pieces without a network: the wire forms of tensors, the
// REST codec on well-formed and malformed bodies, config.pbtxt, and the
// dynamic batcher (merging by shape, the bounded queue, deadlines, every
// request answered once). The network paths are tests/serve.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "serve/batcher.h"
#include "serve/http_codec.h"
#include "serve/model_config.h"
#include "serve/wire.h"

namespace xonnx::serve {
namespace {

using ::testing::HasSubstr;

std::string LittleEndian32(uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

TEST(Wire, RawRoundTripsEveryType) {
  std::mt19937 rng(5);
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kUInt8, DataType::kBool,
                     DataType::kFloat64, DataType::kInt8, DataType::kBFloat16}) {
    Tensor x(t, {2, 3});
    auto* p = static_cast<uint8_t*>(x.data());
    for (size_t i = 0; i < x.byte_size(); ++i) p[i] = t == DataType::kBool ? rng() % 2 : rng() % 256;
    std::string raw;
    AppendRaw(x, raw);
    ASSERT_EQ(raw.size(), RawSize(x));
    auto back = TensorFromRaw(t, {2, 3}, raw, "x");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(std::string(static_cast<const char*>(back->data()), back->byte_size()), raw) << WireName(t);
    EXPECT_EQ(*DataTypeFromWire(WireName(t)), t);
  }
}

TEST(Wire, BytesElementsAreLengthPrefixed) {
  Tensor s = Tensor::FromStrings({3}, {"ab", "", "xyz"});
  std::string raw;
  AppendRaw(s, raw);
  EXPECT_EQ(raw, LittleEndian32(2) + "ab" + LittleEndian32(0) + LittleEndian32(3) + "xyz");
  auto back = TensorFromRaw(DataType::kString, {3}, raw, "s");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->strings(), s.strings());
  // Every truncation of it is refused, never read past its end.
  for (size_t n = 0; n < raw.size(); ++n)
    EXPECT_FALSE(TensorFromRaw(DataType::kString, {3}, raw.substr(0, n), "s").ok()) << n;
  EXPECT_THAT(TensorFromRaw(DataType::kString, {3}, raw + "z", "s").status().message(), HasSubstr("left after"));
}

TEST(Wire, SizesAndShapesAreChecked) {
  EXPECT_THAT(TensorFromRaw(DataType::kFloat32, {2, 2}, std::string(15, 'x'), "in").status().message(),
              HasSubstr("15 bytes of data for shape [2,2] of FP32, which takes 16"));
  EXPECT_THAT(ElementCount({1 << 20, 1 << 20, 1 << 20}, 1 << 30, "in").status().message(),
              HasSubstr("more than a request may carry"));
  EXPECT_THAT(ElementCount({2, -3}, 100, "in").status().message(), HasSubstr("negative"));
  EXPECT_THAT(DataTypeFromWire("FLOAT").status().message(), HasSubstr("unknown datatype 'FLOAT'"));
  EXPECT_EQ(HttpStatusOf(StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusOf(StatusCode::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusOf(StatusCode::kInvalidArgument), 400);
}

TEST(HttpCodec, JsonDataNestedOrFlat) {
  for (const char* data : {"[[1,2,3],[4,5,6]]", "[1,2,3,4,5,6]"}) {
    InferRequest r;
    std::string body = std::string(R"({"id":"7","inputs":[{"name":"x","shape":[2,3],"datatype":"INT32","data":)") +
                       data + R"(}],"outputs":[{"name":"y","parameters":{"binary_data":true}}]})";
    ASSERT_TRUE(DecodeInferRequest(body, std::nullopt, 1 << 20, r).ok());
    ASSERT_EQ(r.inputs.size(), 1u);
    EXPECT_EQ(r.id, "7");
    EXPECT_EQ(r.inputs[0].tensor.dims(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(r.inputs[0].tensor.data_as<int32_t>()[5], 6);
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_TRUE(r.outputs[0].binary);
  }
}

TEST(HttpCodec, BinaryTensorExtension) {
  std::string json = R"({"inputs":[{"name":"a","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}},)"
                     R"({"name":"b","shape":[1],"datatype":"BYTES","parameters":{"binary_data_size":7}}]})";
  float v[2] = {1.5f, -2.25f};
  std::string body = json + std::string(reinterpret_cast<char*>(v), 8) + LittleEndian32(3) + "abc";
  InferRequest r;
  Status s = DecodeInferRequest(body, static_cast<int64_t>(json.size()), 1 << 20, r);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(r.inputs[0].tensor.data_as<float>()[1], -2.25f);
  EXPECT_EQ(r.inputs[1].tensor.strings()[0], "abc");
  // Binary data shorter or longer than declared, and header lengths outside the body.
  InferRequest bad;
  EXPECT_THAT(DecodeInferRequest(body.substr(0, body.size() - 1), json.size(), 1 << 20, bad).message(),
              HasSubstr("remain"));
  EXPECT_THAT(DecodeInferRequest(body + "zz", json.size(), 1 << 20, bad).message(), HasSubstr("not claimed"));
  EXPECT_THAT(DecodeInferRequest(body, body.size() + 1, 1 << 20, bad).message(), HasSubstr("outside the body"));
  EXPECT_THAT(DecodeInferRequest(body, -1, 1 << 20, bad).message(), HasSubstr("outside the body"));
}

// The body as it arrives off a socket: in pieces of any size, with its
// length known (Content-Length) or not (chunked). Every split decodes to the
// same request as the whole body, and the same errors come out.
TEST(HttpCodec, BodiesDecodeTheSameInAnyPieces) {
  std::string json = R"({"inputs":[{"name":"a","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}},)"
                     R"({"name":"e","shape":[0],"datatype":"INT32","parameters":{"binary_data_size":0}},)"
                     R"({"name":"b","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":9}},)"
                     R"({"name":"c","shape":[1],"datatype":"INT64","data":[7]}]})";
  float v[2] = {1.5f, -2.25f};
  std::string body =
      json + std::string(reinterpret_cast<char*>(v), 8) + LittleEndian32(3) + "abc" + LittleEndian32(0) + "";
  body.resize(body.size() - 2);  // "abc" and "" take 4+3 and 4 bytes: 11, so the declared 9 is short
  std::string good = json;
  good.replace(good.find("\"binary_data_size\":9"), 20, "\"binary_data_size\":11");
  std::string whole = good + std::string(reinterpret_cast<char*>(v), 8) + LittleEndian32(3) + "abc" + LittleEndian32(0);
  for (bool known : {true, false})
    for (size_t piece : {size_t{1}, size_t{3}, size_t{64}, whole.size()}) {
      InferRequest r;
      InferRequestDecoder d(static_cast<int64_t>(good.size()), known ? static_cast<int64_t>(whole.size()) : -1, 1 << 20,
                            r);
      for (size_t at = 0; at < whole.size(); at += piece) d.Append(std::string_view(whole).substr(at, piece));
      EXPECT_EQ(d.bytes_received(), static_cast<int64_t>(whole.size()));
      Status s = d.Finish();
      ASSERT_TRUE(s.ok()) << s << " piece " << piece;
      ASSERT_EQ(r.inputs.size(), 4u);
      EXPECT_EQ(r.inputs[0].tensor.data_as<float>()[1], -2.25f);
      EXPECT_EQ(r.inputs[1].tensor.element_count(), 0);
      EXPECT_EQ(r.inputs[2].tensor.strings(), (std::vector<std::string>{"abc", ""}));
      EXPECT_EQ(r.inputs[3].tensor.data_as<int64_t>()[0], 7);
    }
  // The BYTES part's declared size cuts its last element: the same error,
  // whole or in pieces.
  InferRequest r1, r2;
  Status whole_error = DecodeInferRequest(body, json.size(), 1 << 20, r1);
  InferRequestDecoder d(static_cast<int64_t>(json.size()), static_cast<int64_t>(body.size()), 1 << 20, r2);
  for (char c : body) d.Append(std::string_view(&c, 1));
  EXPECT_THAT(whole_error.message(), HasSubstr("BYTES data ends inside element 1"));
  EXPECT_EQ(d.Finish().message(), whole_error.message());
  // Fewer or more bytes than the length said.
  InferRequest r3, r4;
  InferRequestDecoder short_body(static_cast<int64_t>(good.size()), static_cast<int64_t>(whole.size()), 1 << 20, r3);
  short_body.Append(std::string_view(whole).substr(0, whole.size() - 1));
  EXPECT_THAT(short_body.Finish().message(), HasSubstr("the body ended after"));
  InferRequestDecoder long_body(static_cast<int64_t>(good.size()), static_cast<int64_t>(whole.size()), 1 << 20, r4);
  long_body.Append(whole + "z");
  EXPECT_THAT(long_body.Finish().message(), HasSubstr("longer than its Content-Length"));
}

TEST(HttpCodec, MalformedBodiesSayWhatIsWrong) {
  struct Case {
    const char* body;
    const char* message;
  } cases[] = {
      {R"({"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,2])", "malformed JSON"},
      {R"([1,2])", "JSON object"},
      {R"({"inputs":{}})", "\"inputs\" array"},
      {R"({"inputs":[{"shape":[1],"datatype":"FP32","data":[1]}]})", "\"name\""},
      {R"({"inputs":[{"name":"x","shape":[3],"datatype":"FP32","data":[1,2]}]})", "has 2 elements, its shape holds 3"},
      {R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1,2]}]})", "more than the 1 elements"},
      {R"({"inputs":[{"name":"x","shape":[1],"datatype":"INT8","data":[300]}]})", "not an integer of its datatype"},
      {R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP16","data":[1]}]})", "cannot be carried in JSON"},
      {R"({"inputs":[{"name":"x","shape":[1],"datatype":"BOOL","data":[1]}]})", "not true or false"},
      {R"({"inputs":[{"name":"x","shape":[100000,100000,100000],"datatype":"FP32","data":[]}]})",
       "more than a request may carry"},
      {R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":"1"}]})", "must be an array"},
      {R"({"inputs":[],"parameters":{"timeout":-5}})", "timeout"},
  };
  for (const auto& c : cases) {
    InferRequest r;
    Status s = DecodeInferRequest(c.body, std::nullopt, 1 << 20, r);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_THAT(s.message(), HasSubstr(c.message)) << c.body;
  }
  // Hostile nesting is refused without recursion.
  std::string deep = R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":)" + std::string(5000, '[') + "1" +
                     std::string(5000, ']') + "}]}";
  InferRequest r;
  EXPECT_FALSE(DecodeInferRequest(deep, std::nullopt, 1 << 20, r).ok());
  // A JSON part too large to parse safely says to send binary data.
  std::string big = R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],"pad":")" +
                    std::string(kMaxJsonBytes, ' ') + "\"}";
  EXPECT_THAT(DecodeInferRequest(big, std::nullopt, 1 << 20, r).message(), HasSubstr("send large tensors as binary"));
}

TEST(HttpCodec, ResponseJsonAndBinary) {
  InferResponse resp{"m", "2", "id1", {}};
  resp.outputs.push_back({"a", Tensor::FromVector<float>(DataType::kFloat32, {2}, {0.1f, 3}), false});
  resp.outputs.push_back({"b", Tensor::FromVector<int64_t>(DataType::kInt64, {1}, {-9}), true});
  // Integers keep every bit in JSON (a double would round 2^53 + 1).
  resp.outputs.push_back(
      {"c", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {9007199254740993, INT64_MIN}), false});
  resp.outputs.push_back({"d", Tensor::FromVector<uint32_t>(DataType::kUInt32, {1}, {4294967295u}), false});
  size_t json_length = 0;
  bool binary = false;
  std::string body = EncodeInferResponse(resp, json_length, binary);
  EXPECT_TRUE(binary);
  ASSERT_EQ(body.size(), json_length + 8);
  std::string json = body.substr(0, json_length);
  EXPECT_THAT(json, HasSubstr(R"("model_name":"m","model_version":"2")"));
  EXPECT_THAT(json, HasSubstr(R"("binary_data_size":8)"));
  // The float's decimal form reads back as the same float.
  EXPECT_THAT(json, HasSubstr("0.10000000149011612"));
  EXPECT_THAT(json, HasSubstr("[9007199254740993,-9223372036854775808]"));
  EXPECT_THAT(json, HasSubstr("[4294967295]"));
  int64_t tail;
  std::memcpy(&tail, body.data() + json_length, 8);
  EXPECT_EQ(tail, -9);
}

TEST(ModelConfig, ReadsTritonsFieldsAndNamesTheIgnored) {
  auto c = ParseModelConfig(R"(
    name: "m" platform: "onnxruntime_onnx" max_batch_size: 8
    input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, -1 ] } ]
    output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
    dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 500
                       default_queue_policy { max_queue_size: 16 default_timeout_microseconds: 9000 } }
    instance_group [ { count: 2 kind: KIND_CPU } ]
    optimization { execution_accelerators { cpu_execution_accelerator: [ { name: "openvino" } ] } }
    parameters { key: "xonnx.batch_buckets" value: { string_value: "1,8" } }
    version_policy: { latest: { num_versions: 2 } })",
                            "m", "config.pbtxt", false);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->max_batch_size, 8);
  EXPECT_TRUE(c->dynamic_batching);
  EXPECT_EQ(c->preferred_batch_sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(c->max_queue_delay_us, 500);
  EXPECT_EQ(c->max_queue_size, 16);
  EXPECT_EQ(c->default_timeout_us, 9000);
  EXPECT_EQ(c->instance_count, 2);
  EXPECT_EQ(c->version_policy.num_versions, 2);
  EXPECT_EQ(c->inputs[0].dims, (std::vector<int64_t>{3, -1}));
  ASSERT_EQ(c->ignored.size(), 1u);
  EXPECT_THAT(c->ignored[0], HasSubstr("optimization"));
  EXPECT_EQ(*BatchBucketsOf(*c), (std::vector<int64_t>{1, 8}));
  c->xonnx_options.clear();
  EXPECT_EQ(*BatchBucketsOf(*c), (std::vector<int64_t>{1, 2, 4, 8}));
  // Strict refuses what it does not read; the JSON form reads the same.
  EXPECT_FALSE(ParseModelConfig("max_batch_size: 2 optimization { }", "m", "c", true).ok());
  auto j = ParseModelConfig(R"({"max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds": 7}})", "m",
                            "c", false);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->max_queue_delay_us, 7);
}

TEST(ModelConfig, RefusesWhatItCannotServe) {
  const char* cases[][2] = {
      {R"(name: "other")", "differs from the model's folder name"},
      {R"(platform: "tensorrt_plan")", "not ONNX"},
      {R"(sequence_batching { })", "sequence_batching is not supported"},
      {R"(max_batch_size: 0 dynamic_batching { })", "needs max_batch_size > 0"},
      {R"(max_batch_size: 4 dynamic_batching { preferred_batch_size: [ 8 ] })", "outside [1, max_batch_size 4]"},
      {R"(input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] } } ])", "reshape"},
      {R"(input [ { name: "x" dims: [ 1 ] } ])", "data_type is missing"},
      {R"(max_batch_size: )", "line 1"},
      {R"(max_batch_size: 2000000000)", "max_batch_size must be in [0, 65536]"},
      {R"(instance_group [ { count: 100000 } ])", "count must be in [1, 64]"},
      {R"(instance_group [ { count: 40 }, { count: 40 } ])", "more than 64 instances"},
      {R"(max_batch_size: 4 dynamic_batching { max_queue_delay_microseconds: 99999999999 })", "at most an hour"},
  };
  for (const auto& c : cases) {
    auto r = ParseModelConfig(c[0], "m", "config.pbtxt", false);
    ASSERT_FALSE(r.ok()) << c[0];
    EXPECT_THAT(r.status().message(), HasSubstr(c[1])) << c[0];
  }
}

TEST(ModelConfig, CompletesFromTheModelAndChecksAgainstIt) {
  std::vector<TensorSpec> ins = {{"x", DataType::kFloat32, {-1, 3}}}, outs = {{"y", DataType::kInt64, {-1}}};
  ModelConfig none;
  none.name = "m";
  ASSERT_TRUE(CompleteModelConfig(none, ins, outs, 4).ok());
  EXPECT_EQ(none.max_batch_size, 4);
  EXPECT_TRUE(none.dynamic_batching);
  EXPECT_EQ(none.inputs[0].dims, (std::vector<int64_t>{3}));
  EXPECT_TRUE(none.outputs[0].dims.empty());
  auto wrong = *ParseModelConfig(R"(max_batch_size: 2 input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ])", "m",
                                 "c", false);
  EXPECT_THAT(CompleteModelConfig(wrong, ins, outs, 4).message(), HasSubstr("FP32 [-1,3] in the model"));
  auto unbatchable = *ParseModelConfig("max_batch_size: 2", "m", "c", false);
  std::vector<TensorSpec> fixed = {{"x", DataType::kFloat32, {1, 3}}};
  EXPECT_THAT(CompleteModelConfig(unbatchable, fixed, outs, 4).message(), HasSubstr("variable first dimension"));
  auto unknown = *ParseModelConfig(R"(input [ { name: "z" data_type: TYPE_FP32 dims: [ 1 ] } ])", "m", "c", false);
  EXPECT_THAT(CompleteModelConfig(unknown, ins, outs, 4).message(), HasSubstr("not one of the model's (x)"));
}

// A runner that doubles its float input and records the batch sizes seen.
struct Doubler {
  std::atomic<int> calls{0};
  std::mutex mu;
  std::vector<int64_t> rows;
  int sleep_ms = 0;
  Runner Make() {
    return [this](const std::map<std::string, Tensor>& in, const RunOptions&) -> StatusOr<std::vector<Tensor>> {
      if (sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      const Tensor& x = in.at("x");
      Tensor y(DataType::kFloat32, x.dims());
      for (int64_t i = 0; i < x.element_count(); ++i) y.data_as<float>()[i] = 2 * x.data_as<float>()[i];
      calls++;
      std::lock_guard<std::mutex> lock(mu);
      rows.push_back(x.dims()[0]);
      return std::vector<Tensor>{y};
    };
  }
};

std::shared_ptr<Job> MakeJob(int64_t rows, int64_t cols, float base) {
  auto j = std::make_shared<Job>();
  Tensor x(DataType::kFloat32, {rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) x.data_as<float>()[i] = base + i;
  j->inputs["x"] = x;
  j->rows = rows;
  j->shape_key = ShapeKey(j->inputs, true);
  return j;
}

TEST(Batcher, MergesSameShapesSplitsBackAndAnswersEachOnce) {
  Doubler d;
  Batcher::Options o{true, 8, 8, 20000, 100};
  Batcher b(o, {d.Make()});
  std::vector<std::shared_ptr<Job>> jobs;
  for (int i = 0; i < 12; ++i) jobs.push_back(MakeJob(1 + i % 3, i % 2 ? 4 : 5, 100.0f * i));
  for (auto& j : jobs) ASSERT_TRUE(b.Submit(j).ok());
  for (size_t i = 0; i < jobs.size(); ++i) {
    JobResult r = b.Wait(jobs[i]);
    ASSERT_TRUE(r.outputs.ok()) << r.outputs.status();
    const Tensor& y = (*r.outputs)[0];
    const Tensor& x = jobs[i]->inputs["x"];
    ASSERT_EQ(y.dims(), x.dims());
    for (int64_t k = 0; k < x.element_count(); ++k) ASSERT_EQ(y.data_as<float>()[k], 2 * x.data_as<float>()[k]);
    EXPECT_LE(r.batch_rows, 8);
  }
  // 12 jobs of 24 rows in two shapes: merged into fewer calls, none over 8 rows.
  EXPECT_LT(d.calls.load(), 12);
  for (int64_t rows : d.rows) EXPECT_LE(rows, 8);
  EXPECT_EQ(b.stats().rows.load(), 24);
}

TEST(Batcher, FullQueueRefusesAtOnceAndDeadlinesExpireQueuedJobs) {
  Doubler d;
  d.sleep_ms = 200;
  Batcher::Options o{false, 1, 1, 0, 2};
  Batcher b(o, {d.Make()});
  auto running = MakeJob(1, 2, 0);
  ASSERT_TRUE(b.Submit(running).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the runner has it
  auto q1 = MakeJob(1, 2, 0), q2 = MakeJob(1, 2, 0), q3 = MakeJob(1, 2, 0);
  q1->deadline = Clock::now() + std::chrono::milliseconds(20);
  ASSERT_TRUE(b.Submit(q1).ok());
  ASSERT_TRUE(b.Submit(q2).ok());
  auto t0 = Clock::now();
  Status full = b.Submit(q3);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(10));
  JobResult r1 = b.Wait(q1);
  EXPECT_EQ(r1.outputs.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r1.batch_rows, 0);  // never ran
  EXPECT_TRUE(b.Wait(running).outputs.ok());
  EXPECT_TRUE(b.Wait(q2).outputs.ok());
  b.Stop();
  EXPECT_EQ(b.Submit(MakeJob(1, 2, 0)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(d.calls.load(), 2);
}

TEST(Batcher, WaitsOnlyForRowsItHasReasonToExpect) {
  Doubler d;
  d.sleep_ms = 2;
  Batcher::Options o{true, 16, 16, 300000, 100};  // a 0.3 s delay
  Batcher b(o, {d.Make()});
  // One client at a time: each request runs at once, not after the delay.
  auto t0 = Clock::now();
  for (int i = 0; i < 5; ++i) {
    auto j = MakeJob(1, 2, static_cast<float>(i));
    ASSERT_TRUE(b.Submit(j).ok());
    ASSERT_TRUE(b.Wait(j).outputs.ok());
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(250));
  // Eight clients, each sending its next request when answered: after the
  // first calls, each call gathers all eight instead of running the
  // requests as they trickle in.
  std::atomic<bool> go{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 20; ++i) {
        auto j = MakeJob(1, 2, 1.0f);
        ASSERT_TRUE(b.Submit(j).ok());
        ASSERT_TRUE(b.Wait(j).outputs.ok());
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.rows.clear();
  }
  go = true;
  for (auto& t : clients) t.join();
  std::lock_guard<std::mutex> lock(d.mu);
  int full = static_cast<int>(std::count(d.rows.begin(), d.rows.end(), 8));
  EXPECT_GE(full, 15) << ::testing::PrintToString(d.rows);
}

TEST(Batcher, ConcurrentSubmittersAllAnswered) {
  Doubler d;
  Batcher::Options o{true, 16, 16, 2000, 1000};
  Batcher b(o, {d.Make(), d.Make()});
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto j = MakeJob(1 + (t + i) % 2, 3, static_cast<float>(t * 1000 + i));
        if (!b.Submit(j).ok()) continue;
        JobResult r = b.Wait(j);
        if (r.outputs.ok() && (*r.outputs)[0].data_as<float>()[0] == 2 * j->inputs["x"].data_as<float>()[0]) ok++;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 16 * 25);
  EXPECT_LT(d.calls.load(), 16 * 25);
}

}  // namespace
}  // namespace xonnx::serve
