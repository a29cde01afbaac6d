// StableHLO: modules written by ToStableHlo and read back by ParseStableHlo
// compute what the originals compute (on the reference evaluator), for
// every kind of region (reductions, sorts, scatters, loops, branches that
// read outer values), calls and ops of several results; and the reader's
// errors name the line.
#include "hlo/stablehlo.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "evaluator/evaluator.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/stablehlo_syntax.h"

namespace xonnx::hlo {
namespace {

// `text` (HLO text) through StableHLO and back; both evaluated on `args`.
void ExpectRoundTrip(const std::string& text, const std::vector<Literal>& args,
                     const std::vector<std::string>& expect_in_mlir = {}) {
  auto m = ParseText(text);
  ASSERT_TRUE(m.ok()) << m.status() << "\n" << text;
  auto mlir = ToStableHlo(**m);
  ASSERT_TRUE(mlir.ok()) << mlir.status();
  for (const std::string& s : expect_in_mlir) EXPECT_NE(mlir->find(s), std::string::npos) << s << "\n" << *mlir;
  auto back = ParseStableHlo(*mlir);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << *mlir;
  auto want = eval::EvaluateModule(**m, args);
  auto got = eval::EvaluateModule(**back, args);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << ToText(**back);
  EXPECT_TRUE(*want == *got) << *mlir << "\n" << ToText(**back);
  // Writing the module read back gives the same text again.
  auto again = ToStableHlo(**back);
  ASSERT_TRUE(again.ok());
  auto back2 = ParseStableHlo(*again);
  ASSERT_TRUE(back2.ok()) << back2.status();
}

Literal Iota(PrimitiveType t, std::vector<int64_t> dims, double scale = 1, double offset = 0) {
  Literal l(Shape(t, dims));
  for (int64_t k = 0; k < l.shape().ElementCount(); ++k) {
    Literal v = Literal::ScalarOf(t, offset + scale * ((k * 7) % 11));
    std::memcpy(static_cast<uint8_t*>(l.untyped_data()) + k * ByteWidth(t), v.untyped_data(), ByteWidth(t));
  }
  return l;
}

TEST(StableHlo, ElementwiseConstantsAndMetadata) {
  std::vector<Literal> args;
  args.push_back(Iota(F32, {2, 3}, 0.5, -2));
  ExpectRoundTrip(R"(HloModule m
ENTRY main {
  x = f32[2,3] parameter(0), metadata={op_type="Input" op_name="x\"q"}
  c = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  p = pred[2,3] constant({{1, 0, 1}, {0, 1, 0}})
  a = f32[2,3] add(x, c), metadata={op_type="Add" op_name="sum"}
  e = f32[2,3] exponential(a)
  s = f32[2,3] select(p, e, x)
  lt = pred[2,3] compare(s, c), direction=LT
  h = f16[2,3] convert(s)
  b = s16[2,3] bitcast-convert(h)
  cp = f32[2,3] copy(s)
  t = f32[3,2] transpose(cp), dimensions={1,0}
  r = f32[6] reshape(t)
  ROOT out = (f32[6], pred[2,3], s16[2,3]) tuple(r, lt, b)
}
)",
                  args, {"loc(\"Add:sum\")", "#stablehlo<comparison_direction LT>", "\"stablehlo.bitcast_convert\""});
}

TEST(StableHlo, ReductionsWindowsAndProducts) {
  std::vector<Literal> args;
  args.push_back(Iota(F32, {1, 2, 5, 5}));
  args.push_back(Iota(F32, {3, 2, 3, 3}, 0.25));
  ExpectRoundTrip(R"(HloModule m
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f32 {
  ma = f32[] parameter(0)
  mb = f32[] parameter(1)
  ROOT ms = f32[] maximum(ma, mb)
}
ENTRY main {
  x = f32[1,2,5,5] parameter(0)
  w = f32[3,2,3,3] parameter(1)
  c = f32[1,3,3,3] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, operand_precision={highest,highest}
  z = f32[] constant(0)
  r = f32[1,3] reduce(c, z), dimensions={2,3}, to_apply=add_f32
  ninf = f32[] constant(-inf)
  p = f32[1,2,3,3] reduce-window(x, ninf), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=max_f32
  f = f32[1,18] reshape(p)
  d = f32[3,18] dot(r, f), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  pd = f32[5,20] pad(d, z), padding=1_1x1_1_0
  ROOT out = (f32[5,20]) tuple(pd)
}
)",
                  args, {"#stablehlo.conv<raw", "#stablehlo<precision HIGHEST>", "\"stablehlo.reduce_window\""});
}

TEST(StableHlo, LoopsBranchesSortsAndCalls) {
  std::vector<Literal> args;
  args.push_back(Iota(F32, {6}, 1, -3));
  args.push_back(Literal::Scalar<int32_t>(1));
  ExpectRoundTrip(R"(HloModule m
cond {
  s = (s32[], f32[6]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  bs = (s32[], f32[6]) parameter(0)
  bi = s32[] get-tuple-element(bs), index=0
  v = f32[6] get-tuple-element(bs), index=1
  one = s32[] constant(1)
  j = s32[] add(bi, one)
  w = f32[6] add(v, v)
  ROOT t = (s32[], f32[6]) tuple(j, w)
}
less {
  a = f32[] parameter(0)
  b2 = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  ROOT llt = pred[] compare(a, b2), direction=LT
}
neg {
  nx = f32[6] parameter(0)
  ROOT nn = f32[6] negate(nx)
}
sq {
  sx = f32[6] parameter(0)
  ROOT sn = f32[6] multiply(sx, sx)
}
twice {
  tx = f32[6] parameter(0)
  ROOT tn = f32[6] add(tx, tx)
}
ENTRY main {
  x = f32[6] parameter(0)
  k = s32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[6]) tuple(zero, x)
  loop = (s32[], f32[6]) while(init), condition=cond, body=body
  y = f32[6] get-tuple-element(loop), index=1
  idx = s32[6] iota(), iota_dimension=0
  sorted = (f32[6], s32[6]) sort(y, idx), dimensions={0}, is_stable=true, to_apply=less
  order = s32[6] get-tuple-element(sorted), index=1
  b = f32[6] conditional(k, x, y), branch_computations={neg, sq}
  z = f32[6] call(b), to_apply=twice
  ROOT out = (f32[6], s32[6], f32[6]) tuple(z, order, b)
}
)",
                  args, {"\"stablehlo.while\"", "\"stablehlo.case\"", "\"func.call\"", "func.func private"});
}

TEST(StableHlo, GatherScatterAndSlices) {
  std::vector<Literal> args;
  args.push_back(Iota(F32, {4, 3}));
  args.push_back(Literal::Vector<int32_t>({2, 0}));
  ExpectRoundTrip(R"(HloModule m
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[2] parameter(1)
  ii = s32[2,1] reshape(i)
  g = f32[2,3] gather(x, ii), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
  sc = f32[4,3] scatter(x, ii, g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32
  sl = f32[2,2] slice(sc), slice={[1:4:2], [0:2]}
  z = s32[] constant(1)
  ds = f32[2,2] dynamic-slice(sc, z, z), dynamic_slice_sizes={2,2}
  du = f32[4,3] dynamic-update-slice(x, ds, z, z)
  rv = f32[4,3] reverse(du), dimensions={0}
  bc = f32[2,2,3] broadcast(sl), dimensions={0,1}
  cc = f32[8,3] concatenate(sc, rv), dimensions={0}
  ROOT out = (f32[2,2,3], f32[8,3]) tuple(bc, cc)
}
)",
                  args, {"#stablehlo.gather<", "#stablehlo.scatter<", "array<i64: 1, 0>"});
}

TEST(StableHlo, ErrorsNameTheLine) {
  auto bad = ParseStableHlo(
      "module @m {\n  func.func public @main() -> (tensor<f32>) {\n    %0 = \"stablehlo.nope\"() : () -> tensor<f32>\n "
      " }\n}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 3"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("stablehlo.nope"), std::string::npos) << bad.status();
  auto undefined = ParseStableHlo(
      "module @m {\n  func.func public @main() -> (tensor<f32>) {\n    \"func.return\"(%7) : (tensor<f32>) -> ()\n  "
      "}\n}\n");
  ASSERT_FALSE(undefined.ok());
  EXPECT_NE(undefined.status().message().find("%7 is not defined"), std::string::npos) << undefined.status();
  EXPECT_FALSE(ParseStableHlo("module @m {").ok());
  // A dot naming a batch dimension its operands do not have: an error, not
  // an exception from the shape inference (a fuzzing finding).
  auto dot = ParseStableHlo(
      "module @m {\n  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> (tensor<2x2xf32>) {\n"
      "    %0 = \"stablehlo.dot_general\"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = "
      "[5], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : "
      "(tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>\n    \"func.return\"(%0) : (tensor<2x2xf32>) -> ()\n"
      "  }\n}\n");
  ASSERT_FALSE(dot.ok());
  EXPECT_NE(dot.status().message().find("dot batch dimensions"), std::string::npos) << dot.status();
  EXPECT_EQ(QuoteMlirString("a\"b\\c\n\xff"), "\"a\\22b\\5Cc\\0A\\FF\"");
  // Nesting a hostile program could use to exhaust the stack is refused.
  std::string tuples;
  for (int k = 0; k < 1000; ++k) tuples += "tuple<";
  auto nested = ParseStableHlo("module @m {\n  func.func public @main(%a: " + tuples);
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("nested more than 200 levels"), std::string::npos) << nested.status();
}

}  // namespace
}  // namespace xonnx::hlo
