// Gather and scatter ONNX ops: Gather, GatherElements, GatherND, ScatterElements
// (and Scatter), ScatterND, and TensorScatter (in xonnx's own domain).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

// Normalizes indices: negative values count from the end of a dim of size `dim`.
Instruction* WrapIndices(hlo::Builder& b, Instruction* idx, int64_t dim) {
  if (idx->opcode() == Opcode::kConstant) {
    Literal l = *idx->literal;
    bool any = false;
    for (int64_t i = 0; i < l.element_count(); ++i) any |= l.GetAsInt64(i) < 0;
    if (!any) return idx;
  }
  if (hlo::IsUnsignedInteger(idx->shape().element_type)) return idx;
  Instruction* neg = b.Compare(idx, SplatLike(b, idx, 0), hlo::ComparisonDirection::kLt);
  return b.Select(neg, b.Binary(Opcode::kAdd, idx, SplatLike(b, idx, dim)), idx);
}

// Indices into a dim of size n, checked and wrapped: they lie in
// [-n, n - 1] (checked as ONNX Runtime checks them, since XLA's gather
// clamps and its scatter drops what is out of range), and negative ones
// count from the end.
absl::StatusOr<Instruction*> AxisIndices(NodeContext& ctx, Instruction* idx, int64_t n) {
  RETURN_IF_ERROR(ctx.CheckIndexRange(idx, -n, n - 1, "indices"));
  return WrapIndices(ctx.b(), idx, n);
}

// Negative components of index vectors (the last dim of `idx`) count from
// the end of the dims they index, data dims `first` on; each component is
// checked against its dim.
absl::StatusOr<Instruction*> WrapIndexVectors(NodeContext& ctx, Instruction* idx, const hlo::Shape& data,
                                              int64_t first) {
  hlo::Builder& b = ctx.b();
  const std::vector<int64_t>& id = idx->shape().dims;
  const int64_t k = id.back();
  std::vector<int64_t> dimv(data.dims.begin() + first, data.dims.begin() + first + k);
  for (int64_t j = 0; j < k; ++j) {
    std::vector<int64_t> starts(id.size(), 0), limits = id, strides(id.size(), 1);
    starts.back() = j;
    limits.back() = j + 1;
    RETURN_IF_ERROR(ctx.CheckIndexRange(b.Slice(idx, starts, limits, strides), -dimv[j], dimv[j] - 1,
                                        absl::StrCat("component ", j, " of the index vectors")));
  }
  idx = b.Convert(idx, hlo::S64);
  Instruction* dims = BroadcastTo(b, b.Constant(Literal::Vector<int64_t>(dimv)), idx->shape().dims);
  Instruction* neg = b.Compare(idx, SplatLike(b, idx, 0), hlo::ComparisonDirection::kLt);
  return b.Select(neg, b.Binary(Opcode::kAdd, idx, dims), idx);
}

absl::Status Gather(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* idx = ctx.input(1);
  if (!x || !idx) return ctx.Error("needs data and indices");
  int64_t r = x->shape().rank();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), r));
  ASSIGN_OR_RETURN(idx, AxisIndices(ctx, idx, x->shape().dims[axis]));
  ctx.set_output(0, TakeAlongAxis(ctx.b(), x, idx, axis));
  return absl::OkStatus();
}

// The index per position along `axis` of element indices that repeat it
// across every other dim (a broadcast of one vector: an Expand of an edge
// list, torch's index.expand_as(src)), or null. Such an op moves whole rows
// of the other dims: one index vector per row, checked and wrapped once per
// row, not per element.
Instruction* RowIndices(Instruction* idx, int64_t axis) {
  if (idx->opcode() != Opcode::kBroadcast || idx->operand(0)->shape().rank() != 1 ||
      idx->dimensions != std::vector<int64_t>{axis})
    return nullptr;
  return idx->operand(0);
}

// The dims of a rank-r value other than `axis`, in order.
std::vector<int64_t> OtherDims(int64_t r, int64_t axis) {
  std::vector<int64_t> dims;
  for (int64_t k = 0; k < r; ++k)
    if (k != axis) dims.push_back(k);
  return dims;
}

// GatherElements whose indices are rows (RowIndices): a gather of slices
// spanning the indices' extent of the other dims.
absl::Status GatherRows(NodeContext& ctx, Instruction* x, Instruction* idx, Instruction* rows, int64_t axis) {
  const int64_t r = x->shape().rank(), n = x->shape().dims[axis];
  ASSIGN_OR_RETURN(rows, AxisIndices(ctx, rows, n));
  hlo::GatherDimensionNumbers d;
  d.offset_dims = OtherDims(r, axis);
  d.collapsed_slice_dims = {axis};
  d.start_index_map = {axis};
  d.index_vector_dim = 1;
  std::vector<int64_t> sizes = idx->shape().dims;
  sizes[axis] = 1;
  ctx.set_output(0, ctx.b().Gather(x, rows, d, sizes));
  return absl::OkStatus();
}

absl::Status GatherElements(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* idx = ctx.input(1);
  int64_t r = x->shape().rank();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), r));
  if (Instruction* rows = RowIndices(idx, axis); rows && x->shape().dims[axis] > 0)
    return GatherRows(ctx, x, idx, rows, axis);
  ASSIGN_OR_RETURN(idx, AxisIndices(ctx, idx, x->shape().dims[axis]));
  ctx.set_output(0, GatherElementsAlongAxis(ctx.b(), x, idx, axis));
  return absl::OkStatus();
}

// The scatter combiner for ONNX's `reduction` attribute.
absl::StatusOr<hlo::Computation*> ScatterCombiner(NodeContext& ctx, hlo::PrimitiveType t) {
  std::string red = ctx.attr_s("reduction", "none");
  if (red == "add") return ctx.b().ScalarReducer(Opcode::kAdd, t);
  if (red == "mul") return ctx.b().ScalarReducer(Opcode::kMultiply, t);
  if (red == "max") return ctx.b().ScalarReducer(Opcode::kMaximum, t);
  if (red == "min") return ctx.b().ScalarReducer(Opcode::kMinimum, t);
  if (red != "none") return ctx.Error(absl::StrCat("unknown reduction '", red, "'"));
  hlo::Builder cb(ctx.b().module(), "scatter_replace");
  cb.Parameter(0, hlo::Shape::Scalar(t), "old");
  Instruction* upd = cb.Parameter(1, hlo::Shape::Scalar(t), "update");
  return cb.Build(upd);
}

absl::Status ScatterElements(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* idx = ctx.input(1);
  Instruction* upd = ctx.input(2);
  int64_t r = x->shape().rank();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), r));
  ASSIGN_OR_RETURN(hlo::Computation * comb, ScatterCombiner(ctx, x->shape().element_type));
  if (Instruction* rows = RowIndices(idx, axis)) {
    // Rows (RowIndices): one index per row of updates, windows over the
    // other dims (a graph network's scatter-add of messages).
    ASSIGN_OR_RETURN(rows, AxisIndices(ctx, rows, x->shape().dims[axis]));
    hlo::ScatterDimensionNumbers d;
    d.update_window_dims = OtherDims(r, axis);
    d.inserted_window_dims = {axis};
    d.scatter_dims_to_operand_dims = {axis};
    d.index_vector_dim = 1;
    ctx.set_output(0, ctx.b().Scatter(x, rows, upd, d, comb));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(idx, AxisIndices(ctx, idx, x->shape().dims[axis]));
  // Into the data as one dimension, at each update's row-major position.
  hlo::Builder& b = ctx.b();
  hlo::ScatterDimensionNumbers d;
  d.inserted_window_dims = {0};
  d.scatter_dims_to_operand_dims = {0};
  d.index_vector_dim = r;
  Instruction* flat = b.Reshape(x, {x->shape().ElementCount()});
  Instruction* out = b.Scatter(flat, ElementIndices(b, idx, axis, x->shape().dims), upd, d, comb);
  ctx.set_output(0, b.Reshape(out, x->shape().dims));
  return absl::OkStatus();
}

absl::Status GatherND(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* idx = ctx.input(1);
  hlo::Builder& b = ctx.b();
  int64_t bd = ctx.attr_i("batch_dims", 0);
  int64_t q = idx->shape().rank();
  int64_t r = x->shape().rank();
  if (q < 1) return ctx.Error("indices must have rank 1 or more");
  int64_t k = idx->shape().dims.back();
  if (k + bd > r) return ctx.Error("index vectors are longer than the data rank");
  ASSIGN_OR_RETURN(idx, WrapIndexVectors(ctx, idx, x->shape(), bd));
  if (bd > 0) {
    std::vector<int64_t> d1 = idx->shape().dims;
    d1.back() = 1;
    std::vector<Instruction*> parts;
    for (int64_t i = 0; i < bd; ++i) parts.push_back(b.Iota(hlo::Shape(hlo::S64, d1), i));
    parts.push_back(idx);
    idx = b.Concatenate(parts, q - 1);
    k += bd;
  }
  hlo::GatherDimensionNumbers d;
  for (int64_t i = 0; i < k; ++i) {
    d.collapsed_slice_dims.push_back(i);
    d.start_index_map.push_back(i);
  }
  d.index_vector_dim = q - 1;
  for (int64_t i = q - 1; i < q - 1 + (r - k); ++i) d.offset_dims.push_back(i);
  std::vector<int64_t> sizes(k, 1);
  for (int64_t i = k; i < r; ++i) sizes.push_back(x->shape().dims[i]);
  ctx.set_output(0, b.Gather(x, idx, d, sizes));
  return absl::OkStatus();
}

absl::Status ScatterND(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* idx = ctx.input(1);
  Instruction* upd = ctx.input(2);
  int64_t q = idx->shape().rank();
  if (q < 1) return ctx.Error("indices must have rank 1 or more");
  int64_t k = idx->shape().dims.back();
  if (k > x->shape().rank()) return ctx.Error("index vectors are longer than the data rank");
  // Negative indices count from the end, as in GatherND.
  ASSIGN_OR_RETURN(idx, WrapIndexVectors(ctx, idx, x->shape(), 0));
  ASSIGN_OR_RETURN(hlo::Computation * comb, ScatterCombiner(ctx, x->shape().element_type));
  hlo::ScatterDimensionNumbers d;
  for (int64_t i = 0; i < k; ++i) {
    d.inserted_window_dims.push_back(i);
    d.scatter_dims_to_operand_dims.push_back(i);
  }
  for (int64_t i = q - 1; i < upd->shape().rank(); ++i) d.update_window_dims.push_back(i);
  d.index_vector_dim = q - 1;
  ctx.set_output(0, ctx.b().Scatter(x, idx, upd, d, comb));
  return absl::OkStatus();
}

// TensorScatter, as ONNX opset 24 defines it: `update` written into
// `past_cache` along `axis` (the sequence), for each batch row b at
// write_indices[b] (0 without them), positions taken modulo the axis's
// length in mode "circular". Each written slot is one scatter index, so
// rows of a batch may write at different positions.
absl::Status TensorScatter(NodeContext& ctx) {
  Instruction* past = ctx.input(0);
  Instruction* upd = ctx.input(1);
  const hlo::Shape& ps = past->shape();
  const int64_t r = ps.rank();
  int64_t axis = ctx.attr_i("axis", -2);
  if (axis < 0) axis += r;
  if (r < 2 || axis <= 0 || axis >= r)
    return ctx.Error(
        absl::StrCat("axis ", ctx.attr_i("axis", -2), " must name a dimension after the batch of a ", r, "-D cache"));
  if (ctx.attr_s("reduction", "none") != "none") return ctx.Error("TensorScatter has no reduction attribute");
  const std::string mode = ctx.attr_s("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return ctx.Error(absl::StrCat("mode '", mode, "': expected \"linear\" or \"circular\""));
  const std::vector<int64_t>& ud = upd->shape().dims;
  bool fits = static_cast<int64_t>(ud.size()) == r && upd->shape().element_type == ps.element_type;
  for (int64_t i = 0; fits && i < r; ++i) fits = i == axis ? ud[i] <= ps.dims[i] : ud[i] == ps.dims[i];
  if (!fits)
    return ctx.Error(absl::StrCat("update ", upd->shape().ToString(), " must be the cache ", ps.ToString(),
                                  " but for a sequence no longer than its"));
  const int64_t batch = ps.dims[0], length = ps.dims[axis], seq = ud[axis];
  if (seq == 0 || batch == 0) {
    ctx.set_output(0, past);
    return absl::OkStatus();
  }
  hlo::Builder& b = ctx.b();
  Instruction* w = ctx.has_input(2) ? b.Convert(ctx.input(2), hlo::S64)
                                    : b.Constant(Literal::Vector<int64_t>(std::vector<int64_t>(batch, 0)));
  if (w->shape().dims != std::vector<int64_t>{batch})
    return ctx.Error(
        absl::StrCat("write_indices must be [", batch, "], one per batch row; got ", w->shape().ToString()));
  // A linear write past the end would be dropped by the scatter: refused.
  if (mode == "linear") RETURN_IF_ERROR(ctx.CheckIndexRange(w, 0, length - seq, "write_indices"));
  const std::vector<int64_t> grid = {batch, seq};
  Instruction* at = b.Binary(Opcode::kAdd, b.Broadcast(w, grid, {0}), b.Iota(hlo::Shape(hlo::S64, grid), 1));
  if (mode == "circular") {
    Instruction* n = SplatLike(b, at, length);
    at = b.Binary(Opcode::kRemainder, b.Binary(Opcode::kAdd, b.Binary(Opcode::kRemainder, at, n), n), n);
  }
  const std::vector<int64_t> column = {batch, seq, 1};
  Instruction* rows = b.Iota(hlo::Shape(hlo::S64, column), 0);
  Instruction* idx = b.Concatenate({rows, b.Reshape(at, column)}, 2);
  ASSIGN_OR_RETURN(hlo::Computation * comb, ScatterCombiner(ctx, ps.element_type));
  hlo::ScatterDimensionNumbers d;
  d.inserted_window_dims = {0, axis};
  d.scatter_dims_to_operand_dims = {0, axis};
  d.index_vector_dim = 2;
  for (int64_t i = 1; i < r; ++i)
    if (i != axis) d.update_window_dims.push_back(i);
  ctx.set_output(0, b.Scatter(past, idx, upd, d, comb));
  return absl::OkStatus();
}

}  // namespace

// The domain of xonnx's own ops: ops of newer ONNX opsets that xonnx's
// runtime writes into the models it rewrites, whatever their opset.
constexpr char kXonnxDomain[] = "ai.xonnx";

void RegisterGatherScatterOps(Registry& r) {
  r.Add({.domain = kXonnxDomain, .op_type = "TensorScatter", .min_opset = 1, .max_opset = 1, .fn = TensorScatter});
  r.Add("Gather", Gather);
  r.Add("GatherElements", GatherElements, 11);
  r.Add("ScatterElements", ScatterElements, 11);
  r.Add("Scatter", ScatterElements, 9, 10);
  r.Add("GatherND", GatherND, 11);
  r.Add("ScatterND", ScatterND, 11);
}

}  // namespace xonnx::onnx_import
