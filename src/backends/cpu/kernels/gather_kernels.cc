// Native gather and scatter. The importer lowers ONNX Gather, GatherND,
// GatherElements, the nearest and linear Resize/Upsample index tables,
// ScatterND and ScatterElements to these, so they are as general as XLA's
// definition: any dimension numbers, any index type, any element width.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "absl/algorithm/container.h"
#include "backends/cpu/kernels/strided_loops.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/kernels.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// How the start indices are read: the index array's batch dims (all but
// index_vector_dim, in order) and, for each component of an index vector,
// its element offset and the operand stride it moves along.
struct IndexReader {
  hlo::PrimitiveType type;
  std::vector<int64_t> batch_dims, batch_strides, dense_strides;
  std::vector<int64_t> component_offsets, operand_strides, limits;  // per component

  IndexReader(const hlo::Shape& indices, int64_t index_vector_dim, const std::vector<int64_t>& to_operand_dims,
              const std::vector<int64_t>& operand_strides_all, const std::vector<int64_t>& limits_all)
      : type(indices.element_type) {
    std::vector<int64_t> ist = indices.Strides();
    for (int64_t d = 0; d < indices.rank(); ++d) {
      if (d == index_vector_dim) continue;
      batch_dims.push_back(indices.dims[d]);
      batch_strides.push_back(ist[d]);
    }
    dense_strides.assign(batch_dims.size(), 1);
    for (int64_t d = static_cast<int64_t>(batch_dims.size()) - 2; d >= 0; --d)
      dense_strides[d] = dense_strides[d + 1] * batch_dims[d + 1];
    for (size_t k = 0; k < to_operand_dims.size(); ++k) {
      component_offsets.push_back(index_vector_dim < indices.rank() ? k * ist[index_vector_dim] : 0);
      operand_strides.push_back(operand_strides_all[to_operand_dims[k]]);
      limits.push_back(limits_all[to_operand_dims[k]]);
    }
  }
  int64_t BatchCount() const {
    int64_t n = 1;
    for (int64_t d : batch_dims) n *= d;
    return n;
  }
};

// A gather: out[batch..., offset...] = x[start(batch) + offset], where
// start(batch) is the clamped index vector times the operand's strides. The
// starts are computed first, one per batch position, into scratch; then
// the output is a strided walk whose innermost run, when it is a slice of
// contiguous operand elements, is one memcpy.
std::optional<Thunk> Gather(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  const hlo::Shape& xs = in.operand(0)->shape();
  const auto& dn = in.gather_dnums;
  std::vector<int64_t> xst = xs.Strides(), limits(xs.rank());
  for (int64_t d = 0; d < xs.rank(); ++d) limits[d] = xs.dims[d] - in.gather_slice_sizes[d];
  IndexReader reader(in.operand(1)->shape(), dn.index_vector_dim, dn.start_index_map, xst, limits);
  int64_t batches = reader.BatchCount();
  // Per output dim: its step in the batch position, in the operand, and in the output.
  std::vector<int64_t> offset_operand_dims;
  for (int64_t d = 0; d < xs.rank(); ++d)
    if (!absl::c_linear_search(dn.collapsed_slice_dims, d)) offset_operand_dims.push_back(d);
  std::vector<int64_t> ost = os.Strides(), bstep(os.rank(), 0), xstep(os.rank(), 0);
  size_t next_offset = 0;
  int64_t b = 1;
  for (int64_t d = os.rank() - 1; d >= 0; --d) {
    if (absl::c_linear_search(dn.offset_dims, d)) continue;
    bstep[d] = b;
    b *= os.dims[d];
  }
  for (int64_t d = 0; d < os.rank(); ++d)
    if (absl::c_linear_search(dn.offset_dims, d)) xstep[d] = xst[offset_operand_dims[next_offset++]];
  // Merge dims contiguous in all three, drop size-1 dims.
  std::vector<int64_t> dims, bs, xsd, osd;
  for (int64_t d = 0; d < os.rank(); ++d) {
    if (os.dims[d] == 1) continue;
    if (!dims.empty() && bs.back() == bstep[d] * os.dims[d] && xsd.back() == xstep[d] * os.dims[d] &&
        osd.back() == ost[d] * os.dims[d]) {
      dims.back() *= os.dims[d];
      bs.back() = bstep[d], xsd.back() = xstep[d], osd.back() = ost[d];
    } else {
      dims.push_back(os.dims[d]), bs.push_back(bstep[d]), xsd.push_back(xstep[d]), osd.push_back(ost[d]);
    }
  }
  if (dims.empty()) dims = {1}, bs = {0}, xsd = {0}, osd = {1};
  int64_t inner = dims.back(), inner_b = bs.back(), inner_x = xsd.back();
  dims.pop_back(), bs.pop_back(), xsd.pop_back(), osd.pop_back();
  BufferRef x = io.inputs[0], indices = io.inputs[1], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  t.scratch_bytes = batches * sizeof(int64_t);
  bool ok = DispatchWidth(hlo::ByteWidth(os.element_type), [&](auto tag) {
    using W = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      int64_t* start = reinterpret_cast<int64_t*>(f.Scratch());
      const void* idx = f.Ptr(indices);
      size_t comps = reader.component_offsets.size();
      ForEachRow<2>(reader.batch_dims, {reader.batch_strides, reader.dense_strides}, comps,
                    [&](const std::array<int64_t, 2>& off) {
                      int64_t s = 0;
                      for (size_t k = 0; k < comps; ++k) {
                        int64_t v = eval::ReadIndex(idx, reader.type, off[0] + reader.component_offsets[k]);
                        s += std::clamp<int64_t>(v, 0, reader.limits[k]) * reader.operand_strides[k];
                      }
                      start[off[1]] = s;
                    });
      const W* src = static_cast<const W*>(f.Ptr(x));
      W* dst = static_cast<W*>(f.Ptr(out));
      ForEachRow<3>(dims, {bs, xsd, osd}, inner, [&](const std::array<int64_t, 3>& off) {
        W* o = dst + off[2];
        if (inner_b == 0) {
          const W* s = src + start[off[0]] + off[1];
          if (inner_x == 1) {
            std::memcpy(o, s, inner * sizeof(W));
          } else {
            for (int64_t i = 0; i < inner; ++i) o[i] = s[i * inner_x];
          }
        } else {
          for (int64_t i = 0; i < inner; ++i) o[i] = src[start[off[0] + i * inner_b] + off[1] + i * inner_x];
        }
      });
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
  return t;
}

// The scatter's combiner on one element: dst = op(dst, update).
template <typename T>
void Combine(std::optional<Opcode> op, T* dst, T update) {
  if (!op) {
    *dst = update;
    return;
  }
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    switch (*op) {
      case Opcode::kAdd:
        *dst = static_cast<T>(*dst + update);
        break;
      case Opcode::kMultiply:
        *dst = static_cast<T>(*dst * update);
        break;
      case Opcode::kMaximum:
        *dst = eval::internal::Max(*dst, update);
        break;
      default:
        *dst = eval::internal::Min(*dst, update);
        break;
    }
  }
}

// A scatter: the operand copied to the output, then every update element
// combined into the element its index vector and window position name;
// those outside the operand are skipped, as the evaluator skips them.
// Updates apply in order on one thread, so repeated indices give the
// evaluator's result.
std::optional<Thunk> Scatter(const Instruction& in, const ThunkIo& io) {
  if (in.operand_count() != 3) return std::nullopt;
  const hlo::Shape& os = in.shape();
  const hlo::Shape& us = in.operand(2)->shape();
  const auto& dn = in.scatter_dnums;
  const hlo::Computation& comp = *in.to_apply();
  std::optional<Opcode> op;
  bool replace = comp.root()->opcode() == Opcode::kParameter && comp.root()->parameter_number == 1;
  if (!replace) {
    op = ArithmeticReducer(comp);
    if (!op) return std::nullopt;
    if (os.element_type == hlo::PRED) return std::nullopt;
  }
  std::vector<int64_t> ost = os.Strides(), no_limits(os.rank(), INT64_MAX / 4);
  IndexReader reader(in.operand(1)->shape(), dn.index_vector_dim, dn.scatter_dims_to_operand_dims, ost, no_limits);
  // Update dims: batch ones step the index position; window ones the operand.
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < os.rank(); ++d)
    if (!absl::c_linear_search(dn.inserted_window_dims, d)) window_operand_dims.push_back(d);
  // Per update dim: the operand dim a window dim moves along, or -1 for a
  // batch dim.
  std::vector<int64_t> window_to_operand;
  size_t windows = 0;
  for (int64_t d = 0; d < us.rank(); ++d)
    window_to_operand.push_back(absl::c_linear_search(dn.update_window_dims, d) ? window_operand_dims[windows++] : -1);
  std::vector<int64_t> to_operand_dims = dn.scatter_dims_to_operand_dims;
  int64_t bytes = os.ByteSize(), updates = us.ElementCount();
  BufferRef x = io.inputs[0], indices = io.inputs[1], upd = io.inputs[2], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  hlo::TypeSwitch(os.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      T* o = static_cast<T*>(f.Ptr(out));
      if (static_cast<void*>(o) != f.Ptr(x)) std::memcpy(o, f.Ptr(x), bytes);
      const void* idx = f.Ptr(indices);
      const T* u = static_cast<const T*>(f.Ptr(upd));
      std::vector<int64_t> start(os.rank());
      // Update elements in row-major order: batch dims and window dims
      // interleave in the update's shape, so each element is placed by
      // splitting its multi-index.
      std::vector<int64_t> uidx(us.rank(), 0);
      for (int64_t e = 0; e < updates; ++e) {
        int64_t ioff = 0, b = 0;
        for (int64_t d = 0; d < us.rank(); ++d)
          if (window_to_operand[d] < 0) ioff += uidx[d] * reader.batch_strides[b++];
        std::fill(start.begin(), start.end(), 0);
        for (size_t k = 0; k < to_operand_dims.size(); ++k)
          start[to_operand_dims[k]] = eval::ReadIndex(idx, reader.type, ioff + reader.component_offsets[k]);
        for (int64_t d = 0; d < us.rank(); ++d)
          if (window_to_operand[d] >= 0) start[window_to_operand[d]] += uidx[d];
        bool inside = true;
        int64_t at = 0;
        for (int64_t d = 0; d < os.rank(); ++d) {
          inside &= start[d] >= 0 && start[d] < os.dims[d];
          at += start[d] * ost[d];
        }
        if (inside) Combine<T>(op, o + at, u[e]);
        for (int64_t d = us.rank() - 1; d >= 0; --d) {
          if (++uidx[d] < us.dims[d]) break;
          uidx[d] = 0;
        }
      }
      return absl::OkStatus();
    };
  });
  return t;
}

}  // namespace

std::optional<Thunk> MakeGatherScatterThunk(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  if (!os.IsArray() || io.outputs.size() != 1) return std::nullopt;
  switch (in.opcode()) {
    case Opcode::kGather:
      return Gather(in, io);
    case Opcode::kScatter:
      return Scatter(in, io);
    default:
      return std::nullopt;
  }
}

}  // namespace xonnx::cpu
