// Products along one axis by sparse constant matrices (Resize's
// interpolations): the in-place form the AxisMaps pass writes, the layout
// pass's sinking through it, and the sparse-dot kernel that runs it, on
// random shapes, axes, orientations and surrounding transposes, against the
// evaluator.
#include "backends/cpu/canonicalization/axis_maps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/canonicalization/layout_pass.h"
#include "backends/cpu/runtime/executable.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

namespace xonnx::cpu {
namespace {

using hlo::Literal;

Literal RandomFloats(const hlo::Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> v(-2, 2);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = v(rng);
  return l;
}

// An [out, in] matrix with 0 to 4 nonzeros per row at distinct columns
// (an interpolation's form), as HLO constant text, stored [in, out] when
// `in_major`.
std::string SparseMatrix(int64_t in, int64_t out, bool in_major, std::mt19937& rng) {
  std::vector<float> w(in * out, 0.0f);
  std::uniform_real_distribution<float> value(-1, 1);
  for (int64_t o = 0; o < out; ++o) {
    std::vector<int64_t> cols(in);
    std::iota(cols.begin(), cols.end(), 0);
    std::shuffle(cols.begin(), cols.end(), rng);
    const int64_t taps = std::min<int64_t>(in, static_cast<int64_t>(rng() % 5));  // some rows all zero
    for (int64_t t = 0; t < taps; ++t) w[o * in + cols[t]] = value(rng);
  }
  const int64_t rows = in_major ? in : out, cols = in_major ? out : in;
  std::vector<std::string> text;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<std::string> row;
    for (int64_t c = 0; c < cols; ++c) row.push_back(absl::StrCat(in_major ? w[c * in + r] : w[r * in + c]));
    text.push_back(absl::StrCat("{", absl::StrJoin(row, ", "), "}"));
  }
  return absl::StrCat("f32[", rows, ",", cols, "] constant({", absl::StrJoin(text, ", "), "})");
}

std::string Dims(const std::vector<int64_t>& d) { return absl::StrJoin(d, ","); }

// Compiles `text` for the CPU and runs it on random inputs: the kinds of
// its kernels, and its largest relative error against the evaluator.
struct Outcome {
  std::string listing;
  double error = 0;
};
Outcome CompileAndCompare(const std::string& text, uint32_t seed) {
  Outcome r;
  auto m = hlo::ParseText(text);
  EXPECT_TRUE(m.ok()) << m.status() << "\n" << text;
  if (!m.ok()) return r;
  std::vector<Literal> args;
  for (const hlo::Instruction* p : (*m)->entry()->parameters())
    args.push_back(RandomFloats(p->shape(), seed + args.size()));
  auto want = eval::EvaluateModule(**m, args);
  EXPECT_TRUE(want.ok()) << want.status();
  auto exe = Executable::Compile(std::move(*m));
  EXPECT_TRUE(exe.ok()) << exe.status() << "\n" << text;
  if (!want.ok() || !exe.ok()) return r;
  r.listing = (*exe)->KernelListing();
  Literal got((*exe)->output_shapes().at(0));
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  void* out = got.untyped_data();
  EXPECT_TRUE((*exe)->Execute(in, absl::MakeSpan(&out, 1)).ok());
  for (int64_t k = 0; k < got.element_count(); ++k) {
    const double g = got.data<float>()[k], w = want->data<float>()[k];
    r.error = std::max(r.error, std::fabs(g - w) / (1 + std::fabs(w)));
  }
  return r;
}

// dot(x, W) along a random axis of a random shape (rank 1 to 5), W in
// either orientation, x a transpose of the parameter or not, the result
// followed by the importer's transpose that puts the axis back or not:
// the product runs on the sparse-dot kernel where it pays (no broadcast of
// the weights is ever made) and agrees with the evaluator.
TEST(AxisMaps, RandomProductsAlongOneAxis) {
  std::mt19937 rng(2026);
  for (int round = 0; round < 60; ++round) {
    const int64_t rank = 1 + static_cast<int64_t>(rng() % 5);
    std::vector<int64_t> dims(rank);
    for (int64_t& d : dims) d = 1 + static_cast<int64_t>(rng() % 6);
    const int64_t axis = static_cast<int64_t>(rng() % rank);
    dims[axis] = 1 + static_cast<int64_t>(rng() % 20);
    const int64_t in = dims[axis], out = 3 + static_cast<int64_t>(rng() % 30);
    const bool in_major = rng() % 2, transposed = rng() % 2, put_back = rng() % 2;
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    if (transposed) std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int64_t> p_dims(rank);  // x = transpose(p, perm): x dim k is p dim perm[k]
    for (int64_t k = 0; k < rank; ++k) p_dims[perm[k]] = dims[k];
    std::vector<int64_t> d_dims, back;
    for (int64_t k = 0; k < rank; ++k)
      if (k != axis) d_dims.push_back(dims[k]);
    d_dims.push_back(out);
    for (int64_t k = 0; k < rank - 1; ++k) {
      if (k == axis) back.push_back(rank - 1);
      back.push_back(k);
    }
    if (axis == rank - 1) back.push_back(rank - 1);
    std::vector<int64_t> y_dims = dims;
    y_dims[axis] = out;
    std::string text = absl::StrCat("HloModule m\nENTRY e {\n  p = f32[", Dims(p_dims), "] parameter(0)\n");
    absl::StrAppend(&text, "  x = f32[", Dims(dims), "] ",
                    transposed ? absl::StrCat("transpose(p), dimensions={", Dims(perm), "}") : "copy(p)", "\n");
    absl::StrAppend(&text, "  w = ", SparseMatrix(in, out, in_major, rng), "\n");
    absl::StrAppend(&text, put_back ? "  d" : "  ROOT d", " = f32[", Dims(d_dims),
                    "] dot(x, w), lhs_contracting_dims={", axis, "}, rhs_contracting_dims={", in_major ? 0 : 1, "}\n");
    if (put_back)
      absl::StrAppend(&text, "  ROOT y = f32[", Dims(y_dims), "] transpose(d), dimensions={", Dims(back), "}\n");
    text += "}\n";
    const Outcome r = CompileAndCompare(text, 100 + round);
    EXPECT_LT(r.error, 1e-5) << text << r.listing;
    // Fewer than 8 inputs go to a dense product, unless the form makes the
    // transpose back vanish.
    EXPECT_EQ(r.listing.find("sparse-dot") != std::string::npos, in >= 8 || (put_back && axis != rank - 1))
        << text << r.listing;
    EXPECT_EQ(r.listing.find("broadcast"), std::string::npos) << text << r.listing;
  }
}

// A bilinear 2x resize between two convolutions, as the importer writes
// it (along the width: a product; along the height: a product and the
// transpose back), runs channels-last: after the passes only the
// transposes at the chain's two ends are left, and the results are the
// evaluator's.
constexpr char kResizeBetweenConvs[] = R"(HloModule resize

ENTRY main {
  x = f32[1,3,6,8]{3,2,1,0} parameter(0)
  w1 = f32[16,3,3,3]{3,2,1,0} parameter(1)
  w2 = f32[4,16,3,3]{3,2,1,0} parameter(2)
  c1 = f32[1,16,6,8]{3,2,1,0} convolution(x, w1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  mw = WIDTH
  rw = f32[1,16,6,16]{3,2,1,0} dot(c1, mw), lhs_contracting_dims={3}, rhs_contracting_dims={1}
  mh = HEIGHT
  rh = f32[1,16,16,12]{3,2,1,0} dot(rw, mh), lhs_contracting_dims={2}, rhs_contracting_dims={1}
  up = f32[1,16,12,16]{3,2,1,0} transpose(rh), dimensions={0,1,3,2}
  ROOT c2 = f32[1,4,12,16]{3,2,1,0} convolution(up, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}
)";

TEST(AxisMaps, ResizeBetweenConvolutionsStaysChannelsLast) {
  std::mt19937 rng(7);
  std::string text = kResizeBetweenConvs;
  text.replace(text.find("WIDTH"), 5, SparseMatrix(8, 16, false, rng));
  text.replace(text.find("HEIGHT"), 6, SparseMatrix(6, 12, false, rng));
  auto m = hlo::ParseText(text);
  ASSERT_TRUE(m.ok()) << m.status();
  AxisMaps maps;
  ASSERT_TRUE(maps.Run(m->get()).ok());
  ASSERT_TRUE(RunLayoutPasses(m->get()).ok());
  const std::string after = hlo::ToText(**m);
  int transposes = 0;
  for (size_t at = after.find(" transpose("); at != std::string::npos; at = after.find(" transpose(", at + 1))
    ++transposes;
  // x to channels-last and the result back; before the in-place form
  // also c1 back to channels-first, the resize's own transpose, and its
  // result to channels-last again.
  EXPECT_EQ(transposes, 2) << after;
  const Outcome r = CompileAndCompare(text, 5);
  // Two convolutions of unscaled random weights (sums of up to 144 terms
  // of magnitude up to 4), in oneDNN's order against the evaluator's.
  EXPECT_LT(r.error, 1e-4) << r.listing;
}

// Transposes sink through the in-place form on random permutations and
// axes: after AxisMaps and TransposeSinking the product reads the
// parameter itself, the program verifies, and the evaluator gives the
// same results as for the program before.
TEST(AxisMaps, TransposesSinkThroughInPlaceProducts) {
  std::mt19937 rng(99);
  for (int round = 0; round < 40; ++round) {
    const int64_t rank = 2 + static_cast<int64_t>(rng() % 4);
    std::vector<int64_t> dims(rank), perm(rank);
    for (int64_t& d : dims) d = 1 + static_cast<int64_t>(rng() % 5);
    const int64_t axis = static_cast<int64_t>(rng() % rank);
    dims[axis] = 8 + static_cast<int64_t>(rng() % 8);
    const int64_t in = dims[axis], out = 2 * in;
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int64_t> p_dims(rank), d_dims, back, y_dims = dims;
    for (int64_t k = 0; k < rank; ++k) p_dims[perm[k]] = dims[k];
    for (int64_t k = 0; k < rank; ++k)
      if (k != axis) d_dims.push_back(dims[k]);
    d_dims.push_back(out);
    for (int64_t m = 0; m < rank; ++m) back.push_back(m < axis ? m : m == axis ? rank - 1 : m - 1);
    y_dims[axis] = out;
    const bool in_major = rng() % 2;
    const std::string text = absl::StrCat(
        "HloModule m\nENTRY e {\n  p = f32[", Dims(p_dims), "] parameter(0)\n  x = f32[", Dims(dims),
        "] transpose(p), dimensions={", Dims(perm), "}\n  w = ", SparseMatrix(in, out, in_major, rng), "\n  d = f32[",
        Dims(d_dims), "] dot(x, w), lhs_contracting_dims={", axis, "}, rhs_contracting_dims={", in_major ? 0 : 1,
        "}\n  y = f32[", Dims(y_dims), "] transpose(d), dimensions={", Dims(back), "}\n  ROOT n = f32[", Dims(y_dims),
        "] negate(y)\n}\n");
    auto m = hlo::ParseText(text);
    ASSERT_TRUE(m.ok()) << m.status() << text;
    std::unique_ptr<hlo::Module> original = (*m)->Clone();
    AxisMaps maps;
    TransposeSinking sinking;
    ASSERT_TRUE(maps.Run(m->get()).ok());
    auto sunk = sinking.Run(m->get());
    ASSERT_TRUE(sunk.ok() && *sunk) << text;
    ASSERT_TRUE(hlo::Verify(**m).ok()) << hlo::ToText(**m);
    bool reads_parameter = false;
    for (const auto& i : (*m)->entry()->instructions())
      reads_parameter |= i->opcode() == hlo::Opcode::kDot && SparseDotInPlace(*i) &&
                         i->operand(1)->opcode() == hlo::Opcode::kParameter;
    EXPECT_TRUE(reads_parameter) << hlo::ToText(**m);
    Literal x = RandomFloats(original->entry()->parameter(0)->shape(), 3 + round);
    auto want = eval::EvaluateModule(*original, {x});
    auto got = eval::EvaluateModule(**m, {x});
    ASSERT_TRUE(want.ok() && got.ok());
    for (int64_t k = 0; k < want->element_count(); ++k)
      ASSERT_NEAR(got->data<float>()[k], want->data<float>()[k], 1e-5) << text;
  }
}

// Products with a constant on the left that are not one sparse matrix
// for every batch keep their form through the passes: a MatMul(W, X)
// whose broadcast the front end folded into a constant per batch, and a
// dense W broadcast over the batch, each after a convolution (so the
// layout pass runs); both compile and give the evaluator's results.
TEST(AxisMaps, ConstantLeftProductsAreNotInterpolations) {
  std::string per_batch;  // a [2,4,8] constant
  for (int b = 0; b < 2; ++b) {
    std::vector<std::string> rows;
    for (int r = 0; r < 4; ++r) {
      std::vector<std::string> row;
      for (int k = 0; k < 8; ++k) row.push_back(absl::StrCat((k + r + b) % 3 == 0 ? 0.5f * (b + 1) : 0.0f));
      rows.push_back(absl::StrCat("{", absl::StrJoin(row, ", "), "}"));
    }
    absl::StrAppend(&per_batch, b ? ", " : "", "{", absl::StrJoin(rows, ", "), "}");
  }
  const std::string folded = absl::StrCat(R"(HloModule m
ENTRY e {
  x = f32[2,3,4,4] parameter(0)
  k = f32[8,3,1,1] parameter(1)
  c = f32[2,8,4,4] convolution(x, k), window={size=1x1}, dim_labels=bf01_oi01->bf01
  r = f32[2,8,16] reshape(c)
  w = f32[2,4,8] constant({)",
                                          per_batch, R"(})
  d = f32[2,4,16] dot(w, r), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT n = f32[2,4,16] negate(d)
}
)");
  Outcome r = CompileAndCompare(folded, 11);
  EXPECT_LT(r.error, 1e-5) << r.listing;
  std::vector<std::string> rows;
  for (int o = 0; o < 16; ++o) {
    std::vector<std::string> row;
    for (int i = 0; i < 16; ++i) row.push_back(absl::StrCat(0.01f * (1 + (o * 16 + i) % 7)));
    rows.push_back(absl::StrCat("{", absl::StrJoin(row, ", "), "}"));
  }
  const std::string dense = absl::StrCat(R"(HloModule m
ENTRY e {
  x = f32[1,3,8,8] parameter(0)
  k = f32[16,3,3,3] parameter(1)
  c = f32[1,16,8,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  r = f32[1,16,64] reshape(c)
  w = f32[16,16] constant({)",
                                         absl::StrJoin(rows, ", "), R"(})
  wb = f32[1,16,16] broadcast(w), dimensions={1,2}
  d = f32[1,16,64] dot(wb, r), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT n = f32[1,16,64] negate(d)
}
)");
  r = CompileAndCompare(dense, 12);
  EXPECT_LT(r.error, 1e-5) << r.listing;
  EXPECT_EQ(r.listing.find("sparse-dot"), std::string::npos) << r.listing;
}

}  // namespace
}  // namespace xonnx::cpu
