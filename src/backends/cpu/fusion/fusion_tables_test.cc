// The fused loop's 8-bit tables and one-pass quantizers: chains of
// quantized models (dequantize, activation, requantize; a product's
// rescaling and requantization) must give the reference evaluator's
// results bit for bit, since a table holds the chain's own results and the
// quantizer runs the same steps. Each case also checks the plan: which
// chains became tables and quantizers, and how many nodes the block loop
// still computes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/fusion/table_lookup.h"
#include "backends/cpu/runtime/executable.h"
#include "backends/cpu/runtime/thunks.h"
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

// x's elements as the importer dequantizes them: (x - zero point) * scale,
// both scalars.
Instruction* Dequantize(Builder& b, Instruction* x, Instruction* scale, Instruction* zp) {
  const std::vector<int64_t>& dims = x->shape().dims;
  Instruction* centered =
      b.Binary(Opcode::kSubtract, b.Convert(x, hlo::F32), b.Broadcast(b.Convert(zp, hlo::F32), dims, {}));
  return b.Binary(Opcode::kMultiply, centered, b.Broadcast(scale, dims, {}));
}

// QuantizeLinear as imported: convert(clamp(lo, round(y / scale) + zp, hi)).
Instruction* Quantize(Builder& b, Instruction* y, Instruction* scale, Instruction* zp, PrimitiveType to) {
  const std::vector<int64_t>& dims = y->shape().dims;
  Instruction* q = b.Unary(Opcode::kRoundNearestEven, b.Binary(Opcode::kDivide, y, b.Broadcast(scale, dims, {})));
  q = b.Binary(Opcode::kAdd, q, b.Broadcast(b.Convert(zp, hlo::F32), dims, {}));
  double lo = to == hlo::U8 ? 0 : -128, hi = to == hlo::U8 ? 255 : 127;
  q = b.Clamp(b.Broadcast(b.ScalarConstant(hlo::F32, lo), dims, {}), q,
              b.Broadcast(b.ScalarConstant(hlo::F32, hi), dims, {}));
  return b.Convert(q, to);
}

struct TableCase {
  std::string name;
  std::vector<Shape> params;
  std::function<Instruction*(Builder&, const std::vector<Instruction*>&)> body;
  // The plan of the one fusion: tables, quantizers, op nodes computed.
  int tables, quantizers, computed_ops;
  // Sets of values for the scalar parameters (scale, zero point, ...), by
  // parameter number: each is a call.
  std::vector<std::vector<std::pair<int, double>>> scalars;
};

std::vector<TableCase> Cases() {
  const double inf = std::numeric_limits<double>::infinity();
  Shape u8(hlo::U8, {3, 37, 29}), s8(hlo::S8, {3, 37, 29});
  Shape f(hlo::F32, {}), zu(hlo::U8, {}), zs(hlo::S8, {});
  return {
      // Between two quantized products: dequantize, ReLU, requantize with
      // another scale; one lookup. The second call's zero scale makes
      // infinities and NaN, the third's infinite one zeros.
      {"dequantize_relu_requantize",
       {u8, f, zu, f, zu},
       [](Builder& b, auto p) {
         Instruction* d = Dequantize(b, p[0], p[1], p[2]);
         Instruction* r =
             b.Binary(Opcode::kMaximum, d, b.Broadcast(b.ScalarConstant(hlo::F32, 0), d->shape().dims, {}));
         return Quantize(b, r, p[3], p[4], hlo::U8);
       },
       1,
       0,
       1,
       {{{1, 0.0059491815}, {2, 129}, {3, 0.00294745946}, {4, 0}},
        {{1, 0.013}, {2, 3}, {3, 0.0}, {4, 200}},
        {{1, 0.5}, {2, 255}, {3, inf}, {4, 7}}}},
      // An s8 source and an s8 result, tanh between.
      {"signed_dequantize_tanh_requantize",
       {s8, f, zs, f, zs},
       [](Builder& b, auto p) {
         return Quantize(b, b.Unary(Opcode::kTanh, Dequantize(b, p[0], p[1], p[2])), p[3], p[4], hlo::S8);
       },
       1,
       0,
       1,
       {{{1, 0.02}, {2, -5}, {3, 0.0078125}, {4, 0}}, {{1, 1e-3}, {2, 127}, {3, 3e-3}, {4, -128}}}},
      // A product's s32 sums rescaled per channel and requantized (the
      // rescaling and quantizer in one pass), then dequantized, hard swish,
      // requantized (a table whose source is the quantizer's result).
      {"rescale_requantize_then_table",
       {Shape(hlo::S32, {1, 30, 30, 16}), Shape(hlo::F32, {16}), Shape(hlo::F32, {16}), f, zu, f, zu},
       [](Builder& b, auto p) {
         const std::vector<int64_t>& dims = p[0]->shape().dims;
         Instruction* y = b.Binary(Opcode::kMultiply, b.Convert(p[0], hlo::F32), b.Broadcast(p[1], dims, {3}));
         y = b.Binary(Opcode::kAdd, y, b.Broadcast(p[2], dims, {3}));
         Instruction* d = Dequantize(b, Quantize(b, y, p[3], p[4], hlo::U8), p[3], p[4]);
         auto scalar = [&](double v) { return b.Broadcast(b.ScalarConstant(hlo::F32, v), dims, {}); };
         Instruction* hs = b.Clamp(scalar(0), b.Binary(Opcode::kAdd, d, scalar(3)), scalar(6));
         hs = b.Binary(Opcode::kMultiply, d, b.Binary(Opcode::kDivide, hs, scalar(6)));
         return Quantize(b, hs, p[5], p[6], hlo::U8);
       },
       1,
       1,
       2,
       {{{3, 0.0031}, {4, 128}, {5, 0.0017}, {6, 10}}}},
      // A dequantized value (and its square) also read with a full f32
      // input: two tables, one the add reads, one the multiply.
      {"dequantize_read_elsewhere",
       {u8, f, zu, Shape(hlo::F32, {3, 37, 29})},
       [](Builder& b, auto p) {
         Instruction* d = Dequantize(b, p[0], p[1], p[2]);
         Instruction* e = b.Binary(Opcode::kMultiply, d, d);
         return b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, e, p[3]), d);
       },
       2,
       0,
       4,
       {{{1, 0.1}, {2, 100}}}},
      // A transformer MLP's middle, channels last: dequantize, a bias per
      // channel (a parameter here), GELU's exact form, requantize. One
      // table of 8 rows of 256, built on each call: the fusion has more
      // than four times its 2048 elements.
      {"dequantize_bias_gelu_requantize_per_channel",
       {Shape(hlo::U8, {1, 40, 40, 8}), f, zu, Shape(hlo::F32, {8}), f, zu},
       [](Builder& b, auto p) {
         const std::vector<int64_t>& dims = p[0]->shape().dims;
         auto scalar = [&](double v) { return b.Broadcast(b.ScalarConstant(hlo::F32, v), dims, {}); };
         Instruction* x = b.Binary(Opcode::kAdd, Dequantize(b, p[0], p[1], p[2]), b.Broadcast(p[3], dims, {3}));
         Instruction* u = b.Binary(
             Opcode::kAdd, b.Unary(Opcode::kErf, b.Binary(Opcode::kDivide, x, scalar(1.4142135381698608))), scalar(1));
         Instruction* g = b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, x, u), scalar(0.5));
         return Quantize(b, g, p[4], p[5], hlo::U8);
       },
       1,
       0,
       1,
       {{{1, 0.0213}, {2, 131}, {4, 0.0087}, {5, 2}}, {{1, 0.5}, {2, 0}, {4, 0.0}, {5, 255}}}},
      // A dequantize (constant scale and zero point), a layer scale and a
      // bias per channel that are constants, then the residual: the table
      // (32 rows, more elements than the fusion has) is built once, with
      // the thunk; the add reads it.
      {"dequantize_constant_bias_and_layer_scale_per_channel",
       {Shape(hlo::S8, {2, 9, 9, 32}), Shape(hlo::F32, {2, 9, 9, 32})},
       [](Builder& b, auto p) {
         const std::vector<int64_t>& dims = p[0]->shape().dims;
         std::vector<float> bias(32), gamma(32);
         for (int k = 0; k < 32; ++k) {
           bias[k] = 0.25f * (k % 7) - 0.75f;
           gamma[k] = k % 5 == 0 ? 0.0f : 1e-2f * (k + 1);
         }
         auto scalar = [&](double v) { return b.Broadcast(b.ScalarConstant(hlo::F32, v), dims, {}); };
         Instruction* d = b.Binary(Opcode::kSubtract, b.Convert(p[0], hlo::F32), scalar(-3));
         d = b.Binary(Opcode::kMultiply, d, scalar(0.031));
         Instruction* x = b.Binary(Opcode::kAdd, d, b.Broadcast(b.Constant(Literal::Vector(bias)), dims, {3}));
         x = b.Binary(Opcode::kMultiply, b.Broadcast(b.Constant(Literal::Vector(gamma)), dims, {3}), x);
         return b.Binary(Opcode::kAdd, x, p[1]);
       },
       1,
       0,
       2,
       {{}}},
      // The same per-channel chain over fewer than four times its table's
      // elements, with a parameter for a bias: no table.
      {"per_channel_chain_too_small_for_its_table",
       {Shape(hlo::U8, {1, 10, 10, 64}), f, zu, Shape(hlo::F32, {64}), f, zu},
       [](Builder& b, auto p) {
         const std::vector<int64_t>& dims = p[0]->shape().dims;
         Instruction* x = b.Binary(Opcode::kAdd, Dequantize(b, p[0], p[1], p[2]), b.Broadcast(p[3], dims, {3}));
         return Quantize(b, b.Unary(Opcode::kTanh, x), p[4], p[5], hlo::U8);
       },
       0,
       1,
       6,
       {{{1, 0.02}, {2, 100}, {4, 0.008}, {5, 128}}}},
      // Fewer elements than a block: no table (filling one would cost as
      // much as the chain).
      {"small_fusion_keeps_its_chain",
       {Shape(hlo::U8, {5, 100}), f, zu, f, zu},
       [](Builder& b, auto p) {
         return Quantize(b, b.Unary(Opcode::kExp, Dequantize(b, p[0], p[1], p[2])), p[3], p[4], hlo::U8);
       },
       0,
       1,
       5,
       {{{1, 0.05}, {2, 10}, {3, 0.2}, {4, 1}}}},
  };
}

// Random values over the whole range of each integer type; f32 from -2 to 2.
Literal RandomArg(const Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  hlo::TypeSwitch(s.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < l.element_count(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        l.data<T>()[i] = std::uniform_real_distribution<T>(-2, 2)(rng);
      } else if constexpr (sizeof(T) == 1) {
        l.data<T>()[i] = static_cast<T>(rng());
      } else {
        l.data<T>()[i] = static_cast<T>(std::uniform_int_distribution<int>(-40000, 40000)(rng));
      }
    }
  });
  return l;
}

// The fusion spec of the computation's elementwise instructions, the way
// the planner would form it: parameters and broadcasts are inputs.
FusionSpec SpecOf(const hlo::Computation& c) {
  FusionSpec spec;
  for (const auto& in : c.instructions()) {
    Opcode op = in->opcode();
    if (op == Opcode::kParameter || op == Opcode::kConstant) continue;
    if (op == Opcode::kBroadcast) {
      spec.inputs.push_back(in.get());
      spec.strided.push_back(true);
    } else if (op == Opcode::kConvert && in->shape().ElementCount() == 1) {
      continue;  // a scalar zero point's convert, computed before the loop
    } else {
      spec.members.push_back(in.get());
    }
  }
  for (const auto& in : c.instructions())
    for (const Instruction* operand : in->operands())
      if (operand->opcode() == Opcode::kParameter && in->opcode() != Opcode::kBroadcast &&
          in->shape().ElementCount() > 1 &&
          std::find(spec.inputs.begin(), spec.inputs.end(), operand) == spec.inputs.end()) {
        spec.inputs.push_back(operand);
        spec.strided.push_back(false);
      }
  return spec;
}

class FusionTableTest : public ::testing::TestWithParam<int> {};

TEST_P(FusionTableTest, EqualsTheEvaluatorBitForBit) {
  const TableCase c = Cases()[GetParam()];
  auto m = std::make_unique<hlo::Module>(c.name);
  Builder b(m.get(), "main");
  std::vector<Instruction*> params;
  for (size_t i = 0; i < c.params.size(); ++i) params.push_back(b.Parameter(i, c.params[i], "p" + std::to_string(i)));
  auto comp = b.Build(c.body(b, params));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);

  auto sum = SummarizeFusion(SpecOf(**comp));
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->tables, c.tables) << c.name;
  EXPECT_EQ(sum->quantizers, c.quantizers) << c.name;
  EXPECT_EQ(sum->computed_ops, c.computed_ops) << c.name;

  auto exe = Executable::Compile(m->Clone(), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  // The chain and scalar zero points' converts.
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) EXPECT_EQ(kind, "fusion") << (*exe)->KernelListing();
  for (const auto& call : c.scalars) {
    std::vector<Literal> args;
    for (size_t i = 0; i < c.params.size(); ++i) args.push_back(RandomArg(c.params[i], 11 + i));
    for (auto [i, v] : call)
      hlo::TypeSwitch(c.params[i].element_type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        args[i].data<T>()[0] = static_cast<T>(v);
      });
    std::vector<const void*> in;
    for (const Literal& a : args) in.push_back(a.untyped_data());
    Literal got((*exe)->output_shapes().at(0));
    void* out = got.untyped_data();
    ASSERT_TRUE((*exe)->Execute(in, absl::MakeSpan(&out, 1)).ok());
    auto want = eval::EvaluateModule(*m, std::move(args));
    ASSERT_TRUE(want.ok()) << want.status();
    int64_t differ = 0, first = -1;
    const int w = hlo::ByteWidth(got.shape().element_type);
    const uint8_t* g = static_cast<const uint8_t*>(got.untyped_data());
    const uint8_t* e = static_cast<const uint8_t*>(want->untyped_data());
    for (int64_t i = 0; i < got.element_count(); ++i) {
      if (std::memcmp(g + i * w, e + i * w, w) == 0) continue;
      if (first < 0) first = i;
      ++differ;
    }
    EXPECT_EQ(differ, 0) << c.name << " with scale " << (call.empty() ? 1.0 : call[0].second) << ": first at " << first
                         << ", " << got.GetAsDouble(first) << " instead of " << want->GetAsDouble(first);
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, FusionTableTest, ::testing::Range(0, static_cast<int>(Cases().size())),
                         [](const auto& info) { return Cases()[info.param].name; });

// The vector byte lookup against the scalar one, over every index and
// lengths with tails of every size.
TEST(TableLookup, BytesMatchTheScalarLoop) {
  std::vector<uint8_t> table(256), index(1000);
  std::mt19937 rng(7);
  for (auto& t : table) t = rng();
  for (size_t i = 0; i < index.size(); ++i) index[i] = i < 256 ? i : rng();
  for (int64_t n : {int64_t{1000}, int64_t{64}, int64_t{63}, int64_t{1}, int64_t{0}}) {
    std::vector<uint8_t> got(n + 1, 0xEE), want(n + 1, 0xEE);
    LookupTable(table.data(), 1, index.data(), got.data(), n);
    internal::LookupBytesPortable(table.data(), index.data(), want.data(), n);
    EXPECT_EQ(got, want) << "n=" << n << (internal::LookupBytesIsVector() ? " (64 lanes)" : " (scalar)");
  }
  std::vector<float> ftable(256);
  for (int k = 0; k < 256; ++k) ftable[k] = k * 0.5f - 3;
  std::vector<float> f(300);
  LookupTable(reinterpret_cast<const uint8_t*>(ftable.data()), 4, index.data(), reinterpret_cast<uint8_t*>(f.data()),
              300);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(f[i], ftable[index[i]]);
}

// The periodic lookup against its definition, for each element width,
// starting phases at and off a row's start, and runs across the period's
// end.
TEST(TableLookup, PeriodicRowsByPosition) {
  constexpr int64_t kPeriod = 7;
  std::mt19937 rng(9);
  std::vector<uint8_t> index(100);
  for (auto& i : index) i = rng();
  for (int width : {1, 2, 4, 8}) {
    std::vector<uint8_t> table(kPeriod * 256 * width);
    for (auto& t : table) t = rng();
    for (int64_t phase : {int64_t{0}, int64_t{3}, kPeriod - 1}) {
      std::vector<uint8_t> got(index.size() * width);
      LookupPeriodic(table.data(), width, kPeriod, phase, index.data(), got.data(), index.size());
      for (size_t i = 0; i < index.size(); ++i) {
        const uint8_t* want = table.data() + (((phase + i) % kPeriod) * 256 + index[i]) * width;
        ASSERT_EQ(0, std::memcmp(got.data() + i * width, want, width))
            << "width " << width << " phase " << phase << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace xonnx::cpu
