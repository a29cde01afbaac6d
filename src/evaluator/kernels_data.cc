// Reference kernels that move data: broadcast, transpose, slices, pads,
// concatenation, gather and scatter.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "base/status.h"
#include "evaluator/kernels_internal.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::eval::internal {

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
    if (row == 0) continue;  // an empty operand's buffer may be null
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

}  // namespace xonnx::eval::internal
