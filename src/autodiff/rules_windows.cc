// Differentiation of windowed reductions (reduce-window): sums, as
// average pooling writes them, and maxima and minima, as max pooling does.
#include <vector>

#include "autodiff/vjp.h"
#include "base/status.h"

namespace xonnx::autodiff {

namespace windows {

using hlo::Instruction;
using hlo::Opcode;
using Ops = std::vector<Instruction*>;

// A windowed sum's cotangent: each input element gets the sum of the
// cotangents of the windows that read it, which is a windowed sum over the
// cotangent padded and dilated as a convolution's input cotangent is (the
// window of ones needs no reversal).
Ops WindowedSum(Graph& g, Instruction& y, Instruction* ct) {
  const Instruction* x = y.operand(0);
  std::vector<int64_t> all(ct->shape().rank());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  // Windows that tile the input (stride = size, no padding or dilation:
  // average pooling): each element is read by one window and gets its
  // cotangent, a broadcast over [out0, size0, out1, size1, ...].
  bool tiles = true;
  std::vector<int64_t> split, map;
  for (int64_t k = 0; k < x->shape().rank(); ++k) {
    const hlo::WindowDimension& f = y.window.dimensions[k];
    tiles = tiles && f.stride == f.size && f.padding_low == 0 && f.padding_high == 0 && f.window_dilation == 1 &&
            f.base_dilation == 1 && x->shape().dims[k] == y.shape().dims[k] * f.size;
    map.push_back(split.size());
    split.insert(split.end(), {y.shape().dims[k], f.size});
  }
  if (tiles) return {g.Reshape(g.Broadcast(ct, split, map), x->shape().dims), g.ReduceSum(ct, all)};
  hlo::Window w;
  for (int64_t k = 0; k < x->shape().rank(); ++k)
    w.dimensions.push_back(TransposedWindow(y.window.dimensions[k], x->shape().dims[k], y.shape().dims[k]));
  hlo::Computation* add = g.Adder(ct->shape().element_type);
  Instruction* zero = g.Full(0, hlo::Shape(ct->shape().element_type, {}));
  Instruction* dx = g.Op(Opcode::kReduceWindow, {ct, zero}, [&](Instruction* i) {
    i->window = w;
    i->AppendCalledComputation(add);
  });
  // The init value is added once per output element and stands in for
  // every padding element and dilation hole a window reads: the same
  // windowed sum over zeros, with 1 as its init, counts those per window.
  Instruction* uses =
      g.Op(Opcode::kReduceWindow, {g.Full(0, x->shape()), g.Full(1, zero->shape())}, [&](Instruction* i) {
        i->window = y.window;
        i->AppendCalledComputation(add);
      });
  return {dx, g.ReduceSum(g.Binary(Opcode::kMultiply, ct, uses), all)};
}

// A windowed maximum's (or minimum's) cotangent goes to the element each
// window chose: the first one equal to the result in the window's order
// (XLA's select-and-scatter convention; ties get nothing twice). For each
// window offset, the elements the windows read there are a strided slice
// of the padded input; those chosen at that offset take the cotangent,
// which a pad with interior holes puts back in place. The init value
// (-inf or +inf for pooling) gets no cotangent.
Ops WindowedExtreme(Graph& g, Instruction& y, Instruction* ct) {
  const Instruction* x = y.operand(0);
  const int64_t r = x->shape().rank();
  const hlo::Shape& ys = y.shape();
  std::vector<hlo::PaddingDimension> in_pad(r);
  std::vector<int64_t> extent(r);
  for (int64_t k = 0; k < r; ++k) {
    const hlo::WindowDimension& f = y.window.dimensions[k];
    if (f.base_dilation != 1 || f.window_reversal)
      return {g.Fail(Unimplemented("autodiff: windowed maxima over a dilated or reversed window"))};
    extent[k] = (ys.dims[k] - 1) * f.stride + (f.size - 1) * f.window_dilation + 1;
    in_pad[k].edge_padding_low = f.padding_low;
    in_pad[k].edge_padding_high = extent[k] - f.padding_low - x->shape().dims[k];
  }
  if (ys.ElementCount() == 0) return {g.Full(0, x->shape()), nullptr};
  Instruction* padded =
      g.Op(Opcode::kPad, {y.operand(0), y.operand(1)}, [&](Instruction* i) { i->padding_config = in_pad; });
  Instruction* zero = g.Full(0, hlo::Shape(ct->shape().element_type, {}));
  Instruction* taken = nullptr;
  Instruction* acc = nullptr;
  std::vector<int64_t> offset(r, 0);
  while (true) {
    std::vector<int64_t> starts(r), limits(r), strides(r);
    std::vector<hlo::PaddingDimension> back(r);
    for (int64_t k = 0; k < r; ++k) {
      const hlo::WindowDimension& f = y.window.dimensions[k];
      starts[k] = offset[k] * f.window_dilation;
      limits[k] = starts[k] + (ys.dims[k] - 1) * f.stride + 1;
      strides[k] = f.stride;
      back[k].edge_padding_low = starts[k];
      back[k].edge_padding_high = extent[k] - limits[k];
      back[k].interior_padding = f.stride - 1;
    }
    Instruction* read = g.Op(Opcode::kSlice, {padded}, [&](Instruction* i) {
      i->slice_starts = starts;
      i->slice_limits = limits;
      i->slice_strides = strides;
    });
    Instruction* hit = g.Op(Opcode::kCompare, {read, &y},
                            [](Instruction* i) { i->comparison_direction = hlo::ComparisonDirection::kEq; });
    if (taken) hit = g.Binary(Opcode::kAnd, hit, g.Unary(Opcode::kNot, taken));
    taken = taken ? g.Binary(Opcode::kOr, taken, hit) : hit;
    Instruction* put =
        g.Op(Opcode::kPad, {g.KeepWhere(hit, ct), zero}, [&](Instruction* i) { i->padding_config = back; });
    acc = acc ? g.Binary(Opcode::kAdd, acc, put) : put;
    int64_t k = r - 1;
    for (; k >= 0; --k) {
      if (++offset[k] < y.window.dimensions[k].size) break;
      offset[k] = 0;
    }
    if (k < 0) break;
  }
  // Back from the padded extent to the input (the first pad undone).
  std::vector<hlo::PaddingDimension> undo(r);
  for (int64_t k = 0; k < r; ++k) {
    undo[k].edge_padding_low = -in_pad[k].edge_padding_low;
    undo[k].edge_padding_high = -in_pad[k].edge_padding_high;
  }
  return {g.Op(Opcode::kPad, {acc, zero}, [&](Instruction* i) { i->padding_config = undo; }), nullptr};
}

}  // namespace windows

hlo::WindowDimension TransposedWindow(const hlo::WindowDimension& f, int64_t in, int64_t out) {
  const int64_t dilated_in = Dilate(in, f.base_dilation), kernel = Dilate(f.size, f.window_dilation);
  hlo::WindowDimension a;
  a.size = f.size;
  a.stride = f.base_dilation;
  a.base_dilation = f.stride;
  a.window_dilation = f.window_dilation;
  a.padding_low = kernel - f.padding_low - 1;
  a.padding_high = dilated_in + kernel - 1 - Dilate(out, f.stride) - a.padding_low;
  return a;
}

std::vector<hlo::Instruction*> ReduceWindowVjp(Graph& g, hlo::Instruction& y, hlo::Instruction* ct) {
  const hlo::Computation* r = y.to_apply();
  const hlo::Instruction* root = r ? r->root() : nullptr;
  if (root && root->opcode() == hlo::Opcode::kAdd) return windows::WindowedSum(g, y, ct);
  if (root && (root->opcode() == hlo::Opcode::kMaximum || root->opcode() == hlo::Opcode::kMinimum))
    return windows::WindowedExtreme(g, y, ct);
  return {
      g.Fail(Unimplemented("autodiff: only windowed sums, maxima and minima (reduce-window with add, maximum or "
                           "minimum) are differentiated"))};
}

}  // namespace xonnx::autodiff
