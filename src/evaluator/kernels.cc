#include "evaluator/kernels.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "base/status.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::eval {

using hlo::Computation;
using hlo::Instruction;
using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;

namespace {

// Advances a row-major multi-index; returns false after the last one.
bool Next(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t Dot(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t s = 0;
  for (size_t i = 0; i < idx.size(); ++i) s += idx[i] * strides[i];
  return s;
}

void CopyElem(void* dst, int64_t di, const void* src, int64_t si, int w) {
  std::memcpy(static_cast<char*>(dst) + di * w, static_cast<const char*>(src) + si * w, w);
}

int64_t ReadIndex(const void* data, PrimitiveType t, int64_t i) {
  return hlo::TypeSwitch(t, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      return static_cast<int64_t>(static_cast<const T*>(data)[i]);
    else
      return 0;
  });
}

absl::Status Elementwise(const Instruction& in, absl::Span<const void* const> ops, void* out) {
  const Shape& s = in.shape();
  int64_t n = s.ElementCount();
  PrimitiveType t = in.operand(0)->shape().element_type;
  hlo::Opcode op = in.opcode();
  bool ok = true;
  switch (op) {
    case hlo::Opcode::kConvert:
      hlo::TypeSwitch(t, [&](auto ft) {
        using From = typename decltype(ft)::type;
        hlo::TypeSwitch(s.element_type, [&](auto tt) {
          using To = typename decltype(tt)::type;
          ConvertKernel<To, From>(static_cast<const From*>(ops[0]), static_cast<To*>(out), n);
        });
      });
      return absl::OkStatus();
    case hlo::Opcode::kCompare:
      hlo::TypeSwitch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        CompareKernel<T>(in.comparison_direction, static_cast<const T*>(ops[0]), static_cast<const T*>(ops[1]),
                         static_cast<bool*>(out), n);
      });
      return absl::OkStatus();
    case hlo::Opcode::kIsFinite:
      hlo::TypeSwitch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        IsFiniteKernel<T>(static_cast<const T*>(ops[0]), static_cast<bool*>(out), n);
      });
      return absl::OkStatus();
    case hlo::Opcode::kSelect:
      hlo::TypeSwitch(s.element_type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        SelectKernel<T>(static_cast<const bool*>(ops[0]), in.operand(0)->shape().rank() == 0 ? 0 : 1,
                        static_cast<const T*>(ops[1]), static_cast<const T*>(ops[2]), static_cast<T*>(out), n);
      });
      return absl::OkStatus();
    case hlo::Opcode::kClamp:
      hlo::TypeSwitch(s.element_type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        ClampKernel<T>(static_cast<const T*>(ops[0]), in.operand(0)->shape().rank() == 0 ? 0 : 1,
                       static_cast<const T*>(ops[1]), static_cast<const T*>(ops[2]),
                       in.operand(2)->shape().rank() == 0 ? 0 : 1, static_cast<T*>(out), n);
      });
      return absl::OkStatus();
    default:
      break;
  }
  hlo::TypeSwitch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (in.operand_count() == 1)
      ok = UnaryKernel<T>(op, static_cast<const T*>(ops[0]), static_cast<T*>(out), n);
    else
      ok = BinaryKernel<T>(op, static_cast<const T*>(ops[0]), static_cast<const T*>(ops[1]), static_cast<T*>(out), n);
  });
  if (!ok) return Unimplemented("%s is not defined for %s", hlo::OpcodeName(op), hlo::PrimitiveTypeName(t));
  return absl::OkStatus();
}

void Broadcast(const Instruction& in, const void* x, void* out) {
  const Shape& os = in.shape();
  const Shape& xs = in.operand(0)->shape();
  int w = hlo::ByteWidth(os.element_type);
  int64_t n = os.ElementCount();
  if (n == 0) return;
  std::vector<int64_t> xstrides_full(os.rank(), 0);
  std::vector<int64_t> xs_strides = xs.Strides();
  for (size_t i = 0; i < in.dimensions.size(); ++i) xstrides_full[in.dimensions[i]] = xs_strides[i];
  std::vector<int64_t> idx(os.rank(), 0);
  int64_t i = 0;
  do {
    CopyElem(out, i++, x, Dot(idx, xstrides_full), w);
  } while (Next(idx, os.dims));
}

void Transpose(const Instruction& in, const void* x, void* out) {
  const Shape& os = in.shape();
  const Shape& xs = in.operand(0)->shape();
  int w = hlo::ByteWidth(os.element_type);
  if (os.ElementCount() == 0) return;
  std::vector<int64_t> xst = xs.Strides(), st(os.rank());
  for (int64_t i = 0; i < os.rank(); ++i) st[i] = xst[in.dimensions[i]];
  std::vector<int64_t> idx(os.rank(), 0);
  int64_t i = 0;
  do {
    CopyElem(out, i++, x, Dot(idx, st), w);
  } while (Next(idx, os.dims));
}

void Slice(const Instruction& in, const void* x, void* out) {
  const Shape& os = in.shape();
  int w = hlo::ByteWidth(os.element_type);
  if (os.ElementCount() == 0) return;
  std::vector<int64_t> xst = in.operand(0)->shape().Strides();
  int64_t base = 0;
  std::vector<int64_t> st(os.rank());
  for (int64_t d = 0; d < os.rank(); ++d) {
    base += in.slice_starts[d] * xst[d];
    st[d] = in.slice_strides[d] * xst[d];
  }
  std::vector<int64_t> idx(os.rank(), 0);
  int64_t i = 0;
  do {
    CopyElem(out, i++, x, base + Dot(idx, st), w);
  } while (Next(idx, os.dims));
}

void Pad(const Instruction& in, const void* x, const void* value, void* out) {
  const Shape& os = in.shape();
  const Shape& xs = in.operand(0)->shape();
  int w = hlo::ByteWidth(os.element_type);
  int64_t n = os.ElementCount();
  for (int64_t i = 0; i < n; ++i) CopyElem(out, i, value, 0, w);
  if (xs.ElementCount() == 0) return;
  std::vector<int64_t> ost = os.Strides();
  std::vector<int64_t> idx(xs.rank(), 0);
  int64_t i = 0;
  do {
    int64_t o = 0;
    bool inside = true;
    for (int64_t d = 0; d < xs.rank(); ++d) {
      const auto& p = in.padding_config[d];
      int64_t pos = p.edge_padding_low + idx[d] * (p.interior_padding + 1);
      if (pos < 0 || pos >= os.dims[d]) {
        inside = false;
        break;
      }
      o += pos * ost[d];
    }
    if (inside) CopyElem(out, o, x, i, w);
    ++i;
  } while (Next(idx, xs.dims));
}

void Concatenate(const Instruction& in, absl::Span<const void* const> ops, void* out) {
  const Shape& os = in.shape();
  int w = hlo::ByteWidth(os.element_type);
  int64_t dim = in.dimensions[0];
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= os.dims[d];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < os.rank(); ++d) inner *= os.dims[d];
  int64_t out_row = os.dims[dim] * inner * w;
  int64_t offset = 0;
  for (int64_t k = 0; k < in.operand_count(); ++k) {
    int64_t row = in.operand(k)->shape().dims[dim] * inner * w;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out) + o * out_row + offset, static_cast<const char*>(ops[k]) + o * row, row);
    offset += row;
  }
}

void Reverse(const Instruction& in, const void* x, void* out) {
  const Shape& os = in.shape();
  int w = hlo::ByteWidth(os.element_type);
  if (os.ElementCount() == 0) return;
  std::vector<int64_t> st = os.Strides();
  std::vector<bool> rev(os.rank(), false);
  for (int64_t d : in.dimensions) rev[d] = true;
  std::vector<int64_t> idx(os.rank(), 0);
  int64_t i = 0;
  do {
    int64_t src = 0;
    for (int64_t d = 0; d < os.rank(); ++d) src += (rev[d] ? os.dims[d] - 1 - idx[d] : idx[d]) * st[d];
    CopyElem(out, i++, x, src, w);
  } while (Next(idx, os.dims));
}

void Iota(const Instruction& in, void* out) {
  const Shape& os = in.shape();
  int64_t dim = in.dimensions[0];
  int64_t n = os.ElementCount();
  if (n == 0) return;
  std::vector<int64_t> idx(os.rank(), 0);
  hlo::TypeSwitch(os.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = static_cast<T*>(out);
    int64_t i = 0;
    do {
      o[i++] = hlo::ConvertValue<T, int64_t>(idx[dim]);
    } while (Next(idx, os.dims));
  });
}

// Clamped start indices of dynamic-slice/update-slice (XLA clamps so the
// window stays inside the operand).
std::vector<int64_t> DynamicStarts(const Instruction& in, absl::Span<const void* const> ops, int first,
                                   const std::vector<int64_t>& operand_dims, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> starts(operand_dims.size());
  for (size_t d = 0; d < operand_dims.size(); ++d) {
    int64_t s = ReadIndex(ops[first + d], in.operand(first + d)->shape().element_type, 0);
    starts[d] = std::clamp<int64_t>(s, 0, operand_dims[d] - sizes[d]);
  }
  return starts;
}

void DynamicSlice(const Instruction& in, absl::Span<const void* const> ops, void* out) {
  const Shape& os = in.shape();
  const Shape& xs = in.operand(0)->shape();
  int w = hlo::ByteWidth(os.element_type);
  if (os.ElementCount() == 0) return;
  std::vector<int64_t> starts = DynamicStarts(in, ops, 1, xs.dims, os.dims);
  std::vector<int64_t> xst = xs.Strides();
  int64_t base = Dot(starts, xst);
  std::vector<int64_t> idx(os.rank(), 0);
  int64_t i = 0;
  do {
    CopyElem(out, i++, ops[0], base + Dot(idx, xst), w);
  } while (Next(idx, os.dims));
}

void DynamicUpdateSlice(const Instruction& in, absl::Span<const void* const> ops, void* out) {
  const Shape& os = in.shape();
  const Shape& us = in.operand(1)->shape();
  int w = hlo::ByteWidth(os.element_type);
  if (out != ops[0]) std::memcpy(out, ops[0], os.ByteSize());
  if (us.ElementCount() == 0) return;
  std::vector<int64_t> starts = DynamicStarts(in, ops, 2, os.dims, us.dims);
  std::vector<int64_t> ost = os.Strides();
  int64_t base = Dot(starts, ost);
  std::vector<int64_t> idx(us.rank(), 0);
  int64_t i = 0;
  do {
    CopyElem(out, base + Dot(idx, ost), ops[1], i++, w);
  } while (Next(idx, us.dims));
}

// The operand start index vector for one batch position of gather/scatter.
void IndexVector(const Shape& idx_shape, const void* indices, int64_t index_vector_dim,
                 const std::vector<int64_t>& batch_idx, std::vector<int64_t>& out) {
  std::vector<int64_t> full;
  std::vector<int64_t> st = idx_shape.Strides();
  bool implicit = index_vector_dim == idx_shape.rank();
  int64_t count = implicit ? 1 : idx_shape.dims[index_vector_dim];
  out.resize(count);
  for (int64_t k = 0; k < count; ++k) {
    int64_t off = 0;
    size_t b = 0;
    for (int64_t d = 0; d < idx_shape.rank(); ++d) {
      if (d == index_vector_dim)
        off += k * st[d];
      else
        off += batch_idx[b++] * st[d];
    }
    out[k] = ReadIndex(indices, idx_shape.element_type, off);
  }
}

void Gather(const Instruction& in, const void* x, const void* indices, void* out) {
  const Shape& os = in.shape();
  const Shape& xs = in.operand(0)->shape();
  const Shape& is = in.operand(1)->shape();
  const auto& d = in.gather_dnums;
  int w = hlo::ByteWidth(os.element_type);
  if (os.ElementCount() == 0) return;
  std::vector<int64_t> xst = xs.Strides();
  // Operand dims that carry offsets, in order.
  std::vector<int64_t> offset_operand_dims;
  for (int64_t i = 0; i < xs.rank(); ++i)
    if (std::find(d.collapsed_slice_dims.begin(), d.collapsed_slice_dims.end(), i) == d.collapsed_slice_dims.end())
      offset_operand_dims.push_back(i);
  std::vector<bool> is_offset(os.rank(), false);
  for (int64_t o : d.offset_dims) is_offset[o] = true;
  std::vector<int64_t> idx(os.rank(), 0), batch, start_vec, operand_idx(xs.rank());
  int64_t i = 0;
  do {
    batch.clear();
    std::vector<int64_t> offsets;
    for (int64_t k = 0; k < os.rank(); ++k) (is_offset[k] ? offsets : batch).push_back(idx[k]);
    IndexVector(is, indices, d.index_vector_dim, batch, start_vec);
    std::fill(operand_idx.begin(), operand_idx.end(), 0);
    for (size_t k = 0; k < d.start_index_map.size(); ++k) {
      int64_t od = d.start_index_map[k];
      operand_idx[od] = std::clamp<int64_t>(start_vec[k], 0, xs.dims[od] - in.gather_slice_sizes[od]);
    }
    for (size_t k = 0; k < offset_operand_dims.size(); ++k) operand_idx[offset_operand_dims[k]] += offsets[k];
    CopyElem(out, i++, x, Dot(operand_idx, xst), w);
  } while (Next(idx, os.dims));
}

absl::Status Scatter(const Instruction& in, absl::Span<const void* const> ops, void* out, const CallComputation& call) {
  const Shape& os = in.shape();
  const Shape& is = in.operand(1)->shape();
  const Shape& us = in.operand(2)->shape();
  const auto& d = in.scatter_dnums;
  int w = hlo::ByteWidth(os.element_type);
  if (out != ops[0]) std::memcpy(out, ops[0], os.ByteSize());
  if (us.ElementCount() == 0) return absl::OkStatus();
  std::optional<hlo::Opcode> combiner;
  const Computation& comp = *in.to_apply();
  const Instruction* root = comp.root();
  bool replace = root->opcode() == hlo::Opcode::kParameter && root->parameter_number == 1;
  if (!replace) combiner = MatchScalarBinary(comp);
  std::vector<int64_t> ost = os.Strides();
  std::vector<int64_t> window_operand_dims;
  for (int64_t i = 0; i < os.rank(); ++i)
    if (std::find(d.inserted_window_dims.begin(), d.inserted_window_dims.end(), i) == d.inserted_window_dims.end())
      window_operand_dims.push_back(i);
  std::vector<bool> is_window(us.rank(), false);
  for (int64_t u : d.update_window_dims) is_window[u] = true;
  std::vector<int64_t> idx(us.rank(), 0), batch, start_vec, operand_idx(os.rank());
  int64_t i = 0;
  absl::Status status;
  do {
    batch.clear();
    std::vector<int64_t> window;
    for (int64_t k = 0; k < us.rank(); ++k) (is_window[k] ? window : batch).push_back(idx[k]);
    IndexVector(is, ops[1], d.index_vector_dim, batch, start_vec);
    std::fill(operand_idx.begin(), operand_idx.end(), 0);
    for (size_t k = 0; k < d.scatter_dims_to_operand_dims.size(); ++k)
      operand_idx[d.scatter_dims_to_operand_dims[k]] = start_vec[k];
    for (size_t k = 0; k < window_operand_dims.size(); ++k) operand_idx[window_operand_dims[k]] += window[k];
    bool inside = true;
    for (int64_t k = 0; k < os.rank(); ++k) inside &= operand_idx[k] >= 0 && operand_idx[k] < os.dims[k];
    // XLA skips updates whose window falls outside the operand.
    if (inside) {
      int64_t o = Dot(operand_idx, ost);
      if (replace) {
        CopyElem(out, o, ops[2], i, w);
      } else {
        hlo::TypeSwitch(os.element_type, [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* dst = static_cast<T*>(out) + o;
          const T* src = static_cast<const T*>(ops[2]) + i;
          if (combiner) {
            if (!BinaryKernel<T>(*combiner, dst, src, dst, 1)) status = Unimplemented("scatter combiner");
          } else {
            auto r = call(comp, {Literal::Scalar<T>(*dst), Literal::Scalar<T>(*src)});
            if (!r.ok())
              status = r.status();
            else
              *dst = r->template data<T>()[0];
          }
        });
        if (!status.ok()) return status;
      }
    }
    ++i;
  } while (Next(idx, us.dims));
  return absl::OkStatus();
}

template <typename T>
using Acc = std::conditional_t<kIsFloat<T>, double, ComputeType<T>>;

void DotKernel(const Instruction& in, const void* a, const void* b, void* out) {
  const Shape& os = in.shape();
  const Shape& as = in.operand(0)->shape();
  const Shape& bs = in.operand(1)->shape();
  const auto& d = in.dot_dnums;
  std::vector<int64_t> ast = as.Strides(), bst = bs.Strides();
  std::vector<int64_t> a_free, b_free;
  for (int64_t i = 0; i < as.rank(); ++i)
    if (std::find(d.lhs_batch_dimensions.begin(), d.lhs_batch_dimensions.end(), i) == d.lhs_batch_dimensions.end() &&
        std::find(d.lhs_contracting_dimensions.begin(), d.lhs_contracting_dimensions.end(), i) ==
            d.lhs_contracting_dimensions.end())
      a_free.push_back(i);
  for (int64_t i = 0; i < bs.rank(); ++i)
    if (std::find(d.rhs_batch_dimensions.begin(), d.rhs_batch_dimensions.end(), i) == d.rhs_batch_dimensions.end() &&
        std::find(d.rhs_contracting_dimensions.begin(), d.rhs_contracting_dimensions.end(), i) ==
            d.rhs_contracting_dimensions.end())
      b_free.push_back(i);
  // Output dim k maps to strides in a and b.
  std::vector<int64_t> oa, ob;
  for (size_t k = 0; k < d.lhs_batch_dimensions.size(); ++k) {
    oa.push_back(ast[d.lhs_batch_dimensions[k]]);
    ob.push_back(bst[d.rhs_batch_dimensions[k]]);
  }
  for (int64_t f : a_free) {
    oa.push_back(ast[f]);
    ob.push_back(0);
  }
  for (int64_t f : b_free) {
    oa.push_back(0);
    ob.push_back(bst[f]);
  }
  std::vector<int64_t> cdims, ca, cb;
  for (size_t k = 0; k < d.lhs_contracting_dimensions.size(); ++k) {
    cdims.push_back(as.dims[d.lhs_contracting_dimensions[k]]);
    ca.push_back(ast[d.lhs_contracting_dimensions[k]]);
    cb.push_back(bst[d.rhs_contracting_dimensions[k]]);
  }
  int64_t csize = 1;
  for (int64_t c : cdims) csize *= c;
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
          return *ascending ? va < vb : va > vb;
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

}  // namespace

std::optional<hlo::Opcode> MatchScalarBinary(const Computation& c) {
  const Instruction* r = c.root();
  if (c.num_parameters() != 2 || r->operand_count() != 2 || !hlo::IsElementwiseBinary(r->opcode())) return std::nullopt;
  const Instruction* a = r->operand(0);
  const Instruction* b = r->operand(1);
  if (a->opcode() != hlo::Opcode::kParameter || b->opcode() != hlo::Opcode::kParameter) return std::nullopt;
  if (a->parameter_number == 0 && b->parameter_number == 1) return r->opcode();
  switch (r->opcode()) {
    case hlo::Opcode::kAdd:
    case hlo::Opcode::kMultiply:
    case hlo::Opcode::kMaximum:
    case hlo::Opcode::kMinimum:
    case hlo::Opcode::kAnd:
    case hlo::Opcode::kOr:
    case hlo::Opcode::kXor:
      if (a->parameter_number == 1 && b->parameter_number == 0) return r->opcode();
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::optional<bool> MatchSortDirection(const Computation& c) {
  const Instruction* r = c.root();
  if (r->opcode() != hlo::Opcode::kCompare) return std::nullopt;
  const Instruction* a = r->operand(0);
  const Instruction* b = r->operand(1);
  if (a->opcode() != hlo::Opcode::kParameter || b->opcode() != hlo::Opcode::kParameter) return std::nullopt;
  if (a->parameter_number != 0 || b->parameter_number != 1) return std::nullopt;
  if (r->comparison_direction == hlo::ComparisonDirection::kLt) return true;
  if (r->comparison_direction == hlo::ComparisonDirection::kGt) return false;
  return std::nullopt;
}

absl::Status RunKernel(const Instruction& in, absl::Span<const void* const> ops, absl::Span<void* const> outs,
                       const CallComputation& call) {
  using hlo::Opcode;
  void* out = outs.empty() ? nullptr : outs[0];
  switch (in.opcode()) {
    case Opcode::kConstant:
      std::memcpy(out, in.literal->untyped_data(), in.literal->size_bytes());
      return absl::OkStatus();
    case Opcode::kIota:
      Iota(in, out);
      return absl::OkStatus();
    case Opcode::kReshape:
    case Opcode::kBitcastConvert:
      if (out != ops[0]) std::memcpy(out, ops[0], in.shape().ByteSize());
      return absl::OkStatus();
    case Opcode::kBroadcast:
      Broadcast(in, ops[0], out);
      return absl::OkStatus();
    case Opcode::kTranspose:
      Transpose(in, ops[0], out);
      return absl::OkStatus();
    case Opcode::kSlice:
      Slice(in, ops[0], out);
      return absl::OkStatus();
    case Opcode::kPad:
      Pad(in, ops[0], ops[1], out);
      return absl::OkStatus();
    case Opcode::kConcatenate:
      Concatenate(in, ops, out);
      return absl::OkStatus();
    case Opcode::kReverse:
      Reverse(in, ops[0], out);
      return absl::OkStatus();
    case Opcode::kDynamicSlice:
      DynamicSlice(in, ops, out);
      return absl::OkStatus();
    case Opcode::kDynamicUpdateSlice:
      DynamicUpdateSlice(in, ops, out);
      return absl::OkStatus();
    case Opcode::kGather:
      Gather(in, ops[0], ops[1], out);
      return absl::OkStatus();
    case Opcode::kScatter:
      return Scatter(in, ops, out, call);
    case Opcode::kDot:
      DotKernel(in, ops[0], ops[1], out);
      return absl::OkStatus();
    case Opcode::kConvolution:
      ConvKernel(in, ops[0], ops[1], out);
      return absl::OkStatus();
    case Opcode::kReduce:
      return Reduce(in, ops, outs, call);
    case Opcode::kReduceWindow:
      return ReduceWindow(in, ops, out, call);
    case Opcode::kSort:
      return Sort(in, ops, outs, call);
    default:
      break;
  }
  if (hlo::IsElementwise(in.opcode())) return Elementwise(in, ops, out);
  return Unimplemented("no kernel for %s", hlo::OpcodeName(in.opcode()));
}

}  // namespace xonnx::eval
