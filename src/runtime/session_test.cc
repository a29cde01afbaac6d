// Session behaviour on good and bad input: every bad input gives a clear
// error naming the file (and node or input), never a crash.
#include "xonnx/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/test_dir.h"
#include "onnx/model.h"
#include "onnx/onnx_pb.h"
#include "runtime/session_impl.h"

namespace xonnx {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTestDir("xonnx_session_test");
    fs::create_directories(dir_ / "model");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // y = Relu(x @ W + b) with W [4,3] and b [3] initializers; x is [batch, 4].
  onnx::ModelProto Mlp(const std::string& op = "Relu") {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("mlp");
    auto* x = g->add_input();
    x->set_name("x");
    auto* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("batch");
    tt->mutable_shape()->add_dim()->set_dim_value(4);
    auto* y = g->add_output();
    y->set_name("y");
    y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    y->mutable_type()->mutable_tensor_type()->mutable_shape();
    auto* w = g->add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(4);
    w->add_dims(3);
    for (int i = 0; i < 12; ++i) w->add_float_data(0.25f * (i % 5) - 0.5f);
    auto* b = g->add_initializer();
    b->set_name("b");
    b->set_data_type(onnx::TensorProto::FLOAT);
    b->add_dims(3);
    for (float v : {0.5f, -1.0f, 2.0f}) b->add_float_data(v);
    auto* mm = g->add_node();
    mm->set_op_type("MatMul");
    mm->set_name("matmul_1");
    mm->add_input("x");
    mm->add_input("W");
    mm->add_output("h");
    auto* add = g->add_node();
    add->set_op_type("Add");
    add->set_name("add_1");
    add->add_input("h");
    add->add_input("b");
    add->add_output("z");
    auto* act = g->add_node();
    act->set_op_type(op);
    act->set_name("act_1");
    act->add_input("z");
    act->add_output("y");
    return m;
  }

  std::string Write(const onnx::ModelProto& m, const std::string& name = "model/model.onnx") {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << m.SerializeAsString();
    return path;
  }

  fs::path dir_;
};

TEST_F(SessionTest, RunsAndCachesPerShape) {
  auto s = Session::Open(Write(Mlp()));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ((*s)->inputs().size(), 1u);
  EXPECT_EQ((*s)->inputs()[0].dims, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ((*s)->inputs()[0].dim_names[0], "batch");
  for (int64_t batch : {1, 3, 1}) {
    Tensor x(DataType::kFloat32, {batch, 4});
    for (int64_t i = 0; i < x.element_count(); ++i) x.data_as<float>()[i] = 0.5f * i - 1.0f;
    auto out = (*s)->Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{batch, 3}));
    for (int64_t r = 0; r < batch; ++r) {
      for (int c = 0; c < 3; ++c) {
        double acc = std::vector<double>{0.5, -1.0, 2.0}[c];
        for (int k = 0; k < 4; ++k) acc += (0.5 * (r * 4 + k) - 1.0) * (0.25 * ((k * 3 + c) % 5) - 0.5);
        EXPECT_NEAR((*out)[0].data_as<float>()[r * 3 + c], std::max(acc, 0.0), 1e-5);
      }
    }
  }
}

// A model opened rewritten (read once, changed in memory) is fingerprinted
// apart from the file as it is, and by the rewrite's tag: programs compiled
// for one are cached under a key the other never asks for. A rewrite that
// declines leaves the fingerprint the file's.
TEST_F(SessionTest, ARewrittenModelIsFingerprintedApartFromTheFile) {
  const std::string path = Write(Mlp());
  auto file = onnx_import::LoadModel(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto open = [&](bool change, const std::string& tag) {
    bool rewritten = !change;
    auto model = LoadRewritten(
        path,
        [change](onnx::ModelProto* m) {
          if (!change) return false;
          for (auto& n : *m->mutable_graph()->mutable_node())
            if (n.op_type() == "Relu") n.set_op_type("Sigmoid");
          return true;
        },
        tag, &rewritten);
    EXPECT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(rewritten, change);
    return model.ok() ? (*model)->content_fingerprint : std::string();
  };
  EXPECT_EQ(open(false, "sigmoid"), (*file)->content_fingerprint);
  const std::string sigmoid = open(true, "sigmoid");
  EXPECT_NE(sigmoid, (*file)->content_fingerprint);
  EXPECT_NE(sigmoid, open(true, "another rewrite"));
  EXPECT_EQ(sigmoid, open(true, "sigmoid"));
}

// Opened from memory, the model gives the path-opened session's results;
// with plugin "none" it is described and converted, but not run.
TEST_F(SessionTest, OpensFromMemoryAndWithoutAPlugin) {
  std::string bytes = Mlp().SerializeAsString();
  auto mem = Session::OpenFromMemory(bytes.data(), bytes.size(), "mlp in memory");
  ASSERT_TRUE(mem.ok()) << mem.status();
  auto file = Session::Open(Write(Mlp()));
  ASSERT_TRUE(file.ok()) << file.status();
  Tensor x(DataType::kFloat32, {2, 4});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data_as<float>()[i] = 0.25f * i;
  auto a = (*mem)->Run({{"x", x}});
  auto b = (*file)->Run({{"x", x}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(0, std::memcmp((*a)[0].data(), (*b)[0].data(), (*a)[0].byte_size()));
  auto garbage = Session::OpenFromMemory("xyz", 3, "garbage bytes");
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr("garbage bytes"));

  SessionOptions none;
  none.plugin = SessionOptions::kNoPlugin;
  auto s = Session::Open(Write(Mlp()), none);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->Info().op_counts.at("MatMul"), 1);
  auto hlo = (*s)->DumpHlo({{"x", {2, 4}}}, 1, false);
  ASSERT_TRUE(hlo.ok()) << hlo.status();
  auto with_plugin = (*file)->DumpHlo({{"x", {2, 4}}}, 1, false);
  ASSERT_TRUE(with_plugin.ok());
  EXPECT_EQ(hlo->text, with_plugin->text);
  auto run = (*s)->Run({{"x", x}});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(run.status().message(), HasSubstr("without a plugin"));
  none.batch_buckets = {1, 2};
  auto bucketed = Session::Open(Write(Mlp()), none);
  ASSERT_FALSE(bucketed.ok());
  EXPECT_THAT(bucketed.status().message(), HasSubstr("needs a plugin"));
}

// With every intermediate value exposed, the model's outputs come first,
// then each node's output in node order, with the values they must have.
TEST_F(SessionTest, IntermediateValuesBecomeOutputs) {
  SessionOptions o;
  o.expose_intermediates = true;
  o.use_cache = false;
  auto s = Session::Open(Write(Mlp()), o);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<std::string> names;
  for (const auto& spec : (*s)->outputs()) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"y", "h", "z"}));
  Tensor x(DataType::kFloat32, {2, 4});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data_as<float>()[i] = 0.5f * i - 1.5f;
  auto out = (*s)->Run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status();
  const float* y = (*out)[0].data_as<float>();
  const float* h = (*out)[1].data_as<float>();
  const float* z = (*out)[2].data_as<float>();
  const float b[3] = {0.5f, -1.0f, 2.0f};
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_FLOAT_EQ(z[r * 3 + c], h[r * 3 + c] + b[c]);
      EXPECT_FLOAT_EQ(y[r * 3 + c], std::max(z[r * 3 + c], 0.0f));
    }
  }
}

// A view of the caller's memory runs as a copy does, is never written, and
// may be freed once Run (or RunAsync, which copies it) returns.
TEST_F(SessionTest, ViewsReadTheCallersMemoryInPlace) {
  auto s = Session::Open(Write(Mlp()));
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<float> mine(3 * 4);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = 0.5f * i - 2.0f;
  std::vector<float> before = mine;
  Tensor view = Tensor::View(DataType::kFloat32, {3, 4}, mine.data());
  EXPECT_TRUE(view.is_view());
  EXPECT_EQ(static_cast<const Tensor&>(view).data(), mine.data());
  auto a = (*s)->Run({{"x", view}});
  auto b = (*s)->Run({{"x", Tensor::FromData(DataType::kFloat32, {3, 4}, mine.data())}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(0, std::memcmp((*a)[0].data(), (*b)[0].data(), (*a)[0].byte_size()));
  // Writing goes to a copy of its own.
  Tensor written = view;
  written.data_as<float>()[0] = 100.0f;
  EXPECT_FALSE(written.is_view());
  EXPECT_EQ(mine, before);
  EXPECT_EQ(written.data_as<float>()[1], mine[1]);
  // RunAsync copies a view before it returns: the memory may go at once.
  auto scratch = std::make_unique<std::vector<float>>(mine);
  auto future = (*s)->RunAsync({{"x", Tensor::View(DataType::kFloat32, {3, 4}, scratch->data())}});
  std::fill(scratch->begin(), scratch->end(), -1e30f);
  scratch.reset();
  auto c = future.get();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(0, std::memcmp((*c)[0].data(), (*b)[0].data(), (*c)[0].byte_size()));
}

// The CPU plugin reads a call's inputs in place: elementwise ops that could
// overwrite their operand (Neg, Relu) never write the caller's memory, an
// input returned as an output is a copy, and unaligned memory (which the
// plugin copies) gives the same results.
TEST_F(SessionTest, InputsReadInPlaceAreNeverWritten) {
  onnx::ModelProto m = Mlp();
  auto* g = m.mutable_graph();
  for (const char* op : {"Neg", "Relu"}) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(absl::StrCat(op, "_x"));
    n->add_input("x");
    n->add_output(absl::StrCat(op, "_x"));
    *g->add_output() = g->input(0);
    g->mutable_output()->rbegin()->set_name(absl::StrCat(op, "_x"));
  }
  *g->add_output() = g->input(0);  // x itself
  auto s = Session::Open(Write(m));
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<float> storage(1 + 2 * 4);  // one float before: an unaligned start
  for (size_t i = 0; i < storage.size(); ++i) storage[i] = 1.5f * i - 4.0f;
  for (int offset : {0, 1}) {
    Tensor x = Tensor::FromData(DataType::kFloat32, {2, 4}, storage.data() + offset);
    const Tensor& cx = x;
    const std::vector<float> before(cx.data_as<float>(), cx.data_as<float>() + 8);
    Tensor in = offset ? Tensor::View(DataType::kFloat32, {2, 4}, storage.data() + offset) : x;
    auto out = (*s)->Run({{"x", in}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 4u);
    const std::vector<float>& now = offset ? std::vector<float>(storage.begin() + 1, storage.end())
                                           : std::vector<float>(cx.data_as<float>(), cx.data_as<float>() + 8);
    EXPECT_EQ(now, before) << "offset " << offset;
    for (int k = 0; k < 8; ++k) {
      EXPECT_EQ((*out)[1].data_as<float>()[k], -before[k]);
      EXPECT_EQ((*out)[2].data_as<float>()[k], std::max(before[k], 0.0f));
      EXPECT_EQ((*out)[3].data_as<float>()[k], before[k]);
    }
    EXPECT_NE((*out)[3].data(), static_cast<const Tensor&>(in).data());
  }
}

// A tensor for overwriting has its shape and size and memory of its own;
// the constructor's tensor is zeros even on memory a freed tensor dirtied.
TEST(TensorTest, ForOverwriteAndZeroFilled) {
  {
    Tensor dirty = Tensor::ForOverwrite(DataType::kFloat32, {512, 512});
    EXPECT_EQ(dirty.byte_size(), 512u * 512u * 4u);
    EXPECT_FALSE(dirty.is_view());
    std::memset(dirty.data(), 0xff, dirty.byte_size());
  }
  Tensor zeros(DataType::kFloat32, {512, 512});
  const float* z = static_cast<const Tensor&>(zeros).data_as<float>();
  for (int64_t i = 0; i < zeros.element_count(); i += 997) ASSERT_EQ(z[i], 0.0f) << i;
  EXPECT_EQ(Tensor::ForOverwrite(DataType::kString, {3}).strings().size(), 3u);
}

// Every call on the plugin is counted once in the phases, with times that
// are never negative and add up to no more than the calls took.
TEST_F(SessionTest, RunPhasesCountEveryCall) {
  auto s = Session::Open(Write(Mlp()));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->run_phases().calls, 0);
  Tensor x(DataType::kFloat32, {2, 4});
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*s)->Run({{"x", x}}).ok());
  double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  RunPhases p = (*s)->run_phases();
  EXPECT_EQ(p.calls, 3);
  EXPECT_GE(p.upload_ms, 0);
  EXPECT_GE(p.execute_ms, 0);
  EXPECT_GE(p.download_ms, 0);
  EXPECT_LE(p.upload_ms + p.execute_ms + p.download_ms, wall_ms);
}

TEST_F(SessionTest, ConcurrentRunsAgree) {
  auto s = Session::Open(Write(Mlp("Tanh")));
  ASSERT_TRUE(s.ok());
  Tensor x(DataType::kFloat32, {2, 4});
  for (int64_t i = 0; i < 8; ++i) x.data_as<float>()[i] = 0.1f * i;
  auto ref = (*s)->Run({{"x", x}});
  ASSERT_TRUE(ref.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto o = (*s)->Run({{"x", x}});
        if (!o.ok() || std::memcmp(o->at(0).data(), ref->at(0).data(), ref->at(0).byte_size()) != 0) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, 0);
}

// Inputs and outputs staged through DMA-mapped blocks, and waits that poll
// first, give the same bits as the plain path, for every shape and with
// calls in flight on several threads.
TEST_F(SessionTest, MappedIoAndSpinningWaitsGiveTheSameResults) {
  std::string path = Write(Mlp("Tanh"));
  auto plain = Session::Open(path);
  ASSERT_TRUE(plain.ok()) << plain.status();
  SessionOptions o;
  o.io_staging = SessionOptions::IoStaging::kMapped;  // forced: kAuto leaves it off on this plugin
  o.spin_wait_us = 200;
  auto staged = Session::Open(path, o);
  ASSERT_TRUE(staged.ok()) << staged.status();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        Tensor x(DataType::kFloat32, {1 + (i + t) % 3, 4});
        for (int64_t k = 0; k < x.element_count(); ++k) x.data_as<float>()[k] = 0.05f * (k + i) - t;
        auto a = (*plain)->Run({{"x", x}});
        auto b = (*staged)->Run({{"x", x}});
        if (!a.ok() || !b.ok() || a->at(0).dims() != b->at(0).dims() ||
            std::memcmp(a->at(0).data(), b->at(0).data(), a->at(0).byte_size()) != 0)
          ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, 0);
}

// Calls of a new shape arriving together compile it once: the others wait
// for that program instead of each compiling their own.
TEST_F(SessionTest, ConcurrentFirstCallsOfAShapeCompileOnce) {
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::Open(Write(Mlp()), o);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&] {
      if (!(*s)->Run({{"x", Tensor(DataType::kFloat32, {7, 4})}}).ok()) ++failures;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ((*s)->compile_stats().compiled, 1);
}

TEST_F(SessionTest, TruncatedFileIsAClearError) {
  std::string bytes = Mlp().SerializeAsString();
  std::string path = (dir_ / "model/truncated.onnx").string();
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto s = Session::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(path));
}

TEST_F(SessionTest, NonOnnxFileIsAClearError) {
  std::string path = (dir_ / "model/notes.onnx").string();
  std::ofstream(path) << "this is not a model, just some text\n";
  auto s = Session::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("not a valid ONNX model"));
  auto missing = Session::Open((dir_ / "nope.onnx").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST_F(SessionTest, UnknownOpsAreAllListedWithNodes) {
  onnx::ModelProto m = Mlp("FancyActivation");
  auto* extra = m.mutable_graph()->add_node();
  extra->set_op_type("Frobnicate");
  extra->set_name("frob_7");
  extra->add_input("y");
  extra->add_output("y2");
  m.mutable_graph()->mutable_output(0)->set_name("y2");
  std::string path = Write(m);
  SessionOptions o;
  auto s = Session::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(std::string(s.status().message()),
            path + ": 2 unsupported ops: FancyActivation (node 'act_1'); Frobnicate (node 'frob_7')");
}

TEST_F(SessionTest, WrongInputsAreClearErrors) {
  auto s = Session::Open(Write(Mlp()));
  ASSERT_TRUE(s.ok());
  Tensor wrong_shape(DataType::kFloat32, {2, 5});
  auto r1 = (*s)->Run({{"x", wrong_shape}});
  ASSERT_FALSE(r1.ok());
  EXPECT_THAT(std::string(r1.status().message()), HasSubstr("input 'x' has shape [2,5], the model expects [batch,4]"));
  Tensor wrong_type(DataType::kInt64, {2, 4});
  auto r2 = (*s)->Run({{"x", wrong_type}});
  ASSERT_FALSE(r2.ok());
  EXPECT_THAT(std::string(r2.status().message()), HasSubstr("has type int64, the model expects float32"));
  auto r3 = (*s)->Run({});
  ASSERT_FALSE(r3.ok());
  EXPECT_THAT(std::string(r3.status().message()), HasSubstr("input 'x' is missing"));
  auto r4 = (*s)->Run({{"x", Tensor(DataType::kFloat32, {1, 4})}, {"z", Tensor(DataType::kFloat32, {1})}});
  ASSERT_FALSE(r4.ok());
  EXPECT_THAT(std::string(r4.status().message()), HasSubstr("no input named 'z'"));
}

TEST_F(SessionTest, ExternalDataMustStayInTheModelFolder) {
  // A secret next to (not inside) the model folder.
  std::ofstream(dir_ / "secret.bin", std::ios::binary) << std::string(48, 'A');
  onnx::ModelProto m = Mlp();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("../secret.bin");
  auto s = Session::Open(Write(m));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("outside the model's folder"));
  loc->set_value((dir_ / "secret.bin").string());
  auto abs = Session::Open(Write(m));
  ASSERT_FALSE(abs.ok());
  EXPECT_THAT(std::string(abs.status().message()), HasSubstr("absolute"));
  // Inside the folder it loads.
  std::ofstream(dir_ / "model" / "weights.bin", std::ios::binary) << std::string(48, '\0');
  loc->set_value("weights.bin");
  auto ok = Session::Open(Write(m));
  EXPECT_TRUE(ok.ok()) << ok.status();
  // Hostile ranges and places are errors naming the tensor, never a crash,
  // a huge allocation or a hang.
  auto* offset = w->add_external_data();
  offset->set_key("offset");
  for (const char* bad : {"abc", "-4", "99999999999999999999"}) {
    offset->set_value(bad);
    auto st = Session::Open(Write(m));
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_THAT(std::string(st.status().message()), HasSubstr("is not a byte count")) << bad;
  }
  offset->set_value("9223372036854775800");  // offset + length would overflow
  auto far = Session::Open(Write(m));
  ASSERT_FALSE(far.ok());
  EXPECT_THAT(std::string(far.status().message()), HasSubstr("exceeds file"));
  offset->set_value("0");
  loc->set_value(".");
  auto folder = Session::Open(Write(m));
  ASSERT_FALSE(folder.ok());
  EXPECT_THAT(std::string(folder.status().message()), HasSubstr("not a regular file"));
}

TEST_F(SessionTest, ShapeInputsAreBoundAtCompileTime) {
  // y = Reshape(x, shape) where shape is a model input.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("reshape");
  for (auto [name, type, rank] :
       {std::tuple{"x", onnx::TensorProto::FLOAT, 2}, std::tuple{"shape", onnx::TensorProto::INT64, 1}}) {
    auto* in = g->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    for (int d = 0; d < rank; ++d) tt->mutable_shape()->add_dim()->set_dim_param(absl::StrCat(name, d));
  }
  g->add_output()->set_name("y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  auto* n = g->add_node();
  n->set_op_type("Reshape");
  n->add_input("x");
  n->add_input("shape");
  n->add_output("y");
  auto s = Session::Open(Write(m));
  ASSERT_TRUE(s.ok()) << s.status();
  Tensor x(DataType::kFloat32, {2, 6});
  for (int i = 0; i < 12; ++i) x.data_as<float>()[i] = i;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{3, 4}, std::vector<int64_t>{4, -1}}) {
    Tensor st = Tensor::FromVector(DataType::kInt64, {2}, shape);
    auto out = (*s)->Run({{"x", x}, {"shape", st}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{shape[0], 12 / shape[0]}));
    EXPECT_EQ((*out)[0].data_as<float>()[11], 11.0f);
  }
}

}  // namespace
}  // namespace xonnx

namespace xonnx {
namespace {

TEST_F(SessionTest, StringTensorsGoInAndOut) {
  // y = StringNormalizer(x, stopwords={"b"}, UPPER); n = Cast(Cast(x2, string), float)
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("strings");
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::STRING);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::STRING);
  y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("m");
  auto* norm = g->add_node();
  norm->set_op_type("StringNormalizer");
  norm->set_name("norm");
  norm->add_input("x");
  norm->add_output("y");
  auto* a = norm->add_attribute();
  a->set_name("case_change_action");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("UPPER");
  auto* sw = norm->add_attribute();
  sw->set_name("stopwords");
  sw->set_type(onnx::AttributeProto::STRINGS);
  sw->add_strings("b");
  auto s = Session::Open(Write(m));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->inputs()[0].dtype, DataType::kString);
  for (auto words : {std::vector<std::string>{"a", "b", "Cd"}, std::vector<std::string>{"b", "xy"}}) {
    auto out = (*s)->Run({{"x", Tensor::FromStrings({static_cast<int64_t>(words.size())}, words)}});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<std::string> want;
    for (const auto& w : words)
      if (w != "b") {
        std::string u = w;
        for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        want.push_back(u);
      }
    EXPECT_EQ((*out)[0].strings(), want);
  }
  // The written TensorProto reads back as the same strings.
  std::string path = (dir_ / "s.pb").string();
  ASSERT_TRUE(WriteTensorProto(path, Tensor::FromStrings({2}, {"p", "q"}), "s").ok());
  auto back = ReadTensorFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->strings(), (std::vector<std::string>{"p", "q"}));
}

}  // namespace
}  // namespace xonnx

namespace xonnx {
namespace {

// y = relu(x·W) with a W large enough to be uploaded as a weight buffer.
onnx::ModelProto BigMatMul() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("big_matmul");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(64);
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  out->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  out->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(32);
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(64);
  w->add_dims(32);
  for (int i = 0; i < 64 * 32; ++i) w->add_float_data(0.01f * ((i * 7) % 23) - 0.1f);
  auto* mm = g->add_node();
  mm->set_op_type("MatMul");
  mm->add_input("x");
  mm->add_input("W");
  mm->add_output("h");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("h");
  relu->add_output("y");
  return m;
}

TEST_F(SessionTest, UploadedWeightsMatchCompiledInWeightsOnAnyDevice) {
  std::string path = Write(BigMatMul());
  Tensor x(DataType::kFloat32, {2, 64});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data_as<float>()[i] = 0.03f * (i % 17) - 0.2f;
  std::vector<float> ref(64);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 32; ++c) {
      double acc = 0;
      for (int k = 0; k < 64; ++k) acc += x.data_as<float>()[r * 64 + k] * (0.01f * (((k * 32 + c) * 7) % 23) - 0.1f);
      ref[r * 32 + c] = static_cast<float>(std::max(acc, 0.0));
    }
  std::vector<std::vector<float>> results;
  for (bool upload : {true, false})
    for (int device : {0, 2}) {
      SessionOptions o;
      o.upload_weights = upload;
      o.device = device;
      o.create_options.push_back({"cpu_device_count", int64_t{3}});
      auto s = Session::Open(path, o);
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_THAT((*s)->DeviceSummary(), ::testing::HasSubstr(absl::StrCat("CpuDevice(id=", device, ")")));
      for (int rep = 0; rep < 2; ++rep) {
        auto out = (*s)->Run({{"x", x}});
        ASSERT_TRUE(out.ok()) << out.status();
        const float* y = (*out)[0].data_as<float>();
        for (int k = 0; k < 64; ++k) EXPECT_NEAR(y[k], ref[k], 1e-5) << "upload=" << upload << " device=" << device;
        results.emplace_back(y, y + 64);
      }
      if (upload) {
        EXPECT_THAT((*s)->LastProgramSummary(), ::testing::HasSubstr("1 weights"));
      }
    }
  for (const auto& r : results) EXPECT_EQ(r, results[0]);
}

TEST_F(SessionTest, UnknownPluginIsAClearError) {
  SessionOptions o;
  o.plugin = (dir_ / "no_such_plugin.so").string();
  auto s = Session::Open(Write(Mlp()), o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), ::testing::HasSubstr("no such PjRT plugin file"));
}

}  // namespace
}  // namespace xonnx

namespace xonnx {
namespace {

// s: sequence of f32[2], o: optional f32[2] -> ConcatFromSequence(s) and
// OptionalHasElement(o).
onnx::ModelProto SequenceModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("seq");
  auto* s = g->add_input();
  s->set_name("s");
  auto* st = s->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
  st->set_elem_type(onnx::TensorProto::FLOAT);
  st->mutable_shape()->add_dim()->set_dim_value(2);
  auto* o = g->add_input();
  o->set_name("o");
  auto* ot = o->mutable_type()->mutable_optional_type()->mutable_elem_type()->mutable_tensor_type();
  ot->set_elem_type(onnx::TensorProto::FLOAT);
  ot->mutable_shape()->add_dim()->set_dim_value(2);
  auto* c = g->add_node();
  c->set_op_type("ConcatFromSequence");
  c->add_input("s");
  c->add_output("joined");
  auto* axis = c->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  auto* h = g->add_node();
  h->set_op_type("OptionalHasElement");
  h->add_input("o");
  h->add_output("has");
  for (const char* name : {"joined", "has"}) {
    auto* v = g->add_output();
    v->set_name(name);
    auto* vt = v->mutable_type()->mutable_tensor_type();
    bool has = std::string(name) == "has";
    vt->set_elem_type(has ? onnx::TensorProto::BOOL : onnx::TensorProto::FLOAT);
    auto* shape = vt->mutable_shape();  // "has" is a scalar
    if (!has) shape->add_dim()->set_dim_param("n");
  }
  return m;
}

TEST_F(SessionTest, SequenceAndOptionalInputsRunThroughRunValues) {
  SessionOptions o;
  o.use_cache = false;
  auto s = Session::Open(Write(SequenceModel()), o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE((*s)->inputs()[0].sequence);
  EXPECT_TRUE((*s)->inputs()[1].optional);
  std::vector<float> a = {1, 2}, b = {3, 4}, c = {5, 6};
  auto t = [](const std::vector<float>& v) { return Tensor::FromData(DataType::kFloat32, {2}, v.data()); };
  for (int len : {3, 1}) {
    std::vector<Tensor> elements = {t(a), t(b), t(c)};
    elements.resize(len);
    auto out = (*s)->RunValues({{"s", Value::Sequence(elements)}});  // o left out: empty
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].kind, Value::Kind::kTensor);
    EXPECT_EQ((*out)[0].tensor.dims(), (std::vector<int64_t>{2 * len}));
    EXPECT_EQ((*out)[0].tensor.data_as<float>()[2 * len - 1], 2.0f * len);
    EXPECT_FALSE((*out)[1].tensor.data_as<bool>()[0]);
  }
  auto full = (*s)->RunValues({{"s", Value::Sequence({t(a)})}, {"o", Value::Of(t(b))}});
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_TRUE((*full)[1].tensor.data_as<bool>()[0]);
  // Misuse is an error naming the input.
  auto tensor_api = (*s)->Run({{"s", t(a)}});
  ASSERT_FALSE(tensor_api.ok());
  EXPECT_THAT(std::string(tensor_api.status().message()),
              HasSubstr("'s' is a sequence; run this model with Session::RunValues"));
  auto missing = (*s)->RunValues({});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("input 's' is missing from the call, but it is not optional"));
  auto wrong_kind = (*s)->RunValues({{"s", Value::Of(t(a))}});
  ASSERT_FALSE(wrong_kind.ok());
  EXPECT_THAT(std::string(wrong_kind.status().message()), HasSubstr("input 's' must be a sequence"));
  auto wrong_type = (*s)->RunValues({{"s", Value::Sequence({Tensor(DataType::kInt32, {2})})}});
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_THAT(std::string(wrong_type.status().message()), HasSubstr("input 's' element 0 has type int32"));
}

}  // namespace
}  // namespace xonnx
