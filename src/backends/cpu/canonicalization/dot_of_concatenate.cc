#include "backends/cpu/canonicalization/dot_of_concatenate.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/algorithm/container.h"
#include "base/status.h"
#include "hlo/rewrite.h"
#include "hlo/shape_inference.h"
#include "passes/dce.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Concatenations from which the products are split.
constexpr int64_t kMinBytes = 64 << 10;

int64_t IndexOf(const std::vector<int64_t>& v, int64_t x) { return absl::c_find(v, x) - v.begin(); }

// A dot like `dot` (its attributes and metadata) of `a` and `b` with dims
// `d`, of shape `shape`.
Instruction* AddDot(hlo::Computation* c, const Instruction& dot, Instruction* a, Instruction* b,
                    const hlo::DotDimensionNumbers& d, hlo::Shape shape) {
  Instruction* i = hlo::AddCopyOf(c, dot, {a, b}, std::move(shape));
  i->dot_dnums = d;
  return i;
}

// x [start, start + size) along `dim`.
Instruction* AddSliceAlong(hlo::Computation* c, Instruction* x, int64_t dim, int64_t start, int64_t size,
                           const Instruction* like) {
  std::vector<int64_t> dims = x->shape().dims;
  dims[dim] = size;
  auto s = std::make_unique<Instruction>(Opcode::kSlice, hlo::Shape(x->shape().element_type, dims));
  s->slice_starts.assign(dims.size(), 0);
  s->slice_limits = x->shape().dims;
  s->slice_strides.assign(dims.size(), 1);
  s->slice_starts[dim] = start;
  s->slice_limits[dim] = start + size;
  s->AppendOperand(x);
  s->metadata = like->metadata;
  return c->AddInstruction(std::move(s));
}

// `dot` with operand `side` a concatenation (or a transpose of one) split
// into products by its parts, or null.
Instruction* SplitSide(hlo::Computation* c, Instruction* dot, int side) {
  hlo::DotDimensionNumbers d = dot->dot_dnums;
  std::vector<int64_t>& batch = side ? d.rhs_batch_dimensions : d.lhs_batch_dimensions;
  std::vector<int64_t>& contracted = side ? d.rhs_contracting_dimensions : d.lhs_contracting_dimensions;
  Instruction* x = dot->operand(side);
  std::vector<int64_t> free = hlo::DotFreeDims(x->shape().rank(), batch, contracted);
  if (x->opcode() == Opcode::kTranspose && x->operand(0)->opcode() == Opcode::kConcatenate) {
    // Result dim k of the transpose is its operand's dim perm[k].
    const std::vector<int64_t>& perm = x->dimensions;
    for (int64_t& k : batch) k = perm[k];
    for (int64_t& k : contracted) k = perm[k];
    for (int64_t& k : free) k = perm[k];
    if (!absl::c_is_sorted(free)) return nullptr;  // the result's dims would change order
    x = x->operand(0);
  }
  if (x->opcode() != Opcode::kConcatenate || x->operand_count() < 2 || x->shape().ByteSize() < kMinBytes)
    return nullptr;
  const int64_t axis = x->dimensions[0];
  Instruction* other = dot->operand(1 - side);
  const hlo::DotDimensionNumbers& od = dot->dot_dnums;
  if (absl::c_linear_search(free, axis)) {
    // Result dims: batch, lhs free, rhs free.
    const int64_t lhs_free =
        side ? dot->operand(0)->shape().rank() -
                   static_cast<int64_t>(od.lhs_batch_dimensions.size() + od.lhs_contracting_dimensions.size())
             : 0;
    const int64_t out_axis = static_cast<int64_t>(batch.size()) + lhs_free + IndexOf(free, axis);
    std::vector<Instruction*> parts;
    for (Instruction* part : x->operands()) {
      if (part->shape().dims[axis] == 0) continue;
      hlo::Shape s = dot->shape();
      s.dims[out_axis] = part->shape().dims[axis];
      parts.push_back(side ? AddDot(c, *dot, other, part, d, s) : AddDot(c, *dot, part, other, d, s));
    }
    if (parts.size() == 1) return parts[0];
    if (parts.empty()) return nullptr;
    auto cat = std::make_unique<Instruction>(Opcode::kConcatenate, dot->shape());
    cat->dimensions = {out_axis};
    for (Instruction* p : parts) cat->AppendOperand(p);
    cat->metadata = dot->metadata;
    return c->AddInstruction(std::move(cat));
  }
  if (!absl::c_linear_search(contracted, axis)) return nullptr;  // a batch dim
  // The other operand's dim contracted with `axis`.
  const std::vector<int64_t>& other_contracted = side ? od.lhs_contracting_dimensions : od.rhs_contracting_dimensions;
  const int64_t other_dim = other_contracted[IndexOf(contracted, axis)];
  Instruction* sum = nullptr;
  int64_t start = 0;
  for (Instruction* part : x->operands()) {
    const int64_t size = part->shape().dims[axis];
    if (size == 0) continue;
    Instruction* piece = AddSliceAlong(c, other, other_dim, start, size, dot);
    start += size;
    Instruction* p =
        side ? AddDot(c, *dot, piece, part, d, dot->shape()) : AddDot(c, *dot, part, piece, d, dot->shape());
    sum = sum ? hlo::AddBinary(c, Opcode::kAdd, sum, p, dot) : p;
  }
  return sum;
}

}  // namespace

absl::StatusOr<bool> DotOfConcatenate::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations())
    changed |= hlo::ReplaceEach(c.get(), {Opcode::kDot}, [&](Instruction* dot) -> Instruction* {
      if (dot->shape().element_type != hlo::F32 || !dot->shape().IsArray()) return nullptr;
      Instruction* split = SplitSide(c.get(), dot, 1);
      return split ? split : SplitSide(c.get(), dot, 0);
    });
  if (changed) RETURN_IF_ERROR(passes::Dce().Run(module).status());
  return changed;
}

}  // namespace xonnx::cpu
