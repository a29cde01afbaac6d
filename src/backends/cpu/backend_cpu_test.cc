// Table-driven: every case runs on the CPU backend (with and without oneDNN
// and fusion) and on the reference evaluator, on non-trivial random data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/canonicalization/layout_pass.h"
#include "backends/cpu/canonicalization/precision_pass.h"
#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/runtime/executable.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/test_dir.h"
#include "evaluator/evaluator.h"
#include "hlo/builder.h"
#include "hlo/parser.h"
#include "hlo/printer.h"

namespace xonnx::cpu {
namespace {

using namespace hlo;  // NOLINT

Literal Random(const Shape& s, uint32_t seed) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  TypeSwitch(s.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < l.element_count(); ++i) l.data<T>()[i] = ConvertValue<T, float>(dist(rng) * 3);
  });
  return l;
}

// Runs `exe` on `args` and returns all its outputs.
std::vector<Literal> RunAll(const Executable& exe, const std::vector<Literal>& args) {
  std::vector<const void*> in;
  for (const auto& a : args) in.push_back(a.untyped_data());
  std::vector<Literal> outs;
  for (const Shape& s : exe.output_shapes()) outs.emplace_back(s);
  std::vector<void*> out_ptrs;
  for (auto& o : outs) out_ptrs.push_back(o.untyped_data());
  EXPECT_TRUE(exe.Execute(in, out_ptrs).ok());
  return outs;
}

// The largest |got - want| / (1 + |want|) over the elements.
double MaxRelativeError(const Literal& got, const Literal& want) {
  double max_err = 0;
  for (int64_t i = 0; i < got.element_count(); ++i) {
    double a = got.GetAsDouble(i), e = want.GetAsDouble(i);
    max_err = std::max(max_err, std::abs(a - e) / (1 + std::abs(e)));
  }
  return max_err;
}

// Weights of a trained network's scale (He initialization: about
// sqrt(2 / fan_in)), so that outputs keep the inputs' magnitude.
Literal Weights(const Shape& s, uint32_t seed) {
  Literal l = Random(s, seed);
  int64_t fan_in = s.ElementCount() / s.dims[0];
  float scale = std::sqrt(2.0f / fan_in) / 6;  // Random spans +-6
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] *= scale;
  return l;
}

struct Case {
  std::string name;
  std::vector<Shape> params;
  std::function<Instruction*(Builder&, const std::vector<Instruction*>&)> body;
  // With oneDNN and fusion: the thunks expected, by kind (ThunkSummary's
  // order); empty: not checked.
  std::vector<std::pair<std::string, int64_t>> fast_thunks = {};
};

using Kinds = std::vector<std::pair<std::string, int64_t>>;

// Blocks of 8 channels exist only without AVX-512 (DnnlChannelBlock): the
// thunks of a case with such counts, on this CPU.
Kinds WithBlocksOf8(Kinds without_avx512, Kinds with_avx512) { return CpuHasAvx512() ? with_avx512 : without_avx512; }

Window Win2d(int64_t k, int64_t stride, int64_t pad, int64_t dil = 1) {
  Window w;
  w.dimensions.resize(2, WindowDimension{k, stride, pad, pad, dil, 1, false});
  return w;
}

ConvolutionDimensionNumbers Nchw() {
  ConvolutionDimensionNumbers d;
  d.input_spatial_dimensions = d.kernel_spatial_dimensions = d.output_spatial_dimensions = {2, 3};
  return d;
}

// An NCHW convolution of x (k x k, stride 1, same padding; depthwise: one
// filter per channel) with constant weights (seed `*seed`, then advanced)
// and a bias, then a residual sum if one is given, else a ReLU.
Instruction* ConvBias(Builder& b, Instruction* x, int64_t oc, int64_t k, bool depthwise, uint32_t* seed,
                      Instruction* residual = nullptr) {
  int64_t ic = x->shape().dims[1];
  auto* w = b.Constant(Weights(Shape(F32, {oc, depthwise ? 1 : ic, k, k}), (*seed)++));
  auto* c = b.Convolution(x, w, Win2d(k, 1, k / 2), Nchw(), depthwise ? ic : 1);
  auto* y =
      b.Binary(Opcode::kAdd, c, b.Broadcast(b.Constant(Random(Shape(F32, {oc}), (*seed)++)), c->shape().dims, {1}));
  if (residual) return b.Binary(Opcode::kAdd, y, residual);
  return b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
}

std::string BranchPrefix(ComparisonDirection dir) { return dir == ComparisonDirection::kEq ? "index" : "pred"; }

// A conditional over the tuple (a, b) whose results are the operands' last
// use (so the arena may reuse their slots for the results). kGt/kLt: a
// predicate computed from the data, max|a| compared with `arg` (true runs
// branch 0: tanh(a) + b; false branch 1: a * b). kEq: the s32 index `arg`
// (computed, not a constant) over three branches, the third b - a.
Instruction* ConditionalCase(Builder& b, const std::vector<Instruction*>& p, ComparisonDirection dir, int arg) {
  Module* m = b.module();
  Instruction* operand = b.Tuple({b.Unary(Opcode::kExp, p[0]), b.Unary(Opcode::kExp, p[1])});
  auto branch = [&](const std::string& name, Opcode op, bool tanh_first) {
    Builder bb(m, name);
    auto* t = bb.Parameter(0, operand->shape(), "t");
    auto* x = bb.GetTupleElement(t, 0);
    auto* y = bb.GetTupleElement(t, 1);
    if (tanh_first) x = bb.Unary(Opcode::kTanh, x);
    return *bb.Build(bb.Tuple({bb.Binary(op, x, y), y}));
  };
  std::vector<hlo::Computation*> branches = {branch(BranchPrefix(dir) + "_0", Opcode::kAdd, true),
                                             branch(BranchPrefix(dir) + "_1", Opcode::kMultiply, false)};
  Instruction* selector;
  if (dir == ComparisonDirection::kEq) {
    branches.push_back(branch("index_2", Opcode::kSubtract, false));
    auto* zero = b.Convert(b.Reduce({b.Binary(Opcode::kMultiply, p[0], b.Broadcast(b.ScalarConstant(F32, 0), {5}, {}))},
                                    {b.ScalarConstant(F32, 0)}, {0}, b.ScalarReducer(Opcode::kAdd, F32)),
                           S32);
    selector = b.Binary(Opcode::kAdd, zero, b.ScalarConstant(S32, arg));
  } else {
    auto* mx = b.Reduce({b.Unary(Opcode::kAbs, p[0])}, {b.ScalarConstant(F32, 0)}, {0},
                        b.ScalarReducer(Opcode::kMaximum, F32));
    selector = b.Compare(mx, b.ScalarConstant(F32, arg), dir);
  }
  std::vector<Instruction*> operands(branches.size(), operand);
  auto* c = b.Conditional(selector, branches, operands);
  return b.Tuple({b.GetTupleElement(c, 0), b.GetTupleElement(c, 1)});
}

std::vector<Case> Cases() {
  return {
      {"conv3x3_bias_relu",
       {Shape(F32, {2, 8, 9, 9}), Shape(F32, {16, 8, 3, 3}), Shape(F32, {16})},
       [](Builder& b, auto p) {
         auto* c = b.Convolution(p[0], p[1], Win2d(3, 1, 1), Nchw(), 1);
         auto* y = b.Binary(Opcode::kAdd, c, b.Broadcast(p[2], c->shape().dims, {1}));
         return b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
       }},
      {"conv_bias_residual_relu",
       {Shape(F32, {1, 8, 7, 7}), Shape(F32, {8, 8, 3, 3}), Shape(F32, {8}), Shape(F32, {1, 8, 7, 7})},
       [](Builder& b, auto p) {
         auto* c = b.Convolution(p[0], p[1], Win2d(3, 1, 1), Nchw(), 1);
         auto* y = b.Binary(Opcode::kAdd, c, b.Broadcast(p[2], c->shape().dims, {1}));
         y = b.Binary(Opcode::kAdd, y, p[3]);
         return b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
       }},
      {"nhwc_conv_single_use_residual",
       {Shape(F32, {1, 7, 7, 8}), Shape(F32, {8, 8, 3, 3}), Shape(F32, {8}), Shape(F32, {1, 7, 7, 8})},
       [](Builder& b, auto p) {
         ConvolutionDimensionNumbers d;
         d.input_feature_dimension = d.output_feature_dimension = 3;
         d.input_spatial_dimensions = d.output_spatial_dimensions = {1, 2};
         d.kernel_spatial_dimensions = {2, 3};
         auto* c = b.Convolution(p[0], p[1], Win2d(3, 1, 1), d, 1);
         auto* y = b.Binary(Opcode::kAdd, c, b.Broadcast(p[2], c->shape().dims, {3}));
         // The residual is computed and read only by the epilogue.
         y = b.Binary(Opcode::kAdd, y, b.Unary(Opcode::kTanh, p[3]));
         return b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
       }},
      // A residual joined after the activation (a block ending in its own
      // ReLU or swish before the skip add) is a sum post-op after the
      // eltwise one: each product is one kernel, the adds included.
      {"nhwc_conv_activation_then_residual",
       {Shape(F32, {1, 7, 7, 8}), Shape(F32, {8, 8, 3, 3}), Shape(F32, {8}), Shape(F32, {1, 7, 7, 8})},
       [](Builder& b, auto p) {
         ConvolutionDimensionNumbers d;
         d.input_feature_dimension = d.output_feature_dimension = 3;
         d.input_spatial_dimensions = d.output_spatial_dimensions = {1, 2};
         d.kernel_spatial_dimensions = {2, 3};
         auto* c = b.Convolution(p[0], p[1], Win2d(3, 1, 1), d, 1);
         auto* y = b.Binary(Opcode::kAdd, c, b.Broadcast(p[2], c->shape().dims, {3}));
         y = b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
         auto* r = b.Binary(Opcode::kAdd, p[3], y);
         auto* c2 = b.Convolution(r, p[1], Win2d(3, 1, 1), d, 1);
         auto* z = b.Binary(Opcode::kAdd, c2, b.Broadcast(p[2], c2->shape().dims, {3}));
         z = b.Binary(Opcode::kMultiply, z, b.Unary(Opcode::kLogistic, z));
         return b.Binary(Opcode::kAdd, z, r);
       },
       {{"dnnl-conv", 2}}},
      // A tanh after a convolution's bias is a post-op too.
      {"nhwc_conv_bias_tanh",
       {Shape(F32, {1, 7, 7, 8}), Shape(F32, {8, 8, 3, 3}), Shape(F32, {8})},
       [](Builder& b, auto p) {
         ConvolutionDimensionNumbers d;
         d.input_feature_dimension = d.output_feature_dimension = 3;
         d.input_spatial_dimensions = d.output_spatial_dimensions = {1, 2};
         d.kernel_spatial_dimensions = {2, 3};
         auto* c = b.Convolution(p[0], p[1], Win2d(3, 1, 1), d, 1);
         return b.Unary(Opcode::kTanh, b.Binary(Opcode::kAdd, c, b.Broadcast(p[2], c->shape().dims, {3})));
       },
       {{"dnnl-conv", 1}}},
      // 3x3 convolutions with constant weights: 64 channels each way run
      // Winograd's algorithm on blocked copies of the activations (with the
      // bias, the residual and the ReLU as post-ops); 32 channels on 72
      // output pixels stay direct.
      // Weights of a trained network's scale: Winograd's transforms add
      // rounding error in proportion to the partial sums' magnitude.
      {"winograd_conv_bias_residual_relu",
       {Shape(F32, {2, 64, 10, 10}), Shape(F32, {64}), Shape(F32, {2, 64, 10, 10}), Shape(F32, {2, 32, 6, 6})},
       [](Builder& b, auto p) {
         auto* w = b.Constant(Weights(Shape(F32, {64, 64, 3, 3}), 5));
         auto* c = b.Convolution(p[0], w, Win2d(3, 1, 1), Nchw(), 1);
         auto* y = b.Binary(Opcode::kAdd, c, b.Broadcast(p[1], c->shape().dims, {1}));
         y = b.Binary(Opcode::kAdd, y, p[2]);
         y = b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
         auto* narrow =
             b.Convolution(p[3], b.Constant(Weights(Shape(F32, {32, 32, 3, 3}), 6)), Win2d(3, 1, 1), Nchw(), 1);
         return b.Tuple({y, narrow});
       },
       {{"dnnl-conv", 1}, {"dnnl-conv-wino", 1}, {"fusion", 1}, {"transpose", 4}}},
      // oneDNN's Winograd kernels take no tanh: a narrow 3x3 convolution
      // worth running on them (32 to 32 channels on 144 pixels) leaves its
      // tanh to a fused loop after it instead of running direct.
      {"winograd_conv_then_tanh_loop",
       {Shape(F32, {1, 12, 12, 32}), Shape(F32, {32})},
       [](Builder& b, auto p) {
         ConvolutionDimensionNumbers d;
         d.input_feature_dimension = d.output_feature_dimension = 3;
         d.input_spatial_dimensions = d.output_spatial_dimensions = {1, 2};
         d.kernel_spatial_dimensions = {2, 3};
         auto* c = b.Convolution(p[0], b.Constant(Weights(Shape(F32, {32, 32, 3, 3}), 7)), Win2d(3, 1, 1), d, 1);
         return b.Unary(Opcode::kTanh, b.Binary(Opcode::kAdd, c, b.Broadcast(p[1], c->shape().dims, {3})));
       },
       {{"dnnl-conv-wino", 1}, {"fusion", 1}}},
      // MobileNetV3's activations as the importer writes them, folded into
      // their convolutions as post-ops: hard swish, y * clamp(y / 6 + 1/2,
      // 0, 1), and hard sigmoid, clamp(0.2 y + 0.5, 0, 1).
      {"conv_hard_swish_and_hard_sigmoid",
       {Shape(F32, {1, 8, 9, 9}), Shape(F32, {1, 16, 5, 5})},
       [](Builder& b, auto p) {
         auto splat = [&](Instruction* like, double v) {
           return b.Broadcast(b.ScalarConstant(F32, v), like->shape().dims, {});
         };
         auto hard_sigmoid = [&](Instruction* y, double a, double c) {
           auto* t = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, y, splat(y, a)), splat(y, c));
           return b.Clamp(b.ScalarConstant(F32, 0), t, b.ScalarConstant(F32, 1));
         };
         auto* y = b.Convolution(p[0], b.Constant(Weights(Shape(F32, {16, 8, 3, 3}), 11)), Win2d(3, 1, 1), Nchw(), 1);
         auto* hs = b.Binary(Opcode::kMultiply, y, hard_sigmoid(y, 1.0 / 6, 0.5));
         auto* z = b.Convolution(p[1], b.Constant(Weights(Shape(F32, {4, 16, 1, 1}), 12)), Win2d(1, 1, 0), Nchw(), 1);
         return b.Tuple({hs, hard_sigmoid(z, 0.2, 0.5)});
       },
       {{"dnnl-conv", 2}, {"transpose", 4}}},
      // Max pools on oneDNN's pooling: channels-first as imported (3x3,
      // stride 2, with ceil mode's extra high padding), and channels-last
      // after a convolution, where the layout pass leaves it.
      {"max_pools_on_onednn",
       {Shape(F32, {2, 8, 13, 13}), Shape(F32, {1, 8, 10, 10})},
       [](Builder& b, auto p) {
         auto pool = [&](Instruction* x, int64_t pad_hi) {
           Window w;
           w.dimensions.resize(4, WindowDimension{1, 1, 0, 0, 1, 1, false});
           for (int d = 2; d < 4; ++d) w.dimensions[d] = WindowDimension{3, 2, 1, pad_hi, 1, 1, false};
           return b.ReduceWindow(x, b.ScalarConstant(F32, -INFINITY), w, b.ScalarReducer(Opcode::kMaximum, F32));
         };
         auto* c = b.Convolution(p[1], b.Constant(Weights(Shape(F32, {16, 8, 3, 3}), 13)), Win2d(3, 1, 1), Nchw(), 1);
         return b.Tuple({pool(p[0], 2), pool(c, 1)});
       },
       {{"dnnl-conv", 1}, {"dnnl-pool", 2}, {"transpose", 2}}},
      // Transposed convolutions as the importer writes ConvTranspose: the
      // input dilated by the stride, the kernel [in/groups, out, k...]
      // reversed. With constant weights they run on oneDNN's deconvolution:
      // 2-D stride 2 with output padding (the high padding exceeds the
      // kernel's extent), and 1-D grouped with a dilated kernel.
      {"transposed_convolutions",
       {Shape(F32, {1, 8, 7, 9}), Shape(F32, {2, 6, 10})},
       [](Builder& b, auto p) {
         auto transposed = [](ConvolutionDimensionNumbers d) {
           d.kernel_input_feature_dimension = 0;
           d.kernel_output_feature_dimension = 1;
           return d;
         };
         Window w2;
         w2.dimensions.resize(2, WindowDimension{3, 1, 1, 3, 1, 2, false});
         auto* k2 = b.Constant(Weights(Shape(F32, {8, 6, 3, 3}), 8));
         auto* y2 = b.Convolution(p[0], k2, w2, transposed(Nchw()), 1);
         ConvolutionDimensionNumbers d1;
         d1.input_spatial_dimensions = d1.kernel_spatial_dimensions = d1.output_spatial_dimensions = {2};
         Window w1;
         w1.dimensions = {WindowDimension{3, 1, 3, 2, 2, 3, false}};
         auto* k1 = b.Constant(Weights(Shape(F32, {2, 9, 3}), 9));
         auto* y1 = b.Convolution(p[1], k1, w1, transposed(d1), 3);
         return b.Tuple({y2, y1});
       },
       {{"dnnl-deconv", 2}, {"transpose", 4}}},
      // Dots oneDNN's matmul does not take as written run on it after the
      // canonicalization: a rank-4 operand (a separable resize's product),
      // two contracting dims (one operand transposed), a matrix by a vector.
      {"dots_canonicalized",
       {Shape(F32, {2, 3, 20, 8}), Shape(F32, {6, 8}), Shape(F32, {6, 3, 7}), Shape(F32, {6, 7, 5}), Shape(F32, {9, 7}),
        Shape(F32, {7})},
       [](Builder& b, auto p) {
         DotDimensionNumbers two;
         two.lhs_contracting_dimensions = {0, 2};
         two.rhs_contracting_dimensions = {0, 1};
         return b.Tuple({b.Dot(p[0], p[1], BatchedDotDims(3, 1)), b.Dot(p[2], p[3], two),
                         b.Dot(p[4], p[5], BatchedDotDims(1, 0))});
       },
       // The product of [6, 3] rows per batch runs on the small-dot kernel.
       {{"dnnl-matmul", 2}, {"small-dot", 1}, {"transpose", 1}}},
      // Two fire modules (SqueezeNet's form) with a max pool between them:
      // the squeeze convolution's result, both expand branches (the 3x3 one
      // too, on Winograd's algorithm), their concatenation and the pool
      // stay blocked, the concatenation copying each branch's blocks per
      // image and the pool running on oneDNN's blocked kernel; the squeeze
      // convolution after the pool reads it blocked. The second module's
      // branches are transposed back to channels-first for the result, so
      // they and its concatenation are plain (and its 3x3 convolution, on
      // 72 pixels, too small for Winograd's algorithm, runs direct).
      {"blocked_fire_modules",
       {Shape(F32, {2, 32, 13, 13})},
       [](Builder& b, auto p) {
         uint32_t seed = 40;
         auto conv = [&](Instruction* x, int64_t oc, int64_t k) {
           int64_t ic = x->shape().dims[1];
           auto* c =
               b.Convolution(x, b.Constant(Weights(Shape(F32, {oc, ic, k, k}), seed++)), Win2d(k, 1, k / 2), Nchw(), 1);
           auto* y = b.Binary(Opcode::kAdd, c,
                              b.Broadcast(b.Constant(Random(Shape(F32, {oc}), seed++)), c->shape().dims, {1}));
           return b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
         };
         auto fire = [&](Instruction* x) {
           auto* s = conv(x, 16, 1);
           return b.Concatenate({conv(s, 32, 1), conv(s, 32, 3)}, 1);
         };
         Window w;
         w.dimensions.resize(4, WindowDimension{1, 1, 0, 0, 1, 1, false});
         for (int d = 2; d < 4; ++d) w.dimensions[d] = WindowDimension{3, 2, 0, 0, 1, 1, false};
         auto* pool =
             b.ReduceWindow(fire(p[0]), b.ScalarConstant(F32, -INFINITY), w, b.ScalarReducer(Opcode::kMaximum, F32));
         return fire(pool);
       },
       {{"concatenate", 1},
        {"concatenate-blocked", 1},
        {"dnnl-conv", 3},
        {"dnnl-conv-blocked", 2},
        {"dnnl-conv-wino", 1},
        {"dnnl-pool-blocked", 1},
        {"transpose", 3}}},
      // A squeeze-excitation block between blocked convolutions: the
      // depthwise convolution's blocked result is read, blocked, by the
      // global pool (each image's blocks of channels summed over their
      // pixels) and by the loop that scales it per image and channel,
      // which writes its result blocked for the projection. Nothing
      // changes layout between the first convolution and the last.
      {"squeeze_excitation_on_blocked_activations",
       {Shape(F32, {8, 32, 36, 36})},
       [](Builder& b, auto p) {
         uint32_t seed = 60;
         auto bias_relu = [&](Instruction* c, bool relu) {
           int64_t oc = c->shape().dims[1];
           Instruction* y = b.Binary(Opcode::kAdd, c,
                                     b.Broadcast(b.Constant(Random(Shape(F32, {oc}), seed++)), c->shape().dims, {1}));
           if (!relu) return y;
           return b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
         };
         auto conv = [&](Instruction* x, int64_t oc, int64_t k, int64_t groups, bool relu) {
           int64_t ic = x->shape().dims[1];
           auto* w = b.Constant(Weights(Shape(F32, {oc, ic / groups, k, k}), seed++));
           return bias_relu(b.Convolution(x, w, Win2d(k, 1, k / 2), Nchw(), groups), relu);
         };
         auto* x = conv(conv(p[0], 64, 1, 1, true), 64, 1, 1, true);
         auto* d = conv(x, 64, 3, 64, true);
         auto* pooled = b.Reduce({d}, {b.ScalarConstant(F32, 0)}, {2, 3}, b.ScalarReducer(Opcode::kAdd, F32));
         auto* mean = b.Binary(Opcode::kMultiply, pooled,
                               b.Broadcast(b.ScalarConstant(F32, 1.0f / (36 * 36)), pooled->shape().dims, {}));
         auto* squeezed = b.Dot(mean, b.Constant(Weights(Shape(F32, {64, 16}), seed++)), BatchedDotDims(1, 0));
         squeezed = b.Binary(Opcode::kMaximum, squeezed, b.Broadcast(b.ScalarConstant(F32, 0), {8, 16}, {}));
         auto* gate = b.Unary(Opcode::kLogistic,
                              b.Dot(squeezed, b.Constant(Weights(Shape(F32, {16, 64}), seed++)), BatchedDotDims(1, 0)));
         auto* scaled = b.Binary(Opcode::kMultiply, d, b.Broadcast(gate, d->shape().dims, {0, 1}));
         return conv(scaled, 32, 1, 1, false);
       },
       {{"dnnl-conv-blocked", 4},
        {"dnnl-matmul", 2},
        {"fusion", 2},
        {"fusion-blocked", 1},
        {"reduce-blocked", 1},
        {"transpose", 2}}},
      // Convolutions over 1x1 images with a 1x1 window (a
      // squeeze-excitation block's layers) are the products they are at
      // batch 1: the gemv kernel runs them, their bias and activations a
      // fused loop after it. At batch 16 they stay convolutions with their
      // epilogues.
      {"convolutions_over_points_are_products",
       {Shape(F32, {1, 96, 1, 1}), Shape(F32, {16, 96, 1, 1})},
       [](Builder& b, auto p) {
         auto* w1 = b.Constant(Weights(Shape(F32, {24, 96, 1, 1}), 70));
         auto* w2 = b.Constant(Weights(Shape(F32, {96, 24, 1, 1}), 71));
         auto* b1 = b.Constant(Random(Shape(F32, {24}), 72));
         auto layers = [&](Instruction* x) {
           auto* h = b.Convolution(x, w1, Win2d(1, 1, 0), Nchw(), 1);
           h = b.Binary(Opcode::kAdd, h, b.Broadcast(b1, h->shape().dims, {1}));
           h = b.Binary(Opcode::kMaximum, h, b.Broadcast(b.ScalarConstant(F32, 0), h->shape().dims, {}));
           return b.Unary(Opcode::kLogistic, b.Convolution(h, w2, Win2d(1, 1, 0), Nchw(), 1));
         };
         return b.Tuple({layers(p[0]), layers(p[1])});
       },
       {{"dnnl-conv", 2}, {"fusion", 2}, {"gemv", 2}}},
      // Broadcasts whose runs along the last dim repeat along the dims
      // just outside it (a per-image scale, a per-row one) are copied once
      // per stretch of equal runs and doubled; blocks of the loop start in
      // the middle of runs (40 does not divide 1024).
      {"fusions_repeat_runs_of_broadcasts",
       {Shape(F32, {2, 9, 11, 40}), Shape(F32, {2, 40}), Shape(F32, {2, 9, 40})},
       [](Builder& b, auto p) {
         const std::vector<int64_t>& dims = p[0]->shape().dims;
         auto* y = b.Binary(Opcode::kMultiply, p[0], b.Broadcast(p[1], dims, {0, 3}));
         return b.Binary(Opcode::kAdd, y, b.Broadcast(p[2], dims, {0, 1, 3}));
       },
       {{"fusion", 1}}},
      // Fusions read concatenations part by part from the parts' buffers
      // (a dense block's batch norm over its features): along the last
      // dim, a block of the loop takes runs of each part; along the first,
      // a block inside one part reads it in place and one across two
      // copies both runs. No concatenation is written.
      {"fusions_read_concatenations_in_place",
       {Shape(F32, {2, 5, 7, 3}), Shape(F32, {2, 5, 7, 1}), Shape(F32, {2, 5, 7, 4}), Shape(F32, {3, 40, 30}),
        Shape(F32, {1, 40, 30})},
       [](Builder& b, auto p) {
         auto* c = b.Concatenate({p[0], p[1], p[2]}, 3);
         auto* scale = b.Broadcast(b.Constant(Random(Shape(F32, {8}), 5)), c->shape().dims, {3});
         auto* y = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, c, scale),
                            b.Broadcast(b.ScalarConstant(F32, 0.25f), c->shape().dims, {}));
         y = b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
         auto* o = b.Concatenate({p[3], p[4]}, 0);
         auto* z = b.Binary(Opcode::kMultiply, b.Unary(Opcode::kTanh, o),
                            b.Broadcast(b.ScalarConstant(F32, 2), o->shape().dims, {}));
         return b.Tuple({y, z});
       },
       {{"fusion", 2}}},
      // A part read twice and a constant part, in integers: each part is a
      // buffer of its own to the loop, whatever it holds.
      {"fusions_read_concatenations_of_repeated_and_constant_parts",
       {Shape(S32, {4, 6})},
       [](Builder& b, auto p) {
         auto* c = b.Concatenate({p[0], b.Constant(Random(Shape(S32, {4, 2}), 9)), p[0]}, 1);
         return b.Binary(Opcode::kMultiply, c, b.Broadcast(b.ScalarConstant(S32, 3), c->shape().dims, {}));
       },
       {{"fusion", 1}}},
      // A concatenation of 24 and 32 channels on activations outgrowing the
      // caches: both parts and the result take blocks of 8, and the 1x1
      // convolutions after it read and write them so; with AVX-512 they all
      // stay channels-last.
      {"blocked_concatenation_in_blocks_of_8",
       {Shape(F32, {1, 32, 160, 160})},
       [](Builder& b, auto p) {
         uint32_t seed = 60;
         auto conv = [&](Instruction* x, int64_t oc) {
           int64_t ic = x->shape().dims[1];
           return b.Convolution(x, b.Constant(Weights(Shape(F32, {oc, ic, 1, 1}), seed++)), Win2d(1, 1, 0), Nchw(), 1);
         };
         return conv(conv(b.Concatenate({conv(p[0], 24), conv(p[0], 32)}, 1), 32), 16);
       },
       WithBlocksOf8({{"concatenate-blocked", 1}, {"dnnl-conv", 1}, {"dnnl-conv-blocked", 3}, {"transpose", 2}},
                     {{"concatenate", 1}, {"dnnl-conv", 4}, {"transpose", 2}})},
      // Two bottleneck blocks of 64 and 128 channels (ResNet's form): the
      // values between their 1x1 and Winograd convolutions, and the
      // residual chain d -> y1 -> y2, stay in oneDNN's blocked layout. At
      // the edges a convolution changes layouts on its smaller side: a and d
      // read x plain (equal sides: a runs blocked), `narrow` writes 32
      // channels out plain from a blocked 128, `wide` reads the 128 plain
      // to write 256, g writes its 64 blocked from 256 plain.
      {"blocked_bottlenecks",
       {Shape(F32, {2, 64, 9, 9}), Shape(F32, {2, 256, 9, 9})},
       [](Builder& b, auto p) {
         uint32_t seed = 20;
         auto conv = [&](Instruction* x, int64_t oc, int64_t k, Instruction* residual = nullptr) {
           int64_t ic = x->shape().dims[1];
           auto* c =
               b.Convolution(x, b.Constant(Weights(Shape(F32, {oc, ic, k, k}), seed++)), Win2d(k, 1, k / 2), Nchw(), 1);
           auto* y = b.Binary(Opcode::kAdd, c,
                              b.Broadcast(b.Constant(Random(Shape(F32, {oc}), seed++)), c->shape().dims, {1}));
           if (residual) y = b.Binary(Opcode::kAdd, y, residual);
           return b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
         };
         auto* w = conv(conv(p[0], 64, 1), 64, 3);
         auto* d = conv(p[0], 128, 1);
         auto* y1 = conv(w, 128, 1, d);
         auto* y2 = conv(conv(conv(y1, 64, 1), 64, 3), 128, 1, y1);
         auto* narrow = conv(y2, 32, 1);
         auto* wide = conv(y2, 256, 1);
         auto* g = conv(conv(p[1], 64, 1), 64, 3);
         return b.Tuple({narrow, wide, g});
       },
       {{"dnnl-conv", 2}, {"dnnl-conv-blocked", 6}, {"dnnl-conv-wino", 3}, {"transpose", 5}}},
      // Inverted residual blocks (MobileNetV2's form) on activations
      // larger than the caches: every 1x1 and depthwise convolution runs
      // blocked (only the 3x3 stem runs plain), in blocks of 8 channels
      // where a count (24, 72) is not a multiple of 16 and in the chains
      // linked to one. The first block's residual is the stem's plain
      // result, so its projection writes plain too (a residual shares its
      // result's bytes); when the planner left such a residual out of its
      // group, the projection wrote blocked over plain bytes (error 2.8).
      // With AVX-512 the chains of 24 and 72 channels stay channels-last.
      {"blocked_inverted_residuals",
       {Shape(F32, {2, 8, 128, 128})},
       [](Builder& b, auto p) {
         uint32_t seed = 40;
         auto conv = [&](Instruction* x, int64_t oc, int64_t k, bool depthwise, Instruction* residual = nullptr) {
           return ConvBias(b, x, oc, k, depthwise, &seed, residual);
         };
         auto* stem = conv(p[0], 16, 3, false);
         auto* x1 = conv(conv(conv(stem, 48, 1, false), 48, 3, true), 16, 1, false, stem);
         auto* x2 = conv(conv(conv(x1, 72, 1, false), 72, 3, true), 24, 1, false);
         return conv(conv(conv(x2, 72, 1, false), 72, 3, true), 24, 1, false, x2);
       },
       WithBlocksOf8({{"dnnl-conv", 1}, {"dnnl-conv-blocked", 9}, {"fusion", 1}, {"transpose", 3}},
                     {{"dnnl-conv", 7}, {"dnnl-conv-blocked", 3}, {"fusion", 1}, {"transpose", 3}})},
      // A stem (3 channels in) on activations larger than the caches reads
      // the NCHW input as it is and writes its result blocked for the
      // depthwise convolution after it: the layout pass's transpose of the
      // input is never made (one transpose left, the result's; two
      // without). The last 1x1 writes the plain result, larger than its
      // blocked source, so it runs plain.
      {"blocked_stem_reads_channels_first",
       {Shape(F32, {4, 3, 128, 128})},
       [](Builder& b, auto p) {
         uint32_t seed = 60;
         auto* stem = ConvBias(b, p[0], 16, 3, false, &seed);
         return ConvBias(b, ConvBias(b, stem, 16, 3, true, &seed), 24, 1, false, &seed);
       },
       {{"dnnl-conv", 1}, {"dnnl-conv-blocked", 2}, {"fusion", 1}, {"transpose", 1}}},
      {"while_with_tuple_state",
       {Shape(F32, {5})},
       [](Builder& b, auto p) {
         // (i, v): while i < 4 { v = tanh(v) * 1.5 + v; i += 1 }
         Module* m = b.module();
         Shape state = Shape::Tuple({Shape(S32, {}), Shape(F32, {5})});
         Builder cb(m, "cond");
         auto* cs = cb.Parameter(0, state, "s");
         auto* lt = cb.Compare(cb.GetTupleElement(cs, 0), cb.ScalarConstant(S32, 4), ComparisonDirection::kLt);
         Builder bb(m, "body");
         auto* bs = bb.Parameter(0, state, "s");
         auto* v = bb.GetTupleElement(bs, 1);
         auto* nv = bb.Binary(Opcode::kAdd,
                              bb.Binary(Opcode::kMultiply, bb.Unary(Opcode::kTanh, v),
                                        bb.Broadcast(bb.ScalarConstant(F32, 1.5), {5}, {})),
                              v);
         auto* ni = bb.Binary(Opcode::kAdd, bb.GetTupleElement(bs, 0), bb.ScalarConstant(S32, 1));
         auto* w = b.While(*cb.Build(lt), *bb.Build(bb.Tuple({ni, nv})), b.Tuple({b.ScalarConstant(S32, 0), p[0]}));
         return b.GetTupleElement(w, 1);
       }},
      {"conditional_pred_true",
       {Shape(F32, {5}), Shape(F32, {5})},
       [](Builder& b, auto p) { return ConditionalCase(b, p, ComparisonDirection::kGt, -1); }},
      {"conditional_pred_false",
       {Shape(F32, {5}), Shape(F32, {5})},
       [](Builder& b, auto p) { return ConditionalCase(b, p, ComparisonDirection::kLt, -1); }},
      {"conditional_index",
       {Shape(F32, {5}), Shape(F32, {5})},
       [](Builder& b, auto p) { return ConditionalCase(b, p, ComparisonDirection::kEq, 1); }},
      {"conditional_index_out_of_range",
       {Shape(F32, {5}), Shape(F32, {5})},
       [](Builder& b, auto p) { return ConditionalCase(b, p, ComparisonDirection::kEq, 7); }},
      {"grouped_strided_dilated_conv",
       {Shape(F32, {1, 8, 11, 11}), Shape(F32, {8, 2, 3, 3})},
       [](Builder& b, auto p) { return b.Convolution(p[0], p[1], Win2d(3, 2, 2, 2), Nchw(), 4); }},
      {"batched_dot",
       {Shape(F32, {3, 5, 7}), Shape(F32, {3, 7, 4})},
       [](Builder& b, auto p) {
         DotDimensionNumbers d = BatchedDotDims(2, 1, /*batch=*/1);
         return b.Dot(p[0], p[1], d);
       }},
      {"dot_transposed_operands",
       {Shape(F32, {7, 5}), Shape(F32, {4, 7})},
       [](Builder& b, auto p) {
         DotDimensionNumbers d = BatchedDotDims(0, 1);
         return b.Dot(p[0], p[1], d);
       }},
      {"dot_reshape_bias_residual_relu",
       {Shape(F32, {6, 7}), Shape(F32, {7, 5}), Shape(F32, {5}), Shape(F32, {2, 3, 5})},
       [](Builder& b, auto p) {
         // ONNX MatMul + Add + Add + Relu as imported: the product is
         // reshaped back to the activations' rank before the bias.
         DotDimensionNumbers d = BatchedDotDims(1, 0);
         auto* y = b.Reshape(b.Dot(p[0], p[1], d), {2, 3, 5});
         y = b.Binary(Opcode::kAdd, b.Broadcast(p[2], y->shape().dims, {2}), y);
         y = b.Binary(Opcode::kAdd, p[3], y);
         return b.Binary(Opcode::kMaximum, y, b.Broadcast(b.ScalarConstant(F32, 0), y->shape().dims, {}));
       },
       {{"dnnl-matmul", 1}}},
      // GELU as exporters write it, recognized by what it computes
      // (ProbeActivation) and folded into each product as a post-op: the
      // erf form with the 0.5 last or first and 1/sqrt(2) as a divisor or a
      // factor, and the tanh form with x * x * x. A tanh form with 0.05 for
      // 0.044715 is another function and stays a fused loop.
      {"dot_bias_gelu_forms",
       {Shape(F32, {6, 7}), Shape(F32, {7, 5}), Shape(F32, {5})},
       [](Builder& b, auto p) {
         auto k = [&](double v) { return b.Broadcast(b.ScalarConstant(F32, v), {6, 5}, {}); };
         auto product = [&]() {
           auto* y = b.Dot(p[0], p[1], BatchedDotDims(1, 0));
           return b.Binary(Opcode::kAdd, y, b.Broadcast(p[2], y->shape().dims, {1}));
         };
         auto* x = product();
         auto* e = b.Unary(Opcode::kErf, b.Binary(Opcode::kDivide, x, k(1.4142135)));
         auto* torch_form =
             b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, x, b.Binary(Opcode::kAdd, e, k(1))), k(0.5));
         x = product();
         e = b.Unary(Opcode::kErf, b.Binary(Opcode::kMultiply, k(0.70710678), x));
         auto* half_first =
             b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, k(0.5), x), b.Binary(Opcode::kAdd, k(1), e));
         auto tanh_form = [&](double c) {
           auto* y = product();
           auto* cube = b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, y, y), y);
           auto* inner = b.Binary(Opcode::kAdd, y, b.Binary(Opcode::kMultiply, k(c), cube));
           auto* t = b.Unary(Opcode::kTanh, b.Binary(Opcode::kMultiply, k(0.7978845608), inner));
           return b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, k(0.5), y), b.Binary(Opcode::kAdd, k(1), t));
         };
         return b.Tuple({torch_form, half_first, tanh_form(0.044715), tanh_form(0.05)});
       },
       {{"dnnl-matmul", 4}, {"fusion", 1}}},
      // Matrix-vector products with constant weights (a recurrent step, a
      // classifier head): both weight layouts, rank-1 and rank-2 rows,
      // column counts that leave a partial panel and groups of panels, and
      // one large enough to split between threads.
      // (The rank-1 row is reshaped to [1, 70] by dot canonicalization, and
      // the small-dot kernel reads that reshape of the parameter in place.)
      {"matrix_vector_products",
       {Shape(F32, {1, 130}), Shape(F32, {3, 70}), Shape(F32, {70}), Shape(F32, {2, 600})},
       [](Builder& b, auto p) {
         auto* w1 = b.Constant(Weights(Shape(F32, {130, 37}), 21));  // [K, N]
         auto* w2 = b.Constant(Weights(Shape(F32, {100, 70}), 22));  // [N, K]
         auto* w3 = b.Constant(Weights(Shape(F32, {600, 300}), 23));
         return b.Tuple({b.Dot(p[0], w1, BatchedDotDims(1, 0)), b.Dot(p[1], w2, BatchedDotDims(1, 1)),
                         b.Dot(p[2], w2, BatchedDotDims(0, 1)), b.Dot(p[3], w3, BatchedDotDims(1, 0))});
       },
       {{"gemv", 3}, {"small-dot", 1}}},
      {"two_biased_dots_summed",
       {Shape(F32, {3, 4}), Shape(F32, {5, 4}), Shape(F32, {3, 5}), Shape(F32, {5, 5}), Shape(F32, {10})},
       [](Builder& b, auto p) {
         // One RNN step: tanh(x·Wᵀ + bw + h·Rᵀ + br), both biases slices of one vector.
         DotDimensionNumbers d = BatchedDotDims(1, 1);
         auto* xw = b.Reshape(b.Dot(p[0], p[1], d), {1, 3, 5});
         xw = b.Reshape(b.Binary(Opcode::kAdd, xw, b.Broadcast(b.Slice(p[4], {0}, {5}, {1}), {1, 3, 5}, {2})), {3, 5});
         auto* hr = b.Dot(p[2], p[3], d);
         hr = b.Binary(Opcode::kAdd, hr, b.Broadcast(b.Slice(p[4], {5}, {10}, {1}), {3, 5}, {1}));
         return b.Unary(Opcode::kTanh, b.Binary(Opcode::kAdd, xw, hr));
       },
       // Products of 3 rows by weights known at run time run on the
       // small-dot kernel, the biases and tanh in fused loops after them;
       // the biases are computed slices the arena must keep until they run.
       {{"fusion", 2}, {"slice", 2}, {"small-dot", 2}}},
      {"attention_heads_read_in_place",
       {Shape(F32, {8, 1, 48})},
       [](Builder& b, auto p) {
         // Q, K, V cut from one projection and split into 4 heads of 4:
         // scores = Q·Kᵀ per head, then scores·V. Every slice, reshape and
         // transpose is read through a view by the products.
         auto head = [&](int64_t at, std::vector<int64_t> perm) {
           auto* s = b.Slice(p[0], {0, 0, at}, {8, 1, at + 16}, {1, 1, 1});
           return b.Transpose(b.Reshape(s, {8, 4, 4}), perm);
         };
         DotDimensionNumbers d = BatchedDotDims(2, 1, /*batch=*/1);
         auto* scores = b.Dot(head(0, {1, 0, 2}), head(16, {1, 2, 0}), d);  // [4, 8, 8]
         return b.Dot(scores, head(32, {1, 0, 2}), d);                      // [4, 8, 4]
       },
       {{"dnnl-matmul", 2}}},
      {"large_attention_heads_copied",
       {Shape(F32, {128, 1, 768})},
       [](Builder& b, auto p) {
         // The same at 4 heads of 128x64: the heads' operands (32K elements
         // each) are copied, since a product over interleaved heads runs on
         // oneDNN's slower generic kernel. (tanh keeps the sums of 128
         // products at a scale where f32 rounding stays below the bound.)
         auto* x = b.Unary(Opcode::kTanh, p[0]);
         auto head = [&](int64_t at, std::vector<int64_t> perm) {
           auto* s = b.Slice(x, {0, 0, at}, {128, 1, at + 256}, {1, 1, 1});
           return b.Transpose(b.Reshape(s, {128, 4, 64}), perm);
         };
         DotDimensionNumbers d = BatchedDotDims(2, 1, /*batch=*/1);
         auto* scores = b.Dot(head(0, {1, 0, 2}), head(256, {1, 2, 0}), d);  // [4, 128, 128]
         return b.Dot(scores, head(512, {1, 0, 2}), d);                      // [4, 128, 64]
       },
       {{"dnnl-matmul", 2}, {"fusion", 1}, {"slice", 3}, {"transpose", 3}}},
      {"transposed_operand_with_two_users",
       {Shape(F32, {5, 3, 4}), Shape(F32, {3, 4, 6})},
       [](Builder& b, auto p) {
         // The transpose is also an output, so it is computed; the product
         // reads it as usual.
         DotDimensionNumbers d = BatchedDotDims(2, 1, /*batch=*/1);
         auto* t = b.Transpose(p[0], {1, 0, 2});
         return b.Tuple({b.Dot(t, p[1], d), t});
       },
       {{"dnnl-matmul", 1}, {"transpose", 1}}},
      {"viewed_value_outlives_its_transpose",
       {Shape(F32, {3, 4, 5}), Shape(F32, {4, 5, 6})},
       [](Builder& b, auto p) {
         // x's last use in program order is the transpose, which is never
         // computed; w, made after it, must not take x's bytes before the
         // product reads them.
         DotDimensionNumbers d = BatchedDotDims(2, 1, /*batch=*/1);
         auto* t = b.Transpose(b.Unary(Opcode::kExp, p[0]), {1, 0, 2});
         auto* w = b.Unary(Opcode::kNegate, b.Unary(Opcode::kTanh, p[1]));
         return b.Dot(t, w, d);
       },
       {{"fusion", 2}, {"small-dot", 1}}},
      // Slices that only fusions read are read in place from their
      // operand's buffer (contiguous, offset and strided), never stored.
      {"slices_read_in_place",
       {Shape(F32, {4, 300})},
       [](Builder& b, auto p) {
         auto* e = b.Unary(Opcode::kTanh, p[0]);
         auto* x = b.Slice(e, {0, 0}, {4, 100}, {1, 1});
         auto* y = b.Slice(e, {0, 100}, {4, 200}, {1, 1});
         auto* z = b.Slice(e, {0, 1}, {4, 200}, {1, 2});
         return b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, x, y), z);
       },
       {{"fusion", 2}}},
      {"softmax_rows",
       {Shape(F32, {6, 33})},
       [](Builder& b, auto p) {
         auto* m = b.Reduce({p[0]}, {b.ScalarConstant(F32, -INFINITY)}, {1}, b.ScalarReducer(Opcode::kMaximum, F32));
         auto* e = b.Unary(Opcode::kExp, b.Binary(Opcode::kSubtract, p[0], b.Broadcast(m, {6, 33}, {0})));
         auto* s = b.Reduce({e}, {b.ScalarConstant(F32, 0)}, {1}, b.ScalarReducer(Opcode::kAdd, F32));
         return b.Binary(Opcode::kDivide, e, b.Broadcast(s, {6, 33}, {0}));
       },
       {{"row-fusion", 1}}},
      // Enough rows and nodes for the threads to split the rows.
      {"softmax_rows_in_parallel",
       {Shape(F32, {128, 300})},
       [](Builder& b, auto p) {
         auto* m = b.Reduce({p[0]}, {b.ScalarConstant(F32, -INFINITY)}, {1}, b.ScalarReducer(Opcode::kMaximum, F32));
         auto* e = b.Unary(Opcode::kExp, b.Binary(Opcode::kSubtract, p[0], b.Broadcast(m, {128, 300}, {0})));
         auto* s = b.Reduce({e}, {b.ScalarConstant(F32, 0)}, {1}, b.ScalarReducer(Opcode::kAdd, F32));
         return b.Binary(Opcode::kDivide, e, b.Broadcast(s, {128, 300}, {0}));
       },
       {{"row-fusion", 1}}},
      // Short rows go several to a block (12 of 40 here, the last block
      // one row), with a vector added along every row and threads
      // splitting the blocks.
      {"softmax_short_rows_in_blocks",
       {Shape(F32, {301, 40}), Shape(F32, {40})},
       [](Builder& b, auto p) {
         auto* x = b.Binary(Opcode::kAdd, p[0], b.Broadcast(p[1], {301, 40}, {1}));
         auto* m = b.Reduce({x}, {b.ScalarConstant(F32, -INFINITY)}, {1}, b.ScalarReducer(Opcode::kMaximum, F32));
         auto* e = b.Unary(Opcode::kExp, b.Binary(Opcode::kSubtract, x, b.Broadcast(m, {301, 40}, {0})));
         auto* s = b.Reduce({e}, {b.ScalarConstant(F32, 0)}, {1}, b.ScalarReducer(Opcode::kAdd, F32));
         return b.Binary(Opcode::kDivide, e, b.Broadcast(s, {301, 40}, {0}));
       },
       {{"row-fusion", 1}}},
      // A layer norm as the importer writes it (the row values reshaped to
      // [2, 5, 1] and back, gamma and beta along the rows, rows of 37: not a
      // multiple of the 16 lanes), also returning the mean: one row fusion
      // with two outputs.
      {"layer_norm_rows",
       {Shape(F32, {2, 5, 37}), Shape(F32, {37}), Shape(F32, {37})},
       [](Builder& b, auto p) {
         const std::vector<int64_t> full = {2, 5, 37}, row = {2, 5, 1};
         auto row_sum = [&](Instruction* x) {
           return b.Reshape(b.Reduce({x}, {b.ScalarConstant(F32, 0)}, {2}, b.ScalarReducer(Opcode::kAdd, F32)), row);
         };
         auto* n = b.Broadcast(b.ScalarConstant(F32, 37), row, {});
         auto spread = [&](Instruction* r) { return b.Broadcast(b.Reshape(r, {2, 5}), full, {0, 1}); };
         auto* mean = b.Binary(Opcode::kDivide, row_sum(p[0]), n);
         auto* d = b.Binary(Opcode::kSubtract, p[0], spread(mean));
         auto* var = b.Binary(Opcode::kDivide, row_sum(b.Binary(Opcode::kMultiply, d, d)), n);
         auto* inv =
             b.Unary(Opcode::kRsqrt, b.Binary(Opcode::kAdd, var, b.Broadcast(b.ScalarConstant(F32, 1e-5), row, {})));
         auto* y =
             b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, d, spread(inv)), b.Broadcast(p[1], full, {2}));
         y = b.Binary(Opcode::kAdd, y, b.Broadcast(p[2], full, {2}));
         return b.Tuple({y, mean});
       },
       {{"row-fusion", 1}}},
      // One splat (CSE merges a quantizer's scale across layers) read by a
      // row fusion and by a loop: each reads it in place, and it is never
      // written out.
      {"splat_shared_by_a_row_fusion_and_a_loop",
       {Shape(F32, {9, 40}), Shape(F32, {9, 40})},
       [](Builder& b, auto p) {
         auto* c = b.Broadcast(b.ScalarConstant(F32, 0.75f), {9, 40}, {});
         auto* x = b.Binary(Opcode::kMultiply, p[0], c);
         auto* s = b.Reduce({x}, {b.ScalarConstant(F32, 0)}, {1}, b.ScalarReducer(Opcode::kAdd, F32));
         auto* rows = b.Binary(Opcode::kSubtract, x, b.Broadcast(s, {9, 40}, {0}));
         auto* loop = b.Binary(Opcode::kAdd, b.Unary(Opcode::kTanh, p[1]), c);
         return b.Tuple({rows, loop});
       },
       {{"fusion", 1}, {"row-fusion", 1}}},
      // Two row reductions with a matrix product between that reads the
      // first one's result: the second group must not take in the first
      // (the product depends on it), so they stay two steps with the
      // product between.
      {"row_fusions_around_a_product",
       {Shape(F32, {8, 16}), Shape(F32, {16, 16})},
       [](Builder& b, auto p) {
         auto centre = [&](Instruction* x) {
           auto* s = b.Reduce({x}, {b.ScalarConstant(F32, 0)}, {1}, b.ScalarReducer(Opcode::kAdd, F32));
           return b.Binary(Opcode::kSubtract, x, b.Broadcast(s, {8, 16}, {0}));
         };
         auto* y = centre(b.Unary(Opcode::kTanh, p[0]));
         auto* z = b.Dot(y, p[1], BatchedDotDims(1, 0));
         return centre(b.Binary(Opcode::kAdd, y, z));
       },
       {{"dnnl-matmul", 1}, {"row-fusion", 2}}},
      // A squeeze-and-excitation block: 1x1 convolutions of a pooled
      // vector, which run as the products they are (on the matmul: their
      // weights are parameters), one element per feature, so the reshapes
      // after them and biases of the output's shape (computed, or reshaped
      // from a vector) join their epilogues, with swish and sigmoid.
      {"squeeze_excitation",
       {Shape(F32, {1, 16, 5, 5}), Shape(F32, {4, 16, 1, 1}), Shape(F32, {1, 4, 1, 1}), Shape(F32, {16, 4, 1, 1}),
        Shape(F32, {16})},
       [](Builder& b, auto p) {
         auto* pooled = b.Reshape(
             b.Reduce({p[0]}, {b.ScalarConstant(F32, 0)}, {2, 3}, b.ScalarReducer(Opcode::kAdd, F32)), {1, 16, 1, 1});
         auto* c1 = b.Reshape(b.Convolution(pooled, p[1], Win2d(1, 1, 0), Nchw(), 1), {1, 1, 1, 4});
         auto* y = b.Binary(Opcode::kAdd, c1, b.Reshape(b.Unary(Opcode::kTanh, p[2]), {1, 1, 1, 4}));
         y = b.Binary(Opcode::kMultiply, y, b.Unary(Opcode::kLogistic, y));
         auto* c2 = b.Reshape(b.Convolution(b.Reshape(y, {1, 4, 1, 1}), p[3], Win2d(1, 1, 0), Nchw(), 1), {16});
         auto* s = b.Unary(Opcode::kLogistic, b.Binary(Opcode::kAdd, c2, p[4]));
         return b.Binary(Opcode::kMultiply, p[0], b.Broadcast(s, {1, 16, 5, 5}, {1}));
       },
       // One row by weights known at run time: the small-dot kernel, each
       // product's bias and activation a fused loop after it.
       {{"fusion", 4}, {"reduce", 1}, {"small-dot", 2}}},
      // Leading dims reduced (a global pool in channels-last order): column
      // blocks with a narrow tail, and rows split into parts of odd length.
      {"reduce_leading_dims",
       {Shape(F32, {1, 40, 40, 20}), Shape(F32, {131, 3, 21}), Shape(F32, {2, 9, 11, 37}),
        Shape(F32, {1, 30, 30, 150})},
       [](Builder& b, auto p) {
         auto* sum = b.Reduce({p[0]}, {b.ScalarConstant(F32, 0)}, {1, 2}, b.ScalarReducer(Opcode::kAdd, F32));
         auto* mx =
             b.Reduce({p[1]}, {b.ScalarConstant(F32, -INFINITY)}, {0, 1}, b.ScalarReducer(Opcode::kMaximum, F32));
         auto* two = b.Reduce({p[2]}, {b.ScalarConstant(F32, 1)}, {1, 2}, b.ScalarReducer(Opcode::kAdd, F32));
         // Wider than one pass takes: 16-column blocks with a 6-column
         // tail, rows in parts; the 37-wide one above goes in one pass.
         auto* wide = b.Reduce({p[3]}, {b.ScalarConstant(F32, 0)}, {1, 2}, b.ScalarReducer(Opcode::kAdd, F32));
         return b.Tuple({sum, mx, two, wide});
       },
       {{"reduce", 4}}},
      // Channels-first to channels-last (a 2-D transpose per batch once
      // dims are merged) and a plain 2-D one, neither a multiple of a tile.
      // (A detector head's channels-last to channels-first, 255 channels,
      // and an s32 one: 8 x 8 blocks in registers with rows and columns
      // left over; 3-channel images to channels-last, 117 pixels each.)
      {"transposes_in_tiles",
       {Shape(F32, {2, 5, 9, 70}), Shape(F32, {100, 33}), Shape(F32, {1, 13, 11, 255}), Shape(S32, {2, 37, 50}),
        Shape(F32, {2, 3, 9, 13})},
       [](Builder& b, auto p) {
         return b.Tuple({b.Transpose(p[0], {0, 2, 3, 1}), b.Transpose(p[1], {1, 0}), b.Transpose(p[2], {0, 3, 1, 2}),
                         b.Transpose(p[3], {0, 2, 1}), b.Transpose(p[4], {0, 2, 3, 1})});
       },
       {{"transpose", 5}}},
      // Broadcasts that repeat with a period (a per-channel vector, a
      // trailing matrix) and one that does not (per leading index).
      {"periodic_broadcasts",
       {Shape(F32, {3, 700, 5}), Shape(F32, {5}), Shape(F32, {700, 5}), Shape(F32, {3})},
       [](Builder& b, auto p) {
         auto* y = b.Binary(Opcode::kMultiply, p[0], b.Broadcast(p[1], {3, 700, 5}, {2}));
         y = b.Binary(Opcode::kAdd, y, b.Broadcast(p[2], {3, 700, 5}, {1, 2}));
         y = b.Binary(Opcode::kMaximum, y, b.Broadcast(p[3], {3, 700, 5}, {0}));
         return b.Binary(Opcode::kSubtract, y, b.Broadcast(p[1], {3, 700, 5}, {2}));
       },
       {{"fusion", 1}}},
      {"mixed_types_and_tuple",
       {Shape(S32, {4, 300}), Shape(F32, {300})},
       [](Builder& b, auto p) {
         auto* f = b.Convert(p[0], F32);
         auto* bc = b.Broadcast(p[1], {4, 300}, {1});
         auto* gt = b.Compare(f, bc, ComparisonDirection::kGt);
         auto* sel = b.Select(gt, f, bc);
         auto* t = b.Transpose(sel, {1, 0});
         return b.Tuple({b.Reshape(t, {1200}), b.Convert(gt, S32), p[0]});
       }},
  };
}

class BackendTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(BackendTest, MatchesEvaluator) {
  auto [index, fast] = GetParam();
  Case c = Cases()[index];
  auto m = std::make_unique<Module>(c.name);
  Builder b(m.get(), "main");
  std::vector<Instruction*> params;
  std::vector<Literal> args;
  for (size_t i = 0; i < c.params.size(); ++i) {
    params.push_back(b.Parameter(i, c.params[i], absl::StrCat("p", i)));
    args.push_back(Random(c.params[i], 17 + i));
  }
  auto comp = b.Build(c.body(b, params));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  auto expected = eval::EvaluateModule(*m, args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  CompileOptions opts;
  opts.use_dnnl = opts.fuse_elementwise = fast;
  auto exe = Executable::Compile(std::move(m), opts);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<Literal> outs = RunAll(**exe, args);
  if (absl::StartsWith(c.name, "conditional") || absl::StartsWith(c.name, "while")) {
    // Control flow runs as compiled branches/bodies, not on the evaluator.
    for (const auto& [kind, n] : (*exe)->ThunkSummary()) EXPECT_NE(kind, "control-flow") << c.name;
  }
  if (fast && !c.fast_thunks.empty()) {
    EXPECT_EQ((*exe)->ThunkSummary(), c.fast_thunks) << c.name;
  }
  std::vector<const Literal*> want;
  if (expected->shape().IsTuple())
    for (auto& e : expected->tuple_elements()) want.push_back(&e);
  else
    want.push_back(&*expected);
  ASSERT_EQ(want.size(), outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    ASSERT_EQ(outs[k].element_count(), want[k]->element_count());
    EXPECT_LT(MaxRelativeError(outs[k], *want[k]), 1e-4) << c.name << " output " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, BackendTest,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(Cases().size())), ::testing::Bool()));

}  // namespace
}  // namespace xonnx::cpu

namespace xonnx::cpu {
namespace {

// How many times `what` occurs in `text` (instructions of an opcode in a
// module's text).
int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// conv -> bias -> relu -> max pool -> conv in element type `type`.
constexpr char kConvChain[] = R"(HloModule conv_chain

max_t {
  a = TYPE[] parameter(0)
  b = TYPE[] parameter(1)
  ROOT m = TYPE[] maximum(a, b)
}

ENTRY main {
  x = TYPE[1,4,8,8]{3,2,1,0} parameter(0)
  w1 = TYPE[4,4,3,3]{3,2,1,0} parameter(1)
  w2 = TYPE[4,4,3,3]{3,2,1,0} parameter(2)
  bias = TYPE[4]{0} parameter(3)
  c1 = TYPE[1,4,8,8]{3,2,1,0} convolution(x, w1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  bb = TYPE[1,4,8,8]{3,2,1,0} broadcast(bias), dimensions={1}
  a1 = TYPE[1,4,8,8]{3,2,1,0} add(c1, bb)
  zero = TYPE[] constant(0)
  zs = TYPE[1,4,8,8]{3,2,1,0} broadcast(zero), dimensions={}
  r1 = TYPE[1,4,8,8]{3,2,1,0} maximum(a1, zs)
  ninf = TYPE[] constant(-inf)
  p1 = TYPE[1,4,4,4]{3,2,1,0} reduce-window(r1, ninf), window={size=1x1x2x2 stride=1x1x2x2}, to_apply=max_t
  ROOT c2 = TYPE[1,4,4,4]{3,2,1,0} convolution(p1, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}
)";

std::string ConvChain(const std::string& type) {
  std::string text = kConvChain;
  for (size_t p = text.find("TYPE"); p != std::string::npos; p = text.find("TYPE", p)) text.replace(p, 4, type);
  return text;
}

TEST(LayoutPasses, ConvChainKeepsOneTransposeAtEachEnd) {
  auto m = hlo::ParseText(ConvChain("f32"));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(RunLayoutPasses(m->get()).ok());
  std::string text = hlo::ToText(**m);
  int transposes = Occurrences(text, " transpose(");
  EXPECT_EQ(transposes, 2) << text;
  EXPECT_NE(text.find("dim_labels=b01f_oi01->b01f"), std::string::npos) << text;
  EXPECT_NE(text.find("window={size=1x2x2x1 stride=1x2x2x1}"), std::string::npos) << text;
}

// A detector's neck: a convolution's output upsampled by nearest neighbour
// (a broadcast adding a copy dim after each spatial dim, and reshapes
// merging them), concatenated with another convolution's output, into a
// convolution. The transposes sink through the broadcasts and reshapes, so
// everything between the convolutions stays channels-last: one transpose at
// each end, and the results are the evaluator's.
constexpr char kUpsampleConcat[] = R"(HloModule upsample_concat

ENTRY main {
  x = f32[1,3,4,5]{3,2,1,0} parameter(0)
  y = f32[1,3,8,10]{3,2,1,0} parameter(1)
  w1 = f32[4,3,3,3]{3,2,1,0} parameter(2)
  w2 = f32[2,3,3,3]{3,2,1,0} parameter(3)
  w3 = f32[5,6,3,3]{3,2,1,0} parameter(4)
  c1 = f32[1,4,4,5]{3,2,1,0} convolution(x, w1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  b1 = f32[1,4,4,5,2]{4,3,2,1,0} broadcast(c1), dimensions={0,1,2,3}
  r1 = f32[1,4,4,10]{3,2,1,0} reshape(b1)
  b2 = f32[1,4,4,2,10]{4,3,2,1,0} broadcast(r1), dimensions={0,1,2,4}
  up = f32[1,4,8,10]{3,2,1,0} reshape(b2)
  c2 = f32[1,2,8,10]{3,2,1,0} convolution(y, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  cat = f32[1,6,8,10]{3,2,1,0} concatenate(up, c2), dimensions={1}
  ROOT c3 = f32[1,5,8,10]{3,2,1,0} convolution(cat, w3), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}
)";

// Runs the layout passes on `text`: they leave `transposes` transposes, and
// the program gives the evaluator's results.
void ExpectLayoutTransposes(const char* text, int transposes) {
  auto m = hlo::ParseText(text);
  ASSERT_TRUE(m.ok()) << m.status();
  std::unique_ptr<hlo::Module> original = (*m)->Clone();
  ASSERT_TRUE(RunLayoutPasses(m->get()).ok());
  std::string after = hlo::ToText(**m);
  EXPECT_EQ(Occurrences(after, " transpose("), transposes) << after;
  std::vector<Literal> args;
  // Weights at a trained network's scale, so that the sums stay near the
  // inputs' magnitude.
  for (const hlo::Instruction* p : original->entry()->parameters())
    args.push_back(args.size() < 2 ? Random(p->shape(), 40 + args.size()) : Weights(p->shape(), 40 + args.size()));
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  auto exe = Executable::Compile(std::move(original));
  ASSERT_TRUE(exe.ok()) << exe.status();
  Literal got((*exe)->output_shapes().at(0));
  void* out = got.untyped_data();
  ASSERT_TRUE((*exe)->Execute(in, absl::MakeSpan(&out, 1)).ok());
  auto want = eval::EvaluateModule(**hlo::ParseText(text), std::move(args));
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LT(MaxRelativeError(got, *want), 1e-5);
}

TEST(LayoutPasses, NearestUpsampleAndConcatStayChannelsLast) {
  // x and y to channels-last, the result back.
  ExpectLayoutTransposes(kUpsampleConcat, 3);
}

// A U-Net decoder's step: a linear resize (in channels-first order, ending
// in its own transpose, here the one of z) concatenated with a channels-last
// convolution's output, into a convolution. The concatenation runs
// channels-last: the convolution's output is not brought back to
// channels-first, the concatenation not to channels-last again, and z's
// transpose and the one to channels-last compose into one.
constexpr char kResizeConcat[] = R"(HloModule resize_concat

ENTRY main {
  x = f32[1,3,8,10]{3,2,1,0} parameter(0)
  z = f32[1,2,10,8]{3,2,1,0} parameter(1)
  w1 = f32[4,3,3,3]{3,2,1,0} parameter(2)
  w2 = f32[5,6,3,3]{3,2,1,0} parameter(3)
  c1 = f32[1,4,8,10]{3,2,1,0} convolution(x, w1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  up = f32[1,2,8,10]{3,2,1,0} transpose(z), dimensions={0,1,3,2}
  cat = f32[1,6,8,10]{3,2,1,0} concatenate(up, c1), dimensions={1}
  ROOT c2 = f32[1,5,8,10]{3,2,1,0} convolution(cat, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}
)";

TEST(LayoutPasses, ConcatOfOtherwiseTransposedOperandsStaysChannelsLast) {
  // x to channels-last, z's composed transpose, the result back (5 before:
  // also c1 back, up, and cat to channels-last).
  ExpectLayoutTransposes(kResizeConcat, 3);
}

// A float32 model's own Cast to a 16-bit type and back rounds, as ONNX
// Runtime's does: the pass takes away only the round trips of values it
// widened itself (differential testing found the model's rounding gone).
TEST(PrecisionPass, AModelsOwnCastRoundTripStays) {
  auto m = hlo::ParseText(R"(HloModule m

ENTRY main {
  x = f32[4]{0} parameter(0)
  h = bf16[4]{0} convert(x), metadata={op_type="Cast" op_name="to_bf16"}
  f = f32[4]{0} convert(h), metadata={op_type="Cast" op_name="back"}
  ROOT n = f32[4]{0} negate(f)
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  UpcastHalfPrecision pass;
  ASSERT_TRUE(pass.Run(m->get()).ok());
  EXPECT_EQ(Occurrences(hlo::ToText(**m), " convert("), 2) << hlo::ToText(**m);
  auto exe = Executable::Compile(std::move(*m));
  ASSERT_TRUE(exe.ok()) << exe.status();
  Literal x = Literal::Vector<float>({-0.09987706f, 1.27363f, 1.6365219f, 3.0f});
  Literal got(Shape(F32, {4}));
  const void* in = x.untyped_data();
  void* out = got.untyped_data();
  ASSERT_TRUE((*exe)->Execute({&in, 1}, {&out, 1}).ok());
  const float want[4] = {0.10009765625f, -1.2734375f, -1.6328125f, -3.0f};  // bf16 values, negated
  for (int k = 0; k < 4; ++k) EXPECT_EQ(got.data<float>()[k], want[k]) << k;
}

// The chain in f16 / bf16 (the shape data_type gives a model): after the
// pass only the program's boundaries convert, the convolutions are f32
// (oneDNN's), and the result matches the f32 program within 16-bit rounding.
TEST(PrecisionPass, HalfProgramsComputeInF32) {
  for (const std::string type : {"f16", "bf16"}) {
    auto m = hlo::ParseText(ConvChain(type));
    ASSERT_TRUE(m.ok()) << m.status();
    UpcastHalfPrecision pass(/*excess_precision=*/true);
    auto changed = pass.Run(m->get());
    ASSERT_TRUE(changed.ok() && *changed) << changed.status();
    std::string text = hlo::ToText(**m);
    // One convert per half parameter, one for the result; nothing in between.
    int converts = Occurrences(text, " convert(");
    EXPECT_EQ(converts, 5) << text;
    EXPECT_NE(text.find("f32[1,4,8,8]{3,2,1,0} convolution("), std::string::npos) << text;

    // Run the half program and the f32 one on the same (half-representable) data.
    auto half = hlo::ParseText(ConvChain(type));
    auto full = hlo::ParseText(ConvChain("f32"));
    ASSERT_TRUE(half.ok() && full.ok());
    PrimitiveType ht = type == "f16" ? F16 : BF16;
    std::vector<Literal> half_args, full_args;
    for (int64_t k = 0; k < 4; ++k) {
      const Shape& s = (*full)->entry()->parameter(k)->shape();
      Literal r = Random(Shape(ht, s.dims), 31 + k);
      full_args.push_back(r.Convert(F32));
      half_args.push_back(std::move(r));
    }
    auto run = [](std::unique_ptr<Module> mod, const std::vector<Literal>& args) -> Literal {
      CompileOptions options;
      options.excess_precision = true;
      auto exe = Executable::Compile(std::move(mod), options);
      EXPECT_TRUE(exe.ok()) << exe.status();
      for (const auto& [kind, n] : (*exe)->ThunkSummary()) EXPECT_NE(kind, "kernel:convolution");
      std::vector<const void*> in;
      for (const auto& a : args) in.push_back(a.untyped_data());
      Literal out((*exe)->output_shapes()[0]);
      void* o = out.untyped_data();
      EXPECT_TRUE((*exe)->Execute(in, {&o, 1}).ok());
      return out;
    };
    Literal got = run(std::move(*half), half_args);
    Literal want = run(std::move(*full), full_args);
    ASSERT_EQ(got.shape().element_type, ht);
    double max_err = 0, scale = 0;
    for (int64_t i = 0; i < want.element_count(); ++i) {
      max_err = std::max(max_err, std::abs(got.GetAsDouble(i) - want.GetAsDouble(i)));
      scale = std::max(scale, std::abs(want.GetAsDouble(i)));
    }
    // One rounding of the result (and the f32 intermediate c1 kept in f32).
    EXPECT_LT(max_err, scale * (type == "f16" ? 1e-3 : 8e-3)) << type;
    EXPECT_GT(scale, 1) << type;
  }
}

// Runs a one-output executable on `args`.
Literal RunOnce(const Executable& exe, const std::vector<const Literal*>& args) {
  std::vector<const void*> in;
  for (const Literal* a : args) in.push_back(a->untyped_data());
  Literal out(exe.output_shapes()[0]);
  void* o = out.untyped_data();
  EXPECT_TRUE(exe.Execute(in, {&o, 1}).ok());
  return out;
}

// By default each half-precision op's result is rounded to its type, as
// the program says: the compiled half program gives the reference
// evaluator's half results (which round every op), not the f32 program's.
TEST(PrecisionPass, HalfOpsRoundTheirResultsByDefault) {
  for (const std::string type : {"f16", "bf16"}) {
    auto m = hlo::ParseText(ConvChain(type));
    ASSERT_TRUE(m.ok()) << m.status();
    UpcastHalfPrecision pass;
    ASSERT_TRUE(pass.Run(m->get()).ok());
    // The convolutions and adds compute in f32 and round their results.
    std::string text = hlo::ToText(**m);
    EXPECT_NE(text.find("f32[1,4,8,8]{3,2,1,0} convolution("), std::string::npos) << text;
    EXPECT_GT(Occurrences(text, " convert("), 5) << text;

    auto half = hlo::ParseText(ConvChain(type));
    ASSERT_TRUE(half.ok());
    PrimitiveType ht = type == "f16" ? F16 : BF16;
    std::vector<Literal> args;
    for (int64_t k = 0; k < 4; ++k) {
      const Shape& s = (*half)->entry()->parameter(k)->shape();
      args.push_back(Random(Shape(ht, s.dims), 31 + k));
    }
    auto want = eval::EvaluateModule(**half, args);
    ASSERT_TRUE(want.ok()) << want.status();
    auto exe = Executable::Compile(std::move(*half));
    ASSERT_TRUE(exe.ok()) << exe.status();
    std::vector<const Literal*> ptrs;
    for (const Literal& a : args) ptrs.push_back(&a);
    Literal got = RunOnce(**exe, ptrs);
    // Per-op rounding as the evaluator's: differences only where a sum's
    // order tips a rounding (one unit in the last place of the half type).
    double max_err = 0, scale = 0;
    int64_t differing = 0;
    for (int64_t i = 0; i < want->element_count(); ++i) {
      double d = std::abs(got.GetAsDouble(i) - want->GetAsDouble(i));
      differing += d > 0;
      max_err = std::max(max_err, d);
      scale = std::max(scale, std::abs(want->GetAsDouble(i)));
    }
    EXPECT_LT(max_err, scale * (type == "f16" ? 2e-3 : 1.6e-2)) << type;
    EXPECT_LT(differing, want->element_count() / 4) << type;
  }
}

// A model's batch buckets are separate programs over the same weights. The
// packed (oneDNN layout) copy of each weight is made once and shared by all
// of them: weights borrowed from one buffer (as the PjRT plugin binds them)
// are recognized by their owner, equal owned constants by their bytes. The
// copies go when the last program using them does.
TEST(PackedWeights, ProgramsOverTheSameWeightsShareOnePackedCopy) {
  auto full = hlo::ParseText(ConvChain("f32"));
  ASSERT_TRUE(full.ok()) << full.status();
  std::vector<Literal> args;
  for (int64_t k = 0; k < 4; ++k) args.push_back(Random((*full)->entry()->parameter(k)->shape(), 71 + k));
  auto w1 = std::make_shared<Literal>(args[1]);
  auto w2 = std::make_shared<Literal>(args[2]);
  // The chain with its weights (parameters 1 and 2) bound as constants.
  auto bound = [&](bool borrow) {
    auto m = hlo::ParseText(ConvChain("f32"));
    EXPECT_TRUE(m.ok()) << m.status();
    std::vector<std::pair<int64_t, Literal>> values;
    for (auto [k, w] : {std::pair<int64_t, std::shared_ptr<Literal>>{1, w1}, {2, w2}})
      values.emplace_back(k, borrow ? Literal::Borrow(w->shape(), std::as_const(*w).untyped_data(), w) : Literal(*w));
    EXPECT_TRUE((*m)->BindParameters(std::move(values)).ok());
    auto exe = Executable::Compile(std::move(*m));
    EXPECT_TRUE(exe.ok()) << exe.status();
    return std::shared_ptr<Executable>(std::move(*exe));
  };
  auto reference = Executable::Compile(std::move(*full));
  ASSERT_TRUE(reference.ok()) << reference.status();
  Literal want = RunOnce(**reference, {&args[0], &args[1], &args[2], &args[3]});

  const PackedWeightStats before = PackedWeightCount();
  std::vector<std::shared_ptr<Executable>> programs;
  auto packed_since = [&] { return PackedWeightCount().packed - before.packed; };
  programs.push_back(bound(/*borrow=*/true));
  EXPECT_EQ(packed_since(), 2);
  programs.push_back(bound(true));
  EXPECT_EQ(packed_since(), 2) << "the second program packed its borrowed weights again";
  programs.push_back(bound(/*borrow=*/false));
  EXPECT_EQ(packed_since(), 4);
  programs.push_back(bound(false));
  EXPECT_EQ(packed_since(), 4) << "the second program packed its equal owned weights again";
  EXPECT_EQ(PackedWeightCount().alive - before.alive, 4);
  for (const auto& p : programs) {
    Literal got = RunOnce(*p, {&args[0], &args[3]});
    for (int64_t i = 0; i < want.element_count(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4 * (1 + std::abs(want.data<float>()[i]))) << i;
  }
  programs.clear();
  EXPECT_EQ(PackedWeightCount().alive, before.alive);
}

// Rows reduced along their contiguous last dim run in 16 lanes that meet at
// the end: every row length around the lane count and its multiples gives
// the evaluator's sums (to rounding), applies a non-identity init once, and
// a NaN anywhere in a row comes out of max.
// A whole value reduced to its max or min is split in parts across the
// threads: the extreme is found wherever it lies (the first element, a
// part's edge, the last element) and a NaN anywhere is passed on.
TEST(FastReduce, WholeValueMaxAndMinFindTheExtremeInEveryPart) {
  const int64_t n = 300007;  // not a multiple of the part count
  for (Opcode op : {Opcode::kMaximum, Opcode::kMinimum}) {
    for (int64_t at : {int64_t{0}, n / 7, n / 2, n - 1, int64_t{-1}}) {
      auto m = std::make_unique<Module>("whole");
      Builder b(m.get(), "main");
      Shape xs(F32, {n});
      auto* x = b.Parameter(0, xs, "x");
      float init = op == Opcode::kMaximum ? -INFINITY : INFINITY;
      auto comp = b.Build(b.Reduce({x}, {b.ScalarConstant(F32, init)}, {0}, b.ScalarReducer(op, F32)));
      ASSERT_TRUE(comp.ok()) << comp.status();
      m->set_entry(*comp);
      Literal arg = Random(xs, 5);
      float extreme = op == Opcode::kMaximum ? 1000.0f : -1000.0f;
      if (at >= 0) arg.data<float>()[at] = extreme;
      if (at < 0) arg.data<float>()[n - 3] = NAN;
      auto exe = Executable::Compile(std::move(m));
      ASSERT_TRUE(exe.ok()) << exe.status();
      float got = RunOnce(**exe, {&arg}).data<float>()[0];
      if (at < 0)
        EXPECT_TRUE(std::isnan(got)) << OpcodeName(op);
      else
        EXPECT_EQ(got, extreme) << OpcodeName(op) << " at " << at;
    }
  }
}

TEST(FastReduce, RowsOfEveryLengthMatchTheEvaluator) {
  for (int64_t n : {1, 15, 31, 32, 33, 47, 48, 100, 1000}) {
    for (Opcode op : {Opcode::kAdd, Opcode::kMaximum}) {
      auto m = std::make_unique<Module>("rows");
      Builder b(m.get(), "main");
      Shape xs(F32, {3, n});
      auto* x = b.Parameter(0, xs, "x");
      float init = op == Opcode::kAdd ? 0.25f : -INFINITY;
      auto* r = b.Reduce({x}, {b.ScalarConstant(F32, init)}, {1}, b.ScalarReducer(op, F32));
      auto comp = b.Build(r);
      ASSERT_TRUE(comp.ok()) << comp.status();
      m->set_entry(*comp);
      Literal arg = Random(xs, 7);
      if (op == Opcode::kMaximum) arg.data<float>()[n + n / 2] = NAN;  // row 1
      auto want = eval::EvaluateModule(*m, {arg});
      ASSERT_TRUE(want.ok()) << want.status();
      auto exe = Executable::Compile(std::move(m));
      ASSERT_TRUE(exe.ok()) << exe.status();
      EXPECT_EQ((*exe)->ThunkSummary(), (std::vector<std::pair<std::string, int64_t>>{{"reduce", 1}}));
      Literal got = RunOnce(**exe, {&arg});
      for (int64_t row = 0; row < 3; ++row) {
        float g = got.data<float>()[row], w = want->data<float>()[row];
        if (std::isnan(w))
          EXPECT_TRUE(std::isnan(g)) << "n=" << n << " row " << row;
        else
          EXPECT_NEAR(g, w, 1e-5 * (1 + std::abs(w)) * n) << "n=" << n << " row " << row << " op " << OpcodeName(op);
      }
    }
  }
}

// Calls that run one after another on programs of growing arena size (batch
// buckets) end up sharing one arena: a smaller call reuses a larger free
// arena, and the pool keeps no more free memory than calls used at once,
// and none once the executables are gone.
TEST(ArenaPool, SmallerCallsReuseALargerArena) {
  auto compile = [](int64_t batch) {
    std::string text = ConvChain("f32");
    std::string dim = absl::StrCat("[", batch, ",");
    for (size_t p = text.find("[1,"); p != std::string::npos; p = text.find("[1,", p + dim.size()))
      text.replace(p, 3, dim);
    auto m = hlo::ParseText(text);
    EXPECT_TRUE(m.ok()) << m.status();
    auto exe = Executable::Compile(std::move(*m));
    EXPECT_TRUE(exe.ok()) << exe.status();
    return std::move(*exe);
  };
  auto small = compile(1), large = compile(64);
  ASSERT_LT(small->arena_bytes(), large->arena_bytes());
  auto run = [](const Executable& exe) {
    std::vector<Literal> args;
    for (const Shape& s : exe.parameter_shapes()) args.push_back(Random(s, 5));
    RunOnce(exe, {&args[0], &args[1], &args[2], &args[3]});
  };
  run(*large);
  int64_t allocations = ArenaPoolCount().allocations;
  run(*small);
  run(*large);
  EXPECT_EQ(ArenaPoolCount().allocations, allocations) << "a call allocated instead of reusing the free arena";
  ArenaPoolStats st = ArenaPoolCount();
  EXPECT_EQ(st.in_use_bytes, 0);
  EXPECT_GE(st.free_bytes, large->arena_bytes());
  EXPECT_LE(st.free_bytes, std::max(st.peak_in_use_bytes, large->arena_bytes() + 64));
  // The memory goes with the last executable (none other is alive here).
  small.reset();
  EXPECT_GE(ArenaPoolCount().free_bytes, large->arena_bytes());
  large.reset();
  EXPECT_EQ(ArenaPoolCount().free_bytes, 0);
}

// Two residual blocks in channels-last order, each block's result the next
// one's residual: b = conv(conv(a)) + a, c = conv(conv(b)) + b. The
// epilogues read their residuals last, so b is written over a and c over b:
// the arena holds a block's value and its inner convolution's, 2 x 4 KiB
// (3 x 4 KiB if each result took a slot of its own).
constexpr char kResidualChain[] = R"(HloModule residual_chain

ENTRY main {
  x = f32[1,8,8,16]{3,2,1,0} parameter(0)
  w0 = f32[16,16,3,3]{3,2,1,0} parameter(1)
  w1 = f32[16,16,3,3]{3,2,1,0} parameter(2)
  w2 = f32[16,16,3,3]{3,2,1,0} parameter(3)
  w3 = f32[16,16,3,3]{3,2,1,0} parameter(4)
  a = f32[1,8,8,16]{3,2,1,0} tanh(x)
  h1 = f32[1,8,8,16]{3,2,1,0} convolution(a, w0), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_oi01->b01f
  c1 = f32[1,8,8,16]{3,2,1,0} convolution(h1, w1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_oi01->b01f
  b = f32[1,8,8,16]{3,2,1,0} add(c1, a)
  h2 = f32[1,8,8,16]{3,2,1,0} convolution(b, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_oi01->b01f
  c2 = f32[1,8,8,16]{3,2,1,0} convolution(h2, w3), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_oi01->b01f
  ROOT c = f32[1,8,8,16]{3,2,1,0} add(c2, b)
}
)";

TEST(Epilogues, ResultsAreWrittenOverResidualsReadLast) {
  auto m = hlo::ParseText(kResidualChain);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<Literal> args;
  for (int64_t k = 0; k < (*m)->entry()->num_parameters(); ++k)
    args.push_back(k == 0 ? Random((*m)->entry()->parameter(k)->shape(), 3)
                          : Weights((*m)->entry()->parameter(k)->shape(), 3 + k));
  auto expected = eval::EvaluateModule(**m, args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto exe = Executable::Compile(std::move(*m));
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->ThunkSummary(), (std::vector<std::pair<std::string, int64_t>>{{"dnnl-conv", 4}, {"fusion", 1}}));
  EXPECT_EQ((*exe)->arena_bytes() - (*exe)->scratch_bytes(), 2 * 4096);
  std::vector<const void*> in;
  for (auto& a : args) in.push_back(a.untyped_data());
  Literal out(expected->shape());
  std::vector<void*> outs = {out.untyped_data()};
  ASSERT_TRUE((*exe)->Execute(in, outs).ok());
  EXPECT_LT(MaxRelativeError(out, *expected), 1e-4);
}

// A squeeze-and-excitation scale: h is pooled, then multiplied by a
// per-channel factor made from the pool; the product goes through a 1x1
// convolution onto a residual k, computed first. The fused multiply is h's
// last reader, so it writes its result over h. With `keep_h`, h is also an
// output: then it is not the last reader and h must come out intact.
std::string ScaleChain(bool keep_h) {
  std::string y = "y = f32[1,8,8,32]{3,2,1,0} add(k, c)";
  std::string root =
      keep_h ? "  " + y + "\n  ROOT out = (f32[1,8,8,32]{3,2,1,0}, f32[1,8,8,32]{3,2,1,0}) tuple(y, h)" : "  ROOT " + y;
  return absl::StrCat(R"(HloModule scale_chain

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[1,8,8,32]{3,2,1,0} parameter(0)
  w1 = f32[32,32,1,1]{3,2,1,0} parameter(1)
  w2 = f32[32,32,1,1]{3,2,1,0} parameter(2)
  k = f32[1,8,8,32]{3,2,1,0} tanh(x)
  h = f32[1,8,8,32]{3,2,1,0} convolution(x, w1), window={size=1x1}, dim_labels=b01f_oi01->b01f
  zero = f32[] constant(0)
  pool = f32[1,32]{1,0} reduce(h, zero), dimensions={1,2}, to_apply=add
  gate = f32[1,32]{1,0} logistic(pool)
  scale = f32[1,8,8,32]{3,2,1,0} broadcast(gate), dimensions={0,3}
  m = f32[1,8,8,32]{3,2,1,0} multiply(h, scale)
  c = f32[1,8,8,32]{3,2,1,0} convolution(m, w2), window={size=1x1}, dim_labels=b01f_oi01->b01f
)",
                      root, "\n}\n");
}

TEST(Fusions, ResultsAreWrittenOverInputsReadLast) {
  for (bool keep_h : {false, true}) {
    auto m = hlo::ParseText(ScaleChain(keep_h));
    ASSERT_TRUE(m.ok()) << m.status();
    std::vector<Literal> args;
    for (int64_t k = 0; k < 3; ++k)
      args.push_back(k == 0 ? Random((*m)->entry()->parameter(k)->shape(), 5)
                            : Weights((*m)->entry()->parameter(k)->shape(), 5 + k));
    auto expected = eval::EvaluateModule(**m, args);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto exe = Executable::Compile(std::move(*m));
    ASSERT_TRUE(exe.ok()) << exe.status();
    const int64_t value = 8 * 8 * 32 * 4;
    // k (and y over it), h (and m over it), the pool and the gate; m in a
    // slot of its own would make three values of this size live at once.
    int64_t values = (*exe)->arena_bytes() - (*exe)->scratch_bytes();
    if (!keep_h)
      EXPECT_LT(values, 3 * value) << "the multiply did not write over h";
    else
      EXPECT_GE(values, 3 * value);
    std::vector<const void*> in;
    for (auto& a : args) in.push_back(a.untyped_data());
    std::vector<Literal> outs;
    std::vector<void*> out_ptrs;
    for (const Shape& s : (*exe)->output_shapes()) outs.emplace_back(s);
    for (auto& o : outs) out_ptrs.push_back(o.untyped_data());
    ASSERT_TRUE((*exe)->Execute(in, out_ptrs).ok());
    if (keep_h) {
      for (int k = 0; k < 2; ++k)
        EXPECT_LT(MaxRelativeError(outs[k], expected->tuple_elements()[k]), 1e-4) << "output " << k;
    } else {
      EXPECT_LT(MaxRelativeError(outs[0], *expected), 1e-4);
    }
  }
}

// A Winograd convolution's blocked copies of its input and output live in
// the call's arena, after the values' slots, not in memory of the thread.
TEST(Epilogues, WinogradCopiesLiveInTheArenasScratchRegion) {
  auto m = std::make_unique<Module>("winograd");
  Builder b(m.get(), "main");
  Shape xs(F32, {1, 64, 12, 12});
  auto* x = b.Parameter(0, xs, "x");
  auto* w = b.Constant(Weights(Shape(F32, {64, 64, 3, 3}), 1));
  auto comp = b.Build(b.Convolution(x, w, Win2d(3, 1, 1), Nchw(), 1));
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  auto exe = Executable::Compile(std::move(m));
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_THAT((*exe)->KernelListing(), ::testing::HasSubstr("dnnl-conv-wino"));
  EXPECT_GE((*exe)->scratch_bytes(), 2 * xs.ByteSize());
  EXPECT_GE((*exe)->arena_bytes() - (*exe)->scratch_bytes(), 2 * xs.ByteSize());  // the transposed input and output
}

// oneDNN primitives keep the memory objects that point them at a call's
// buffers and re-point them on each run; a call that finds them taken by a
// concurrent call of the same executable makes its own. Threads running one
// executable on different inputs (a Winograd convolution with its layout
// changes, a convolution with bias and swish, a matrix product) each get
// their own input's result, as computed alone.
TEST(Runners, ConcurrentCallsOfOneExecutableGetTheirOwnResults) {
  auto m = std::make_unique<Module>("concurrent");
  Builder b(m.get(), "main");
  Shape xs(F32, {1, 64, 12, 12});
  auto* x = b.Parameter(0, xs, "x");
  auto* c1 = b.Convolution(x, b.Constant(Weights(Shape(F32, {64, 64, 3, 3}), 1)), Win2d(3, 1, 1), Nchw(), 1);
  auto* c2 = b.Convolution(c1, b.Constant(Weights(Shape(F32, {32, 64, 1, 1}), 2)), Win2d(1, 1, 0), Nchw(), 1);
  auto* biased = b.Binary(Opcode::kAdd, c2, b.Broadcast(b.Constant(Random(Shape(F32, {32}), 3)), {1, 32, 12, 12}, {1}));
  auto* swish = b.Binary(Opcode::kMultiply, biased, b.Unary(Opcode::kLogistic, biased));
  auto* flat = b.Reshape(swish, {1, 32 * 144});
  auto* y = b.Dot(flat, b.Constant(Weights(Shape(F32, {32 * 144, 10}), 4)), BatchedDotDims(1, 0));
  auto comp = b.Build(y);
  ASSERT_TRUE(comp.ok()) << comp.status();
  m->set_entry(*comp);
  auto exe = Executable::Compile(std::move(m));
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_THAT((*exe)->KernelListing(), ::testing::HasSubstr("dnnl-conv-wino"));
  constexpr int kThreads = 4;
  std::vector<Literal> inputs, alone;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(Random(xs, 100 + t));
    alone.push_back(RunOnce(**exe, {&inputs[t]}));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i)
        if (MaxRelativeError(RunOnce(**exe, {&inputs[t]}), alone[t]) > 1e-5) ++wrong;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
  // Different inputs give different results, so a mix-up would show.
  EXPECT_GT(MaxRelativeError(alone[0], alone[1]), 1e-2);
}

// XONNX_DUMP_TO: a compiled program writes the HLO it runs (channels-last
// after the layout pass) and its kernels in order.
TEST(Dump, WritesTheProgramAsRunAndItsKernels) {
  std::filesystem::path dir = MakeTestDir("xonnx_dump");
  ::setenv("XONNX_DUMP_TO", dir.c_str(), 1);
  auto m = hlo::ParseText(ConvChain("f32"));
  ASSERT_TRUE(m.ok()) << m.status();
  auto exe = Executable::Compile(std::move(*m));
  ::unsetenv("XONNX_DUMP_TO");
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(files[0].filename().string(), "conv_chain.")) << files[0];
  EXPECT_TRUE(absl::EndsWith(files[0].filename().string(), ".cpu.txt")) << files[0];
  std::ifstream f(files[0]);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("dim_labels=b01f_oi01->b01f"), std::string::npos) << text;
  EXPECT_NE(text.find("dnnl-conv"), std::string::npos) << text;
  EXPECT_NE(text.find(absl::StrCat((*exe)->arena_bytes(), " bytes of working memory")), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xonnx::cpu

namespace xonnx::cpu {
namespace {

// A dynamically quantized product (as ONNX Runtime's DynamicQuantizeMatMul
// converts) whose result, plus a residual, is an output and is summed by
// rows. The scale is broadcast for the quantizing fusion and read through
// that broadcast by the row fusion at the end, after the zero point's
// scalar kernels: the scale's buffer must not be handed to them meanwhile.
constexpr char kScaleReadThroughABroadcast[] = R"(
HloModule rep
maximum_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT maximum = f32[] maximum(x, y)
}
minimum_f32 {
  x.1 = f32[] parameter(0)
  y.1 = f32[] parameter(1)
  ROOT minimum = f32[] minimum(x.1, y.1)
}
add_f32 {
  x.2 = f32[] parameter(0)
  y.2 = f32[] parameter(1)
  ROOT add.3 = f32[] add(x.2, y.2)
}
ENTRY main {
  a = f32[1,64,16]{2,1,0} parameter(0)
  r = f32[1,64,16]{2,1,0} parameter(1)
  w = s32[16,16]{1,0} parameter(2)
  bias = f32[16]{0} parameter(3)
  constant.11 = f32[] constant(0)
  constant.5 = f32[] constant(-inf)
  reduce = f32[] reduce(a, constant.5), dimensions={0,1,2}, to_apply=maximum_f32
  maximum.1 = f32[] maximum(reduce, constant.11)
  constant.6 = f32[] constant(inf)
  reduce.1 = f32[] reduce(a, constant.6), dimensions={0,1,2}, to_apply=minimum_f32
  minimum.1 = f32[] minimum(reduce.1, constant.11)
  subtract = f32[] subtract(maximum.1, minimum.1)
  constant.7 = f32[] constant(255)
  divide = f32[] divide(subtract, constant.7)
  broadcast.1 = f32[1,64,16]{2,1,0} broadcast(divide), dimensions={}
  divide.2 = f32[1,64,16]{2,1,0} divide(a, broadcast.1)
  round-nearest-even.1 = f32[1,64,16]{2,1,0} round-nearest-even(divide.2)
  divide.1 = f32[] divide(minimum.1, divide)
  subtract.1 = f32[] subtract(constant.11, divide.1)
  round-nearest-even = f32[] round-nearest-even(subtract.1)
  clamp = f32[] clamp(constant.11, round-nearest-even, constant.7)
  convert = u8[] convert(clamp)
  convert.1 = f32[] convert(convert)
  broadcast = f32[1,64,16]{2,1,0} broadcast(convert.1), dimensions={}
  add = f32[1,64,16]{2,1,0} add(round-nearest-even.1, broadcast)
  clamp.1 = f32[1,64,16]{2,1,0} clamp(constant.11, add, constant.7)
  convert.2 = u8[1,64,16]{2,1,0} convert(clamp.1)
  convert.4 = s32[1,64,16]{2,1,0} convert(convert.2)
  convert.3 = s32[] convert(convert)
  broadcast.2 = s32[1,64,16]{2,1,0} broadcast(convert.3), dimensions={}
  subtract.2 = s32[1,64,16]{2,1,0} subtract(convert.4, broadcast.2)
  reshape = s32[64,16]{1,0} reshape(subtract.2)
  dot = s32[64,16]{1,0} dot(reshape, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  reshape.1 = s32[1,64,16]{2,1,0} reshape(dot)
  convert.5 = f32[1,64,16]{2,1,0} convert(reshape.1)
  c16 = f32[] constant(0.0004)
  constant.16 = f32[1,64,16]{2,1,0} broadcast(c16), dimensions={}
  multiply = f32[1,64,16]{2,1,0} multiply(broadcast.1, constant.16)
  multiply.1 = f32[1,64,16]{2,1,0} multiply(convert.5, multiply)
  constant.17 = f32[1,64,16]{2,1,0} broadcast(bias), dimensions={2}
  add.1 = f32[1,64,16]{2,1,0} add(multiply.1, constant.17)
  add.2 = f32[1,64,16]{2,1,0} add(r, add.1)
  reduce.2 = f32[1,64]{1,0} reduce(add.2, constant.11), dimensions={2}, to_apply=add_f32
  reshape.2 = f32[1,64,1]{2,1,0} reshape(reduce.2)
  c20 = f32[] constant(16)
  constant.20 = f32[1,64,1]{2,1,0} broadcast(c20), dimensions={}
  divide.3 = f32[1,64,1]{2,1,0} divide(reshape.2, constant.20)
  ROOT tuple = (f32[1,64,16]{2,1,0}, f32[1,64,1]{2,1,0}) tuple(add.2, divide.3)
})";

TEST(RowFusions, ValuesReadThroughAComputedBroadcastStayUntilTheyRun) {
  auto m = hlo::ParseText(kScaleReadThroughABroadcast);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<Literal> args;
  for (auto* p : (*m)->entry()->parameters()) args.push_back(Random(p->shape(), 5 + args.size()));
  auto expected = eval::EvaluateModule(**m, args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto exe = Executable::Compile(std::move(*m), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<Literal> outs = RunAll(**exe, args);
  EXPECT_THAT((*exe)->ThunkSummary(), ::testing::Contains(::testing::Pair("row-fusion", 1)));
  for (size_t k = 0; k < outs.size(); ++k)
    EXPECT_LT(MaxRelativeError(outs[k], expected->tuple_elements()[k]), 1e-4) << "output " << k;
}

// Convolutions oneDNN does not take as written: a strided convolution's
// weight gradient (batch and features swapped, fb01_io01->fb01) and input
// gradient (a dilated base, a reversed window, io01 weights), and negative
// padding. ConvCanonicalization rewrites them for oneDNN.
TEST(ConvCanonicalization, EveryFormRunsOnOneDnnAndEqualsTheEvaluator) {
  constexpr char kForms[] = R"(HloModule forms
ENTRY main {
  x = f32[64,1,16,16] parameter(0)
  g = f32[64,8,16,16] parameter(1)
  a = f32[64,16,4,4] parameter(2)
  w = f32[16,8,3,3] parameter(3)
  y = f32[2,5,9,7] parameter(4)
  k = f32[4,5,3,3] parameter(5)
  dw = f32[8,1,3,3] convolution(x, g), window={size=16x16 pad=1_1x1_1}, dim_labels=fb01_io01->fb01
  dx = f32[64,8,8,8] convolution(a, w), window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2 rhs_reversal=1x1}, dim_labels=bf01_io01->bf01
  crop = f32[2,4,6,4] convolution(y, k), window={size=3x3 pad=-1_0x0_-1}, dim_labels=bf01_oi01->bf01
  ROOT t = (f32[8,1,3,3], f32[64,8,8,8], f32[2,4,6,4]) tuple(dw, dx, crop)
})";
  auto m = hlo::ParseText(kForms);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<Literal> args;
  for (const Instruction* p : (*m)->entry()->parameters()) args.push_back(Random(p->shape(), 5 + args.size()));
  auto want = eval::EvaluateModule(**m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto exe = Executable::Compile(*std::move(m), CompileOptions());
  ASSERT_TRUE(exe.ok()) << exe.status();
  int dnnl = 0;
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) {
    EXPECT_NE(kind, "convolution") << "a convolution ran on the native kernel";
    if (kind == "dnnl-conv") dnnl += n;
  }
  EXPECT_EQ(dnnl, 3);
  std::vector<Literal> outs = RunAll(**exe, args);
  ASSERT_EQ(outs.size(), 3u);
  for (size_t k = 0; k < outs.size(); ++k)
    EXPECT_LT(MaxRelativeError(outs[k], want->tuple_elements()[k]), 1e-4) << "output " << k;
}

}  // namespace
}  // namespace xonnx::cpu
