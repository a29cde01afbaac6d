// Reference kernels of arithmetic over many elements: dot, convolution,
// reductions and sort.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "base/status.h"
#include "evaluator/kernels_internal.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::eval::internal {

template <typename T>
using Acc = std::conditional_t<kIsFloat<T>, double, ComputeType<T>>;

void DotKernel(const Instruction& in, const void* a, const void* b, void* out) {
  const Shape& os = in.shape();
  DotLoops loops = DotLoopsOf(in);
  const std::vector<int64_t>&oa = loops.out_lhs, &ob = loops.out_rhs;
  const std::vector<int64_t>&cdims = loops.contract_dims, &ca = loops.contract_lhs, &cb = loops.contract_rhs;
  int64_t csize = loops.ContractCount();
  if (os.ElementCount() == 0) return;
  hlo::TypeSwitch(os.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* A = static_cast<const T*>(a);
    const T* B = static_cast<const T*>(b);
    T* O = static_cast<T*>(out);
    std::vector<int64_t> idx(os.rank(), 0), cidx(cdims.size(), 0);
    int64_t i = 0;
    do {
      int64_t abase = Dot(idx, oa), bbase = Dot(idx, ob);
      Acc<T> acc{};
      if (csize > 0) {
        std::fill(cidx.begin(), cidx.end(), 0);
        do {
          auto x = static_cast<Acc<T>>(static_cast<ComputeType<T>>(A[abase + Dot(cidx, ca)]));
          auto y = static_cast<Acc<T>>(static_cast<ComputeType<T>>(B[bbase + Dot(cidx, cb)]));
          if constexpr (std::is_same_v<Acc<T>, bool>)
            acc = acc || (x && y);
          else
            acc = internal::WrapAdd(acc, internal::WrapMul(x, y));
        } while (Next(cidx, cdims));
      }
      O[i++] = static_cast<T>(static_cast<ComputeType<T>>(acc));
    } while (Next(idx, os.dims));
  });
}

void ConvKernel(const Instruction& in, const void* x, const void* k, void* out) {
  const Shape& os = in.shape();
  const Shape& xs = in.operand(0)->shape();
  const Shape& ks = in.operand(1)->shape();
  const auto& d = in.conv_dnums;
  int64_t ns = d.input_spatial_dimensions.size();
  std::vector<int64_t> xst = xs.Strides(), kst = ks.Strides(), ost = os.Strides();
  int64_t groups = in.feature_group_count;
  int64_t bgroups = in.batch_group_count;
  int64_t out_features = os.dims[d.output_feature_dimension];
  int64_t in_features_per_group = ks.dims[d.kernel_input_feature_dimension];
  int64_t out_per_group = out_features / groups;
  int64_t out_per_bgroup = out_features / bgroups;
  int64_t batch = os.dims[d.output_batch_dimension];
  std::vector<int64_t> kspatial(ns), ospatial(ns);
  for (int64_t s = 0; s < ns; ++s) {
    kspatial[s] = ks.dims[d.kernel_spatial_dimensions[s]];
    ospatial[s] = os.dims[d.output_spatial_dimensions[s]];
  }
  if (os.ElementCount() == 0) return;
  hlo::TypeSwitch(os.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* X = static_cast<const T*>(x);
    const T* K = static_cast<const T*>(k);
    T* O = static_cast<T*>(out);
    std::vector<int64_t> opos(ns, 0), kpos(ns, 0);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t of = 0; of < out_features; ++of) {
        int64_t g = of / out_per_group;
        int64_t bg = of / out_per_bgroup;
        int64_t in_b = bg * batch + b;
        std::fill(opos.begin(), opos.end(), 0);
        do {
          Acc<T> acc{};
          std::fill(kpos.begin(), kpos.end(), 0);
          bool any_k = true;
          for (int64_t s = 0; s < ns; ++s) any_k &= kspatial[s] > 0;
          if (any_k) do {
              int64_t xoff = in_b * xst[d.input_batch_dimension];
              int64_t koff = of * kst[d.kernel_output_feature_dimension];
              bool valid = true;
              for (int64_t s = 0; s < ns && valid; ++s) {
                const auto& wd = in.window.dimensions[s];
                int64_t kk = wd.window_reversal ? kspatial[s] - 1 - kpos[s] : kpos[s];
                int64_t pos = opos[s] * wd.stride - wd.padding_low + kpos[s] * wd.window_dilation;
                if (pos < 0 || pos % wd.base_dilation != 0) {
                  valid = false;
                  break;
                }
                pos /= wd.base_dilation;
                if (pos >= xs.dims[d.input_spatial_dimensions[s]]) {
                  valid = false;
                  break;
                }
                xoff += pos * xst[d.input_spatial_dimensions[s]];
                koff += kk * kst[d.kernel_spatial_dimensions[s]];
              }
              if (valid) {
                for (int64_t c = 0; c < in_features_per_group; ++c) {
                  int64_t ic = g * in_features_per_group + c;
                  auto xv =
                      static_cast<Acc<T>>(static_cast<ComputeType<T>>(X[xoff + ic * xst[d.input_feature_dimension]]));
                  auto kv = static_cast<Acc<T>>(
                      static_cast<ComputeType<T>>(K[koff + c * kst[d.kernel_input_feature_dimension]]));
                  if constexpr (std::is_same_v<Acc<T>, bool>)
                    acc = acc || (xv && kv);
                  else
                    acc = internal::WrapAdd(acc, internal::WrapMul(xv, kv));
                }
              }
            } while (Next(kpos, kspatial));
          int64_t o = b * ost[d.output_batch_dimension] + of * ost[d.output_feature_dimension];
          for (int64_t s = 0; s < ns; ++s) o += opos[s] * ost[d.output_spatial_dimensions[s]];
          O[o] = static_cast<T>(static_cast<ComputeType<T>>(acc));
        } while (ns > 0 && Next(opos, ospatial));
      }
    }
  });
}

absl::Status Reduce(const Instruction& in, absl::Span<const void* const> ops, absl::Span<void* const> outs,
                    const CallComputation& call) {
  int64_t n = in.operand_count() / 2;
  const Shape& xs = in.operand(0)->shape();
  std::vector<bool> reduced(xs.rank(), false);
  for (int64_t d : in.dimensions) reduced[d] = true;
  std::vector<int64_t> out_dims, out_strides_full(xs.rank(), 0);
  for (int64_t d = 0; d < xs.rank(); ++d)
    if (!reduced[d]) out_dims.push_back(d);
  {
    int64_t acc = 1;
    for (int64_t k = static_cast<int64_t>(out_dims.size()) - 1; k >= 0; --k) {
      out_strides_full[out_dims[k]] = acc;
      acc *= xs.dims[out_dims[k]];
    }
  }
  int64_t out_count = 1;
  for (int64_t d : out_dims) out_count *= xs.dims[d];
  for (int64_t k = 0; k < n; ++k) {
    int w = hlo::ByteWidth(in.operand(k)->shape().element_type);
    for (int64_t i = 0; i < out_count; ++i) CopyElem(outs[k], i, ops[n + k], 0, w);
  }
  if (xs.ElementCount() == 0) return absl::OkStatus();
  std::optional<hlo::Opcode> op = n == 1 ? MatchScalarBinary(*in.to_apply()) : std::nullopt;
  std::vector<int64_t> idx(xs.rank(), 0);
  int64_t i = 0;
  if (op) {
    absl::Status st;
    hlo::TypeSwitch(xs.element_type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* X = static_cast<const T*>(ops[0]);
      T* O = static_cast<T*>(outs[0]);
      do {
        T* dst = O + Dot(idx, out_strides_full);
        if (!BinaryKernel<T>(*op, dst, X + i, dst, 1)) {
          st = Unimplemented("reducer");
          return;
        }
        ++i;
      } while (Next(idx, xs.dims));
    });
    return st;
  }
  // Generic variadic reduce through the computation.
  do {
    int64_t o = Dot(idx, out_strides_full);
    std::vector<Literal> args;
    for (int64_t k = 0; k < n; ++k) {
      Literal acc(Shape(in.operand(k)->shape().element_type, {}));
      int w = hlo::ByteWidth(acc.shape().element_type);
      CopyElem(acc.untyped_data(), 0, outs[k], o, w);
      args.push_back(std::move(acc));
    }
    for (int64_t k = 0; k < n; ++k) {
      Literal v(Shape(in.operand(k)->shape().element_type, {}));
      CopyElem(v.untyped_data(), 0, ops[k], i, hlo::ByteWidth(v.shape().element_type));
      args.push_back(std::move(v));
    }
    ASSIGN_OR_RETURN(Literal r, call(*in.to_apply(), std::move(args)));
    for (int64_t k = 0; k < n; ++k) {
      const Literal& rk = n == 1 ? r : r.tuple_elements()[k];
      CopyElem(outs[k], o, rk.untyped_data(), 0, hlo::ByteWidth(rk.shape().element_type));
    }
    ++i;
  } while (Next(idx, xs.dims));
  return absl::OkStatus();
}

absl::Status ReduceWindow(const Instruction& in, absl::Span<const void* const> ops, void* out,
                          const CallComputation& call) {
  const Shape& os = in.shape();
  const Shape& xs = in.operand(0)->shape();
  if (os.ElementCount() == 0) return absl::OkStatus();
  std::optional<hlo::Opcode> op = MatchScalarBinary(*in.to_apply());
  std::vector<int64_t> wdims, xst = xs.Strides();
  for (const auto& w : in.window.dimensions) wdims.push_back(w.size);
  absl::Status st;
  hlo::TypeSwitch(os.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* X = static_cast<const T*>(ops[0]);
    const T init = static_cast<const T*>(ops[1])[0];
    T* O = static_cast<T*>(out);
    std::vector<int64_t> idx(os.rank(), 0), widx(xs.rank(), 0);
    int64_t i = 0;
    do {
      T acc = init;
      std::fill(widx.begin(), widx.end(), 0);
      do {
        int64_t off = 0;
        bool inside = true;
        for (int64_t d = 0; d < xs.rank(); ++d) {
          const auto& w = in.window.dimensions[d];
          int64_t pos = idx[d] * w.stride - w.padding_low + widx[d] * w.window_dilation;
          if (pos < 0 || pos % w.base_dilation) {
            inside = false;
            break;
          }
          pos /= w.base_dilation;
          if (pos >= xs.dims[d]) {
            inside = false;
            break;
          }
          off += pos * xst[d];
        }
        T v = inside ? X[off] : init;
        if (op) {
          if (!BinaryKernel<T>(*op, &acc, &v, &acc, 1)) st = Unimplemented("reduce-window reducer");
        } else {
          auto r = call(*in.to_apply(), {Literal::Scalar<T>(acc), Literal::Scalar<T>(v)});
          if (!r.ok())
            st = r.status();
          else
            acc = r->template data<T>()[0];
        }
        if (!st.ok()) return;
      } while (Next(widx, wdims));
      O[i++] = acc;
    } while (Next(idx, os.dims));
  });
  return st;
}

absl::Status Sort(const Instruction& in, absl::Span<const void* const> ops, absl::Span<void* const> outs,
                  const CallComputation& call) {
  const Shape& xs = in.operand(0)->shape();
  int64_t dim = in.dimensions[0];
  int64_t len = xs.dims[dim];
  std::vector<int64_t> st = xs.Strides();
  std::vector<int64_t> outer_dims = xs.dims;
  outer_dims[dim] = 1;
  if (xs.ElementCount() == 0) return absl::OkStatus();
  std::optional<bool> ascending = MatchSortDirection(*in.to_apply());
  std::vector<int64_t> idx(xs.rank(), 0), perm(len);
  absl::Status status;
  do {
    int64_t base = Dot(idx, st);
    std::iota(perm.begin(), perm.end(), 0);
    auto less = [&](int64_t a, int64_t b) -> bool {
      if (ascending) {
        return hlo::TypeSwitch(xs.element_type, [&](auto tag) -> bool {
          using T = typename decltype(tag)::type;
          using C = ComputeType<T>;
          const T* X = static_cast<const T*>(ops[0]);
          C va = static_cast<C>(X[base + a * st[dim]]), vb = static_cast<C>(X[base + b * st[dim]]);
          return internal::SortsBefore(va, vb, *ascending);
        });
      }
      std::vector<Literal> args;
      for (int64_t k = 0; k < in.operand_count(); ++k) {
        PrimitiveType t = in.operand(k)->shape().element_type;
        for (int64_t e : {a, b}) {
          Literal l(Shape(t, {}));
          CopyElem(l.untyped_data(), 0, ops[k], base + e * st[dim], hlo::ByteWidth(t));
          args.push_back(std::move(l));
        }
      }
      auto r = call(*in.to_apply(), std::move(args));
      if (!r.ok()) {
        status = r.status();
        return false;
      }
      return r->data<bool>()[0];
    };
    std::stable_sort(perm.begin(), perm.end(), less);
    if (!status.ok()) return status;
    for (int64_t k = 0; k < in.operand_count(); ++k) {
      int w = hlo::ByteWidth(in.operand(k)->shape().element_type);
      for (int64_t j = 0; j < len; ++j) CopyElem(outs[k], base + j * st[dim], ops[k], base + perm[j] * st[dim], w);
    }
  } while (Next(idx, outer_dims));
  return absl::OkStatus();
}

}  // namespace xonnx::eval::internal
