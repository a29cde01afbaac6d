// oneDNN's convolutions never left on its reference kernel when another
// layout has a fast one: a dilation-8 3x3 convolution of 256 channels,
// which a concatenation after it puts on blocked channels (U^2-Net's
// dilated blocks), had oneDNN's reference kernel take 10 s per call there.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "backends/cpu/runtime/executable.h"
#include "hlo/parser.h"

namespace xonnx::cpu {
namespace {

using hlo::Literal;

Literal RandomF32(const hlo::Shape& s, uint32_t seed, float scale) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = u(rng);
  return l;
}

constexpr const char* kDilatedBranches = R"(HloModule dilated
ENTRY e {
  x = f32[1,256,32,32] parameter(0)
  w1 = f32[256,256,3,3] parameter(1)
  w2 = f32[256,256,3,3] parameter(2)
  w3 = f32[64,512,1,1] parameter(3)
  a = f32[1,256,32,32] convolution(x, w1), window={size=3x3 pad=8_8x8_8 rhs_dilate=8x8}, dim_labels=bf01_oi01->bf01
  z = f32[] constant(0)
  zb = f32[1,256,32,32] broadcast(z), dimensions={}
  r = f32[1,256,32,32] maximum(a, zb)
  b = f32[1,256,32,32] convolution(x, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  c = f32[1,512,32,32] concatenate(r, b), dimensions={1}
  ROOT y = f32[1,64,32,32] convolution(c, w3), window={size=1x1}, dim_labels=bf01_oi01->bf01
})";

TEST(DnnlConv, NoConvolutionRunsOnTheReferenceKernelWhereAnotherLayoutHasAFastOne) {
  auto module = hlo::ParseText(kDilatedBranches);
  ASSERT_TRUE(module.ok()) << module.status();
  auto plain = hlo::ParseText(kDilatedBranches);
  ASSERT_TRUE(plain.ok()) << plain.status();
  // The weights bound as constants, as the plugin binds a model's.
  Literal x = RandomF32(hlo::Shape(hlo::F32, {1, 256, 32, 32}), 3, 1.0f);
  for (auto* m : {&*module, &*plain}) {
    std::vector<std::pair<int64_t, Literal>> weights;
    for (int64_t k = 1; k <= 3; ++k)
      weights.emplace_back(k, RandomF32((*m)->entry()->parameter(k)->shape(), 3 + k, 0.05f));
    ASSERT_TRUE((*m)->BindParameters(std::move(weights)).ok());
  }
  auto exe = Executable::Compile(std::move(*module), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status();
  bool ran_dnnl = false;
  for (const auto& [kind, n] : (*exe)->ThunkSummary()) {
    EXPECT_FALSE(absl::EndsWith(kind, "-ref")) << kind << "\n" << (*exe)->KernelListing();
    ran_dnnl |= absl::StartsWith(kind, "dnnl-conv");
  }
  EXPECT_TRUE(ran_dnnl) << (*exe)->KernelListing();
  // The same values as the native kernels without oneDNN.
  CompileOptions no_dnnl;
  no_dnnl.use_dnnl = false;
  auto want_exe = Executable::Compile(std::move(*plain), no_dnnl);
  ASSERT_TRUE(want_exe.ok()) << want_exe.status();
  std::vector<const void*> in = {x.untyped_data()};
  Literal got((*exe)->output_shapes()[0]), want((*want_exe)->output_shapes()[0]);
  ASSERT_TRUE((*exe)->Execute(in, {got.untyped_data()}).ok());
  ASSERT_TRUE((*want_exe)->Execute(in, {want.untyped_data()}).ok());
  double worst = 0;
  for (int64_t i = 0; i < got.element_count(); ++i)
    worst = std::max(worst, std::abs(double{got.data<float>()[i]} - want.data<float>()[i]) /
                                (1.0 + std::abs(double{want.data<float>()[i]})));
  EXPECT_LT(worst, 1e-4);
}

}  // namespace
}  // namespace xonnx::cpu
