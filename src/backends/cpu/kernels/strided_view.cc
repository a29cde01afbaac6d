#include "backends/cpu/kernels/strided_view.h"

namespace xonnx::cpu {

namespace {

// Size-1 dims are never stepped along, so their stride is free; they get
// the row-major one (the next dim's extent), which oneDNN accepts.
void NormalizeUnitStrides(StridedView* v) {
  int64_t next = 1;
  for (size_t k = v->dims.size(); k-- > 0;) {
    if (v->dims[k] == 1) v->strides[k] = next;
    next = v->strides[k] * v->dims[k];
  }
}

}  // namespace

StridedView StridedView::RowMajor(std::vector<int64_t> dims) {
  StridedView v;
  v.strides.resize(dims.size());
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    v.strides[k] = s;
    s *= dims[k];
  }
  v.dims = std::move(dims);
  return v;
}

std::optional<StridedView> Reshape(const StridedView& v, const std::vector<int64_t>& dims) {
  // Match groups of old dims against groups of new dims with equal
  // products, ignoring size-1 dims on both sides.
  std::vector<int64_t> od, os, nd;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (v.dims[k] == 0) return std::nullopt;
    if (v.dims[k] != 1) {
      od.push_back(v.dims[k]);
      os.push_back(v.strides[k]);
    }
  }
  for (int64_t d : dims)
    if (d != 1) nd.push_back(d);
  std::vector<int64_t> ns(nd.size());
  size_t oi = 0, ni = 0;
  while (oi < od.size() && ni < nd.size()) {
    size_t oj = oi + 1, nj = ni + 1;
    int64_t op = od[oi], np = nd[ni];
    while (op != np) {
      if (op < np) {
        if (oj == od.size()) return std::nullopt;
        op *= od[oj++];
      } else {
        if (nj == nd.size()) return std::nullopt;
        np *= nd[nj++];
      }
    }
    // The old dims of the group must nest (each one's stride the next one's
    // extent); the new dims then split that one run.
    for (size_t k = oi; k + 1 < oj; ++k)
      if (os[k] != od[k + 1] * os[k + 1]) return std::nullopt;
    ns[nj - 1] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) ns[k - 1] = ns[k] * nd[k];
    oi = oj;
    ni = nj;
  }
  if (oi != od.size() || ni != nd.size()) return std::nullopt;  // element counts differ
  StridedView out;
  out.dims = dims;
  out.offset = v.offset;
  out.strides.assign(dims.size(), 0);
  for (size_t k = 0, q = 0; k < dims.size(); ++k)
    if (dims[k] != 1) out.strides[k] = ns[q++];
  NormalizeUnitStrides(&out);
  return out;
}

std::optional<StridedView> Apply(const hlo::Instruction& instr, const StridedView& operand) {
  switch (instr.opcode()) {
    case hlo::Opcode::kReshape:
      return Reshape(operand, instr.shape().dims);
    case hlo::Opcode::kTranspose: {
      StridedView v;
      v.offset = operand.offset;
      for (int64_t d : instr.dimensions) {
        v.dims.push_back(operand.dims[d]);
        v.strides.push_back(operand.strides[d]);
      }
      NormalizeUnitStrides(&v);
      return v;
    }
    case hlo::Opcode::kSlice: {
      StridedView v;
      v.offset = operand.offset;
      for (size_t k = 0; k < operand.dims.size(); ++k) {
        v.offset += instr.slice_starts[k] * operand.strides[k];
        v.strides.push_back(operand.strides[k] * instr.slice_strides[k]);
      }
      v.dims = instr.shape().dims;
      NormalizeUnitStrides(&v);
      return v;
    }
    case hlo::Opcode::kBroadcast: {
      // An added dim repeats the same elements: stride 0.
      StridedView v;
      v.offset = operand.offset;
      v.dims = instr.shape().dims;
      v.strides.assign(v.dims.size(), 0);
      for (size_t k = 0; k < instr.dimensions.size(); ++k) v.strides[instr.dimensions[k]] = operand.strides[k];
      return v;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace xonnx::cpu
