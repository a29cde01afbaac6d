// Buffer assignment: programs whose values share bytes (in-place writes,
// reuse after a value's last read) give the evaluator's results, and the
// same results with every value in memory of its own (distinct_buffers).
// Each case is a wrong answer differential testing found (tests/difftest),
// shrunk to its core.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"

namespace xonnx::cpu {
namespace {

using hlo::Literal;

Literal Random(const hlo::Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = dist(rng);
  return l;
}

// Compiles `text` with `options`, runs it `calls` times on random inputs
// and returns the largest difference from the evaluator over every output
// and call.
double MaxErrorAgainstEvaluator(const std::string& text, CompileOptions options, int calls = 5) {
  auto m = hlo::ParseText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return INFINITY;
  std::vector<Literal> args;
  for (const hlo::Instruction* p : (*m)->entry()->parameters()) args.push_back(Random(p->shape(), 3 + args.size()));
  auto want = eval::EvaluateModule(**m, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto exe = Executable::Compile(std::move(*m), options);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!want.ok() || !exe.ok()) return INFINITY;
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  double err = 0;
  for (int call = 0; call < calls; ++call) {
    std::vector<Literal> outs;
    std::vector<void*> out_ptrs;
    for (const hlo::Shape& s : (*exe)->output_shapes()) outs.emplace_back(s);
    for (Literal& o : outs) out_ptrs.push_back(o.untyped_data());
    EXPECT_TRUE((*exe)->Execute(in, out_ptrs).ok());
    for (size_t k = 0; k < outs.size(); ++k) {
      const Literal& w = want->shape().IsTuple() ? want->tuple_elements()[k] : *want;
      for (int64_t i = 0; i < w.element_count(); ++i)
        err = std::max(err, static_cast<double>(std::abs(outs[k].data<float>()[i] - w.data<float>()[i])));
    }
  }
  return err;
}

// A fused loop writes over the gather it reads (its last reader), a
// product's epilogue adds that in place, and another fused loop writes its
// absolute value in place again: three in-place writes over one slot. The
// epilogue's sharing was decided first (the product comes first in the
// program), the loop's after it; the chain
// must still be one set of bytes living to the program's end (abs is an
// output), or a later value takes them.
constexpr char kInPlaceChainsMergedLate[] = R"(HloModule m

ENTRY main {
  x = f32[2,16,15,28]{3,2,1,0} parameter(0)
  y = f32[2,16,22,42]{3,2,1,0} parameter(1)
  w = f32[42,42]{1,0} parameter(2)
  r = f32[704,42]{1,0} reshape(y)
  d = f32[704,42]{1,0} dot(r, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dr = f32[2,16,22,42]{3,2,1,0} reshape(d)
  i0 = s64[42,1]{1,0} iota(), iota_dimension=0
  c28 = s64[] constant(28)
  c28b = s64[42,1]{1,0} broadcast(c28), dimensions={}
  cols = s64[42,1]{1,0} remainder(i0, c28b)
  g0 = f32[2,16,15,42]{3,2,1,0} gather(x, cols), offset_dims={0,1,2}, collapsed_slice_dims={3}, start_index_map={3}, index_vector_dim=1, slice_sizes={2,16,15,1}
  i1 = s64[22,1]{1,0} iota(), iota_dimension=0
  c15 = s64[] constant(15)
  c15b = s64[22,1]{1,0} broadcast(c15), dimensions={}
  rows = s64[22,1]{1,0} remainder(i1, c15b)
  g1 = f32[2,16,22,42]{3,2,1,0} gather(g0, rows), offset_dims={0,1,3}, collapsed_slice_dims={2}, start_index_map={2}, index_vector_dim=1, slice_sizes={2,16,1,42}
  half = f32[] constant(0.5)
  hb = f32[2,16,22,42]{3,2,1,0} broadcast(half), dimensions={}
  s = f32[2,16,22,42]{3,2,1,0} add(hb, g1)
  sum = f32[2,16,22,42]{3,2,1,0} add(dr, s)
  a = f32[2,16,22,42]{3,2,1,0} abs(sum)
  one = f32[] constant(1)
  ob = f32[2,16,22,42]{3,2,1,0} broadcast(one), dimensions={}
  a1 = f32[2,16,22,42]{3,2,1,0} add(a, ob)
  ROOT t = (f32[2,16,22,42]{3,2,1,0}, f32[2,16,22,42]{3,2,1,0}) tuple(a1, a)
}
)";

TEST(BufferAssignment, InPlaceChainsMergedOutOfOrderLiveAsOne) {
  const std::string text = kInPlaceChainsMergedLate;
  EXPECT_LT(MaxErrorAgainstEvaluator(text, {}), 1e-3);
  CompileOptions distinct;
  distinct.distinct_buffers = true;
  EXPECT_LT(MaxErrorAgainstEvaluator(text, distinct), 1e-3);
}

// A softmax over a product's rows: the row fusion writes its result over
// the product (its last reader), so the arena holds one such buffer. When a
// later step still reads the product, the result gets bytes of its own.
constexpr char kSoftmaxOverProduct[] = R"(HloModule m

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT ab = f32[] maximum(a, b)
}

add_f32 {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT uv = f32[] add(u, v)
}

ENTRY main {
  x = f32[64,32]{1,0} parameter(0)
  w = f32[32,256]{1,0} parameter(1)
  d = f32[64,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ninf = f32[] constant(-inf)
  m = f32[64]{0} reduce(d, ninf), dimensions={1}, to_apply=max_f32
  mb = f32[64,256]{1,0} broadcast(m), dimensions={0}
  s = f32[64,256]{1,0} subtract(d, mb)
  e = f32[64,256]{1,0} exponential(s)
  zero = f32[] constant(0)
  z = f32[64]{0} reduce(e, zero), dimensions={1}, to_apply=add_f32
  zb = f32[64,256]{1,0} broadcast(z), dimensions={0}
  p = f32[64,256]{1,0} divide(e, zb)
  ROOT r = f32[256,256]{1,0} dot(p, LAST), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
)";

std::string SoftmaxOverProduct(const std::string& last) {
  std::string text = kSoftmaxOverProduct;
  return text.replace(text.find("LAST"), 4, last);
}

// The arena bytes each step writes, from the kernel listing: "kernel
// instruction -> [begin, end)".
std::string WrittenBy(const std::string& text, const std::string& kernel) {
  auto m = hlo::ParseText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return "";
  auto exe = Executable::Compile(std::move(*m), {});
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return "";
  const std::string listing = (*exe)->KernelListing();
  size_t at = listing.find(" " + kernel + " ");
  if (at == std::string::npos) return "";
  at = listing.find("-> ", at);
  return listing.substr(at, listing.find('\n', at) - at);
}

TEST(BufferAssignment, RowFusionWritesOverTheRowsItReadsLast) {
  // The product read once more by a later step: no sharing.
  const std::string read_later = SoftmaxOverProduct("d");
  const std::string last_read = SoftmaxOverProduct("p");
  EXPECT_LT(MaxErrorAgainstEvaluator(read_later, {}), 1e-3);
  EXPECT_LT(MaxErrorAgainstEvaluator(last_read, {}), 1e-3);
  ASSERT_NE(WrittenBy(last_read, "row-fusion"), "");
  EXPECT_EQ(WrittenBy(last_read, "row-fusion"), WrittenBy(last_read, "dnnl-matmul")) << "the softmax writes elsewhere";
  EXPECT_NE(WrittenBy(read_later, "row-fusion"), WrittenBy(read_later, "dnnl-matmul")) << "it writes over d";
}

}  // namespace
}  // namespace xonnx::cpu
