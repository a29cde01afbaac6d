// Reductions, products and shape operations of traced values.
#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hlo/broadcast.h"
#include "program/trace_state.h"
#include "runtime/dtype.h"

namespace xonnx::program {

using hlo::Instruction;
using hlo::Opcode;
using internal::Record;

namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// `axes` made non-negative, sorted and checked against `rank` (all axes
// when empty).
bool NormalizeAxes(std::vector<int64_t> axes, int64_t rank, std::vector<int64_t>* out) {
  if (axes.empty()) {
    out->resize(rank);
    std::iota(out->begin(), out->end(), 0);
    return true;
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return false;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return false;
  *out = axes;
  return true;
}

Value Reduction(const char* api, Opcode op, const Value& x, const std::vector<int64_t>& axes, bool keepdims,
                bool mean = false) {
  return Record(api, {x}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    Instruction* v = ops[0];
    const hlo::Shape& s = v->shape();
    std::vector<int64_t> dims;
    if (!NormalizeAxes(axes, s.rank(), &dims)) return b.ReportError(Invalid("an axis is out of range or repeated"));
    double init = 0;
    if (op == Opcode::kMaximum) init = -std::numeric_limits<double>::infinity();
    if (op == Opcode::kMinimum) init = std::numeric_limits<double>::infinity();
    if (!hlo::IsFloatingPoint(s.element_type) && op != Opcode::kAdd)
      return b.ReportError(Invalid("needs a floating-point value"));
    Instruction* r = b.Reduce({v}, {b.ScalarConstant(s.element_type, init)}, dims, b.ScalarReducer(op, s.element_type));
    if (mean) {
      int64_t count = 1;
      for (int64_t d : dims) count *= s.dims[d];
      r = b.Binary(Opcode::kDivide, r,
                   b.Broadcast(b.ScalarConstant(s.element_type, static_cast<double>(count)), r->shape().dims, {}));
    }
    if (keepdims) {
      std::vector<int64_t> kept = s.dims;
      for (int64_t d : dims) kept[d] = 1;
      r = b.Reshape(r, kept);
    }
    return r;
  });
}

}  // namespace

Value Sum(const Value& x, const std::vector<int64_t>& axes, bool keepdims) {
  return Reduction("Sum", Opcode::kAdd, x, axes, keepdims);
}
Value Mean(const Value& x, const std::vector<int64_t>& axes, bool keepdims) {
  return Reduction("Mean", Opcode::kAdd, x, axes, keepdims, true);
}
Value Max(const Value& x, const std::vector<int64_t>& axes, bool keepdims) {
  return Reduction("Max", Opcode::kMaximum, x, axes, keepdims);
}
Value Min(const Value& x, const std::vector<int64_t>& axes, bool keepdims) {
  return Reduction("Min", Opcode::kMinimum, x, axes, keepdims);
}

Value LogSoftmax(const Value& x, int64_t axis) {
  // The maximum only keeps exp() in range: the result does not depend on
  // it, so no derivative flows through it.
  Value s = x - StopGradient(Max(x, {axis}, true));
  return s - Log(Sum(Exp(s), {axis}, true));
}

Value Softmax(const Value& x, int64_t axis) { return Exp(LogSoftmax(x, axis)); }

Value MatMul(const Value& a, const Value& b) {
  return Record("MatMul", {a, b}, [&](hlo::Builder& bl, const std::vector<Instruction*>& ops) -> Instruction* {
    Instruction *x = ops[0], *y = ops[1];
    if (x->shape().element_type != y->shape().element_type)
      return bl.ReportError(Invalid("the operands' types differ (Cast one of them)"));
    std::vector<int64_t> xd = x->shape().dims, yd = y->shape().dims;
    if (xd.empty() || yd.empty()) return bl.ReportError(Invalid("scalars have no matrix product (use *)"));
    const bool x_vector = xd.size() == 1, y_vector = yd.size() == 1;
    if (x_vector) xd.insert(xd.begin(), 1);
    if (y_vector) yd.push_back(1);
    if (xd.back() != yd[yd.size() - 2]) return bl.ReportError(Invalid("the contracted dimensions differ"));
    absl::StatusOr<std::vector<int64_t>> leading = hlo::BroadcastDims(std::vector<int64_t>(xd.begin(), xd.end() - 2),
                                                                      std::vector<int64_t>(yd.begin(), yd.end() - 2));
    if (!leading.ok()) return bl.ReportError(Invalid("the leading dimensions do not broadcast"));
    const std::vector<int64_t>& batch = *leading;
    const int64_t nb = batch.size(), m = xd[xd.size() - 2], k = xd.back(), n = yd.back();
    std::vector<int64_t> xs = batch, ys = batch;
    xs.insert(xs.end(), {m, k});
    ys.insert(ys.end(), {k, n});
    x = hlo::BroadcastTo(bl, x_vector ? bl.Reshape(x, xd) : x, xs);
    y = hlo::BroadcastTo(bl, y_vector ? bl.Reshape(y, yd) : y, ys);
    hlo::DotDimensionNumbers d;
    for (int64_t i = 0; i < nb; ++i) {
      d.lhs_batch_dimensions.push_back(i);
      d.rhs_batch_dimensions.push_back(i);
    }
    d.lhs_contracting_dimensions = {nb + 1};
    d.rhs_contracting_dimensions = {nb};
    Instruction* r = bl.Dot(x, y, d);
    std::vector<int64_t> out = batch;
    if (!x_vector) out.push_back(m);
    if (!y_vector) out.push_back(n);
    return r && r->shape().dims != out ? bl.Reshape(r, out) : r;
  });
}

Value Conv2D(const Value& x, const Value& w, const Conv2DOptions& o) {
  return Record("Conv2D", {x, w}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    if (ops[0]->shape().rank() != 4 || ops[1]->shape().rank() != 4)
      return b.ReportError(Invalid("x must be [N, C, H, W] and w [O, C/groups, KH, KW]"));
    if (o.strides.size() != 2 || o.padding.size() != 4 || o.dilations.size() != 2 || o.groups < 1)
      return b.ReportError(Invalid("strides and dilations take 2 values, padding 4, groups at least 1"));
    hlo::Window window;
    for (int k = 0; k < 2; ++k) {
      hlo::WindowDimension wd;
      wd.size = ops[1]->shape().dims[2 + k];
      wd.stride = o.strides[k];
      wd.padding_low = o.padding[2 * k];
      wd.padding_high = o.padding[2 * k + 1];
      wd.window_dilation = o.dilations[k];
      window.dimensions.push_back(wd);
    }
    hlo::ConvolutionDimensionNumbers d;
    d.input_spatial_dimensions = d.kernel_spatial_dimensions = d.output_spatial_dimensions = {2, 3};
    return b.Convolution(ops[0], ops[1], window, d, o.groups);
  });
}

Value AvgPool2D(const Value& x, int64_t k, int64_t stride) {
  Value sum = Record("AvgPool2D", {x}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    if (ops[0]->shape().rank() != 4) return b.ReportError(Invalid("x must be [N, C, H, W]"));
    if (k < 1 || stride < 1) return b.ReportError(Invalid("the window and stride must be positive"));
    hlo::Window window;
    for (int i = 0; i < 4; ++i) {
      hlo::WindowDimension wd;
      wd.size = i < 2 ? 1 : k;
      wd.stride = i < 2 ? 1 : stride;
      window.dimensions.push_back(wd);
    }
    hlo::PrimitiveType t = ops[0]->shape().element_type;
    return b.ReduceWindow(ops[0], b.ScalarConstant(t, 0), window, b.ScalarReducer(Opcode::kAdd, t));
  });
  return sum / static_cast<double>(k * k);
}

Value MaxPool2D(const Value& x, int64_t k, int64_t stride, int64_t pad) {
  return Record("MaxPool2D", {x}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    if (ops[0]->shape().rank() != 4) return b.ReportError(Invalid("x must be [N, C, H, W]"));
    if (k < 1 || stride < 1 || pad < 0 || pad >= k)
      return b.ReportError(Invalid("the window and stride must be positive, the padding below the window"));
    hlo::PrimitiveType t = ops[0]->shape().element_type;
    if (!hlo::IsFloatingPoint(t)) return b.ReportError(Invalid("needs a floating-point value"));
    hlo::Window window;
    for (int i = 0; i < 4; ++i) {
      hlo::WindowDimension wd;
      wd.size = i < 2 ? 1 : k;
      wd.stride = i < 2 ? 1 : stride;
      wd.padding_low = wd.padding_high = i < 2 ? 0 : pad;
      window.dimensions.push_back(wd);
    }
    return b.ReduceWindow(ops[0], b.ScalarConstant(t, -std::numeric_limits<double>::infinity()), window,
                          b.ScalarReducer(Opcode::kMaximum, t));
  });
}

Value Reshape(const Value& x, const std::vector<int64_t>& dims) {
  return Record("Reshape", {x}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    std::vector<int64_t> out = dims;
    int64_t known = 1, free = -1;
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] == -1 && free < 0) {
        free = k;
      } else if (out[k] < 0) {
        return b.ReportError(Invalid("at most one dimension may be -1, and none other negative"));
      } else {
        known *= out[k];
      }
    }
    int64_t total = ops[0]->shape().ElementCount();
    if (free >= 0) {
      if (known == 0 || total % known) return b.ReportError(Invalid("the -1 dimension cannot be found"));
      out[free] = total / known;
    } else if (known != total) {
      return b.ReportError(Invalid(absl::StrCat("the new shape holds ", known, " elements, not ", total)));
    }
    return b.Reshape(ops[0], out);
  });
}

Value Transpose(const Value& x, const std::vector<int64_t>& perm) {
  return Record("Transpose", {x},
                [&](hlo::Builder& b, const std::vector<Instruction*>& ops) { return b.Transpose(ops[0], perm); });
}

Value BroadcastTo(const Value& x, const std::vector<int64_t>& dims) {
  return Record("BroadcastTo", {x}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    absl::StatusOr<std::vector<int64_t>> both = hlo::BroadcastDims(ops[0]->shape().dims, dims);
    if (!both.ok() || *both != dims)
      return b.ReportError(Invalid("the shape does not broadcast to the dimensions asked for"));
    return hlo::BroadcastTo(b, ops[0], dims);
  });
}

Value Slice(const Value& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& limits,
            const std::vector<int64_t>& strides) {
  return Record("Slice", {x}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) {
    std::vector<int64_t> s = strides.empty() ? std::vector<int64_t>(starts.size(), 1) : strides;
    return b.Slice(ops[0], starts, limits, s);
  });
}

Value Concat(const std::vector<Value>& xs, int64_t axis) {
  return Record("Concat", xs, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    if (ops.empty()) return b.ReportError(Invalid("nothing to concatenate"));
    int64_t r = ops[0]->shape().rank();
    if (axis < -r || axis >= r) return b.ReportError(Invalid("the axis is out of range"));
    return b.Concatenate(ops, axis < 0 ? axis + r : axis);
  });
}

Value Take(const Value& x, const Value& indices, int64_t axis) {
  return Record("Take", {x, indices}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    const hlo::Shape& xs = ops[0]->shape();
    Instruction* idx = ops[1];
    const int64_t r = xs.rank(), q = idx->shape().rank();
    if (!hlo::IsInteger(idx->shape().element_type)) return b.ReportError(Invalid("the indices must be integers"));
    if (axis < -r || axis >= r) return b.ReportError(Invalid("the axis is out of range"));
    if (axis < 0) axis += r;
    std::vector<int64_t> idims = idx->shape().dims;
    idims.push_back(1);
    hlo::GatherDimensionNumbers d;
    d.collapsed_slice_dims = {axis};
    d.start_index_map = {axis};
    d.index_vector_dim = q;
    for (int64_t i = 0; i < r; ++i)
      if (i != axis) d.offset_dims.push_back(i < axis ? i : i - 1 + q);
    std::vector<int64_t> sizes = xs.dims;
    sizes[axis] = 1;
    return b.Gather(ops[0], b.Reshape(idx, idims), d, sizes);
  });
}

Value OneHot(const Value& indices, int64_t depth, DataType dtype) {
  return Record("OneHot", {indices}, [&](hlo::Builder& b, const std::vector<Instruction*>& ops) -> Instruction* {
    hlo::PrimitiveType t = ops[0]->shape().element_type;
    if (!hlo::IsInteger(t)) return b.ReportError(Invalid("the indices must be integers"));
    if (depth < 1) return b.ReportError(Invalid("the depth must be positive"));
    std::vector<int64_t> dims = ops[0]->shape().dims;
    std::vector<int64_t> map(dims.size());
    std::iota(map.begin(), map.end(), 0);
    dims.push_back(depth);
    Instruction* hot = b.Compare(b.Broadcast(ops[0], dims, map), b.Iota(hlo::Shape(t, dims), dims.size() - 1),
                                 hlo::ComparisonDirection::kEq);
    return b.Convert(hot, ToHlo(dtype));
  });
}

}  // namespace xonnx::program
