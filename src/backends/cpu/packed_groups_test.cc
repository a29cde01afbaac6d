// Packed products that read one activation, run as one step
// (PlanSiblingProducts, MakePackedGroupThunk), against the reference
// evaluator: a decoder layer's projections (the same K and blocks, N of
// their own, whole 16-row groups or not), products that read the
// activation through reshapes of their own, siblings the group kernel does
// not take (run-time zero points, other blocks, another activation) left
// on their own, activations that are not finite, and users of each
// product between the members in program order. On a CPU without AVX-512
// nothing is grouped and every product runs as written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/packed_products_testing.h"

namespace xonnx::cpu {
namespace {

using namespace packed_testing;  // NOLINT(build/namespaces): the forms and their checks

// A product of the group: its form (K and rows those of the activation),
// whether it reads the activation through a reshape of its own, and
// whether its result is read by an op placed before the next product.
struct Member {
  Form form;
  bool reshaped = false;
  bool used_between = false;
};

// A module whose products all read one activation of `rows` x `k`
// (through a [1, rows, k] value and reshapes where asked); the result is
// the tuple of every product's value (or of the value an op computed from
// it). The activation's values go to args[0]; `poke` changes them.
std::unique_ptr<hlo::Module> BuildGroup(const std::vector<Member>& members, int64_t rows, int64_t k,
                                        std::vector<Literal>* args, uint32_t seed = 10) {
  auto m = std::make_unique<hlo::Module>("group");
  Builder b(m.get(), "main");
  const Shape xs(hlo::F32, {1, rows, k});
  Instruction* x3 = b.Parameter(0, xs, "x");
  args->push_back(RandomFloats(xs, -1, 1, 1));
  Instruction* x = b.Reshape(x3, {rows, k});
  std::vector<Instruction*> results;
  for (const Member& member : members) {
    Instruction* in = member.reshaped ? b.Reshape(x3, {rows, k}) : x;
    Instruction* dot = AddProduct(b, in, member.form, args, seed);
    seed += 10;
    // An op on the product placed right after it, before the next member:
    // the group's step writes the product earlier than its place.
    if (member.used_between) dot = b.Binary(Opcode::kAdd, dot, dot);
    results.push_back(dot);
  }
  auto comp = b.Build(b.Tuple(results));
  EXPECT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  return m;
}

// Runs the group natively and by the evaluator, expecting each product's
// values (NaN where the program has NaN, its infinities) and `thunks`
// packed-matmul steps where the packed kernels run.
void ExpectGroup(const std::vector<Member>& members, int64_t rows, int64_t k, int thunks,
                 float poked = std::numeric_limits<float>::quiet_NaN(), bool poke = false) {
  std::vector<Literal> args;
  std::unique_ptr<hlo::Module> m = BuildGroup(members, rows, k, &args);
  if (poke) args[0].data<float>()[k / 2] = poked;
  auto want = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  std::map<std::string, int> kinds;
  std::vector<Literal> got = CompileAndRun(std::move(m), args, &kinds);
  ASSERT_EQ(got.size(), members.size());
  if (Planned()) {
    EXPECT_EQ(kinds["packed-matmul"], thunks) << members.size() << " products";
  }
  const std::vector<Literal>& expected = want->tuple_elements();
  for (size_t i = 0; i < members.size(); ++i) {
    if (!poke) {
      Form f = members[i].form;
      f.k *= members[i].used_between ? 2 : 1;  // the sum of two products: twice the bound
      ExpectClose(got[i], expected[i], f);
      continue;
    }
    for (int64_t e = 0; e < got[i].element_count(); ++e) {
      const float g = got[i].data<float>()[e], w = expected[i].data<float>()[e];
      EXPECT_EQ(std::isnan(g), std::isnan(w)) << "product " << i << " element " << e << ": " << g << " vs " << w;
      if (std::isinf(w)) EXPECT_EQ(g, w) << "product " << i << " element " << e;
    }
  }
}

// A constant 4-bit product of K = k in blocks of `block`, N = n.
Form Interleavable(int64_t block, int64_t k, int64_t n, int64_t rows, Zeros zeros = Zeros::kDefault) {
  Form f{4, block, k, n, rows, zeros, false};
  f.constant = true;
  return f;
}

TEST(PackedGroups, ProjectionsOfOneActivationMatchTheEvaluator) {
  for (int64_t rows : {1, 3, 9}) {
    for (int64_t k : {int64_t{96}, int64_t{91}}) {  // whole blocks; K ending inside one
      // Query, key and value of different widths, one with zero points
      // unpacked from constant bytes: one step.
      ExpectGroup({{Interleavable(32, k, 64, rows)},
                   {Interleavable(32, k, 37, rows, Zeros::kPackedConstant)},
                   {Interleavable(32, k, 12, rows)}},
                  rows, k, 1);
      // Gate and up, large enough to split between the threads.
      ExpectGroup({{Interleavable(32, k, 700, rows)}, {Interleavable(32, k, 700, rows)}}, rows, k, 1);
    }
  }
}

TEST(PackedGroups, ReshapesAndUsersBetweenTheMembersKeepTheValues) {
  // Each product reads the activation through a reshape of its own (as
  // the importer writes them), and some products' results are read
  // before the next product runs in the program as written.
  ExpectGroup({{Interleavable(32, 128, 48, 1), true, true},
               {Interleavable(32, 128, 40, 1), true, false},
               {Interleavable(32, 128, 33, 1), false, true},
               {Interleavable(32, 128, 16, 1), true, true}},
              1, 128, 1);
}

TEST(PackedGroups, ProductsTheGroupKernelDoesNotTakeRunAlone) {
  // Run-time zero points, 8 bits, another block size: each on its own
  // kernel; the two interleaved products of blocks of 32 are one step.
  Form runtime_zeros{4, 32, 128, 24, 2, Zeros::kRunTime, false};
  Form eight_bits{8, 32, 128, 24, 2, Zeros::kDefault, false};
  ExpectGroup({{Interleavable(32, 128, 24, 2)},
               {runtime_zeros},
               {Interleavable(64, 128, 24, 2)},
               {eight_bits},
               {Interleavable(32, 128, 20, 2)}},
              2, 128, 4);
  // Prompts (32 rows and more) run on oneDNN's GEMM, one product at a time.
  ExpectGroup({{Interleavable(32, 128, 24, 40)}, {Interleavable(32, 128, 20, 40)}}, 40, 128, 2);
}

TEST(PackedGroups, ActivationsThatAreNotFiniteAreTheProgramsValues) {
  // The shared scan refuses the activation: every member runs alone on the
  // kernel that gives the program's NaNs and infinities.
  const float huge = std::numeric_limits<float>::max() / 8;
  for (float v : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), huge}) {
    ExpectGroup({{Interleavable(32, 96, 40, 1)}, {Interleavable(32, 96, 17, 1, Zeros::kPackedConstant)}}, 1, 96, 1, v,
                true);
    // Rounded to int8 (with AVX-512 VNNI; else each on its own kernel).
    Form a = Interleavable(32, 96, 40, 1), b = Interleavable(32, 96, 17, 1);
    a.int8 = b.int8 = true;
    ExpectGroup({{a}, {b}}, 1, 96, CpuHasAvx512Vnni() ? 1 : 2, v, true);
  }
}

TEST(PackedGroups, GroupedProductsAreTheProductsRunAlone) {
  // The same weights and activation, grouped and each in a program of its
  // own: the same values to the bit (the group only shares the
  // preparation and the threads). The activation rounded to int8 (on a
  // CPU with AVX-512 VNNI) and f32 on the interleaved layout.
  for (bool int8 : {true, false}) {
    std::vector<Member> members;
    for (int64_t n : {64, 37, 700}) {
      Form f = Interleavable(32, 160, n, 1, n == 37 ? Zeros::kPackedConstant : Zeros::kDefault);
      f.int8 = int8;
      members.push_back({f});
    }
    std::vector<Literal> args;
    std::map<std::string, int> kinds;
    std::vector<Literal> grouped = CompileAndRun(BuildGroup(members, 1, 160, &args), args, &kinds);
    ASSERT_EQ(grouped.size(), members.size());
    // Rounded to int8, the product with zero points per block prepares
    // its activation another way: it runs alone.
    const int steps = !int8 ? 1 : CpuHasAvx512Vnni() ? 2 : 3;
    if (Planned()) {
      EXPECT_EQ(kinds["packed-matmul"], steps) << (int8 ? "int8" : "f32");
    }
    for (size_t i = 0; i < members.size(); ++i) {
      std::vector<Literal> alone_args;
      std::vector<Literal> alone =
          CompileAndRun(BuildGroup({members[i]}, 1, 160, &alone_args, 10 + 10 * i), alone_args);
      ASSERT_EQ(alone.size(), 1u);
      ASSERT_EQ(alone[0].element_count(), grouped[i].element_count());
      EXPECT_EQ(std::memcmp(alone[0].untyped_data(), grouped[i].untyped_data(), alone[0].size_bytes()), 0)
          << (int8 ? "int8" : "f32") << " product " << i;
    }
  }
}

}  // namespace
}  // namespace xonnx::cpu
