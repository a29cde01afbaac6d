// PjRT plugin conformance: drives a plugin through the C ABI only (partly
// through xonnx's client wrappers, partly with raw argument structs) and
// checks what any plugin must do — versions, devices, buffers both ways,
// compiling format "hlo", executing, errors for bad programs and arguments,
// serialization. The cases that rely on xonnx's own plugin (create options,
// virtual devices, weight parameters) skip themselves on other plugins.
//
//   plugin_test                       # the xonnx CPU plugin from the build
//   XONNX_TEST_PLUGIN=/path/to/plugin.so plugin_test
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "hlo/parser.h"
#include "hlo/proto_codec.h"
#include "pjrt/client.h"

namespace xonnx::pjrt {
namespace {

std::string PluginPath() {
  if (const char* p = std::getenv("XONNX_TEST_PLUGIN"); p && *p) return p;
  return XONNX_TEST_DEFAULT_PLUGIN;
}

// A program as a serialized HloModuleProto, written as HLO text.
std::string Program(const char* text) {
  auto m = hlo::ParseText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? hlo::SerializeModule(**m) : std::string();
}

constexpr char kAffine[] = R"(HloModule affine

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  w = f32[3,2]{1,0} parameter(1)
  d = f32[2,2]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[2,2]{1,0} exponential(d)
  s = f32[2]{0} constant({0.5, -1})
  b = f32[2,2]{1,0} broadcast(s), dimensions={1}
  y = f32[2,2]{1,0} add(d, b)
  ROOT t = (f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(y, e)
}
)";

// x·w, with w marked as a weight (xonnx's plugin binds its values).
constexpr char kWeighted[] = R"(HloModule weighted

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  w = f32[3,2]{1,0} parameter(1), metadata={op_type="xonnx.weight" op_name="w"}
  ROOT d = f32[2,2]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";

// y = x·w + s and exp(x·w) computed on the host.
void Reference(const std::vector<float>& x, const std::vector<float>& w, std::vector<float>* y, std::vector<float>* e) {
  const float s[2] = {0.5f, -1.f};
  y->assign(4, 0);
  e->assign(4, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      float acc = 0;
      for (int k = 0; k < 3; ++k) acc += x[i * 3 + k] * w[k * 2 + j];
      (*y)[i * 2 + j] = acc + s[j];
      (*e)[i * 2 + j] = std::exp(acc);
    }
}

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = Plugin::Load(PluginPath());
    ASSERT_TRUE(p.ok()) << p.status();
    plugin_ = *p;
    auto c = Client::Create(plugin_, {});
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *c;
  }
  bool IsXonnx() const { return client_->platform_version().rfind("xonnx", 0) == 0; }

  std::unique_ptr<Buffer> Upload(const std::vector<float>& v, std::vector<int64_t> dims, int device = 0) {
    auto b = client_->BufferFromHost(v.data(), PJRT_Buffer_Type_F32, dims, client_->devices()[device]);
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? *std::move(b) : nullptr;
  }
  std::vector<float> Download(const Buffer& b, size_t n) {
    std::vector<float> out(n, -7.f);
    EXPECT_TRUE(b.ToHost(out.data(), n * sizeof(float)).ok());
    return out;
  }

  std::shared_ptr<Plugin> plugin_;
  std::shared_ptr<Client> client_;
};

TEST_F(PluginTest, ReportsVersionPlatformAndDevices) {
  EXPECT_EQ(plugin_->major_version(), 0);
  EXPECT_GT(plugin_->minor_version(), 0);
  EXPECT_FALSE(client_->platform_name().empty());
  EXPECT_FALSE(client_->platform_version().empty());
  ASSERT_FALSE(client_->devices().empty());
  for (const auto& d : client_->devices()) EXPECT_NE(d.raw, nullptr);
}

TEST_F(PluginTest, EveryTableSlotIsFilled) {
  // The table up to the plugin's size must hold no null entry: a client may
  // call any slot its version has and expect an error, not a crash.
  const PJRT_Api* api = plugin_->api();
  size_t first = offsetof(PJRT_Api, PJRT_Error_Destroy);
  size_t end = std::min(api->struct_size, sizeof(PJRT_Api));
  for (size_t off = first; off + sizeof(void*) <= end; off += sizeof(void*))
    EXPECT_TRUE(plugin_->HasSlot(off)) << "slot at byte " << off << " is null";
}

TEST_F(PluginTest, UnimplementedSlotsReturnErrors) {
  if (!IsXonnx()) GTEST_SKIP() << "which slots are unimplemented is plugin-specific";
  const PJRT_Api* api = plugin_->api();
  char args[256] = {};
  *reinterpret_cast<size_t*>(args) = sizeof(args);
  absl::Status st = plugin_->ToStatus(api->PJRT_TopologyDescription_Create(args));
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("PJRT_TopologyDescription_Create"));
}

TEST_F(PluginTest, BuffersRoundTripEveryType) {
  const auto& dev = client_->devices()[0];
  std::vector<uint8_t> bytes(48);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  // Each PjRT type with its element width.
  const std::pair<PJRT_Buffer_Type, int> types[] = {
      {PJRT_Buffer_Type_PRED, 1}, {PJRT_Buffer_Type_S8, 1},  {PJRT_Buffer_Type_S16, 2}, {PJRT_Buffer_Type_S32, 4},
      {PJRT_Buffer_Type_S64, 8},  {PJRT_Buffer_Type_U8, 1},  {PJRT_Buffer_Type_U16, 2}, {PJRT_Buffer_Type_U32, 4},
      {PJRT_Buffer_Type_U64, 8},  {PJRT_Buffer_Type_F16, 2}, {PJRT_Buffer_Type_F32, 4}, {PJRT_Buffer_Type_F64, 8},
      {PJRT_Buffer_Type_BF16, 2},
  };
  for (const auto& [t, width] : types) {
    int64_t n = 48 / width;
    std::vector<uint8_t> in = bytes;
    if (t == PJRT_Buffer_Type_PRED)
      for (auto& b : in) b &= 1;
    auto b = client_->BufferFromHost(in.data(), t, {n}, dev);
    ASSERT_TRUE(b.ok()) << "PjRT type " << static_cast<int>(t) << ": " << b.status();
    auto dims = (*b)->Dimensions();
    ASSERT_TRUE(dims.ok());
    EXPECT_EQ(*dims, std::vector<int64_t>{n});
    auto type = (*b)->ElementType();
    ASSERT_TRUE(type.ok());
    EXPECT_EQ(*type, t);
    std::vector<uint8_t> out(48, 0xEE);
    ASSERT_TRUE((*b)->ToHost(out.data(), out.size()).ok());
    EXPECT_EQ(out, in) << "PjRT type " << static_cast<int>(t);
  }
}

TEST_F(PluginTest, StridedHostBuffersAreGathered) {
  // A transposed view of a 3x2 array: strides {4, 12} bytes.
  std::vector<float> src = {1, 2, 3, 4, 5, 6};  // row-major [3,2]
  int64_t dims[2] = {2, 3};
  int64_t strides[2] = {4, 8};
  PJRT_Client_BufferFromHostBuffer_Args a;
  std::memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  a.client = client_->raw();
  a.data = src.data();
  a.type = PJRT_Buffer_Type_F32;
  a.dims = dims;
  a.num_dims = 2;
  a.byte_strides = strides;
  a.num_byte_strides = 2;
  a.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  a.device = client_->devices()[0].raw;
  ASSERT_TRUE(plugin_->ToStatus(plugin_->api()->PJRT_Client_BufferFromHostBuffer(&a)).ok());
  Event done(plugin_, a.done_with_host_buffer);
  ASSERT_TRUE(done.Await().ok());
  Buffer b(client_, a.buffer);
  EXPECT_EQ(Download(b, 6), (std::vector<float>{1, 3, 5, 2, 4, 6}));
}

TEST_F(PluginTest, ToHostBufferReportsTheSizeAndRefusesSmallDestinations) {
  auto b = Upload({1, 2, 3, 4}, {2, 2});
  PJRT_Buffer_ToHostBuffer_Args a;
  std::memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  a.src = b->raw();
  ASSERT_TRUE(plugin_->ToStatus(plugin_->api()->PJRT_Buffer_ToHostBuffer(&a)).ok());
  EXPECT_EQ(a.dst_size, 16u);
  if (a.event) Event(plugin_, a.event).Await().IgnoreError();
  float small[2];
  EXPECT_FALSE(b->ToHost(small, sizeof(small)).ok());
}

TEST_F(PluginTest, CompilesAndExecutesHlo) {
  auto exe = client_->Compile(Program(kAffine), CompileOptionsFor(client_->devices()[0]));
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->num_outputs(), 2u);
  std::vector<float> x = {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f}, w = {1, 2, -3, 4, 5, -6};
  auto bx = Upload(x, {2, 3});
  auto bw = Upload(w, {3, 2});
  auto out = (*exe)->Execute({bx.get(), bw.get()});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  std::vector<float> y, e;
  Reference(x, w, &y, &e);
  auto dims = (*out)[0]->Dimensions();
  ASSERT_TRUE(dims.ok());
  EXPECT_EQ(*dims, (std::vector<int64_t>{2, 2}));
  EXPECT_THAT(Download(*(*out)[0], 4), ::testing::Pointwise(::testing::FloatNear(1e-5), y));
  EXPECT_THAT(Download(*(*out)[1], 4), ::testing::Pointwise(::testing::FloatNear(1e-4), e));
}

// A call put to the plugin whole, as the runtime does: uploads, the run and
// the copies back started without waiting, then every event waited for. The
// events' callbacks fire once each, and the results are the same.
TEST_F(PluginTest, StartedStepsChainWithoutWaiting) {
  auto exe = client_->Compile(Program(kAffine), CompileOptionsFor(client_->devices()[0]));
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<float> x = {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f}, w = {1, 2, -3, 4, 5, -6};
  auto ux = client_->StartBufferFromHost(x.data(), PJRT_Buffer_Type_F32, {2, 3}, client_->devices()[0]);
  auto uw = client_->StartBufferFromHost(w.data(), PJRT_Buffer_Type_F32, {3, 2}, client_->devices()[0]);
  ASSERT_TRUE(ux.ok() && uw.ok());
  std::atomic<int> ready{0};
  for (Event* e : {&ux->host_released, &uw->host_released}) ASSERT_TRUE(e->OnReady([&] { ready++; }).ok());
  auto launch = (*exe)->Start({ux->buffer.get(), uw->buffer.get()});
  ASSERT_TRUE(launch.ok()) << launch.status();
  ASSERT_TRUE(launch->done.OnReady([&] { ready++; }).ok());
  std::vector<float> y(4, -7.f), e(4, -7.f);
  auto cy = launch->outputs[0]->StartToHost(y.data(), y.size() * sizeof(float));
  auto ce = launch->outputs[1]->StartToHost(e.data(), e.size() * sizeof(float));
  ASSERT_TRUE(cy.ok() && ce.ok());
  ASSERT_TRUE(cy->OnReady([&] { ready++; }).ok());
  EXPECT_TRUE(launch->done.Await().ok());
  EXPECT_TRUE(cy->Await().ok());
  EXPECT_TRUE(ce->Await().ok());
  EXPECT_TRUE(ux->host_released.Await().ok());
  EXPECT_TRUE(uw->host_released.Await().ok());
  std::vector<float> ry, re;
  Reference(x, w, &ry, &re);
  EXPECT_THAT(y, ::testing::Pointwise(::testing::FloatNear(1e-5), ry));
  EXPECT_THAT(e, ::testing::Pointwise(::testing::FloatNear(1e-4), re));
  // Callbacks may run on the plugin's threads after Await returns.
  for (int i = 0; i < 1000 && ready.load() < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(ready.load(), 4);
}

TEST_F(PluginTest, ExecutesFromSeveralThreads) {
  auto exe = client_->Compile(Program(kAffine), CompileOptionsFor(client_->devices()[0]));
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int it = 0; it < 20; ++it) {
        std::vector<float> x(6), w(6);
        for (int k = 0; k < 6; ++k) x[k] = 0.1f * (k + t), w[k] = 0.2f * (k - it % 3);
        auto bx = client_->BufferFromHost(x.data(), PJRT_Buffer_Type_F32, {2, 3}, client_->devices()[0]);
        auto bw = client_->BufferFromHost(w.data(), PJRT_Buffer_Type_F32, {3, 2}, client_->devices()[0]);
        if (!bx.ok() || !bw.ok()) {
          ++bad;
          continue;
        }
        auto out = (*exe)->Execute({bx->get(), bw->get()});
        if (!out.ok()) {
          ++bad;
          continue;
        }
        std::vector<float> y, e, got(4);
        Reference(x, w, &y, &e);
        if (!(*out)[0]->ToHost(got.data(), 16).ok()) {
          ++bad;
          continue;
        }
        for (int k = 0; k < 4; ++k) bad += std::abs(got[k] - y[k]) > 1e-5f;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(PluginTest, BadProgramsAreErrorsNotCrashes) {
  std::string opts = CompileOptionsFor(client_->devices()[0]);
  std::string good = Program(kAffine);
  // Garbage, truncation, and bytes flipped all over a valid program.
  EXPECT_FALSE(client_->Compile("not a protobuf at all \xff\xfe", opts).ok());
  for (size_t cut : {size_t{1}, good.size() / 3, good.size() / 2, good.size() - 1})
    EXPECT_FALSE(client_->Compile(good.substr(0, cut), opts).ok()) << "cut at " << cut;
  uint32_t seed = 12345;
  for (int k = 0; k < 200; ++k) {
    std::string m = good;
    for (int f = 0; f < 3; ++f) {
      seed = seed * 1664525u + 1013904223u;
      m[seed % m.size()] ^= static_cast<char>(1 + (seed >> 24) % 255);
    }
    (void)client_->Compile(m, opts);  // must return, either way
  }
  // Well-formed protos with an unknown opcode or inconsistent shapes.
  auto unknown = hlo::ParseText(kAffine);
  ASSERT_TRUE(unknown.ok());
  auto proto = hlo::ToProto(**unknown);
  proto.mutable_computations(0)->mutable_instructions(4)->set_opcode("frobnicate");
  auto st = client_->Compile(proto.SerializeAsString(), opts);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.status().message()), ::testing::HasSubstr("frobnicate"));
  auto inconsistent = hlo::ToProto(**unknown);
  auto* dims = inconsistent.mutable_computations(0)->mutable_instructions(2)->mutable_shape()->mutable_dimensions();
  dims->Set(0, 5);
  EXPECT_FALSE(client_->Compile(inconsistent.SerializeAsString(), opts).ok());
}

TEST_F(PluginTest, WrongFormatIsRefused) {
  std::string code = Program(kAffine);
  PJRT_Program program;
  std::memset(&program, 0, sizeof(program));
  program.struct_size = sizeof(program);
  program.code = code.data();
  program.code_size = code.size();
  program.format = "hlo_text";
  program.format_size = 8;
  PJRT_Client_Compile_Args a;
  std::memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  a.client = client_->raw();
  a.program = &program;
  std::string opts = CompileOptionsFor(client_->devices()[0]);
  a.compile_options = opts.data();
  a.compile_options_size = opts.size();
  absl::Status st = plugin_->ToStatus(plugin_->api()->PJRT_Client_Compile(&a));
  EXPECT_FALSE(st.ok());
}

TEST_F(PluginTest, WrongArgumentsAreErrors) {
  auto exe = client_->Compile(Program(kAffine), CompileOptionsFor(client_->devices()[0]));
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto bx = Upload({1, 2, 3, 4, 5, 6}, {2, 3});
  auto wrong = Upload({1, 2, 3, 4, 5, 6}, {6});
  EXPECT_FALSE((*exe)->Execute({bx.get()}).ok());               // too few
  EXPECT_FALSE((*exe)->Execute({bx.get(), wrong.get()}).ok());  // wrong shape
  std::vector<int32_t> ints(6, 1);
  auto bi = client_->BufferFromHost(ints.data(), PJRT_Buffer_Type_S32, {3, 2}, client_->devices()[0]);
  ASSERT_TRUE(bi.ok());
  EXPECT_FALSE((*exe)->Execute({bx.get(), bi->get()}).ok());  // wrong type
}

TEST_F(PluginTest, SerializedExecutablesReloadAndAgree) {
  auto exe = client_->Compile(Program(kAffine), CompileOptionsFor(client_->devices()[0]));
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto bytes = (*exe)->Serialize();
  if (!bytes.ok() && bytes.status().code() == absl::StatusCode::kUnimplemented) GTEST_SKIP() << bytes.status();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto loaded = client_->Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto bx = Upload({0.5f, 1, -1, 2, 0, 3}, {2, 3});
  auto bw = Upload({1, 0, 0, 1, 1, 1}, {3, 2});
  auto a = (*exe)->Execute({bx.get(), bw.get()});
  auto b = (*loaded)->Execute({bx.get(), bw.get()});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Download(*(*a)[0], 4), Download(*(*b)[0], 4));
  // A damaged serialization is an error.
  std::string bad = *bytes;
  bad[0] ^= 0x55;
  EXPECT_FALSE(client_->Deserialize(bad).ok());
  EXPECT_FALSE(client_->Deserialize(bytes->substr(0, bytes->size() / 2)).ok());
}

TEST_F(PluginTest, SerializedWeightedProgramsReloadAndAgree) {
  if (!IsXonnx()) GTEST_SKIP() << "weight parameters are compiled in by the xonnx plugin only";
  constexpr char kWeighted[] = R"(HloModule weighted_reload

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  w = f32[3,2]{1,0} parameter(1), metadata={op_type="xonnx.weight" op_name="w"}
  d = f32[2,2]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[2,2]{1,0}, f32[2,3]{1,0}) tuple(d, x)
}
)";
  auto exe = client_->Compile(Program(kWeighted), CompileOptionsFor(client_->devices()[0]));
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto bytes = (*exe)->Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto loaded = client_->Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  // What a loaded program tells before it first runs is what the compiled
  // one tells, and serializing it again gives the same bytes.
  EXPECT_EQ((*loaded)->num_outputs(), 2u);
  auto f1 = (*exe)->Fingerprint(), f2 = (*loaded)->Fingerprint();
  ASSERT_TRUE(f1.ok() && f2.ok());
  EXPECT_EQ(*f1, *f2);
  auto again = (*loaded)->Serialize();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *bytes);
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, w = {2, 1, -1, 0, 0.5f, 3};
  auto bx = Upload(x, {2, 3});
  auto bw = Upload(w, {3, 2});
  auto a = (*exe)->Execute({bx.get(), bw.get()});
  auto b = (*loaded)->Execute({bx.get(), bw.get()});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(Download(*(*a)[0], 4), Download(*(*b)[0], 4));
  EXPECT_EQ(Download(*(*b)[1], 6), x);
  // A damaged module is refused at load, not at the first run.
  std::string bad = *bytes;
  bad[bad.size() - 3] ^= 0x20;
  auto refused = client_->Deserialize(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("damaged"));
}

// With batch_rows=1 the plugin runs a separable program one row of its
// batch at a time (weights bound whole), also after a serialization round
// trip; the results are the whole batch's.
TEST_F(PluginTest, BatchRowsRunsTheBatchInParts) {
  if (!IsXonnx()) GTEST_SKIP() << "batch_rows is an xonnx plugin option";
  constexpr char kBatch[] = R"(HloModule batch_rows

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  w = f32[3,2]{1,0} parameter(1), metadata={op_type="xonnx.weight" op_name="w"}
  d = f32[2,2]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[2,2]{1,0} exponential(d)
  ROOT t = (f32[2,2]{1,0}, f32[2,3]{1,0}) tuple(e, x)
}
)";
  auto split_client = Client::Create(plugin_, {{"batch_rows", int64_t{1}}});
  ASSERT_TRUE(split_client.ok()) << split_client.status();
  Client& sc = **split_client;
  auto whole = client_->Compile(Program(kBatch), CompileOptionsFor(client_->devices()[0]));
  auto split = sc.Compile(Program(kBatch), CompileOptionsFor(sc.devices()[0]));
  ASSERT_TRUE(whole.ok() && split.ok());
  auto bytes = (*split)->Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto loaded = sc.Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::vector<float> x = {1, 2, 3, -4, 0.5f, 6}, w = {0.2f, 0.1f, -0.1f, 0, 0.05f, 0.3f};
  auto run = [&](Client& c, LoadedExecutable& e) {
    auto bx = c.BufferFromHost(x.data(), PJRT_Buffer_Type_F32, {2, 3}, c.devices()[0]);
    auto bw = c.BufferFromHost(w.data(), PJRT_Buffer_Type_F32, {3, 2}, c.devices()[0]);
    EXPECT_TRUE(bx.ok() && bw.ok());
    auto out = e.Execute({bx->get(), bw->get()});
    EXPECT_TRUE(out.ok()) << out.status();
    return std::make_pair(Download(*(*out)[0], 4), Download(*(*out)[1], 6));
  };
  auto want = run(*client_, **whole);
  EXPECT_EQ(run(sc, **split), want);
  EXPECT_EQ(run(sc, **loaded), want);
  EXPECT_EQ(want.second, x);
}

TEST_F(PluginTest, CreateOptionsAreCheckedByName) {
  if (!IsXonnx()) GTEST_SKIP() << "create options are plugin-specific";
  auto bad = Client::Create(plugin_, {{"no_such_option", int64_t{1}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("no_such_option"));
  EXPECT_FALSE(Client::Create(plugin_, {{"cpu_device_count", std::string("four")}}).ok());
  EXPECT_FALSE(Client::Create(plugin_, {{"cpu_device_count", int64_t{0}}}).ok());
  auto not_bool = Client::Create(plugin_, {{"winograd", int64_t{1}}});
  ASSERT_FALSE(not_bool.ok());
  EXPECT_THAT(std::string(not_bool.status().message()), ::testing::HasSubstr("'winograd' must be a bool"));
  EXPECT_TRUE(Client::Create(plugin_, {{"winograd", false}}).ok());
  auto negative_rows = Client::Create(plugin_, {{"batch_rows", int64_t{-1}}});
  ASSERT_FALSE(negative_rows.ok());
  EXPECT_THAT(std::string(negative_rows.status().message()), ::testing::HasSubstr("batch_rows=-1"));
  EXPECT_TRUE(Client::Create(plugin_, {{"batch_rows", int64_t{1}}}).ok());
}

TEST_F(PluginTest, VirtualDevicesSelectedByTheDeviceAssignment) {
  if (!IsXonnx()) GTEST_SKIP() << "virtual CPU devices are an xonnx plugin option";
  auto c = Client::Create(plugin_, {{"cpu_device_count", int64_t{3}}});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ((*c)->devices().size(), 3u);
  const Device& d2 = (*c)->devices()[2];
  EXPECT_EQ(d2.id, 2);
  auto exe = (*c)->Compile(Program(kAffine), CompileOptionsFor(d2));
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, w = {1, 0, 0, 1, 1, 1};
  auto on2x = (*c)->BufferFromHost(x.data(), PJRT_Buffer_Type_F32, {2, 3}, d2);
  auto on2w = (*c)->BufferFromHost(w.data(), PJRT_Buffer_Type_F32, {3, 2}, d2);
  auto on0w = (*c)->BufferFromHost(w.data(), PJRT_Buffer_Type_F32, {3, 2}, (*c)->devices()[0]);
  ASSERT_TRUE(on2x.ok() && on2w.ok() && on0w.ok());
  auto ok = (*exe)->Execute({on2x->get(), on2w->get()});
  ASSERT_TRUE(ok.ok()) << ok.status();
  PJRT_Buffer_Device_Args where;
  std::memset(&where, 0, sizeof(where));
  where.struct_size = sizeof(where);
  where.buffer = (*ok)[0]->raw();
  ASSERT_TRUE(plugin_->ToStatus(plugin_->api()->PJRT_Buffer_Device(&where)).ok());
  EXPECT_EQ(where.device, d2.raw);
  auto wrong = (*exe)->Execute({on2x->get(), on0w->get()});
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(std::string(wrong.status().message()), ::testing::HasSubstr("device 0"));
  // A device that does not exist.
  EXPECT_FALSE((*c)->Compile(Program(kAffine), EncodeCompileOptions(7, 7)).ok());
}

TEST_F(PluginTest, WeightParametersFollowTheirBuffers) {
  if (!IsXonnx()) GTEST_SKIP() << "weight parameters are compiled in by the xonnx plugin only";
  // The same program run with two different weight buffers must give each
  // buffer's result: the compiled-in values are keyed by buffer.
  auto exe = client_->Compile(Program(kWeighted), CompileOptionsFor(client_->devices()[0]));
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto bx = Upload(x, {2, 3});
  std::vector<std::vector<float>> weights = {{1, 0, 0, 1, 1, 1}, {2, 1, -1, 0, 0.5f, 3}};
  for (int round = 0; round < 3; ++round)
    for (const auto& w : weights) {
      auto bw = Upload(w, {3, 2});
      auto out = (*exe)->Execute({bx.get(), bw.get()});
      ASSERT_TRUE(out.ok()) << out.status();
      std::vector<float> y, e;
      Reference(x, w, &y, &e);
      for (int k = 0; k < 4; ++k) y[k] -= (k % 2 == 0 ? 0.5f : -1.f);  // no bias in this program
      EXPECT_THAT(Download(*(*out)[0], 4), ::testing::Pointwise(::testing::FloatNear(1e-5), y));
    }
}

// `value` on the heap; `released` turns true when the last owner lets go.
template <typename T>
std::shared_ptr<T> Tracked(T value, std::shared_ptr<std::atomic<bool>> released) {
  return std::shared_ptr<T>(new T(std::move(value)), [released](T* v) {
    delete v;
    *released = true;
  });
}

TEST_F(PluginTest, ZeroCopyHostBytesAreReleasedWhenNothingReadsThem) {
  // Host bytes uploaded with immutable zero-copy semantics are let go of
  // (the owner is released) once the plugin no longer reads them. The xonnx
  // plugin reads them in place, and a program that bound them as weights
  // keeps reading them after the buffer is gone.
  auto released = std::make_shared<std::atomic<bool>>(false);
  auto w = Tracked(std::vector<float>{2, 1, -1, 0, 0.5f, 3}, released);
  const float* data = w->data();
  auto bw = client_->BufferFromHostZeroCopy(data, PJRT_Buffer_Type_F32, {3, 2}, client_->devices()[0], std::move(w));
  ASSERT_TRUE(bw.ok()) << bw.status();
  if (IsXonnx()) {
    EXPECT_FALSE(*released) << "the buffer should read the host bytes in place";
  }
  auto exe = client_->Compile(Program(kWeighted), CompileOptionsFor(client_->devices()[0]));
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto bx = Upload(x, {2, 3});
  auto out = (*exe)->Execute({bx.get(), bw->get()});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> y, e;
  Reference(x, {2, 1, -1, 0, 0.5f, 3}, &y, &e);
  for (int k = 0; k < 4; ++k) y[k] -= (k % 2 == 0 ? 0.5f : -1.f);  // no bias in this program
  EXPECT_THAT(Download(*(*out)[0], 4), ::testing::Pointwise(::testing::FloatNear(1e-5), y));
  EXPECT_EQ(Download(**bw, 6), (std::vector<float>{2, 1, -1, 0, 0.5f, 3}));
  bw->reset();
  if (IsXonnx()) {
    EXPECT_FALSE(*released) << "the program compiled with these weights still reads them";
  }
  exe->reset();
  EXPECT_TRUE(*released);
}

TEST_F(PluginTest, ZeroCopyOfMisalignedBytesCopiesThem) {
  if (!IsXonnx()) GTEST_SKIP() << "alignment rules are the xonnx plugin's";
  auto released = std::make_shared<std::atomic<bool>>(false);
  auto bytes = Tracked(std::vector<char>(64), released);
  char* p = bytes->data();
  while (reinterpret_cast<uintptr_t>(p) % 16 != 4) ++p;  // 4-aligned, not 16-aligned
  const float v[2] = {1.5f, -2.f};
  std::memcpy(p, v, sizeof(v));
  auto b = client_->BufferFromHostZeroCopy(p, PJRT_Buffer_Type_F32, {2}, client_->devices()[0], std::move(bytes));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(*released) << "a copy needs the host bytes no longer";
  EXPECT_EQ(Download(**b, 2), (std::vector<float>{1.5f, -2.f}));
}

}  // namespace
}  // namespace xonnx::pjrt
