// Integer products on oneDNN's 8-bit primitives against the reference
// evaluator: convolutions and dots of u8 or s8 activations less a run-time
// zero point, with s8-range constant weights, as the importer writes
// ConvInteger, MatMulInteger, QLinearConv and QLinearMatMul. Integer sums
// are exact, so the results must equal the evaluator's bit for bit; the
// operands span the whole 8-bit range (products at the extremes are what
// an s16 intermediate would saturate on). Weights spanning up to 256 values
// per output feature run as two 8-bit products; wider ones stay on the
// native s32 kernel.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"

namespace xonnx::cpu {
namespace {

using hlo::Builder;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;

// Random integers in [lo, hi] of type `t`.
Literal RandomInts(const Shape& s, int lo, int hi, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(lo, hi);
  hlo::TypeSwitch(s.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < l.element_count(); ++i) l.data<T>()[i] = static_cast<T>(v(rng));
  });
  return l;
}

struct IntCase {
  std::string name;
  PrimitiveType source;    // u8 or s8
  Shape x;                 // the activation
  Shape w;                 // the weights (s32 constant values)
  int w_lo, w_hi;          // their range
  bool weights_minus_128;  // stored as u8 about 128 and centered by an HLO subtract, as imported
  // The product of the widened, centered activation and the weights.
  std::function<Instruction*(Builder&, Instruction* x, Instruction* w)> product;
  std::string kind;  // the kernel that must run the product
};

hlo::Window Window2d(int64_t k, int64_t stride, int64_t pad_lo, int64_t pad_hi, int64_t dilation) {
  hlo::Window w;
  for (int i = 0; i < 2; ++i) w.dimensions.push_back({k, stride, pad_lo, pad_hi, dilation, 1, false});
  return w;
}

hlo::ConvolutionDimensionNumbers Nchw(int spatial) {
  hlo::ConvolutionDimensionNumbers d;
  for (int i = 0; i < spatial; ++i) {
    d.input_spatial_dimensions.push_back(2 + i);
    d.kernel_spatial_dimensions.push_back(2 + i);
    d.output_spatial_dimensions.push_back(2 + i);
  }
  return d;
}

std::vector<IntCase> Cases() {
  auto conv = [](hlo::Window w, int64_t groups) {
    return [w, groups](Builder& b, Instruction* x, Instruction* k) {
      return b.Convolution(x, k, w, Nchw(static_cast<int>(w.dimensions.size())), groups);
    };
  };
  hlo::Window w1d;
  w1d.dimensions.push_back({5, 1, 2, 2, 3, 1, false});
  hlo::Window w3d;
  for (int i = 0; i < 3; ++i) w3d.dimensions.push_back({3, i == 0 ? 1 : 2, 1, 1, 1, 1, false});
  hlo::DotDimensionNumbers mk_kn;
  mk_kn.lhs_contracting_dimensions = {1};
  mk_kn.rhs_contracting_dimensions = {0};
  hlo::DotDimensionNumbers batched;
  batched.lhs_batch_dimensions = batched.rhs_batch_dimensions = {0};
  batched.lhs_contracting_dimensions = {2};
  batched.rhs_contracting_dimensions = {1};
  using hlo::S32;
  return {
      {"conv_3x3_padded_u8", hlo::U8, Shape(S32, {2, 24, 13, 11}), Shape(S32, {32, 24, 3, 3}), -128, 127, false,
       conv(Window2d(3, 1, 1, 1, 1), 1), "dnnl-int8-conv"},
      {"conv_strided_dilated_s8", hlo::S8, Shape(S32, {1, 16, 17, 17}), Shape(S32, {8, 16, 3, 3}), -128, 127, false,
       conv(Window2d(3, 2, 2, 1, 2), 1), "dnnl-int8-conv"},
      {"conv_1x1_weights_about_128", hlo::U8, Shape(S32, {1, 64, 9, 9}), Shape(S32, {48, 64, 1, 1}), -127, 127, true,
       conv(Window2d(1, 1, 0, 0, 1), 1), "dnnl-int8-conv"},
      {"conv_depthwise_padded", hlo::U8, Shape(S32, {1, 32, 10, 10}), Shape(S32, {32, 1, 3, 3}), -128, 127, false,
       conv(Window2d(3, 1, 1, 1, 1), 32), "dnnl-int8-conv"},
      {"conv_grouped", hlo::S8, Shape(S32, {2, 12, 7, 7}), Shape(S32, {18, 4, 3, 3}), -128, 127, false,
       conv(Window2d(3, 1, 1, 0, 1), 3), "dnnl-int8-conv"},
      {"conv_1d", hlo::U8, Shape(S32, {2, 8, 40}), Shape(S32, {16, 8, 5}), -128, 127, false, conv(w1d, 1),
       "dnnl-int8-conv"},
      {"conv_3d", hlo::U8, Shape(S32, {1, 8, 5, 9, 9}), Shape(S32, {16, 8, 3, 3, 3}), -128, 127, false, conv(w3d, 1),
       "dnnl-int8-conv"},
      // uint8 weights about their own zero point: 256 values per feature,
      // not within s8 (split into a product of shifted weights and one of
      // window sums, both 8-bit).
      {"conv_uint8_weights_about_their_zero_point", hlo::U8, Shape(S32, {2, 16, 9, 9}), Shape(S32, {24, 16, 3, 3}), -30,
       225, false, conv(Window2d(3, 2, 1, 1, 1), 1), "dnnl-int8-conv"},
      {"depthwise_uint8_weights_about_their_zero_point", hlo::U8, Shape(S32, {1, 32, 10, 10}),
       Shape(S32, {32, 1, 3, 3}), -100, 155, false, conv(Window2d(3, 1, 1, 1, 1), 32), "dnnl-int8-conv"},
      {"grouped_uint8_weights_about_their_zero_point", hlo::U8, Shape(S32, {2, 12, 7, 7}), Shape(S32, {18, 4, 3, 3}),
       -10, 245, false, conv(Window2d(3, 1, 1, 0, 1), 3), "dnnl-int8-conv"},
      {"dot_uint8_weights_about_their_zero_point", hlo::U8, Shape(S32, {37, 96}), Shape(S32, {96, 70}), -250, 5, false,
       [mk_kn](Builder& b, Instruction* x, Instruction* k) { return b.Dot(x, k, mk_kn); }, "dnnl-int8-matmul"},
      // Weights spanning more than 256 values stay on s32.
      {"conv_wide_weights_stay_native", hlo::U8, Shape(S32, {1, 8, 6, 6}), Shape(S32, {4, 8, 3, 3}), -200, 200, false,
       conv(Window2d(3, 1, 1, 1, 1), 1), "convolution"},
      {"dot_u8", hlo::U8, Shape(S32, {37, 96}), Shape(S32, {96, 70}), -128, 127, false,
       [mk_kn](Builder& b, Instruction* x, Instruction* k) { return b.Dot(x, k, mk_kn); }, "dnnl-int8-matmul"},
      // MatMulInteger of a [batch, seq, k] activation: a reshape before the dot.
      {"dot_after_reshape_s8", hlo::S8, Shape(S32, {3, 20, 64}), Shape(S32, {64, 48}), -128, 127, true,
       [mk_kn](Builder& b, Instruction* x, Instruction* k) {
         return b.Dot(b.Reshape(x, {60, 64}), k, mk_kn);
       },
       "dnnl-int8-matmul"},
      // A transposed activation, read through strides.
      {"dot_transposed_source", hlo::U8, Shape(S32, {50, 33}), Shape(S32, {50, 40}), -128, 127, false,
       [mk_kn](Builder& b, Instruction* x, Instruction* k) {
         return b.Dot(b.Transpose(x, {1, 0}), k, mk_kn);
       },
       "dnnl-int8-matmul"},
      // Rows merged across a transpose ([time, batch] -> [batch * time]),
      // which no strided view of the 8-bit source gives: the transpose moves
      // to the 8-bit value (a recurrent net's output after quantization).
      {"dot_of_rows_merged_across_a_transpose", hlo::U8, Shape(S32, {12, 5, 48}), Shape(S32, {48, 20}), -128, 127,
       false,
       [mk_kn](Builder& b, Instruction* x, Instruction* k) {
         return b.Dot(b.Reshape(b.Transpose(x, {1, 0, 2}), {60, 48}), k, mk_kn);
       },
       "dnnl-int8-matmul"},
      {"dot_batched", hlo::U8, Shape(S32, {4, 9, 32}), Shape(S32, {4, 32, 24}), -128, 127, false,
       [batched](Builder& b, Instruction* x, Instruction* k) { return b.Dot(x, k, batched); }, "dnnl-int8-matmul"},
  };
}

class IntegerProductTest : public ::testing::TestWithParam<int> {};

TEST_P(IntegerProductTest, EqualsTheEvaluatorOnOneDnnsInt8Kernels) {
  const IntCase c = Cases()[GetParam()];
  auto m = std::make_unique<hlo::Module>(c.name);
  Builder b(m.get(), "main");
  Shape xs(c.source, c.x.dims);
  Instruction* x = b.Parameter(0, xs, "x");
  Instruction* zp = b.Parameter(1, Shape(c.source, {}), "zp");
  // convert<s32>(x) - broadcast(convert<s32>(zp)), as the importer writes.
  Instruction* centered =
      b.Binary(Opcode::kSubtract, b.Convert(x, hlo::S32), b.Broadcast(b.Convert(zp, hlo::S32), c.x.dims, {}));
  Instruction* w;
  if (c.weights_minus_128) {
    Literal stored = RandomInts(Shape(hlo::S32, c.w.dims), c.w_lo + 128, c.w_hi + 128, 5);
    w = b.Binary(Opcode::kSubtract, b.Constant(std::move(stored)),
                 b.Broadcast(b.ScalarConstant(hlo::S32, 128), c.w.dims, {}));
  } else {
    w = b.Constant(RandomInts(Shape(hlo::S32, c.w.dims), c.w_lo, c.w_hi, 5));
  }
  auto comp = b.Build(c.product(b, centered, w));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  int lo = c.source == hlo::U8 ? 0 : -128, hi = c.source == hlo::U8 ? 255 : 127;
  std::vector<Literal> args = {RandomInts(xs, lo, hi, 3), RandomInts(Shape(c.source, {}), lo, hi, 4)};
  // The extremes, where a saturating s16 sum of two products would clip.
  hlo::TypeSwitch(c.source, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < args[0].element_count(); i += 7) args[0].data<T>()[i] = static_cast<T>(hi);
  });
  auto want = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto exe = Executable::Compile(std::move(m), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  bool ran = false, native = false;
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) {
    ran |= kind.rfind(c.kind, 0) == 0;
    native |= kind == "convolution" || kind == "dot";
  }
  // A product planned for the 8-bit kernels leaves nothing on the s32 ones.
  if (c.kind.rfind("dnnl-int8", 0) == 0) {
    EXPECT_FALSE(native) << c.name << ":\n" << (*exe)->KernelListing();
  }
  EXPECT_TRUE(ran) << c.name << " did not run on " << c.kind << ":\n" << (*exe)->KernelListing();
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  Literal got((*exe)->output_shapes().at(0));
  std::vector<void*> outs = {got.untyped_data()};
  ASSERT_TRUE((*exe)->Execute(in, outs).ok());
  ASSERT_EQ(got.shape().ByteSize(), want->shape().ByteSize());
  EXPECT_EQ(0, std::memcmp(got.untyped_data(), want->untyped_data(), got.shape().ByteSize())) << c.name;
}

// Concurrent calls of one executable: each gets its own layout copies,
// zero point and scratch, so every call equals a call made alone.
TEST(IntegerProducts, ConcurrentCallsGetTheirOwnResults) {
  auto m = std::make_unique<hlo::Module>("concurrent");
  Builder b(m.get(), "main");
  Shape xs(hlo::U8, {1, 16, 12, 12});
  Instruction* x = b.Parameter(0, xs, "x");
  Instruction* zp = b.Parameter(1, Shape(hlo::U8, {}), "zp");
  Instruction* centered =
      b.Binary(Opcode::kSubtract, b.Convert(x, hlo::S32), b.Broadcast(b.Convert(zp, hlo::S32), xs.dims, {}));
  Instruction* conv = b.Convolution(centered, b.Constant(RandomInts(Shape(hlo::S32, {24, 16, 3, 3}), -128, 127, 5)),
                                    Window2d(3, 1, 1, 1, 1), Nchw(2), 1);
  hlo::DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {0};
  Instruction* rows = b.Reshape(centered, {16, 144});
  Instruction* dot = b.Dot(rows, b.Constant(RandomInts(Shape(hlo::S32, {144, 8}), -128, 127, 6)), dn);
  auto comp = b.Build(b.Tuple({conv, dot}));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  auto exe = Executable::Compile(std::move(m), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  ASSERT_NE((*exe)->KernelListing().find("dnnl-int8-matmul"), std::string::npos) << (*exe)->KernelListing();
  auto run = [&](const std::vector<Literal>& args) {
    std::vector<const void*> in;
    for (const Literal& a : args) in.push_back(a.untyped_data());
    std::vector<Literal> got;
    std::vector<void*> outs;
    for (const Shape& s : (*exe)->output_shapes()) outs.push_back(got.emplace_back(s).untyped_data());
    EXPECT_TRUE((*exe)->Execute(in, outs).ok());
    return got;
  };
  constexpr int kThreads = 4;
  std::vector<std::vector<Literal>> inputs, alone;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back({RandomInts(xs, 0, 255, 100 + t), RandomInts(Shape(hlo::U8, {}), 0, 255, 200 + t)});
    alone.push_back(run(inputs[t]));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::vector<Literal> got = run(inputs[t]);
        for (size_t k = 0; k < got.size(); ++k)
          if (!(got[k] == alone[t][k])) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_FALSE(alone[0][0] == alone[1][0]);  // different inputs, different results: a mix-up would show
}

// A dot's rescaling written between the 2-D product and the reshape back to
// the activation's shape (as DequantizedProducts leaves a MatMul of a
// [batch, seq, k] activation), then a quantizer: the reshape moves to the
// sums, and the rescaling and the quantizer run as one loop, in one pass
// from the s32 sums, with the evaluator's results bit for bit.
TEST(IntegerProducts, RescalingAcrossTheReshapeBackJoinsTheQuantizer) {
  auto m = std::make_unique<hlo::Module>("rescale_reshape_quantize");
  Builder b(m.get(), "main");
  Shape xs(hlo::U8, {3, 20, 64});
  Instruction* x = b.Parameter(0, xs, "x");
  Instruction* centered =
      b.Binary(Opcode::kSubtract, b.Convert(x, hlo::S32), b.Broadcast(b.ScalarConstant(hlo::S32, 128), xs.dims, {}));
  hlo::DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {0};
  Instruction* sums =
      b.Dot(b.Reshape(centered, {60, 64}), b.Constant(RandomInts(Shape(hlo::S32, {64, 48}), -128, 127, 6)), dn);
  std::vector<float> scales(48);
  for (int k = 0; k < 48; ++k) scales[k] = 1e-3f * (k + 1);
  Instruction* y = b.Binary(Opcode::kMultiply, b.Convert(sums, hlo::F32),
                            b.Broadcast(b.Constant(Literal::Vector(scales)), {60, 48}, {1}));
  y = b.Reshape(y, {3, 20, 48});
  const std::vector<int64_t> dims = {3, 20, 48};
  auto splat = [&](double v) { return b.Broadcast(b.ScalarConstant(hlo::F32, v), dims, {}); };
  Instruction* q = b.Unary(Opcode::kRoundNearestEven, b.Binary(Opcode::kDivide, y, splat(0.37)));
  q = b.Clamp(splat(0), b.Binary(Opcode::kAdd, q, splat(120)), splat(255));
  auto comp = b.Build(b.Convert(q, hlo::U8));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  std::vector<Literal> args;
  args.push_back(RandomInts(xs, 0, 255, 3));
  auto want = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto exe = Executable::Compile(std::move(m), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::map<std::string, int> kinds;
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) kinds[kind] += n;
  EXPECT_EQ(kinds["dnnl-int8-matmul"], 1) << (*exe)->KernelListing();
  EXPECT_EQ(kinds["fusion"], 1) << (*exe)->KernelListing();
  std::vector<const void*> in = {args[0].untyped_data()};
  Literal got((*exe)->output_shapes().at(0));
  std::vector<void*> outs = {got.untyped_data()};
  ASSERT_TRUE((*exe)->Execute(in, outs).ok());
  EXPECT_TRUE(got == *want);
}

INSTANTIATE_TEST_SUITE_P(Cases, IntegerProductTest, ::testing::Range(0, static_cast<int>(Cases().size())),
                         [](const ::testing::TestParamInfo<int>& info) { return Cases()[info.param].name; });

}  // namespace
}  // namespace xonnx::cpu
