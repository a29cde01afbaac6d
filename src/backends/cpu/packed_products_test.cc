// Products by block-quantized weights on their packed bytes (the
// packed-matmul kernel PlanPackedProducts plans) against the reference
// evaluator, over a table of forms: 4 and 8 bits, blocks of 16 to 256, K
// a whole number of blocks or not, zero points none, run-time or unpacked
// from constant bytes, 1 to 21 rows, 2-D and 3-D activations. The weights
// are the values the program's own dequantization gives (the kernel must
// not round them differently), so only the order of the sums differs.
// Forms that differ from the importer's in any part keep the program as
// written. On a CPU without AVX-512 (F, BW, VL, DQ) nothing is planned on
// the packed weights: every form runs as written, with the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/kernels/packed_dot.h"
#include "backends/cpu/packed_products_testing.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"

namespace xonnx::cpu {
namespace {

using namespace packed_testing;  // NOLINT(build/namespaces): the forms and their checks

std::vector<Form> Table() {
  std::vector<Form> forms;
  for (int bits : {4, 8})
    for (int64_t block : {16, 32, 64, 128, 256})
      for (Zeros z : {Zeros::kDefault, Zeros::kRunTime, Zeros::kPackedConstant}) {
        // Whole blocks; K ending inside a block (and inside a chunk of the
        // kernel's 16 bytes); a single short block; an odd count of blocks.
        for (int64_t k : {block * 3, block * 3 - 5, std::min<int64_t>(block, 7) + 1, block * 5 - block / 2})
          forms.push_back({bits, block, k, 37, 1, z, false});
        forms.push_back({bits, block, block * 2 + 3, 21, 21, z, false});
        forms.push_back({bits, block, block * 2 + 3, 300, 40, z, false});  // oneDNN's GEMM, panels
        forms.push_back({bits, block, block * 2, 5, 3, z, true});
        if (bits == 8) forms.push_back({bits, block, block * 3 - 1, 19, 2, z, false, false, false, true});
        // Constant weights and scales (4 bits: the interleaved layout,
        // whose 16-row groups end inside the last one here; zero points
        // one for all or unpacked from constant bytes).
        if (bits == 4 && z != Zeros::kRunTime)
          for (int64_t rows : {1, 2, 3, 4, 5, 7, 9, 40})
            for (int64_t k : {block * 3, block * 3 - 5, block * 5 - block / 2}) {
              // N: 16-row groups that end inside the last one, a whole
              // number of them, fewer than one.
              for (int64_t n : {int64_t{37}, rows <= 2 ? int64_t{32} : int64_t{12}}) {
                Form c{bits, block, k, n, rows, z, rows == 3};
                c.constant = true;
                forms.push_back(c);
              }
            }
      }
  return forms;
}

TEST(PackedProducts, TableMatchesTheEvaluator) {
  for (const Form& f : Table()) {
    Literal want;
    std::map<std::string, int> kinds;
    Literal got = RunNative(f, &want, &kinds);
    EXPECT_EQ(kinds["packed-matmul"], Planned()) << f.Name();
    // Nothing is left of the unpacking.
    if (Planned()) {
      EXPECT_EQ(kinds["concatenate"], 0) << f.Name();
    }
    ExpectClose(got, want, f);
  }
}

// Large enough to split between threads: the same as one thread.
TEST(PackedProducts, DecoderSizedProductsMatchTheEvaluator) {
  std::vector<Form> forms;
  for (int64_t rows : {1, 8, 19, 64}) {
    for (int bits : {4, 8}) forms.push_back({bits, 32, 1024, 700, rows, Zeros::kPackedConstant, false});
    // 4-bit constant weights (the interleaved layout), with one zero point
    // and with zero points per block.
    for (Zeros z : {Zeros::kDefault, Zeros::kPackedConstant}) {
      Form c{4, 32, 1024, 700, rows, z, false};
      c.constant = true;
      forms.push_back(c);
    }
  }
  for (const Form& f : forms) {
    Literal want;
    std::map<std::string, int> kinds;
    Literal got = RunNative(f, &want, &kinds);
    EXPECT_EQ(kinds["packed-matmul"], Planned()) << f.Name();
    ExpectClose(got, want, f);
  }
}

// The dequantized weights also read as another product's activation: they
// are computed for it, whatever reads them packed.
TEST(PackedProducts, WeightsReadAsAnActivationAreComputed) {
  Form f{4, 32, 64, 24, 3, Zeros::kDefault, false};
  std::vector<Literal> args;
  std::unique_ptr<hlo::Module> m = Build(f, &args);
  hlo::Computation* entry = m->entry();
  Instruction* dot = entry->root();
  Instruction* w = dot->operand(1);
  hlo::DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {1};
  auto square = std::make_unique<Instruction>(Opcode::kDot, Shape(hlo::F32, {f.n, f.n}));
  square->AppendOperand(w);
  square->AppendOperand(w);
  square->dot_dnums = dn;
  Instruction* sq = entry->AddInstruction(std::move(square));
  auto tuple = std::make_unique<Instruction>(Opcode::kTuple, Shape::Tuple({dot->shape(), sq->shape()}));
  tuple->AppendOperand(dot);
  tuple->AppendOperand(sq);
  entry->set_root(entry->AddInstruction(std::move(tuple)));
  auto want = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<Literal> got = CompileAndRun(std::move(m), args);
  ASSERT_EQ(got.size(), 2u);
  for (size_t k = 0; k < got.size(); ++k) {
    Form g = f;
    if (k == 1) g.k = f.k * 10;  // sums of weights by weights: a wider bound
    ExpectClose(got[k], want->tuple_elements()[k], g);
  }
}

// A scale that is not finite reaches exactly the outputs it reaches in the
// program as written (its block's; the kernel's padding past K gives no
// NaN of its own).
TEST(PackedProducts, ScalesThatAreNotFiniteReachTheSameOutputs) {
  Form f{4, 32, 40, 6, 2, Zeros::kDefault, false};
  std::vector<Literal> args;
  std::unique_ptr<hlo::Module> m = Build(f, &args);
  args[2].data<float>()[1] = std::numeric_limits<float>::infinity();  // row 0's second block: k 32..39
  args[2].data<float>()[4] = std::nanf("");                           // row 2's first block
  auto want = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<Literal> got = CompileAndRun(std::move(m), args);
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < got[0].element_count(); ++i)
    EXPECT_EQ(std::isfinite(got[0].data<float>()[i]), std::isfinite(want->data<float>()[i])) << i;
}

// An infinity or a NaN in the activation gives the program's values on
// constant weights too: NaN where the program has NaN, the same infinity
// where it has one (sum(q * x) - z * sum(x) would turn an infinity into
// a NaN).
TEST(PackedProducts, ActivationsThatAreNotFiniteAreTheProgramsValuesOnConstantWeights) {
  for (Zeros z : {Zeros::kDefault, Zeros::kPackedConstant})
    for (int64_t rows : {1, 3}) {
      Form f{4, 32, 96, 37, rows, z, false};
      f.constant = true;
      ExpectProgramsNonFiniteValues(
          f,
          [&](float* x) {
            x[5] = std::numeric_limits<float>::infinity();
            if (rows > 1) x[f.k + 40] = std::nanf("");
          },
          1e-3);
    }
}

// Constant scales that are not finite give the program's NaNs and
// infinities: NaN where a code equals the zero point, which a block's sum
// scaled after the fact would turn into an infinity.
TEST(PackedProducts, ConstantScalesThatAreNotFiniteAreTheProgramsValues) {
  for (Zeros z : {Zeros::kDefault, Zeros::kPackedConstant}) {
    Form f{4, 32, 96, 37, 2, z, false};
    f.constant = true;
    f.scale_edits = {
        {1, std::numeric_limits<float>::infinity()}, {7, -std::numeric_limits<float>::infinity()}, {9, std::nanf("")}};
    ExpectProgramsNonFiniteValues(
        f, [](float*) {}, 1e-3);
  }
}

// An activation so large that a block's unscaled sum would overflow,
// where the program's scaled terms stay finite, gives the program's
// values.
TEST(PackedProducts, HugeActivationsOnConstantWeightsAreTheProgramsValues) {
  for (Zeros z : {Zeros::kDefault, Zeros::kPackedConstant}) {
    Form f{4, 32, 96, 37, 1, z, false};
    f.constant = true;
    ExpectProgramsNonFiniteValues(
        f,
        [](float* x) {
          for (int i = 0; i < 32; ++i) x[i] = 3e37f;
        },
        1e33);
  }
}

// A shift of 3, or the high nibbles first, is another computation: its
// unpacking runs as written, and the product reads the unpacked values as
// 8-bit weights; the values are still the evaluator's.
TEST(PackedProducts, OtherUnpackingsRunAsWritten) {
  for (bool shift : {true, false}) {
    Form f{4, 32, 64, 9, 2, Zeros::kDefault, false};
    f.wrong_shift = shift;
    f.swapped_nibbles = !shift;
    Literal want;
    std::map<std::string, int> kinds;
    Literal got = RunNative(f, &want, &kinds);
    EXPECT_EQ(kinds["concatenate"], 1) << f.Name();
    ExpectClose(got, want, f);
  }
}

// x [..., K] rounded as the int8 kernel rounds it, back in f32: each
// block of `block` values of a row becomes round(v * 127 / max|v|) *
// (max|v| / 127), the values whose exact product the kernel computes.
Literal RoundedActivation(const Literal& x, int64_t k, int64_t block) {
  Literal out = x;
  float* v = out.data<float>();
  for (int64_t lo = 0; lo < out.element_count(); lo += k)
    for (int64_t b = lo; b < lo + k; b += block) {
      const int64_t hi = std::min(lo + k, b + block);
      float amax = 0;
      for (int64_t i = b; i < hi; ++i) amax = std::max(amax, std::fabs(v[i]));
      const float scale = amax / 127, inverse = amax > 0 ? 127 / amax : 0;
      for (int64_t i = b; i < hi; ++i) v[i] = std::nearbyint(v[i] * inverse) * scale;
    }
  return out;
}

// A product that allows an int8 activation, on a CPU with AVX-512 VNNI and
// fewer rows than the GEMM's 32, is the exact product of the rounded
// activation (within the order of the sums) and differs from the exact one
// of the activation as it is; other products stay exact.
TEST(PackedProducts, Int8ActivationsGiveTheProductOfTheRoundedActivation) {
  for (Form f : Table()) {
    f.int8 = true;
    std::vector<Literal> args;
    std::unique_ptr<hlo::Module> m = Build(f, &args);
    const bool rounded = CpuHasAvx512Vnni() && args[0].element_count() / f.k < 32;
    std::vector<Literal> as_rounded = args;
    if (rounded) as_rounded[0] = RoundedActivation(args[0], f.k, f.block);
    auto want = eval::EvaluateModule(*m, as_rounded);
    auto exact = eval::EvaluateModule(*m, args);
    ASSERT_TRUE(want.ok() && exact.ok()) << f.Name();
    std::map<std::string, int> kinds;
    std::vector<Literal> got = CompileAndRun(std::move(m), args, &kinds);
    ASSERT_EQ(got.size(), 1u) << f.Name();
    EXPECT_EQ(kinds["packed-matmul"], Planned()) << f.Name();
    ExpectClose(got[0], *want, f);
    if (!rounded) continue;
    int differ = 0;
    for (int64_t i = 0; i < got[0].element_count(); ++i)
      differ += std::fabs(got[0].data<float>()[i] - exact->data<float>()[i]) > 1e-4;
    EXPECT_GT(differ, 0) << f.Name() << ": the activation was not rounded";
  }
}

// An activation value that is not finite cannot be rounded: the call runs
// the f32 kernel, and the NaNs and infinities are the program's.
TEST(PackedProducts, Int8ActivationsThatAreNotFiniteAreTheProgramsValues) {
  for (int bits : {4, 8}) {
    Form f{bits, 32, 80, 20, 4, Zeros::kRunTime, false};
    f.int8 = true;
    ExpectProgramsNonFiniteValues(
        f,
        [&](float* x) {
          x[5] = std::nanf("");                                  // row 0
          x[f.k + 70] = std::numeric_limits<float>::infinity();  // row 1
        },
        1e-3);
  }
}

// The vector preparation of an int8 activation writes the reference's
// bytes exactly (values, lane terms, lane scales, and the zeros past the
// row): 4 and 8 bits, blocks of 16 to 256, K whole or ending inside a
// block, lane or step, 1 to 3 rows, zero points per block or one for all,
// and values at exact ties of the rounding. A NaN or an infinity, and a
// zero point for all that is not a whole number, are refused by both. On
// a CPU without AVX-512 VNNI, Int8Prepare is the reference itself.
TEST(PackedProducts, Int8PreparationMatchesTheReferenceByteForByte) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int bits : {4, 8})
    for (int64_t block : {16, 32, 64, 256})
      for (int64_t k : {block, block * 3 - 5, block * 2 + 9, int64_t{7}, block * 5 + 1, int64_t{300}})
        for (int64_t rows : {1, 3})
          for (bool zeros : {false, true}) {
            packed_dot::Dims d{};
            d.bits = bits;
            d.block = block;
            d.blocks = (k + block - 1) / block;
            d.k = k;
            d.rows = rows;
            d.n = 1;
            d.row_bytes = d.blocks * block * bits / 8;
            d.zeros = zeros;
            d.zero = bits == 4 ? 8 : 128;
            d.int8 = true;
            std::vector<float> x(rows * k);
            for (float& v : x) v = dist(rng);
            // Ties: a block whose largest magnitude is 127 has scale 1.
            x[0] = 127;
            for (int64_t i = 1; i < std::min<int64_t>(k, block); i += 3) x[i] = std::floor(x[i] * 20) + 0.5f;
            const std::string name =
                absl::StrCat("bits", bits, "_block", block, "_k", k, "_rows", rows, "_zeros", zeros);
            std::vector<uint8_t> got(packed_dot::Int8PreparedSize(d), 0xAB), want(got.size(), 0xCD);
            ASSERT_TRUE(packed_dot::Int8Prepare(d, x.data(), got.data())) << name;
            ASSERT_TRUE(packed_dot::Int8PrepareReference(d, x.data(), want.data())) << name;
            for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << name << " byte " << i;
            x[rows * k - 1] = std::numeric_limits<float>::infinity();
            EXPECT_FALSE(packed_dot::Int8Prepare(d, x.data(), got.data())) << name;
            EXPECT_FALSE(packed_dot::Int8PrepareReference(d, x.data(), want.data())) << name;
            x[rows * k - 1] = 0;
            x[0] = std::nanf("");
            EXPECT_FALSE(packed_dot::Int8Prepare(d, x.data(), got.data())) << name;
            x[0] = 1;
            d.zero = 8.5f;
            EXPECT_EQ(packed_dot::Int8Prepare(d, x.data(), got.data()), zeros) << name;
            EXPECT_EQ(packed_dot::Int8PrepareReference(d, x.data(), want.data()), zeros) << name;
          }
}

}  // namespace
}  // namespace xonnx::cpu
