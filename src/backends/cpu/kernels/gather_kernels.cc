// Native gather (and the dispatch to scatter_kernels.cc). The importer
// lowers ONNX Gather, GatherND, GatherElements and the nearest and linear
// Resize/Upsample index tables to it, so it is as general as XLA's
// definition: any dimension numbers, any index type, any element width.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "absl/algorithm/container.h"
#include "backends/cpu/kernels/index_reader.h"
#include "backends/cpu/kernels/strided_loops.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/kernels.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

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
  // One 64-bit component per index vector, stored densely (an element-wise
  // gather's row-major positions, an embedding's ids): the starts in one
  // tight loop, not a type switch and a call per element.
  const bool dense_s64 =
      reader.type == hlo::S64 && reader.component_offsets.size() == 1 && reader.batch_strides == reader.dense_strides;
  Thunk t;
  t.name = in.name();
  t.scratch_bytes = batches * sizeof(int64_t);
  bool ok = DispatchWidth(hlo::ByteWidth(os.element_type), [&](auto tag) {
    using W = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      int64_t* start = reinterpret_cast<int64_t*>(f.Scratch());
      const void* idx = f.Ptr(indices);
      size_t comps = reader.component_offsets.size();
      if (dense_s64) {
        const int64_t* v = static_cast<const int64_t*>(idx) + reader.component_offsets[0];
        const int64_t limit = reader.limits[0], stride = reader.operand_strides[0];
#pragma omp parallel for if (batches > 65536) schedule(static)
        for (int64_t i = 0; i < batches; ++i) start[i] = std::clamp<int64_t>(v[i], 0, limit) * stride;
      } else {
        ForEachRow<2>(reader.batch_dims, {reader.batch_strides, reader.dense_strides}, comps,
                      [&](const std::array<int64_t, 2>& off) {
                        int64_t s = 0;
                        for (size_t k = 0; k < comps; ++k) {
                          int64_t v = eval::ReadIndex(idx, reader.type, off[0] + reader.component_offsets[k]);
                          s += std::clamp<int64_t>(v, 0, reader.limits[k]) * reader.operand_strides[k];
                        }
                        start[off[1]] = s;
                      });
      }
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
          // One element per index vector: a long run (an element-wise
          // gather's whole output) is split between the threads.
#pragma omp parallel for if (inner > 65536) schedule(static)
          for (int64_t i = 0; i < inner; ++i) o[i] = src[start[off[0] + i * inner_b] + off[1] + i * inner_x];
        }
      });
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
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
      return MakeScatterThunk(in, io);
    default:
      return std::nullopt;
  }
}

}  // namespace xonnx::cpu
