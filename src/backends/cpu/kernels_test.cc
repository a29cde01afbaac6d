// Every native kernel against the reference evaluator, op by op (after
// ggml's test-backend-ops): each case is an HLO program over random data,
// run for several element types and shapes, with and without oneDNN and
// fusion. The result must equal the evaluator's exactly (these kernels
// move or combine elements in the evaluator's order), and no instruction
// may run on a reference kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"

namespace xonnx::cpu {
namespace {

using hlo::Literal;
using hlo::Shape;

// Random values: integers in [-8, 40] (so that an index is sometimes
// negative or past the end, which the kernels must clamp or skip as the
// evaluator does), floats in [-4, 4].
Literal Random(const Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ints(-8, 40);
  std::uniform_real_distribution<float> floats(-4, 4);
  hlo::TypeSwitch(s.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < l.element_count(); ++i)
      l.data<T>()[i] =
          std::is_integral_v<T> ? hlo::ConvertValue<T, int>(ints(rng)) : hlo::ConvertValue<T, float>(floats(rng));
  });
  return l;
}

// A computation adding two scalars of the type under test.
const char kAddT[] = "add {\n  a = T[] parameter(0)\n  b = T[] parameter(1)\n  ROOT s = T[] add(a, b)\n}\n";

struct OpCase {
  std::string name;
  // An HLO module; T stands for the element type under test.
  std::string hlo;
  std::vector<std::string> types;
  std::string kind;  // the kernel kind that must run the op
};

const std::vector<std::string> kMoveTypes = {"f32", "s64", "u8", "pred", "f64", "s16"};

std::vector<OpCase> OpCases() {
  return {
      {"concatenate_middle_dim", R"(HloModule m
ENTRY e {
  a = T[2,3,5] parameter(0)
  b = T[2,1,5] parameter(1)
  c = T[2,4,5] parameter(2)
  ROOT r = T[2,8,5] concatenate(a, b, c), dimensions={1}
})",
       kMoveTypes, "concatenate"},
      {"concatenate_last_dim_large",
       R"(HloModule m
ENTRY e {
  a = T[64,300,7] parameter(0)
  b = T[64,300,9] parameter(1)
  ROOT r = T[64,300,16] concatenate(a, b), dimensions={2}
})",
       {"f32", "s8"},
       "concatenate"},
      // A dense block's concatenation: channels-last maps of short and long
      // channel runs (below and above the memcpy threshold), and one along
      // the outermost dim.
      {"concatenate_dense_block",
       R"(HloModule m
ENTRY e {
  a = T[1,5,6,32] parameter(0)
  b = T[1,5,6,160] parameter(1)
  c = T[1,5,6,3] parameter(2)
  d = T[1,5,6,32] parameter(3)
  ROOT r = T[1,5,6,227] concatenate(a, b, c, d), dimensions={3}
})",
       {"f32", "u8", "f64"},
       "concatenate"},
      {"concatenate_outer_dim", R"(HloModule m
ENTRY e {
  a = T[2,3,4] parameter(0)
  b = T[5,3,4] parameter(1)
  ROOT r = T[7,3,4] concatenate(a, b), dimensions={0}
})",
       kMoveTypes, "concatenate"},
      {"pad_edges_and_interior", R"(HloModule m
ENTRY e {
  x = T[3,4,5] parameter(0)
  v = T[] parameter(1)
  ROOT r = T[6,13,4] pad(x, v), padding=1_2x2_1_2x-1_0
})",
       kMoveTypes, "pad"},
      {"pad_large_image",
       R"(HloModule m
ENTRY e {
  x = T[1,16,120,120] parameter(0)
  v = T[] parameter(1)
  ROOT r = T[1,16,122,124] pad(x, v), padding=0_0x0_0x1_1x3_1
})",
       {"f32"},
       "pad"},
      {"pad_drops_everything",
       R"(HloModule m
ENTRY e {
  x = T[4,3] parameter(0)
  v = T[] parameter(1)
  ROOT r = T[2,3] pad(x, v), padding=-5_3x0_0
})",
       {"f32"},
       "pad"},
      // Tiled transposes: few rows and more columns than one work item
      // takes (channels-last to channels-first with 27 channels), and rows
      // narrower than a tile (an image to channels-last).
      {"transpose_to_channels_first",
       R"(HloModule m
ENTRY e {
  x = T[2,40,60,27] parameter(0)
  ROOT r = T[2,27,40,60] transpose(x), dimensions={0,3,1,2}
})",
       {"f32", "u8", "s64"},
       "transpose"},
      // The source's contiguous dim to an outer one with a dim between it
      // and the new innermost: a resize's channels-first result to the
      // channels-last order of the convolution after it (tiled, the
      // middle dim looped over).
      {"transpose_reversing_three_dims",
       R"(HloModule m
ENTRY e {
  x = T[2,37,11,70] parameter(0)
  ROOT r = T[2,70,11,37] transpose(x), dimensions={0,3,2,1}
})",
       {"f32", "u8", "s64"},
       "transpose"},
      {"transpose_image_to_channels_last",
       R"(HloModule m
ENTRY e {
  x = T[2,3,50,70] parameter(0)
  ROOT r = T[2,50,70,3] transpose(x), dimensions={0,2,3,1}
})",
       {"f32", "u8"},
       "transpose"},
      {"reverse_two_dims",
       R"(HloModule m
ENTRY e {
  x = T[3,70,400] parameter(0)
  ROOT r = T[3,70,400] reverse(x), dimensions={0,2}
})",
       {"f32", "u8", "s64"},
       "reverse"},
      {"dynamic_slice_clamped", R"(HloModule m
ENTRY e {
  x = T[7,9,11] parameter(0)
  i = s32[] parameter(1)
  j = s64[] parameter(2)
  k = s32[] parameter(3)
  ROOT r = T[3,9,4] dynamic-slice(x, i, j, k), dynamic_slice_sizes={3,9,4}
})",
       kMoveTypes, "dynamic-slice"},
      {"dynamic_update_slice_clamped", R"(HloModule m
ENTRY e {
  x = T[7,9,11] parameter(0)
  u = T[2,5,11] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  k = s32[] parameter(4)
  ROOT r = T[7,9,11] dynamic-update-slice(x, u, i, j, k)
})",
       kMoveTypes, "dynamic-update-slice"},
      {"iota_middle_dim",
       R"(HloModule m
ENTRY e {
  ROOT r = T[4,300,70] iota(), iota_dimension=1
})",
       {"f32", "s32", "s64", "u8", "f64"},
       "iota"},
      // A pixel shuffle (DepthToSpace): a 6-D transpose whose two innermost
      // dims swap contiguity, tiled under three outer dims.
      {"transpose_pixel_shuffle",
       R"(HloModule m
ENTRY e {
  x = T[2,5,3,3,40,70] parameter(0)
  ROOT r = T[2,5,40,3,70,3] transpose(x), dimensions={0,1,4,2,5,3}
})",
       {"f32", "u8", "s64", "s16"},
       "transpose"},
      // A result without elements runs nothing, whatever its opcode.
      {"gather_of_no_indices",
       R"(HloModule m
ENTRY e {
  x = T[50,64] parameter(0)
  i = s64[0] parameter(1)
  ROOT r = T[0,64] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,64}
})",
       {"f32", "u8"},
       "empty"},
      // Rows of an embedding table (ONNX Gather on axis 0).
      {"gather_rows", R"(HloModule m
ENTRY e {
  x = T[50,64] parameter(0)
  i = s64[3,7] parameter(1)
  ROOT r = T[3,7,64] gather(x, i), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,64}
})",
       kMoveTypes, "gather"},
      // ONNX Gather on a middle axis: offset dims on both sides.
      {"gather_middle_axis", R"(HloModule m
ENTRY e {
  x = T[4,30,6] parameter(0)
  i = s32[5] parameter(1)
  ROOT r = T[4,5,6] gather(x, i), offset_dims={0,2}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={4,1,6}
})",
       kMoveTypes, "gather"},
      // Element by element along the last axis (a nearest resize's column
      // table), large enough to run in parallel.
      {"gather_last_axis_elements",
       R"(HloModule m
ENTRY e {
  x = T[2,16,60,60] parameter(0)
  i = s32[120] parameter(1)
  ROOT r = T[2,16,60,120] gather(x, i), offset_dims={0,1,2}, collapsed_slice_dims={3}, start_index_map={3}, index_vector_dim=1, slice_sizes={2,16,60,1}
})",
       {"f32", "u8"},
       "gather"},
      // GatherND: index vectors of two components, windows of 3.
      {"gather_nd_windows", R"(HloModule m
ENTRY e {
  x = T[6,8,10] parameter(0)
  i = s64[4,2] parameter(1)
  ROOT r = T[4,3,10] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,3,10}
})",
       kMoveTypes, "gather"},
      // Index vector dim first: the components are far apart.
      {"gather_index_vector_first",
       R"(HloModule m
ENTRY e {
  x = T[9,11] parameter(0)
  i = s32[2,5,3] parameter(1)
  ROOT r = T[5,3] gather(x, i), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={1,0}, index_vector_dim=0, slice_sizes={1,1}
})",
       {"f32", "s64"},
       "gather"},
      {"scatter_replace_rows", R"(HloModule m
keep {
  a = T[] parameter(0)
  ROOT b = T[] parameter(1)
}
ENTRY e {
  x = T[20,6] parameter(0)
  i = s32[9,1] parameter(1)
  u = T[9,6] parameter(2)
  ROOT r = T[20,6] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=keep
})",
       kMoveTypes, "scatter"},
      {"scatter_add_elements",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[12,13] parameter(0)
  i = s64[30,2] parameter(1)
  u = T[30] parameter(2)
  ROOT r = T[12,13] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add
})"),
       {"f32", "s32", "s64", "f64"},
       "scatter"},
      // Enough updates to split the output between threads; many repeat a
      // row (the indices are in [-8, 40]), so the order of the sums shows.
      {"scatter_add_rows_threaded",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[60,48] parameter(0)
  i = s64[2000,1] parameter(1)
  u = T[2000,48] parameter(2)
  ROOT r = T[60,48] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})"),
       {"f32", "s32", "f64"},
       "scatter"},
      // One element per update into a vector (ScatterElements as the
      // importer lowers it: the data as one dim), indices in and out of range.
      {"scatter_add_into_vector",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[37] parameter(0)
  i = s64[500,1] parameter(1)
  u = T[500] parameter(2)
  ROOT r = T[37] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})"),
       {"f32", "s32"},
       "scatter"},
      // Windows that start inside and run past the end, and a window dim
      // before a batch dim in the update.
      {"scatter_windows_partly_outside",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[30,20] parameter(0)
  i = s64[9,2] parameter(1)
  u = T[9,3,5] parameter(2)
  ROOT r = T[30,20] scatter(x, i, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add
})"),
       {"f32", "s32"},
       "scatter"},
      // Windows wider than most of the dim they move along, so that many
      // start before 0 and still have elements inside.
      {"scatter_windows_starting_before_zero",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[12,10] parameter(0)
  i = s64[30,2] parameter(1)
  u = T[30,2,8] parameter(2)
  ROOT r = T[12,10] scatter(x, i, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add
})"),
       {"f32", "s32"},
       "scatter"},
      {"scatter_window_dim_first",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[40,7] parameter(0)
  i = s64[9] parameter(1)
  u = T[7,9] parameter(2)
  ROOT r = T[40,7] scatter(x, i, u), update_window_dims={0}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})"),
       {"f32", "s64"},
       "scatter"},
      // Dots oneDNN does not take: two contracting dims, batch dims in the
      // middle, an outer product (no contracting dim).
      {"dot_two_contracting_dims",
       R"(HloModule m
ENTRY e {
  a = T[6,3,7] parameter(0)
  b = T[6,7,5] parameter(1)
  ROOT r = T[3,5] dot(a, b), lhs_contracting_dims={0,2}, rhs_contracting_dims={0,1}
})",
       {"s32", "s64", "f64", "s8", "u8"},
       "dot"},
      {"dot_batch_in_the_middle",
       R"(HloModule m
ENTRY e {
  a = T[3,4,5] parameter(0)
  b = T[5,4,6] parameter(1)
  ROOT r = T[4,3,6] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
})",
       {"s32", "f64", "s16"},
       "dot"},
      {"dot_outer_product",
       R"(HloModule m
ENTRY e {
  a = T[40,3] parameter(0)
  b = T[50] parameter(1)
  ROOT r = T[40,3,50] dot(a, b), lhs_contracting_dims={}, rhs_contracting_dims={}
})",
       {"s32", "f64"},
       "dot"},
      // Integer convolutions (QLinearConv and ConvInteger compute in s32)
      // and one of every window feature: stride, padding, base and window
      // dilation, feature groups, reversal.
      {"convolution_integer_3x3",
       R"(HloModule m
ENTRY e {
  x = T[2,5,9,9] parameter(0)
  k = T[4,5,3,3] parameter(1)
  ROOT r = T[2,4,9,9] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
})",
       {"s32", "s64", "f64"},
       "convolution"},
      {"convolution_every_window_feature",
       R"(HloModule m
ENTRY e {
  x = T[1,11,6,4] parameter(0)
  k = T[3,3,2,6] parameter(1)
  ROOT r = T[1,11,3,6] convolution(x, k), window={size=3x3 stride=2x1 pad=2_1x0_1 lhs_dilate=2x1 rhs_dilate=1x2 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f, feature_group_count=2
})",
       {"s32", "f64"},
       "convolution"},
      // A windowed sum's cotangent (autodiff's reduce-window rule): the
      // base dilated, padded and read through a dilated window.
      {"reduce_window_dilated_base",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[2,5,6,3] parameter(0)
  z = T[] constant(0)
  ROOT r = T[2,5,16,3] reduce-window(x, z), window={size=1x3x2x1 stride=1x2x1x1 pad=0_0x2_1x1_1x0_0 lhs_dilate=1x2x3x1 rhs_dilate=1x1x2x1}, to_apply=add
})"),
       {"f32", "s32", "f64"},
       "reduce-window"},
      // A pool over channels-first images (the width last): rows of the
      // output combined from shifted input rows, strided and padded.
      {"reduce_window_rows",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[2,5,13,11] parameter(0)
  z = T[] constant(0)
  ROOT r = T[2,5,7,11] reduce-window(x, z), window={size=1x1x3x4 stride=1x1x2x1 pad=0_0x0_0x1_1x2_1}, to_apply=add
})"),
       {"f32", "s32", "f64"},
       "reduce-window-rows"},
      // A cumulative sum (ONNX's CumSum): a window reaching back over the
      // whole dim, as a running sum down the dim, across columns and along rows.
      {"reduce_window_prefix_scan_columns",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[3,40,300] parameter(0)
  z = T[] constant(0)
  ROOT r = T[3,40,300] reduce-window(x, z), window={size=1x50x1 pad=0_0x49_0x0_0}, to_apply=add
})"),
       {"f32", "s32", "s64", "f64"},
       "prefix-scan"},
      {"reduce_window_prefix_scan_rows",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[6,1000] parameter(0)
  z = T[] constant(0)
  ROOT r = T[6,1000] reduce-window(x, z), window={size=1x1000 pad=0_0x999_0}, to_apply=add
})"),
       {"f32", "s64"},
       "prefix-scan"},
      {"reduce_separate_dims",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[5,30,7,9] parameter(0)
  z = T[] parameter(1)
  ROOT r = T[30,9] reduce(x, z), dimensions={0,2}, to_apply=add
})"),
       {"f32", "s32", "s64", "u8", "f64"},
       "reduce"},
      // Rows of a softmax's or a norm's length, with tails of every size
      // after the 64-wide vector blocks.
      {"reduce_long_rows_sum",
       absl::StrCat("HloModule m\n", kAddT, R"(ENTRY e {
  x = T[7,1037] parameter(0)
  z = T[] parameter(1)
  ROOT r = T[7] reduce(x, z), dimensions={1}, to_apply=add
})"),
       {"s32", "s64"},  // a float sum's order is the kernel's: ReduceRows.FloatSumOfLongRows
       "reduce"},
      {"reduce_long_rows_max",
       R"(HloModule m
max {
  a = T[] parameter(0)
  b = T[] parameter(1)
  ROOT s = T[] maximum(a, b)
}
ENTRY e {
  x = T[9,100] parameter(0)
  z = T[] parameter(1)
  ROOT r = T[9] reduce(x, z), dimensions={1}, to_apply=max
})",
       {"f32", "s32"},
       "reduce"},
      // A whole value to one element, split across threads (a dynamic
      // quantizer's range).
      {"reduce_everything_to_max",
       R"(HloModule m
max {
  a = T[] parameter(0)
  b = T[] parameter(1)
  ROOT s = T[] maximum(a, b)
}
ENTRY e {
  x = T[3,200,300] parameter(0)
  z = T[] parameter(1)
  ROOT r = T[] reduce(x, z), dimensions={0,1,2}, to_apply=max
})",
       {"f32", "s32", "u8"},
       "reduce"},
      {"reduce_or_of_booleans",
       R"(HloModule m
or {
  a = T[] parameter(0)
  b = T[] parameter(1)
  ROOT s = T[] or(a, b)
}
ENTRY e {
  x = T[6,20,3] parameter(0)
  z = T[] parameter(1)
  ROOT r = T[20] reduce(x, z), dimensions={0,2}, to_apply=or
})",
       {"pred", "s32"},
       "reduce"},
      // TopK as imported: values and their indices, sorted by value.
      {"sort_values_with_indices",
       R"(HloModule m
gt {
  a = T[] parameter(0)
  b = T[] parameter(1)
  ia = s64[] parameter(2)
  ib = s64[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = T[3,500,4] parameter(0)
  i = s64[3,500,4] iota(), iota_dimension=1
  ROOT r = (T[3,500,4], s64[3,500,4]) sort(x, i), dimensions={1}, is_stable=true, to_apply=gt
})",
       {"f32", "s32", "u8", "f64"},
       "sort"},
      // TopK as imported, sliced to its first k: a selection, not a sort
      // (u8's many equal values check the order of ties).
      {"top_k_selection",
       R"(HloModule m
gt {
  a = T[] parameter(0)
  b = T[] parameter(1)
  ia = s64[] parameter(2)
  ib = s64[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = T[3,500,4] parameter(0)
  i = s64[3,500,4] iota(), iota_dimension=1
  r = (T[3,500,4], s64[3,500,4]) sort(x, i), dimensions={1}, is_stable=true, to_apply=gt
  v = T[3,500,4] get-tuple-element(r), index=0
  j = s64[3,500,4] get-tuple-element(r), index=1
  vk = T[3,37,4] slice(v), slice={[0:3], [0:37], [0:4]}
  jk = s64[3,37,4] slice(j), slice={[0:3], [0:37], [0:4]}
  ROOT t = (T[3,37,4], s64[3,37,4]) tuple(vk, jk)
})",
       {"f32", "s32", "u8", "f64"},
       "top-k"},
  };
}

// Every (case, element type) pair.
std::vector<std::pair<int, int>> CaseTypes() {
  std::vector<std::pair<int, int>> out;
  std::vector<OpCase> cases = OpCases();
  for (size_t c = 0; c < cases.size(); ++c)
    for (size_t t = 0; t < cases[c].types.size(); ++t) out.push_back({c, t});
  return out;
}

using KernelParam = std::tuple<std::pair<int, int>, bool>;

class KernelTest : public ::testing::TestWithParam<KernelParam> {};

TEST_P(KernelTest, EqualsTheEvaluator) {
  auto [case_type, fast] = GetParam();
  const OpCase c = OpCases()[case_type.first];
  const std::string& type = c.types[case_type.second];
  std::string text = absl::StrReplaceAll(c.hlo, {{"T[", type + "["}});
  auto module = hlo::ParseText(text);
  ASSERT_TRUE(module.ok()) << module.status() << "\n" << text;
  std::vector<Literal> args;
  const hlo::Computation& entry = *(*module)->entry();
  for (int64_t k = 0; k < entry.num_parameters(); ++k) args.push_back(Random(entry.parameter(k)->shape(), 7 + k));
  auto want = eval::EvaluateModule(**module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  CompileOptions options;
  options.use_dnnl = options.fuse_elementwise = fast;
  auto exe = Executable::Compile(std::move(*module), options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  bool ran_native = false;
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) {
    EXPECT_FALSE(absl::StartsWith(kind, "kernel")) << c.name << " " << type << ": " << kind;
    ran_native |= kind == c.kind;
  }
  EXPECT_TRUE(ran_native) << c.name << " " << type << " did not run on the " << c.kind << " kernel:\n"
                          << (*exe)->KernelListing();
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  std::vector<Literal> got;
  std::vector<void*> outs;
  for (const Shape& s : (*exe)->output_shapes()) outs.push_back(got.emplace_back(s).untyped_data());
  ASSERT_TRUE((*exe)->Execute(in, outs).ok());
  std::vector<const Literal*> wanted;
  if (want->shape().IsTuple())
    for (const Literal& l : want->tuple_elements()) wanted.push_back(&l);
  else
    wanted.push_back(&*want);
  ASSERT_EQ(got.size(), wanted.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape().ByteSize(), wanted[k]->shape().ByteSize());
    if (got[k].shape().ByteSize() == 0) continue;  // memcmp must not see the null data of empty literals
    EXPECT_EQ(0, std::memcmp(got[k].untyped_data(), wanted[k]->untyped_data(), got[k].shape().ByteSize()))
        << c.name << " " << type << (fast ? " (fast)" : "") << " output " << k;
  }
}

// "<case>_<type>[_fast]".
std::string ParamName(const ::testing::TestParamInfo<KernelParam>& info) {
  const std::pair<int, int>& ct = std::get<0>(info.param);
  const OpCase c = OpCases()[ct.first];
  return absl::StrCat(c.name, "_", c.types[ct.second], std::get<1>(info.param) ? "_fast" : "");
}

INSTANTIATE_TEST_SUITE_P(AllOps, KernelTest, ::testing::Combine(::testing::ValuesIn(CaseTypes()), ::testing::Bool()),
                         ParamName);

}  // namespace
}  // namespace xonnx::cpu

namespace xonnx::cpu {
namespace {

// The reference device (CompileOptions::reference): every instruction runs
// on a reference kernel, none on a native one or in a fusion, and the
// result is the evaluator's to the bit.
TEST(ReferenceDevice, RunsEveryInstructionOnTheEvaluatorsKernels) {
  const char* text = R"(HloModule reference
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[2,3,8,8] parameter(0)
  k = f32[4,3,3,3] parameter(1)
  c = f32[2,4,8,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  t = f32[2,4,8,8] tanh(c)
  m = f32[2,4,8,8] multiply(t, c)
  z = f32[] constant(0)
  r = f32[2,4] reduce(m, z), dimensions={2,3}, to_apply=add
  w = f32[4,5] parameter(2)
  ROOT d = f32[2,5] dot(r, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto module = hlo::ParseText(text);
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<Literal> args;
  const hlo::Computation& entry = *(*module)->entry();
  for (int64_t k = 0; k < entry.num_parameters(); ++k) args.push_back(Random(entry.parameter(k)->shape(), 11 + k));
  auto want = eval::EvaluateModule(**module, args);
  ASSERT_TRUE(want.ok()) << want.status();
  CompileOptions options;
  options.reference = true;
  auto exe = Executable::Compile(std::move(*module), options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  for (const auto& [kind, n] : (*exe)->ThunkSummary())
    EXPECT_TRUE(absl::StartsWith(kind, "kernel") || kind == "empty") << kind << "\n" << (*exe)->KernelListing();
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  Literal got((*exe)->output_shapes()[0]);
  void* out = got.untyped_data();
  ASSERT_TRUE((*exe)->Execute(in, {&out, 1}).ok());
  EXPECT_EQ(std::memcmp(got.untyped_data(), want->untyped_data(), got.size_bytes()), 0);
}

}  // namespace
}  // namespace xonnx::cpu

namespace xonnx::cpu {
namespace {

// Products by interpolation-like matrices (at most four nonzeros per
// output row) run on the sparse-dot kernel, which sums only the nonzeros
// (with fused multiply-adds: equal to the evaluator's dense sum up to
// rounding); a row of five goes back to the dense product.
struct SparseCase {
  std::string name;
  std::vector<int64_t> x_dims;
  int64_t axis;
  bool in_major;  // weights stored [in, out]
  int max_taps;
  bool dnnl;
};

std::string SparseModule(const SparseCase& c, int64_t in, int64_t out, std::vector<float>* w) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-1, 1);
  w->assign(in * out, 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    const int taps = o == 3 ? c.max_taps : 1 + static_cast<int>(o % std::min(c.max_taps, 4));
    for (int t = 0; t < taps; ++t) {
      const int64_t i = (o + 2 * t) % in;  // distinct for in >= 9
      (*w)[c.in_major ? i * out + o : o * in + i] = value(rng);
    }
  }
  std::vector<int64_t> y_dims;
  for (size_t k = 0; k < c.x_dims.size(); ++k)
    if (static_cast<int64_t>(k) != c.axis) y_dims.push_back(c.x_dims[k]);
  y_dims.push_back(out);
  auto dims = [](const std::vector<int64_t>& d) { return absl::StrJoin(d, ","); };
  std::string values;
  const int64_t rows = c.in_major ? in : out, cols = c.in_major ? out : in;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<std::string> row;
    for (int64_t k = 0; k < cols; ++k) row.push_back(absl::StrCat((*w)[r * cols + k]));
    absl::StrAppend(&values, r ? ", " : "", "{", absl::StrJoin(row, ", "), "}");
  }
  return absl::StrCat("HloModule m\nENTRY e {\n  x = f32[", dims(c.x_dims), "] parameter(0)\n  w = f32[", rows, ",",
                      cols, "] constant({", values, "})\n  ROOT y = f32[", dims(y_dims),
                      "] dot(x, w), lhs_contracting_dims={", c.axis, "}, rhs_contracting_dims={", c.in_major ? 0 : 1,
                      "}\n}\n");
}

TEST(SparseDot, InterpolationMatricesOnAnyAxis) {
  const std::vector<SparseCase> cases = {
      {"last_axis", {3, 5, 9}, 2, false, 2, true},          {"last_axis_cubic", {2, 70, 12}, 2, false, 4, true},
      {"inner_axis", {2, 9, 37}, 1, false, 2, false},       {"inner_axis_canonicalized", {2, 9, 37}, 1, false, 2, true},
      {"first_axis_in_major", {10, 33}, 0, true, 3, false}, {"five_taps_dense", {3, 5, 9}, 2, false, 5, true},
  };
  for (const SparseCase& c : cases) {
    const int64_t in = c.x_dims[c.axis], out = 35;
    std::vector<float> w;
    auto module = hlo::ParseText(SparseModule(c, in, out, &w));
    ASSERT_TRUE(module.ok()) << c.name << ": " << module.status();
    Literal x = Random((*module)->entry()->parameter(0)->shape(), 5);
    auto want = eval::EvaluateModule(**module, {x});
    ASSERT_TRUE(want.ok()) << want.status();
    CompileOptions options;
    options.use_dnnl = options.fuse_elementwise = c.dnnl;
    auto exe = Executable::Compile(std::move(*module), options);
    ASSERT_TRUE(exe.ok()) << exe.status();
    bool sparse = false;
    for (const auto& [kind, n] : (*exe)->ThunkSummary()) sparse |= kind == "sparse-dot";
    EXPECT_EQ(sparse, c.max_taps <= 4) << c.name << ":\n" << (*exe)->KernelListing();
    Literal got((*exe)->output_shapes()[0]);
    std::vector<void*> outs = {got.untyped_data()};
    ASSERT_TRUE((*exe)->Execute({x.untyped_data()}, outs).ok());
    ASSERT_EQ(got.element_count(), want->element_count());
    for (int64_t k = 0; k < got.element_count(); ++k)
      ASSERT_NEAR(got.data<float>()[k], want->data<float>()[k], 1e-5f * (1 + std::fabs(want->data<float>()[k])))
          << c.name << " element " << k;
  }
}

}  // namespace
}  // namespace xonnx::cpu

namespace xonnx::cpu {
namespace {

// A NaN anywhere in a long row makes its maximum and minimum NaN, as in
// the evaluator, wherever the vector blocks put it.
TEST(ReduceRows, NanReachesMaxAndMin) {
  for (const char* op : {"maximum", "minimum"}) {
    const std::string text = absl::StrCat(R"(HloModule m
r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] )",
                                          op, R"((a, b)
}
ENTRY e {
  x = f32[3,200] parameter(0)
  z = f32[] parameter(1)
  ROOT y = f32[3] reduce(x, z), dimensions={1}, to_apply=r
})");
    auto module = hlo::ParseText(text);
    ASSERT_TRUE(module.ok()) << module.status();
    auto exe = Executable::Compile(std::move(*module), CompileOptions{});
    ASSERT_TRUE(exe.ok()) << exe.status();
    std::vector<float> x(600, 1.0f);
    x[0 * 200 + 3] = std::nanf("");    // in the first vector block
    x[1 * 200 + 130] = std::nanf("");  // in a later one
    x[2 * 200 + 199] = 5.0f;           // none: the row's own extreme
    float init = 0.0f, y[3];
    std::vector<void*> outs = {y};
    ASSERT_TRUE((*exe)->Execute({x.data(), &init}, outs).ok());
    EXPECT_TRUE(std::isnan(y[0])) << op;
    EXPECT_TRUE(std::isnan(y[1])) << op;
    EXPECT_EQ(y[2], std::string(op) == "maximum" ? 5.0f : 0.0f) << op;
  }
}

// A float row's sum in any order XLA allows: within rounding of the
// exact sum, for every tail length after the vector blocks.
TEST(ReduceRows, FloatSumOfLongRows) {
  for (int64_t n : {64, 65, 100, 1037}) {
    auto module =
        hlo::ParseText(absl::StrCat("HloModule m\n", absl::StrReplaceAll(kAddT, {{"T[", "f32["}}),
                                    "ENTRY e {\n  x = f32[3,", n, "] parameter(0)\n  z = f32[] parameter(1)\n",
                                    "  ROOT y = f32[3] reduce(x, z), dimensions={1}, to_apply=add\n}\n"));
    ASSERT_TRUE(module.ok()) << module.status();
    Literal x = Random((*module)->entry()->parameter(0)->shape(), 3);
    auto exe = Executable::Compile(std::move(*module), CompileOptions{});
    ASSERT_TRUE(exe.ok()) << exe.status();
    float init = 0.5f, y[3];
    std::vector<void*> outs = {y};
    ASSERT_TRUE((*exe)->Execute({x.untyped_data(), &init}, outs).ok());
    for (int r = 0; r < 3; ++r) {
      double exact = init, magnitude = std::fabs(init);
      for (int64_t k = 0; k < n; ++k) {
        exact += x.data<float>()[r * n + k];
        magnitude += std::fabs(x.data<float>()[r * n + k]);
      }
      EXPECT_NEAR(y[r], exact, 1e-6 * magnitude) << "n = " << n << ", row " << r;
    }
  }
}

}  // namespace
}  // namespace xonnx::cpu
