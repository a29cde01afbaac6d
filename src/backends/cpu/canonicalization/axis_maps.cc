#include "backends/cpu/canonicalization/axis_maps.h"

#include <memory>
#include <numeric>
#include <vector>

#include "backends/cpu/runtime/thunks.h"
#include "hlo/rewrite.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

Instruction* AddAxisMap(hlo::Computation* c, Instruction* weights, int64_t out, Instruction* x, int64_t axis,
                        const Instruction* like) {
  const std::vector<int64_t>& dims = x->shape().dims;
  const int64_t in = dims[axis];
  if (weights->shape().dims != std::vector<int64_t>{out, in}) weights = hlo::AddReshape(c, weights, {out, in}, like);
  std::vector<int64_t> lhs_dims(dims.begin(), dims.begin() + axis);
  lhs_dims.push_back(out);
  lhs_dims.push_back(in);
  Instruction* lhs = weights;
  if (axis > 0) lhs = hlo::AddBroadcast(c, weights, lhs_dims, {axis, axis + 1}, like);
  std::vector<int64_t> y_dims = dims;
  y_dims[axis] = out;
  auto dot = std::make_unique<Instruction>(Opcode::kDot, hlo::Shape(hlo::F32, y_dims));
  dot->AppendOperand(lhs);
  dot->AppendOperand(x);
  dot->metadata = like->metadata;
  auto& d = dot->dot_dnums;
  d.lhs_batch_dimensions.resize(axis);
  std::iota(d.lhs_batch_dimensions.begin(), d.lhs_batch_dimensions.end(), 0);
  d.rhs_batch_dimensions = d.lhs_batch_dimensions;
  d.lhs_contracting_dimensions = {axis + 1};
  d.rhs_contracting_dimensions = {axis};
  return c->AddInstruction(std::move(dot));
}

Instruction* AxisMapWeights(const Instruction& dot) {
  Instruction* w = dot.operand(0);
  return w->opcode() == Opcode::kBroadcast ? w->operand(0) : w;
}

namespace {

// The [out, in] weights of an old-form sparse product dot(x, W): W itself
// when its rows are the outputs, else a transposed copy of its constant.
Instruction* RowsByOutput(hlo::Computation* c, Instruction* w, int64_t rc, const Instruction* like) {
  if (rc == 1) return w;
  const Instruction* k = w;
  while (k->opcode() == Opcode::kReshape) k = k->operand(0);
  const int64_t in = w->shape().dims[0], out = w->shape().dims[1];
  hlo::Literal t(hlo::Shape(hlo::F32, {out, in}));
  const float* src = k->literal->data<float>();
  float* dst = t.data<float>();
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) dst[o * in + i] = src[i * out + o];
  Instruction* r = hlo::AddConstant(c, std::move(t));
  r->metadata = like->metadata;
  return r;
}

}  // namespace

absl::StatusOr<bool> AxisMaps::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    std::vector<Instruction*> dots;
    for (const auto& i : c->instructions()) {
      if (i->opcode() != Opcode::kDot || SparseDotInPlace(*i)) continue;
      // Along the last axis the in-place form is the same product, and
      // with fewer than 8 inputs a dense one (SparseDotTakes); along
      // another it also saves the transposes.
      const bool last = i->dot_dnums.lhs_contracting_dimensions.size() == 1 &&
                        i->dot_dnums.lhs_contracting_dimensions[0] == i->operand(0)->shape().rank() - 1;
      if (last ? SparseDotTakes(*i) : SparseDotTakesInPlace(*i)) dots.push_back(i.get());
    }
    for (Instruction* dot : dots) {
      Instruction* x = dot->operand(0);
      const int64_t axis = dot->dot_dnums.lhs_contracting_dimensions[0];
      const int64_t rc = dot->dot_dnums.rhs_contracting_dimensions[0];
      const int64_t out = dot->operand(1)->shape().dims[1 - rc];
      Instruction* y = AddAxisMap(c.get(), RowsByOutput(c.get(), dot->operand(1), rc, dot), out, x, axis, dot);
      // The dot's order: x's other dims in order, then the new axis.
      const int64_t r = x->shape().rank();
      std::vector<int64_t> perm;
      for (int64_t k = 0; k < r; ++k)
        if (k != axis) perm.push_back(k);
      perm.push_back(axis);
      if (axis != r - 1) y = hlo::AddTranspose(c.get(), y, perm, dot);
      c->ReplaceAllUsesWith(dot, y);
      changed = true;
    }
    if (!dots.empty()) c->Canonicalize();
  }
  return changed;
}

}  // namespace xonnx::cpu
