// The f32 <-> f16/bf16 array conversions against the scalar ones in
// xonnx/float16.h, bit for bit: every 16-bit pattern up, and down every
// value a rounding could hinge on (each 16-bit value, the ties between
// neighbours and one step either side of them), every 61st f32 bit pattern,
// the special values, and lengths that leave a tail; every build this CPU
// can run.
#include "backends/cpu/kernels/half_convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "xonnx/float16.h"

namespace xonnx::cpu {
namespace {

using internal::HalfConvertBuild;
class HalfConvert : public ::testing::TestWithParam<HalfConvertBuild> {};

bool IsNaN16(uint16_t h, bool bf16) { return bf16 ? (h & 0x7fff) > 0x7f80 : (h & 0x7fff) > 0x7c00; }

// Expects y == the scalar conversion of each x, a NaN matching any NaN of
// the same sign.
void ExpectDown(const HalfConvertBuild& b, bool bf16, const std::vector<float>& x) {
  std::vector<uint16_t> y(x.size());
  (bf16 ? b.f32_to_bf16 : b.f32_to_f16)(x.data(), y.data(), static_cast<int64_t>(x.size()));
  int failures = 0;
  for (size_t i = 0; i < x.size() && failures < 5; ++i) {
    uint16_t want = bf16 ? FloatToBF16Bits(x[i]) : FloatToHalfBits(x[i]);
    bool same = y[i] == want || (IsNaN16(y[i], bf16) && IsNaN16(want, bf16) && (y[i] >> 15) == (want >> 15));
    if (!same) {
      ++failures;
      ADD_FAILURE() << (bf16 ? "bf16" : "f16") << " of " << std::hexfloat << x[i] << " (bits 0x" << std::hex
                    << std::bit_cast<uint32_t>(x[i]) << "): got 0x" << y[i] << ", want 0x" << want;
    }
  }
}

// Every value of the 16-bit type, each tie with its upper neighbour and the
// floats one step either side of the values and the ties.
std::vector<float> RoundingPoints(bool bf16) {
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float v = bf16 ? BF16BitsToFloat(static_cast<uint16_t>(h)) : HalfBitsToFloat(static_cast<uint16_t>(h));
    float next = bf16 ? BF16BitsToFloat(static_cast<uint16_t>(h + 1)) : HalfBitsToFloat(static_cast<uint16_t>(h + 1));
    for (float p : {v, std::isfinite(next) && std::isfinite(v) && (h & 0x7fff) != 0x7fff ? (v + next) / 2 : v}) {
      x.push_back(p);
      if (!std::isfinite(p)) continue;
      x.push_back(std::nextafter(p, std::numeric_limits<float>::infinity()));
      x.push_back(std::nextafter(p, -std::numeric_limits<float>::infinity()));
    }
  }
  return x;
}

TEST_P(HalfConvert, UpIsExactForEveryPattern) {
  for (bool bf16 : {false, true}) {
    std::vector<uint16_t> x(0x10000);
    for (uint32_t h = 0; h < 0x10000; ++h) x[h] = static_cast<uint16_t>(h);
    std::vector<float> y(x.size());
    (bf16 ? GetParam().bf16_to_f32 : GetParam().f16_to_f32)(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (uint32_t h = 0; h < 0x10000; ++h) {
      float want = bf16 ? BF16BitsToFloat(x[h]) : HalfBitsToFloat(x[h]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(y[h])) << std::hex << h;
        ASSERT_EQ(std::signbit(y[h]), std::signbit(want)) << std::hex << h;
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(y[h]), std::bit_cast<uint32_t>(want))
            << (bf16 ? "bf16 " : "f16 ") << std::hex << h;
      }
    }
  }
}

TEST_P(HalfConvert, DownRoundsAtEveryTie) {
  for (bool bf16 : {false, true}) ExpectDown(GetParam(), bf16, RoundingPoints(bf16));
}

TEST_P(HalfConvert, DownOverASweepOfFloats) {
  for (bool bf16 : {false, true}) {
    std::vector<float> x;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 61) {
      x.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
      if (x.size() == (1u << 20)) {
        ExpectDown(GetParam(), bf16, x);
        x.clear();
      }
    }
    const float inf = std::numeric_limits<float>::infinity();
    for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), -std::nanf(""), 65504.0f, 65520.0f,
                    65519.996f, -65520.0f, 1e-8f, -3e-8f, 5.96e-8f, std::numeric_limits<float>::max(),
                    std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()})
      x.push_back(v);
    ExpectDown(GetParam(), bf16, x);
  }
}

// Each length up to a few vectors, from an odd offset: the vector part and
// the tail agree and nothing past the end is written.
TEST_P(HalfConvert, EveryLengthAndOffset) {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::ldexp(static_cast<float>(i) * 1.37f - 20.0f, static_cast<int>(i % 9) - 4);
  for (int64_t n = 0; n <= 40; ++n) {
    std::vector<uint16_t> h(n + 3, 0xabcd);
    GetParam().f32_to_f16(x.data() + 1, h.data() + 1, n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(h[i + 1], FloatToHalfBits(x[i + 1])) << n << " " << i;
    ASSERT_EQ(h[0], 0xabcd);
    ASSERT_EQ(h[n + 1], 0xabcd) << n;
    std::vector<float> back(n + 2, -7.0f);
    GetParam().f16_to_f32(h.data() + 1, back.data() + 1, n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(back[i + 1], HalfBitsToFloat(h[i + 1]));
    ASSERT_EQ(back[n + 1], -7.0f) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, HalfConvert, ::testing::ValuesIn(internal::HalfConvertBuilds()),
                         [](const ::testing::TestParamInfo<HalfConvertBuild>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace xonnx::cpu
