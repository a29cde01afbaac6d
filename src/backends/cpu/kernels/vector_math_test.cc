// ExpF32, LogisticF32, SwishF32, TanhF32 and ErfF32 against the standard library in double
// precision, over a sweep of the whole float range and the special values,
// and ArithF32 against the scalar operators; every build this CPU can run
// (the portable one, AVX2, AVX-512).
#include "backends/cpu/kernels/vector_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace xonnx::cpu {
namespace {

// Distance in units in the last place between two finite floats of one sign.
int64_t UlpDistance(float a, float b) {
  auto key = [](float f) {
    int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::llabs(key(a) - key(b));
}

// Every 97th float bit pattern, both signs (about 44 million values), in
// slices of a million.
using internal::Kernel;
class VectorMath : public ::testing::TestWithParam<internal::Build> {
 protected:
  Kernel Exp() const { return GetParam().exp; }
  Kernel Logistic() const { return GetParam().logistic; }
  Kernel Swish() const { return GetParam().swish; }
  Kernel Tanh() const { return GetParam().tanh; }
  Kernel Erf() const { return GetParam().erf; }
  void RunArith(Arith op, const float* a, const float* b, float* y, int64_t n) const {
    GetParam().arith(op, a, b, y, n);
  }
};
INSTANTIATE_TEST_SUITE_P(Builds, VectorMath, ::testing::ValuesIn(internal::Builds()),
                         [](const auto& info) { return std::string(info.param.name); });

// The entry points run the last build.
TEST(VectorMathDispatch, EntryPointsRunTheWidestBuild) {
  const internal::Build widest = internal::Builds().back();
  std::vector<float> x;
  for (float v = -30.0f; v <= 30.0f; v += 0.173f) x.push_back(v);
  std::vector<float> got(x.size()), want(x.size());
  for (auto [entry, kernel] : {std::pair<Kernel, Kernel>{ExpF32, widest.exp},
                               {LogisticF32, widest.logistic},
                               {SwishF32, widest.swish},
                               {TanhF32, widest.tanh},
                               {ErfF32, widest.erf}}) {
    entry(x.data(), got.data(), x.size());
    kernel(x.data(), want.data(), x.size());
    EXPECT_EQ(got, want) << widest.name;
  }
  EXPECT_EQ(VectorMathIs16Wide(), std::string(widest.name) == "Avx512");
}

TEST_P(VectorMath, ExpIsWithinTwoUlpEverywhere) {
  int64_t worst = 0, checked = 0;
  float worst_x = 0;
  std::vector<float> xs, ys;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32);) {
    xs.clear();
    for (; bits < (uint64_t{1} << 32) && xs.size() < (1u << 20); bits += 97) {
      float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
      if (!std::isnan(f)) xs.push_back(f);
    }
    ys.resize(xs.size());
    Exp()(xs.data(), ys.data(), xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      float want = static_cast<float>(std::exp(static_cast<double>(xs[i])));
      if (std::isinf(want) || want == 0) {
        ASSERT_EQ(ys[i], want) << "x = " << xs[i];
        continue;
      }
      int64_t d = UlpDistance(ys[i], want);
      if (d > worst) {
        worst = d;
        worst_x = xs[i];
      }
    }
    checked += xs.size();
  }
  EXPECT_GT(checked, 40000000);
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
}

TEST_P(VectorMath, ExpSpecialValuesAndInPlace) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f,   -0.0f,   1.0f,    -1.0f,  inf,    -inf,   std::nanf(""), 88.5f, 89.0f,
                          -87.5f, -100.0f, -104.0f, 1e-30f, 88.72f, 88.73f, -103.96f,      -1e9f, 1e9f};
  std::vector<float> want;
  for (float v : x) want.push_back(std::exp(v));
  Exp()(x.data(), x.data(), x.size());  // in place
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(x[i])) << i;
    } else {
      EXPECT_LE(UlpDistance(x[i], want[i]), 2) << "element " << i << ": " << x[i] << " vs " << want[i];
    }
  }
  EXPECT_EQ(x[0], 1.0f);
  EXPECT_EQ(x[4], inf);
  EXPECT_EQ(x[5], 0.0f);
}

// A chunk holding an extreme value takes the full-range loop; its other
// elements come out bit for bit as in a chunk without one (masked softmax
// rows against unmasked ones).
TEST_P(VectorMath, ExtremeValuesLeaveTheirNeighboursUnchanged) {
  std::vector<float> plain;
  for (float v = -12.0f; v <= 12.0f; v += 0.0371f) plain.push_back(v);
  std::vector<float> masked = plain;
  for (size_t i = 0; i < masked.size(); i += 4) masked[i] = i % 8 ? -1e9f : -std::numeric_limits<float>::infinity();
  masked[5] = std::nanf("");
  std::vector<float> want(plain.size()), got(plain.size());
  Exp()(plain.data(), want.data(), plain.size());
  Exp()(masked.data(), got.data(), masked.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    if (i % 4 == 0)
      EXPECT_EQ(got[i], 0.0f) << i;
    else if (i == 5)
      EXPECT_TRUE(std::isnan(got[i]));
    else
      EXPECT_EQ(got[i], want[i]) << "x = " << plain[i];
  }
}

TEST_P(VectorMath, LogisticMatchesDoublePrecision) {
  std::vector<float> xs;
  for (float v = -120.0f; v <= 120.0f; v += 0.0137f) xs.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  xs.insert(xs.end(), {inf, -inf, 0.0f, -0.0f});
  std::vector<float> ys(xs.size());
  Logistic()(xs.data(), ys.data(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    float want = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(xs[i]))));
    if (want < std::numeric_limits<float>::min()) {
      // exp(-x) overflows: 0 for a subnormal result, as 1 / (1 + exp(-x)) gives in float.
      EXPECT_NEAR(ys[i], want, std::numeric_limits<float>::min()) << "x = " << xs[i];
    } else if (want == 1) {
      EXPECT_EQ(ys[i], 1.0f) << "x = " << xs[i];
    } else {
      EXPECT_LE(UlpDistance(ys[i], want), 3) << "x = " << xs[i] << ": " << ys[i] << " vs " << want;
    }
  }
  float nan = std::nanf("");
  float y;
  Logistic()(&nan, &y, 1);
  EXPECT_TRUE(std::isnan(y));
}

// tanh within 4 ulp of double precision over the range where it is not
// +-1, around the series' edge (0.25) on both sides, at tiny and subnormal
// inputs (where it is x), and its special values; in place too.
TEST_P(VectorMath, TanhMatchesDoublePrecision) {
  std::vector<float> xs;
  for (float v = -12.0f; v <= 12.0f; v += 0.00731f) xs.push_back(v);
  for (float v = 0.2499f; v <= 0.2501f; v = std::nextafter(v, 1.0f)) xs.push_back(v), xs.push_back(-v);
  for (int e = -149; e <= -2; ++e) xs.push_back(std::ldexp(1.0f, e)), xs.push_back(-std::ldexp(1.7f, e));
  std::vector<float> ys(xs.size()), in_place = xs;
  Tanh()(xs.data(), ys.data(), xs.size());
  Tanh()(in_place.data(), in_place.data(), in_place.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(in_place[i]), std::bit_cast<uint32_t>(ys[i])) << "in place, x = " << xs[i];
    float want = static_cast<float>(std::tanh(static_cast<double>(xs[i])));
    if (std::fabs(want) < std::numeric_limits<float>::min()) {
      EXPECT_NEAR(ys[i], want, std::numeric_limits<float>::denorm_min()) << "x = " << xs[i];
    } else {
      EXPECT_LE(UlpDistance(ys[i], want), 4) << "x = " << xs[i] << ": " << ys[i] << " vs " << want;
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> special = {inf, -inf, std::nanf(""), 0.0f, -0.0f, 100.0f, -100.0f}, out(special.size());
  Tanh()(special.data(), out.data(), special.size());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(std::bit_cast<uint32_t>(out[3]), 0u);
  EXPECT_EQ(std::bit_cast<uint32_t>(out[4]), 0x80000000u);
  EXPECT_EQ(out[5], 1.0f);
  EXPECT_EQ(out[6], -1.0f);
}

// erf within 3e-7 of double precision everywhere, and 4 ulp where the
// series computes it (|x| < 0.75, down to subnormals); its special values.
TEST_P(VectorMath, ErfMatchesDoublePrecision) {
  std::vector<float> xs;
  for (float v = -6.0f; v <= 6.0f; v += 0.00317f) xs.push_back(v);
  for (float v = 0.7499f; v <= 0.7501f; v = std::nextafter(v, 1.0f)) xs.push_back(v), xs.push_back(-v);
  for (int e = -149; e <= -2; ++e) xs.push_back(std::ldexp(1.0f, e)), xs.push_back(-std::ldexp(1.7f, e));
  std::vector<float> ys(xs.size()), in_place = xs;
  Erf()(xs.data(), ys.data(), xs.size());
  Erf()(in_place.data(), in_place.data(), in_place.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(in_place[i]), std::bit_cast<uint32_t>(ys[i])) << "in place, x = " << xs[i];
    double want = std::erf(static_cast<double>(xs[i]));
    EXPECT_LE(std::fabs(ys[i] - want), 3e-7) << "x = " << xs[i];
    if (std::fabs(xs[i]) < 0.75f && std::fabs(want) >= std::numeric_limits<float>::min()) {
      EXPECT_LE(UlpDistance(ys[i], static_cast<float>(want)), 4) << "x = " << xs[i] << ": " << ys[i] << " vs " << want;
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> special = {inf, -inf, std::nanf(""), 0.0f, -0.0f, 30.0f, -30.0f}, out(special.size());
  Erf()(special.data(), out.data(), special.size());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(std::bit_cast<uint32_t>(out[3]), 0u);
  EXPECT_EQ(std::bit_cast<uint32_t>(out[4]), 0x80000000u);
  EXPECT_EQ(out[5], 1.0f);
  EXPECT_EQ(out[6], -1.0f);
}

// x / (1 + exp(-x)) with one rounding after ExpF32's: within 3 ulp, except
// where exp(-x) overflows (x below about -88.72), which gives -0 for a value
// under 3e-37 in magnitude, as x times the float logistic does; a NaN for
// -inf, as -inf times 0.
TEST_P(VectorMath, SwishMatchesDoublePrecision) {
  std::vector<float> xs;
  for (float v = -120.0f; v <= 120.0f; v += 0.0137f) xs.push_back(v);
  for (int e = -140; e <= 127; e += 3) xs.push_back(std::ldexp(1.0f, e)), xs.push_back(-std::ldexp(1.3f, e));
  std::vector<float> ys(xs.size()), in_place = xs;
  Swish()(xs.data(), ys.data(), xs.size());
  Swish()(in_place.data(), in_place.data(), in_place.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    double x = xs[i];
    float want = static_cast<float>(x / (1.0 + std::exp(-x)));
    ASSERT_EQ(std::bit_cast<uint32_t>(in_place[i]), std::bit_cast<uint32_t>(ys[i])) << "in place, x = " << xs[i];
    if (std::isinf(want)) {
      EXPECT_EQ(ys[i], want) << "x = " << xs[i];
    } else if (std::isinf(std::exp(-xs[i]))) {
      EXPECT_EQ(std::bit_cast<uint32_t>(ys[i]), 0x80000000u) << "x = " << xs[i];
      EXPECT_LT(std::fabs(want), 3e-37f) << "x = " << xs[i];
    } else if (std::fabs(want) < std::numeric_limits<float>::min()) {
      EXPECT_NEAR(ys[i], want, std::numeric_limits<float>::min()) << "x = " << xs[i];
    } else {
      EXPECT_LE(UlpDistance(ys[i], want), 3) << "x = " << xs[i] << ": " << ys[i] << " vs " << want;
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> special = {inf, -inf, std::nanf(""), 0.0f, -0.0f}, out(special.size());
  Swish()(special.data(), out.data(), special.size());
  EXPECT_EQ(out[0], inf);
  EXPECT_TRUE(std::isnan(out[1]));  // -inf / inf, as -inf * 0
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(std::bit_cast<uint32_t>(out[3]), 0u);
  EXPECT_EQ(std::bit_cast<uint32_t>(out[4]), 0x80000000u);
}

// Every length from 0 to 40 (the vector loops' tails), in place and not:
// each element as in one long call, nothing written past the end.
TEST_P(VectorMath, TailsMatchTheBody) {
  std::vector<float> x(40);
  for (int i = 0; i < 40; ++i) x[i] = std::sin(i * 0.7f) * 9;
  for (Kernel k : {Exp(), Logistic(), Swish(), Tanh(), Erf()}) {
    std::vector<float> full(40);
    k(x.data(), full.data(), 40);
    for (int n = 0; n <= 40; ++n) {
      std::vector<float> y(48, 7.0f), in_place(x.begin(), x.begin() + n);
      in_place.resize(48, 7.0f);
      k(x.data(), y.data(), n);
      k(in_place.data(), in_place.data(), n);
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(y[i], full[i]) << "n = " << n << ", i = " << i;
        EXPECT_EQ(in_place[i], full[i]) << "n = " << n << ", i = " << i;
      }
      for (int i = n; i < 48; ++i) EXPECT_EQ(y[i], 7.0f) << "written past n = " << n;
      for (int i = n; i < 48; ++i) EXPECT_EQ(in_place[i], 7.0f) << "written past n = " << n;
    }
  }
}

// The wide builds of + - * / max min give the scalar operators' bits
// (IEEE operations round the same at any width); max and min return a NaN
// operand, the first one's payload if both are.
TEST_P(VectorMath, ArithMatchesScalarOperatorsBitForBit) {
  const float nan_a = std::bit_cast<float>(0x7fc00001u), nan_b = std::bit_cast<float>(0x7fc00002u);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> a, b;
  // Every pairing of the special values, then a sweep of ordinary ones; the
  // odd length leaves a remainder after the vector loop.
  const std::vector<float> special = {0.0f, -0.0f, 1.0f, -2.5f, inf, -inf, nan_a, nan_b, 1e-45f, 3.4e38f};
  for (float x : special)
    for (float y : special) a.push_back(x), b.push_back(y);
  for (int i = 0; i < 1001; ++i)
    a.push_back(std::ldexp(1.0f + i * 0.37f, i % 40 - 20) * (i % 3 ? 1 : -1)),
        b.push_back(std::ldexp(1.0f + i * 0.11f, i % 23 - 11) * (i % 5 ? -1 : 1));
  auto scalar = [](Arith op, float x, float y) {
    switch (op) {
      case Arith::kAdd:
        return x + y;
      case Arith::kSubtract:
        return x - y;
      case Arith::kMultiply:
        return x * y;
      case Arith::kDivide:
        return x / y;
      case Arith::kMaximum:
        return std::isnan(x) ? x : std::isnan(y) ? y : (x > y ? x : y);
      case Arith::kMinimum:
        return std::isnan(x) ? x : std::isnan(y) ? y : (x < y ? x : y);
    }
    return 0.0f;
  };
  const int64_t n = a.size();
  for (auto op : {Arith::kAdd, Arith::kSubtract, Arith::kMultiply, Arith::kDivide, Arith::kMaximum, Arith::kMinimum}) {
    std::vector<float> y(n), in_place = a;
    RunArith(op, a.data(), b.data(), y.data(), n);
    RunArith(op, in_place.data(), b.data(), in_place.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      float expected = scalar(op, a[i], b[i]);
      if (std::isnan(expected) && op != Arith::kMaximum && op != Arith::kMinimum) {
        // Which NaN operand an arithmetic instruction passes on is the
        // hardware's choice (and the compiler may commute a + b).
        EXPECT_TRUE(std::isnan(y[i]) && std::isnan(in_place[i])) << "op " << static_cast<int>(op);
        continue;
      }
      uint32_t want = std::bit_cast<uint32_t>(expected);
      ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), want) << "op " << static_cast<int>(op) << " " << a[i] << ", " << b[i];
      ASSERT_EQ(std::bit_cast<uint32_t>(in_place[i]), want) << "in place, op " << static_cast<int>(op);
    }
    // One value for the second operand, each of the first few of b in turn.
    for (int64_t j = 0; j < std::min<int64_t>(n, 24); ++j) {
      std::vector<float> ys(n);
      GetParam().arith_scalar(op, a.data(), b[j], ys.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        float expected = scalar(op, a[i], b[j]);
        if (std::isnan(expected) && op != Arith::kMaximum && op != Arith::kMinimum) {
          EXPECT_TRUE(std::isnan(ys[i])) << "scalar operand, op " << static_cast<int>(op);
          continue;
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(ys[i]), std::bit_cast<uint32_t>(expected))
            << "scalar operand, op " << static_cast<int>(op) << " " << a[i] << ", " << b[j];
      }
    }
  }
}

// The quantizers' rounding and narrowing, against the scalar definitions
// (std::nearbyint; HLO convert: truncate, saturate, NaN to 0) bit for bit,
// over the special values, the ties and a sweep past the 8-bit bounds.
TEST(QuantizerMath, RoundEvenAndNarrowingMatchTheScalarDefinitions) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.0f,        -0.0f,      0.5f,       -0.5f,       1.5f,    2.5f,   -2.5f, -0.3f,
                          0.49999997f, 8388607.5f, 8388608.0f, -8388609.0f, 1e30f,   -1e30f, inf,   -inf,
                          nan,         127.5f,     128.0f,     -128.5f,     -129.0f, 255.5f, 256.0f};
  for (int i = 0; i < 2001; ++i) x.push_back(-300.0f + i * 0.3f + (i % 7) * 1e-3f);
  const int64_t n = x.size();
  // Every build this CPU runs, and the entry points.
  std::vector<internal::Build> builds = internal::Builds();
  builds.push_back({"entry points", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, RoundEvenF32,
                    ConvertF32ToU8, ConvertF32ToS8});
  for (const internal::Build& b : builds) {
    SCOPED_TRACE(b.name);
    std::vector<float> r(n);
    b.round_even(x.data(), r.data(), n);
    std::vector<uint8_t> u(n);
    std::vector<int8_t> s(n);
    b.to_u8(x.data(), u.data(), n);
    b.to_s8(x.data(), s.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(r[i]));
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(r[i]), std::bit_cast<uint32_t>(std::nearbyint(x[i]))) << x[i];
      }
      double d = x[i];
      uint8_t want_u = std::isnan(d) ? 0 : d <= 0 ? 0 : d >= 255 ? 255 : static_cast<uint8_t>(d);
      int8_t want_s = std::isnan(d) ? 0 : d <= -128 ? -128 : d >= 127 ? 127 : static_cast<int8_t>(d);
      EXPECT_EQ(u[i], want_u) << x[i];
      EXPECT_EQ(s[i], want_s) << x[i];
    }
  }
}

// The one-pass quantizer equals its steps run one after another (an
// integer product's rescaling where there is one, then divide, round, add
// the zero point, clamp, narrow), as the fused loop's nodes run them, bit
// for bit in every build: over ties, NaN and infinite operands, zero and
// negative scales, NaN and crossed clamp bounds, and lengths that leave a
// tail. Then with operands marked scalar (one value repeated).
TEST(QuantizerMath, QuantizeEqualsItsStepsInEveryBuild) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs = {0.0f, -0.0f, 0.5f, -0.3f, 1.5f, 2.5f, -2.5f, 1e30f, -1e30f, inf, -inf, nan, 0.7353f};
  const std::vector<float> scales = {0.0059491815f, 1.0f, 0.0f, -0.5f, inf, nan, 3e-39f};
  const std::vector<float> zps = {0.0f, 128.0f, -3.0f, nan, 0.5f};
  const std::vector<std::pair<float, float>> bounds = {{0, 255}, {-128, 127}, {nan, 255}, {0, nan}, {10, 5}};
  std::vector<float> x, s, zp, lo, hi;
  for (int i = 0; i < 3001; ++i) {
    x.push_back(i < 1500 ? xs[i % xs.size()] : -300.0f + i * 0.173f);
    s.push_back(scales[(i / 3) % scales.size()]);
    zp.push_back(zps[(i / 7) % zps.size()]);
    lo.push_back(bounds[(i / 11) % bounds.size()].first);
    hi.push_back(bounds[(i / 11) % bounds.size()].second);
  }
  // An integer product's sums, rescaled: f32(acc) * mul + add before the
  // quantizer, with ties and sums past 2^24 that round in the convert.
  std::vector<int32_t> acc;
  std::vector<float> mul, add;
  for (int i = 0; i < 3001; ++i) {
    acc.push_back(i % 5 == 0 ? 16777217 + i : (i * 7919) % 60001 - 30000);
    mul.push_back(i % 13 == 0 ? 0.5f : 1e-3f * (1 + i % 17));
    add.push_back(i % 11 == 0 ? -0.5f : 0.01f * (i % 23) - 0.1f);
  }
  for (int form = 0; form < 4; ++form)
    for (int64_t n : {int64_t{3001}, int64_t{16}, int64_t{7}}) {
      // form 0: x; 1: f32(acc) * mul + add; 2: f32(acc) * mul; 3: f32(acc) + add.
      SCOPED_TRACE(form);
      const internal::Build portable = internal::Builds().front();
      std::vector<float> xv = x;
      if (form > 0) {
        for (int64_t i = 0; i < n; ++i) xv[i] = static_cast<float>(acc[i]);
        if (form != 3) portable.arith(Arith::kMultiply, xv.data(), mul.data(), xv.data(), n);
        if (form != 2) portable.arith(Arith::kAdd, xv.data(), add.data(), xv.data(), n);
      }
      // The steps on the portable build.
      std::vector<float> t(n);
      portable.arith(Arith::kDivide, xv.data(), s.data(), t.data(), n);
      portable.round_even(t.data(), t.data(), n);
      portable.arith(Arith::kAdd, t.data(), zp.data(), t.data(), n);
      portable.arith(Arith::kMaximum, t.data(), lo.data(), t.data(), n);
      portable.arith(Arith::kMinimum, t.data(), hi.data(), t.data(), n);
      std::vector<uint8_t> want_u(n);
      std::vector<int8_t> want_s(n);
      portable.to_u8(t.data(), want_u.data(), n);
      portable.to_s8(t.data(), want_s.data(), n);
      QuantizeArgs a{x.data(), s.data(), zp.data(), lo.data(), hi.data()};
      if (form > 0) {
        a.x = nullptr;
        a.acc = acc.data();
        a.mul = form != 3 ? mul.data() : nullptr;
        a.add = form != 2 ? add.data() : nullptr;
      }
      std::vector<internal::Build> builds = internal::Builds();
      internal::Build entry{"entry points"};
      entry.quantize_u8 = [](const QuantizeArgs& a, uint8_t* y, int64_t n) { QuantizeF32(a, y, n); };
      entry.quantize_s8 = [](const QuantizeArgs& a, int8_t* y, int64_t n) { QuantizeF32(a, y, n); };
      builds.push_back(entry);
      for (const internal::Build& b : builds) {
        std::vector<uint8_t> u(n + 1, 0xAB);
        std::vector<int8_t> q(n + 1, 0x55);
        b.quantize_u8(a, u.data(), n);
        b.quantize_s8(a, q.data(), n);
        EXPECT_EQ(u[n], 0xAB) << b.name << ": wrote past the end";
        EXPECT_EQ(q[n], 0x55) << b.name << ": wrote past the end";
        u.pop_back();
        q.pop_back();
        EXPECT_EQ(u, want_u) << b.name << " n=" << n;
        EXPECT_EQ(q, want_s) << b.name << " n=" << n;
      }
    }
}

// Operands marked scalar give the results of the same values laid out in
// full.
TEST(QuantizerMath, ScalarOperandsEqualTheirArrays) {
  const int64_t n = 1003;
  std::vector<int32_t> acc(n);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) {
    acc[i] = (i * 104729) % 200001 - 100000;
    x[i] = acc[i] * 0.37f;
  }
  const float values[6] = {0.0123f, 131.0f, 0.0f, 255.0f, 0.0071f, -0.25f};
  std::vector<std::vector<float>> full(6);
  for (int k = 0; k < 6; ++k) full[k].assign(n, values[k]);
  for (bool with_acc : {false, true}) {
    QuantizeArgs a{x.data(), full[0].data(), full[1].data(), full[2].data(), full[3].data()};
    if (with_acc) {
      a.acc = acc.data();
      a.mul = full[4].data();
      a.add = full[5].data();
    }
    std::vector<uint8_t> want(n), got(n);
    QuantizeF32(a, want.data(), n);
    a.scalar = 0x3f;
    QuantizeF32(a, got.data(), n);
    EXPECT_EQ(got, want) << with_acc;
  }
}

}  // namespace
}  // namespace xonnx::cpu
