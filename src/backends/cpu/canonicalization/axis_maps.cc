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
  if (weights->shape().ElementCount() != out * in) return nullptr;
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
  const Instruction* m = SparseDotInPlaceMatrix(dot);
  if (!m) return nullptr;
  // The matrix is the dot's operand or the broadcast's: one of its own.
  Instruction* lhs = dot.operand(0);
  return lhs == m ? lhs : lhs->operand(0);
}

namespace {

// The [out, in] weights of an old-form sparse product dot(x, W): W itself
// when its rows are the outputs, else a transposed copy of its constant.
Instruction* RowsByOutput(hlo::Computation* c, Instruction* w, int64_t rc, const Instruction* like) {
  if (rc == 1) return w;
  const Instruction* k = SparseWeightsConstant(w);
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

// The transpose of the dot's [other dims..., out] result that puts the
// new axis back at `axis` (the importer's, after an interpolation).
std::vector<int64_t> PutBack(int64_t rank, int64_t axis) {
  std::vector<int64_t> perm;
  for (int64_t m = 0; m < rank; ++m) perm.push_back(m < axis ? m : m == axis ? rank - 1 : m - 1);
  return perm;
}

// Its inverse: the in-place result's dims in the dot's order (the other
// dims, then the new axis).
std::vector<int64_t> AxisLast(int64_t rank, int64_t axis) {
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < rank; ++k)
    if (k != axis) perm.push_back(k);
  perm.push_back(axis);
  return perm;
}

// Whether the dot goes to the in-place form: where the sparse kernel takes
// it as it is (the same product, the axis last or not), and, with fewer
// inputs than the kernel wants there, where its one user is the transpose
// that puts the axis back, which the form makes vanish (a resize from a
// small map). Not a dense product with a small inner dim that happens to
// have few nonzeros per row: there the form would add a transpose.
bool Converts(const Instruction& dot) {
  if (SparseDotTakes(dot)) return true;
  const auto& lc = dot.dot_dnums.lhs_contracting_dimensions;
  if (lc.size() != 1 || dot.users().size() != 1) return false;
  const Instruction* u = dot.users()[0];
  const int64_t rank = dot.operand(0)->shape().rank();
  return lc[0] != rank - 1 && u->opcode() == Opcode::kTranspose && u->dimensions == PutBack(rank, lc[0]) &&
         SparseDotTakesInPlace(dot);
}

}  // namespace

absl::StatusOr<bool> AxisMaps::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    std::vector<Instruction*> dots;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kDot && !SparseDotInPlace(*i) && Converts(*i)) dots.push_back(i.get());
    for (Instruction* dot : dots) {
      Instruction* x = dot->operand(0);
      const int64_t axis = dot->dot_dnums.lhs_contracting_dimensions[0];
      const int64_t rc = dot->dot_dnums.rhs_contracting_dimensions[0];
      const int64_t out = dot->operand(1)->shape().dims[1 - rc];
      Instruction* y = AddAxisMap(c.get(), RowsByOutput(c.get(), dot->operand(1), rc, dot), out, x, axis, dot);
      if (!y) continue;
      const int64_t r = x->shape().rank();
      if (axis != r - 1) y = hlo::AddTranspose(c.get(), y, AxisLast(r, axis), dot);
      c->ReplaceAllUsesWith(dot, y);
      changed = true;
    }
    if (!dots.empty()) c->Canonicalize();
  }
  return changed;
}

}  // namespace xonnx::cpu
