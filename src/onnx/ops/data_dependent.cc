// Ops whose output shape depends on input values: NonZero, Unique,
// NonMaxSuppression, and Compress's condition. XLA programs have static
// shapes, so these converters compute their results from known values:
// inside a program when the values are known at compile time (constants,
// initializers, shapes), and on the host between programs when they are
// only known at run time (onnx/graph_split.h cuts the graph there and runs
// the converter on the values). Compress only needs its condition: with a
// known condition the data stays a runtime value and is gathered.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

absl::Status NonZero(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Literal x, ctx.ConstInput(0));
  const auto& dims = x.shape().dims;
  const int64_t r = dims.size(), count = x.element_count();
  // Two passes without branches on the data (a detector's masks are about
  // half true, where a branch per element mispredicts): count, then write
  // each hit's coordinates straight into the output, stepping the
  // coordinates like an odometer instead of dividing the flat index.
  Literal out;
  hlo::TypeSwitch(x.shape().element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = x.data<T>();
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i) n += static_cast<double>(v[i]) != 0;
    out = Literal(hlo::Shape(hlo::S64, {std::max<int64_t>(r, 1), n}));
    int64_t* o = out.data<int64_t>();
    if (r <= 1) {  // a scalar's hit is coordinate 0
      int64_t k = 0;
      for (int64_t i = 0; i < count && k < n; ++i) {
        o[k] = r == 0 ? 0 : i;
        k += static_cast<double>(v[i]) != 0;
      }
      return;
    }
    std::vector<int64_t> at(r, 0);
    int64_t k = 0;
    for (int64_t i = 0; i < count && k < n; ++i) {
      for (int64_t d = 0; d < r; ++d) o[d * n + k] = at[d];
      k += static_cast<double>(v[i]) != 0;
      for (int64_t d = r - 1; d >= 0 && ++at[d] == dims[d]; --d) at[d] = 0;
    }
  });
  ctx.set_output(0, ctx.b().Constant(std::move(out)));
  return absl::OkStatus();
}

absl::Status Compress(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  ASSIGN_OR_RETURN(Literal cond, ctx.ConstInput(1));
  hlo::Builder& b = ctx.b();
  bool has_axis = ctx.has_attr("axis");
  if (!has_axis) x = b.Reshape(x, {x->shape().ElementCount()});
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, has_axis ? ctx.attr_i("axis", 0) : 0, x->shape().rank()));
  int64_t dim = x->shape().dims[axis];
  if (cond.element_count() > dim) return ctx.Error("condition is longer than the compressed dimension");
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < cond.element_count(); ++i)
    if (cond.GetAsDouble(i) != 0) idx.push_back(i);
  ctx.set_output(0, TakeAlongAxis(b, x, b.Constant(Literal::Vector<int64_t>(idx)), axis));
  return absl::OkStatus();
}

absl::Status Unique(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Literal x, ctx.ConstInput(0));
  bool sorted = ctx.attr_i("sorted", 1) != 0;
  bool has_axis = ctx.has_attr("axis");
  if (!has_axis) x = x.Reshape({x.element_count()});
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, has_axis ? ctx.attr_i("axis", 0) : 0, x.shape().rank()));
  const auto& dims = x.shape().dims;
  int64_t n = dims[axis], outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[i];
  for (int64_t i = axis + 1; i < x.shape().rank(); ++i) inner *= dims[i];
  // Slice k along the axis as a vector of doubles, for comparisons.
  auto slice = [&](int64_t k) {
    std::vector<double> v;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) v.push_back(x.GetAsDouble((o * n + k) * inner + i));
    return v;
  };
  std::vector<std::vector<double>> slices(n);
  for (int64_t k = 0; k < n; ++k) slices[k] = slice(k);
  std::vector<int64_t> first;  // first occurrence of each distinct slice, in order of appearance
  std::vector<int64_t> inverse(n);
  std::map<std::vector<double>, int64_t> seen;
  for (int64_t k = 0; k < n; ++k) {
    auto it = seen.find(slices[k]);
    if (it == seen.end()) {
      seen[slices[k]] = first.size();
      first.push_back(k);
    }
  }
  std::vector<int64_t> order(first.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return slices[first[a]] < slices[first[b]]; });
  std::vector<int64_t> rank_of(order.size());
  for (size_t p = 0; p < order.size(); ++p) rank_of[order[p]] = p;
  std::vector<int64_t> counts(order.size(), 0), indices(order.size());
  for (int64_t k = 0; k < n; ++k) {
    int64_t u = rank_of[seen.at(slices[k])];
    inverse[k] = u;
    ++counts[u];
  }
  for (size_t p = 0; p < order.size(); ++p) indices[p] = first[order[p]];
  std::vector<int64_t> ydims = dims;
  ydims[axis] = order.size();
  Literal y(hlo::Shape(x.shape().element_type, ydims));
  int w = hlo::ByteWidth(x.shape().element_type);
  for (int64_t o = 0; o < outer; ++o)
    for (size_t p = 0; p < order.size(); ++p)
      std::memcpy(static_cast<char*>(y.untyped_data()) + ((o * order.size() + p) * inner) * w,
                  static_cast<const char*>(x.untyped_data()) + ((o * n + indices[p]) * inner) * w, inner * w);
  hlo::Builder& b = ctx.b();
  ctx.set_output(0, b.Constant(std::move(y)));
  ctx.set_output(1, b.Constant(Literal::Vector<int64_t>(indices)));
  ctx.set_output(2, b.Constant(Literal::Vector<int64_t>(inverse)));
  ctx.set_output(3, b.Constant(Literal::Vector<int64_t>(counts)));
  return absl::OkStatus();
}

absl::Status NonMaxSuppression(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Literal boxes, ctx.ConstInput(0));
  ASSIGN_OR_RETURN(Literal scores, ctx.ConstInput(1));
  int64_t max_out = 0;
  double iou_th = 0, score_th = -INFINITY;
  if (ctx.has_input(2)) {
    ASSIGN_OR_RETURN(Literal l, ctx.ConstInput(2));
    max_out = l.GetAsInt64(0);
  }
  if (ctx.has_input(3)) {
    ASSIGN_OR_RETURN(Literal l, ctx.ConstInput(3));
    iou_th = l.GetAsDouble(0);
  }
  if (ctx.has_input(4)) {
    ASSIGN_OR_RETURN(Literal l, ctx.ConstInput(4));
    score_th = l.GetAsDouble(0);
  }
  bool center = ctx.attr_i("center_point_box", 0) != 0;
  const auto& bd = boxes.shape().dims;
  const auto& sd = scores.shape().dims;
  if (bd.size() != 3 || bd[2] != 4 || sd.size() != 3 || sd[0] != bd[0] || sd[2] != bd[1])
    return ctx.Error("boxes must be [B, N, 4] and scores [B, C, N]");
  int64_t nb = bd[0], nc = sd[1], n = bd[1];
  // Corners (y1, x1, y2, x2) with y1 <= y2, x1 <= x2, of every box of a
  // batch, computed once (not per pair compared), and the scores as doubles.
  std::vector<double> box_values(boxes.element_count()), score_values(scores.element_count());
  for (int64_t i = 0; i < boxes.element_count(); ++i) box_values[i] = boxes.GetAsDouble(i);
  for (int64_t i = 0; i < scores.element_count(); ++i) score_values[i] = scores.GetAsDouble(i);
  auto corners_of = [&](int64_t bi, int64_t k) {
    const double* p = box_values.data() + (bi * n + k) * 4;
    const double a = p[0], c = p[1], e = p[2], g = p[3];
    if (center) return std::array<double, 4>{c - g / 2, a - e / 2, c + g / 2, a + e / 2};
    return std::array<double, 4>{std::min(a, e), std::min(c, g), std::max(a, e), std::max(c, g)};
  };
  std::vector<std::array<double, 4>> corners(n);
  auto iou = [&](const std::array<double, 4>& p, const std::array<double, 4>& q) {
    double ih = std::max(0.0, std::min(p[2], q[2]) - std::max(p[0], q[0]));
    double iw = std::max(0.0, std::min(p[3], q[3]) - std::max(p[1], q[1]));
    double inter = ih * iw;
    double uni = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter;
    return uni <= 0 ? 0.0 : inter / uni;
  };
  std::vector<int64_t> out;
  for (int64_t bi = 0; bi < nb; ++bi) {
    for (int64_t k = 0; k < n; ++k) corners[k] = corners_of(bi, k);
    for (int64_t c = 0; c < nc; ++c) {
      const double* sc = score_values.data() + (bi * nc + c) * n;
      std::vector<int64_t> cand;
      for (int64_t k = 0; k < n; ++k)
        if (sc[k] > score_th) cand.push_back(k);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
      std::vector<int64_t> kept;
      // The kept boxes' corners side by side, so that a block of them is
      // tested for any overlap at all in a few vector instructions: a box
      // that overlaps none of a block has IoU 0 with each, which suppresses
      // nothing when the threshold is >= 0. Detectors keep thousands of
      // boxes that mostly do not overlap (torchvision's batched NMS moves
      // each class to its own region), so the exact IoU is rarely needed.
      std::array<std::vector<double>, 4> side;
      for (int64_t k : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const std::array<double, 4>& p = corners[k];
        bool keep = true;
        const size_t m = kept.size();
        for (size_t j0 = 0; j0 < m && keep; j0 += 16) {
          const size_t j1 = std::min(m, j0 + 16);
          bool any = iou_th < 0;  // then every box suppresses, overlapping or not
          for (size_t j = j0; j < j1; ++j)
            any |= (std::min(p[2], side[2][j]) > std::max(p[0], side[0][j])) &
                   (std::min(p[3], side[3][j]) > std::max(p[1], side[1][j]));
          // Suppressed by a kept box it overlaps past the threshold.
          for (size_t j = j0; any && j < j1 && keep; ++j) keep = iou(p, corners[kept[j]]) <= iou_th;
        }
        if (!keep) continue;
        kept.push_back(k);
        for (int d = 0; d < 4; ++d) side[d].push_back(p[d]);
      }
      for (int64_t k : kept) out.insert(out.end(), {bi, c, k});
    }
  }
  Literal sel(hlo::Shape(hlo::S64, {static_cast<int64_t>(out.size() / 3), 3}));
  std::copy(out.begin(), out.end(), sel.data<int64_t>());
  ctx.set_output(0, ctx.b().Constant(std::move(sel)));
  return absl::OkStatus();
}

}  // namespace

void RegisterDataDependentOps(Registry& r) {
  // Their output shapes depend on the data in `value_inputs`: with runtime
  // values there they run on the host between programs; with known ones
  // they fold.
  auto host_op = [&r](const char* op, Converter fn, int64_t since, std::vector<int> value_inputs) {
    ConverterEntry& e = r.Add(op, fn, since);
    e.value_inputs = std::move(value_inputs);
    e.host_when_runtime = true;
  };
  host_op("NonZero", NonZero, 9, {0});
  host_op("Unique", Unique, 11, {0});
  host_op("Compress", Compress, 9, {1});  // a known condition is a gather of the data
  host_op("NonMaxSuppression", NonMaxSuppression, 10, {0, 1, 2, 3, 4});
}

}  // namespace xonnx::onnx_import
