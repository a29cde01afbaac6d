// Native kernels for the arithmetic instructions in forms the tuned paths
// do not take: dots and convolutions of any dimension numbers and element
// type (integer ones, as quantized models compute them) and reductions over
// any set of dims. They follow the evaluator's definitions and summation order,
// split across the threads by output element.
#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "absl/algorithm/container.h"
#include "backends/cpu/kernels/strided_loops.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/kernels.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Types the generic arithmetic kernels compute in: the native numeric ones
// (half precision is widened by the backend's precision pass before this).
template <typename T>
constexpr bool kArithmetic = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

// The accumulator of a dot or convolution: double for floating types, as
// the evaluator sums (the generic kernels are the tuned paths' fallback;
// they keep the oracle's precision), the type itself for integers.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// a + b * c with integer wrap-around (two's complement, as XLA defines it)
// instead of signed overflow.
template <typename T>
T MulAdd(T a, T b, T c) {
  if constexpr (std::is_integral_v<T>) {
    // In unsigned int at least: 16-bit operands would be promoted to
    // (signed) int, whose product can overflow.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b) * static_cast<U>(c));
  } else {
    return a + b * c;
  }
}

// out[batch..., lhs free..., rhs free...] = sum over the contracting dims,
// in the evaluator's order (contracting dims row-major).
std::optional<Thunk> Dot(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  const eval::DotLoops loops = eval::DotLoopsOf(in);
  int64_t csize = loops.ContractCount();
  std::vector<int64_t> dense = os.Strides();
  BufferRef a = io.inputs[0], b = io.inputs[1], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  bool ok = hlo::TypeSwitch(os.element_type, [&](auto tag) -> bool {
    using T = typename decltype(tag)::type;
    if constexpr (!kArithmetic<T>) {
      return false;
    } else {
      t.run = [=](Frame& f) -> absl::Status {
        const T* A = static_cast<const T*>(f.Ptr(a));
        const T* B = static_cast<const T*>(f.Ptr(b));
        T* O = static_cast<T*>(f.Ptr(out));
        const std::vector<int64_t>&cdims = loops.contract_dims, &ca = loops.contract_lhs, &cb = loops.contract_rhs;
        // Every output element is one "row" of the walk; the contracting
        // dims are walked inside it.
        ForEachRow<3>(os.dims, {loops.out_lhs, loops.out_rhs, dense}, csize, [&](const std::array<int64_t, 3>& off) {
          Acc<T> acc{};
          if (cdims.size() == 1) {
            for (int64_t c = 0; c < cdims[0]; ++c)
              acc = MulAdd<Acc<T>>(acc, A[off[0] + c * ca[0]], B[off[1] + c * cb[0]]);
          } else if (csize > 0) {
            std::vector<int64_t> ci(cdims.size(), 0);
            int64_t pa = off[0], pb = off[1];
            for (int64_t n = 0; n < csize; ++n) {
              acc = MulAdd<Acc<T>>(acc, A[pa], B[pb]);
              for (int64_t k = static_cast<int64_t>(cdims.size()) - 1; k >= 0; --k) {
                pa += ca[k], pb += cb[k];
                if (++ci[k] < cdims[k]) break;
                pa -= cdims[k] * ca[k], pb -= cdims[k] * cb[k];
                ci[k] = 0;
              }
            }
          }
          O[off[2]] = static_cast<T>(acc);
        });
        return absl::OkStatus();
      };
      return true;
    }
  });
  if (!ok) return std::nullopt;
  return t;
}

// For each output element: the sum over the kernel window and the input
// features of its group, in the evaluator's order. Per spatial dim, where
// each (output position, kernel position) pair reads the input (or -1 for
// padding and the holes of a base dilation) is tabulated once.
std::optional<Thunk> Convolution(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  const hlo::Shape& xs = in.operand(0)->shape();
  const hlo::Shape& ks = in.operand(1)->shape();
  const auto& d = in.conv_dnums;
  if (in.batch_group_count != 1) return std::nullopt;
  int64_t ns = d.input_spatial_dimensions.size();
  std::vector<int64_t> xst = xs.Strides(), kst = ks.Strides(), ost = os.Strides();
  int64_t groups = in.feature_group_count, out_features = os.dims[d.output_feature_dimension];
  int64_t cin_g = ks.dims[d.kernel_input_feature_dimension], out_g = out_features / groups;
  int64_t batch = os.dims[d.output_batch_dimension];
  std::vector<int64_t> osp(ns), ksp(ns);
  std::vector<std::vector<int64_t>> reads(ns);  // [o * k + j]: input position, or -1
  for (int64_t s = 0; s < ns; ++s) {
    const hlo::WindowDimension& w = in.window.dimensions[s];
    osp[s] = os.dims[d.output_spatial_dimensions[s]];
    ksp[s] = ks.dims[d.kernel_spatial_dimensions[s]];
    int64_t limit = xs.dims[d.input_spatial_dimensions[s]];
    for (int64_t o = 0; o < osp[s]; ++o)
      for (int64_t j = 0; j < ksp[s]; ++j) {
        int64_t pos = o * w.stride - w.padding_low + j * w.window_dilation;
        bool hit = pos >= 0 && pos % w.base_dilation == 0 && pos / w.base_dilation < limit;
        reads[s].push_back(hit ? pos / w.base_dilation : -1);
      }
  }
  int64_t window = 1;
  for (int64_t k : ksp) window *= k;
  std::vector<bool> reversed;
  for (const auto& w : in.window.dimensions) reversed.push_back(w.window_reversal);
  BufferRef x = io.inputs[0], k = io.inputs[1], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  bool ok = hlo::TypeSwitch(os.element_type, [&](auto tag) -> bool {
    using T = typename decltype(tag)::type;
    if constexpr (!kArithmetic<T>) {
      return false;
    } else {
      t.run = [=](Frame& f) -> absl::Status {
        const T* X = static_cast<const T*>(f.Ptr(x));
        const T* K = static_cast<const T*>(f.Ptr(k));
        T* O = static_cast<T*>(f.Ptr(out));
        int64_t spatial = 1;
        for (int64_t o : osp) spatial *= o;
        int64_t total = batch * out_features * spatial;
        auto chunk = [&](int64_t e0, int64_t e1) {
          std::vector<int64_t> opos(ns), kpos(ns);
          for (int64_t e = e0; e < e1; ++e) {
            int64_t b = e / (out_features * spatial), of = e / spatial % out_features, rem = e % spatial;
            for (int64_t s = ns - 1; s >= 0; --s) opos[s] = rem % osp[s], rem /= osp[s];
            std::fill(kpos.begin(), kpos.end(), 0);
            int64_t g = of / out_g, o = b * ost[d.output_batch_dimension] + of * ost[d.output_feature_dimension];
            for (int64_t s = 0; s < ns; ++s) o += opos[s] * ost[d.output_spatial_dimensions[s]];
            Acc<T> acc{};
            for (int64_t n = 0; n < window; ++n) {
              int64_t xoff = b * xst[d.input_batch_dimension] + g * cin_g * xst[d.input_feature_dimension];
              int64_t koff = of * kst[d.kernel_output_feature_dimension];
              bool hit = true;
              for (int64_t s = 0; s < ns && hit; ++s) {
                int64_t pos = reads[s][opos[s] * ksp[s] + kpos[s]];
                hit = pos >= 0;
                xoff += pos * xst[d.input_spatial_dimensions[s]];
                koff += (reversed[s] ? ksp[s] - 1 - kpos[s] : kpos[s]) * kst[d.kernel_spatial_dimensions[s]];
              }
              if (hit)
                for (int64_t c = 0; c < cin_g; ++c)
                  acc = MulAdd<Acc<T>>(acc, X[xoff + c * xst[d.input_feature_dimension]],
                                       K[koff + c * kst[d.kernel_input_feature_dimension]]);
              for (int64_t s = ns - 1; s >= 0; --s) {
                if (++kpos[s] < ksp[s]) break;
                kpos[s] = 0;
              }
            }
            O[o] = static_cast<T>(acc);
          }
        };
        ForRanges(total, window * cin_g, chunk);
        return absl::OkStatus();
      };
      return true;
    }
  });
  if (!ok) return std::nullopt;
  return t;
}

// Whether the generic reduce folds type T with op: add, multiply, maximum
// and minimum for numbers, and and or for integers and booleans.
template <typename T>
bool Reducible(Opcode op) {
  bool logical = op == Opcode::kAnd || op == Opcode::kOr;
  if constexpr (std::is_same_v<T, bool>) return logical;
  if constexpr (std::is_integral_v<T>)
    return logical || op == Opcode::kAdd || op == Opcode::kMultiply || op == Opcode::kMaximum || op == Opcode::kMinimum;
  if constexpr (kArithmetic<T>)
    return op == Opcode::kAdd || op == Opcode::kMultiply || op == Opcode::kMaximum || op == Opcode::kMinimum;
  return false;
}

template <typename T>
T Combine(Opcode op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == Opcode::kAnd ? (a && b) : (a || b);
  } else if constexpr (kArithmetic<T>) {
    switch (op) {
      case Opcode::kAdd:
        return MulAdd(a, b, T{1});
      case Opcode::kMultiply:
        return MulAdd(T{}, a, b);
      case Opcode::kMaximum:
        return eval::internal::Max(a, b);
      case Opcode::kMinimum:
        return eval::internal::Min(a, b);
      default:
        if constexpr (std::is_integral_v<T>) return op == Opcode::kAnd ? (a & b) : (a | b);
        return a;
    }
  } else {
    return a;
  }
}

// A reduce of one operand by add, multiply, maximum, minimum, and or or,
// over any set of dims: each output element folds its sub-box of the
// input in row-major order, from the init value.
std::optional<Thunk> Reduce(const Instruction& in, const ThunkIo& io) {
  if (in.operand_count() != 2 || !in.shape().IsArray()) return std::nullopt;
  std::optional<Opcode> op = eval::MatchScalarBinary(*in.to_apply());
  if (!op) return std::nullopt;
  const hlo::Shape& xs = in.operand(0)->shape();
  std::vector<int64_t> xst = xs.Strides(), out_dims, out_strides, red_dims, red_strides;
  for (int64_t d = 0; d < xs.rank(); ++d) {
    bool reduced = absl::c_linear_search(in.dimensions, d);
    (reduced ? red_dims : out_dims).push_back(xs.dims[d]);
    (reduced ? red_strides : out_strides).push_back(xst[d]);
  }
  if (red_dims.empty()) red_dims = {1}, red_strides = {0};
  int64_t count = 1;
  for (int64_t r : red_dims) count *= r;
  std::vector<int64_t> dense = in.shape().Strides();
  Opcode rop = *op;
  BufferRef x = io.inputs[0], init = io.inputs[1], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  bool ok = hlo::TypeSwitch(xs.element_type, [&](auto tag) -> bool {
    using T = typename decltype(tag)::type;
    if (!Reducible<T>(rop)) return false;
    t.run = [=](Frame& f) -> absl::Status {
      const T* X = static_cast<const T*>(f.Ptr(x));
      T* O = static_cast<T*>(f.Ptr(out));
      const T v0 = *static_cast<const T*>(f.Ptr(init));
      ForEachRow<2>(out_dims, {out_strides, dense}, count, [&](const std::array<int64_t, 2>& off) {
        // The reduced sub-box, row-major, by an odometer.
        std::vector<int64_t> ri(red_dims.size(), 0);
        T acc = v0;
        int64_t p = off[0];
        for (int64_t n = 0; n < count; ++n) {
          acc = Combine<T>(rop, acc, X[p]);
          for (int64_t k = static_cast<int64_t>(red_dims.size()) - 1; k >= 0; --k) {
            p += red_strides[k];
            if (++ri[k] < red_dims[k]) break;
            p -= red_dims[k] * red_strides[k];
            ri[k] = 0;
          }
        }
        O[off[1]] = acc;
      });
      return absl::OkStatus();
    };
    return true;
  });
  if (!ok) return std::nullopt;
  return t;
}

}  // namespace

std::optional<Thunk> MakeComputeThunk(const Instruction& in, const ThunkIo& io) {
  switch (in.opcode()) {
    case Opcode::kDot:
      return in.shape().IsArray() ? Dot(in, io) : std::nullopt;
    case Opcode::kConvolution:
      return in.shape().IsArray() ? Convolution(in, io) : std::nullopt;
    case Opcode::kReduce:
      return Reduce(in, io);
    default:
      return std::nullopt;
  }
}

}  // namespace xonnx::cpu
