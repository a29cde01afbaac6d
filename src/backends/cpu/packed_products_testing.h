// What the tests of the products by packed weights share
// (packed_products_test.cc, packed_groups_test.cc): the importer's
// MatMulNBits form built by hand for a table of forms, run natively and by
// the reference evaluator, and the tolerance of their sums.
#ifndef XONNX_BACKENDS_CPU_PACKED_PRODUCTS_TESTING_H_
#define XONNX_BACKENDS_CPU_PACKED_PRODUCTS_TESTING_H_

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"

namespace xonnx::cpu::packed_testing {

using hlo::Builder;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;
using hlo::Shape;

enum class Zeros { kDefault, kRunTime, kPackedConstant };

struct Form {
  int bits;
  int64_t block, k, n, rows;
  Zeros zeros;
  bool rank3;
  // Changes to the importer's form that must keep the program as written.
  bool wrong_shift = false, swapped_nibbles = false;
  // 8 bits: the weights a constant, as constant folding leaves them (f32).
  bool folded = false;
  // The dot allows an int8 activation (MatMulNBits at accuracy_level 4).
  bool int8 = false;
  // The packed bytes and the scales are constants of the program, as a
  // model's initializers are (4 bits, one zero point: the interleaved
  // layout), not parameters.
  bool constant = false;
  // Scales set to other values (index, value): infinities, NaNs.
  std::vector<std::pair<int64_t, float>> scale_edits = {};
  std::string Name() const {
    return absl::StrCat("bits", bits, "_block", block, "_k", k, "_n", n, "_rows", rows, "_zeros",
                        static_cast<int>(zeros), rank3 ? "_3d" : "", wrong_shift ? "_wrongshift" : "",
                        swapped_nibbles ? "_swapped" : "", folded ? "_folded" : "", int8 ? "_int8" : "",
                        constant ? "_constant" : "");
  }
};

inline Literal RandomBytes(const Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<uint8_t>()[i] = static_cast<uint8_t>(rng() & 255);
  return l;
}

inline Literal RandomFloats(const Shape& s, float lo, float hi, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> v(lo, hi);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = v(rng);
  return l;
}

// The importer's unpacking of `bits`-bit values from u8 bytes (..., C).
inline Instruction* Unpack(Builder& b, Instruction* bytes, const Form& f) {
  if (f.bits == 8) return bytes;
  std::vector<int64_t> d = bytes->shape().dims, one = d;
  one.push_back(1);
  auto splat = [&](int v) { return b.Broadcast(b.ScalarConstant(hlo::U8, v), d, {}); };
  Instruction* lo = b.Reshape(b.Binary(Opcode::kAnd, bytes, splat(15)), one);
  Instruction* hi = b.Reshape(b.Binary(Opcode::kShiftRightLogical, bytes, splat(f.wrong_shift ? 3 : 4)), one);
  std::vector<int64_t> out = d;
  out.back() *= 2;
  std::vector<Instruction*> parts = f.swapped_nibbles ? std::vector<Instruction*>{hi, lo} : std::vector{lo, hi};
  return b.Reshape(b.Concatenate(parts, static_cast<int64_t>(d.size())), out);
}

// The activation of `f`'s shape, [rows, K] (or [2, rows, K]).
inline Shape ActivationShape(const Form& f) {
  return f.rank3 ? Shape(hlo::F32, {2, f.rows, f.k}) : Shape(hlo::F32, {f.rows, f.k});
}

// The importer's MatMulNBits form for `f` on the activation `x`: its
// parameters' values go to `args`, and `seed` picks its weights.
inline Instruction* AddProduct(Builder& b, Instruction* x, const Form& f, std::vector<Literal>* args,
                               uint32_t seed = 2) {
  const int64_t blocks = (f.k + f.block - 1) / f.block, blob = f.block * f.bits / 8;
  const Shape& xs = x->shape();
  // A parameter of value `v`, or with f.constant, `v` as a constant.
  auto input = [&](Literal v, const char* name, bool may_be_constant) {
    if (f.constant && may_be_constant) return b.Constant(std::move(v));
    Instruction* p = b.Parameter(static_cast<int64_t>(args->size()), v.shape(), name);
    args->push_back(std::move(v));
    return p;
  };
  Literal packed_bytes = RandomBytes(Shape(hlo::U8, {f.n * blocks * blob}), seed);
  const std::vector<uint8_t> bytes(packed_bytes.data<uint8_t>(), packed_bytes.data<uint8_t>() + f.n * blocks * blob);
  Instruction* packed = input(std::move(packed_bytes), "packed", true);
  Literal scale_values = RandomFloats(Shape(hlo::F32, {f.n * blocks}), 0.01f, 0.2f, seed + 1);
  for (const auto& [i, v] : f.scale_edits) scale_values.data<float>()[i] = v;
  Instruction* scales = input(std::move(scale_values), "scales", true);
  const std::vector<int64_t> wd = {f.n, blocks, f.block};
  Instruction* q = Unpack(b, b.Reshape(packed, {f.n, blocks, blob}), f);
  Instruction* qf = b.Convert(q, hlo::F32);
  if (f.folded) {
    Literal values(Shape(hlo::F32, {f.n, blocks, blob}));
    for (int64_t i = 0; i < values.element_count(); ++i) values.data<float>()[i] = bytes[i];
    qf = b.Constant(std::move(values));
  }
  Instruction* zp = nullptr;
  if (f.zeros == Zeros::kDefault) {
    zp = b.Broadcast(b.ScalarConstant(hlo::F32, 1 << (f.bits - 1)), wd, {});
  } else if (f.zeros == Zeros::kRunTime) {
    Literal zeros = RandomFloats(Shape(hlo::F32, {f.n, blocks}), 0, 15, seed + 2);
    for (int64_t i = 0; i < zeros.element_count(); ++i) zeros.data<float>()[i] = std::round(zeros.data<float>()[i]);
    zp = b.Broadcast(input(std::move(zeros), "zeros", false), wd, {0, 1});
  } else {
    const int64_t per_row = (blocks * f.bits + 7) / 8;
    Instruction* z = b.Constant(RandomBytes(Shape(hlo::U8, {f.n, per_row}), seed + 3));
    Instruction* zs = Unpack(b, z, f);
    if (zs->shape().dims[1] != blocks) zs = b.Slice(zs, {0, 0}, {f.n, blocks}, {1, 1});
    zp = b.Broadcast(b.Convert(zs, hlo::F32), wd, {0, 1});
  }
  Instruction* w = b.Binary(Opcode::kMultiply, b.Binary(Opcode::kSubtract, qf, zp),
                            b.Broadcast(b.Reshape(scales, {f.n, blocks}), wd, {0, 1}));
  w = b.Reshape(w, {f.n, blocks * f.block});
  if (blocks * f.block != f.k) w = b.Slice(w, {0, 0}, {f.n, f.k}, {1, 1});
  hlo::DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {xs.rank() - 1};
  dn.rhs_contracting_dimensions = {1};
  Instruction* dot = b.Dot(x, w, dn);
  if (f.int8) dot->frontend_attributes[hlo::kInt8ActivationsAttribute] = "true";
  return dot;
}

// The importer's MatMulNBits form for `f`; its parameters' values go to
// `args`.
inline std::unique_ptr<hlo::Module> Build(const Form& f, std::vector<Literal>* args) {
  auto m = std::make_unique<hlo::Module>("packed");
  Builder b(m.get(), "main");
  Instruction* x = b.Parameter(0, ActivationShape(f), "x");
  args->push_back(RandomFloats(ActivationShape(f), -1, 1, 1));
  Instruction* dot = AddProduct(b, x, f, args);
  auto comp = b.Build(dot);
  EXPECT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  return m;
}

// `m` compiled natively and run on `args`: its outputs (the kernel counts
// go to `kinds`, when given).
inline std::vector<Literal> CompileAndRun(std::unique_ptr<hlo::Module> m, const std::vector<Literal>& args,
                                          std::map<std::string, int>* kinds = nullptr) {
  auto exe = Executable::Compile(std::move(m), CompileOptions{});
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return {};
  if (kinds)
    for (const auto& [kind, count] : (*exe)->ThunkSummary()) (*kinds)[kind] += count;
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  std::vector<Literal> got;
  std::vector<void*> outs;
  for (const Shape& s : (*exe)->output_shapes()) got.emplace_back(s);
  for (Literal& l : got) outs.push_back(l.untyped_data());
  EXPECT_TRUE((*exe)->Execute(in, outs).ok());
  return got;
}

// Runs `f` natively and by the evaluator after `poke` changed its
// activation, and expects NaN where the program has NaN and the same
// infinity where it has one; finite values within `tolerance`.
inline void ExpectProgramsNonFiniteValues(const Form& f, const std::function<void(float*)>& poke, double tolerance) {
  std::vector<Literal> args;
  std::unique_ptr<hlo::Module> m = Build(f, &args);
  poke(args[0].data<float>());
  auto want = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<Literal> got = CompileAndRun(std::move(m), args);
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < got[0].element_count(); ++i) {
    const float g = got[0].data<float>()[i], w = want->data<float>()[i];
    EXPECT_EQ(std::isnan(g), std::isnan(w)) << f.Name() << " element " << i << ": " << g << " vs " << w;
    if (std::isfinite(w)) {
      EXPECT_NEAR(g, w, tolerance) << f.Name() << " element " << i;
    } else if (!std::isnan(w)) {
      EXPECT_EQ(g, w) << f.Name() << " element " << i;
    }
  }
}

// Runs `f` natively; the evaluator's result goes to `want`, the kernel
// counts to `kinds`.
inline Literal RunNative(const Form& f, Literal* want, std::map<std::string, int>* kinds) {
  std::vector<Literal> args;
  std::unique_ptr<hlo::Module> m = Build(f, &args);
  auto reference = eval::EvaluateModule(*m, args);
  EXPECT_TRUE(reference.ok()) << reference.status();
  *want = *reference;
  std::vector<Literal> got = CompileAndRun(std::move(m), args, kinds);
  return got.empty() ? Literal() : std::move(got[0]);
}

// The sums differ only in order: within a few roundings of the largest
// partial sum, which |x| . |w| bounds.
inline void ExpectClose(const Literal& got, const Literal& want, const Form& f) {
  ASSERT_EQ(got.element_count(), want.element_count());
  const double bound = f.k * 1.0 * (1 << f.bits) * 0.2 * 1e-6 + 1e-6;
  int wrong = 0;
  for (int64_t i = 0; i < got.element_count(); ++i) {
    double g = got.data<float>()[i], w = want.data<float>()[i];
    if (!(std::fabs(g - w) <= bound) && ++wrong <= 3)
      ADD_FAILURE() << f.Name() << " element " << i << ": " << g << " vs " << w;
  }
}

// Products planned on packed weights on this CPU: 1 or 0.
inline int Planned() { return CpuHasAvx512Bw() ? 1 : 0; }

}  // namespace xonnx::cpu::packed_testing

#endif  // XONNX_BACKENDS_CPU_PACKED_PRODUCTS_TESTING_H_
