// The sort kernel's order where a comparison alone leaves it open: NaN is
// the largest value, equal values keep their positions, and a selection of
// the first k (TopK) agrees with the full sort and the reference evaluator.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"

namespace xonnx::cpu {
namespace {

using hlo::Literal;

// TopK of k of the 8 values along dim 1, largest or smallest first: the
// values and their positions.
std::string TopKProgram(int k, bool largest) {
  return absl::StrCat(R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s64[] parameter(2)
  ib = s64[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=)",
                      largest ? "GT" : "LT", R"(
}
ENTRY e {
  x = f32[1,8] parameter(0)
  i = s64[1,8] iota(), iota_dimension=1
  r = (f32[1,8], s64[1,8]) sort(x, i), dimensions={1}, is_stable=true, to_apply=cmp
  v = f32[1,8] get-tuple-element(r), index=0
  j = s64[1,8] get-tuple-element(r), index=1
  vk = f32[1,)",
                      k, "] slice(v), slice={[0:1], [0:", k, R"(]}
  jk = s64[1,)",
                      k, "] slice(j), slice={[0:1], [0:", k, R"(]}
  ROOT t = (f32[1,)",
                      k, "], s64[1,", k, "]) tuple(vk, jk)\n}");
}

// The positions TopK picks, from the native kernel, checked equal to the
// evaluator's.
std::vector<int64_t> TopKPositions(const std::vector<float>& values, int k, bool largest) {
  auto module = hlo::ParseText(TopKProgram(k, largest));
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  Literal x(hlo::Shape(hlo::F32, {1, 8}));
  for (int j = 0; j < 8; ++j) x.data<float>()[j] = values[j];
  auto want = eval::EvaluateModule(**module, {x});
  EXPECT_TRUE(want.ok()) << want.status();
  auto exe = Executable::Compile(std::move(*module), CompileOptions{});
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!want.ok() || !exe.ok()) return {};
  bool selected = false;
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) selected |= kind == "top-k";
  EXPECT_EQ(selected, k < 8) << (*exe)->KernelListing();
  Literal vk(hlo::Shape(hlo::F32, {1, k})), jk(hlo::Shape(hlo::S64, {1, k}));
  std::vector<void*> outs = {vk.untyped_data(), jk.untyped_data()};
  EXPECT_TRUE((*exe)->Execute({x.untyped_data()}, outs).ok());
  std::vector<int64_t> got(jk.data<int64_t>(), jk.data<int64_t>() + k);
  const Literal& want_j = want->tuple_elements()[1];
  EXPECT_EQ(got, std::vector<int64_t>(want_j.data<int64_t>(), want_j.data<int64_t>() + k));
  return got;
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

TEST(SortKernel, TopKOrdersNanAsTheLargestValue) {
  std::vector<float> x = {1, kNan, 3, -2, kNan, 3, 0, -5};
  EXPECT_EQ(TopKPositions(x, 4, /*largest=*/true), (std::vector<int64_t>{1, 4, 2, 5}));
  EXPECT_EQ(TopKPositions(x, 3, /*largest=*/false), (std::vector<int64_t>{7, 3, 6}));
  // All positions: the NaNs last when ascending, in their order.
  EXPECT_EQ(TopKPositions(x, 8, /*largest=*/false), (std::vector<int64_t>{7, 3, 6, 0, 2, 5, 1, 4}));
}

TEST(SortKernel, TopKKeepsEqualValuesInTheirOrder) {
  std::vector<float> x = {2, 7, 2, 7, 2, 7, 2, 7};
  EXPECT_EQ(TopKPositions(x, 3, /*largest=*/true), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(TopKPositions(x, 5, /*largest=*/false), (std::vector<int64_t>{0, 2, 4, 6, 1}));
}

}  // namespace
}  // namespace xonnx::cpu
