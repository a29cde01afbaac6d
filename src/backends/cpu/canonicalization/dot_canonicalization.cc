#include "backends/cpu/canonicalization/dot_canonicalization.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "backends/cpu/runtime/thunks.h"
#include "hlo/rewrite.h"
#include "hlo/shape_inference.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

int64_t Product(const hlo::Shape& s, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= s.dims[d];
  return n;
}

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// One operand regrouped: its batch dims, then rows and cols, each group in
// the order given, as [batch, rows, cols] (no batch dim when there are no
// batch dims).
struct Grouping {
  std::vector<int64_t> batch, rows, cols;
  std::vector<int64_t> Perm() const {
    std::vector<int64_t> p = batch;
    p.insert(p.end(), rows.begin(), rows.end());
    p.insert(p.end(), cols.begin(), cols.end());
    return p;
  }
};

// The operand as [batch, rows, cols]: a transpose where its dims are not
// already in the grouping's order, then a reshape.
Instruction* Regroup(hlo::Computation* c, Instruction* x, const Grouping& g) {
  const hlo::Shape& s = x->shape();
  std::vector<int64_t> perm = g.Perm();
  std::vector<int64_t> dims;
  if (!g.batch.empty()) dims.push_back(Product(s, g.batch));
  dims.push_back(Product(s, g.rows));
  dims.push_back(Product(s, g.cols));
  const Instruction* like = x;
  if (!IsIdentity(perm)) x = hlo::AddTranspose(c, x, perm, like);
  return hlo::AddReshape(c, x, dims, like);
}

// The canonical replacement of `dot`, or null when it is fine as it is or
// the rewrite would not reach oneDNN either.
Instruction* Canonical(hlo::Computation* c, Instruction* dot) {
  if (dot->shape().element_type != hlo::F32 || !dot->shape().IsArray() || dot->shape().ElementCount() == 0)
    return nullptr;
  // oneDNN takes it as it is, or the sparse-dot kernel takes it in any form
  // (an interpolation keeps its axis in place: AxisMaps).
  if (DnnlDotColumns(*dot) || SparseDotTakes(*dot)) return nullptr;
  const auto& d = dot->dot_dnums;
  Instruction* a = dot->operand(0);
  Instruction* b = dot->operand(1);
  const hlo::Shape& as = a->shape();
  const hlo::Shape& bs = b->shape();
  if (as.ElementCount() == 0 || bs.ElementCount() == 0) return nullptr;
  const std::vector<int64_t> a_free = hlo::DotFreeDims(as.rank(), d.lhs_batch_dimensions, d.lhs_contracting_dimensions);
  const std::vector<int64_t> b_free = hlo::DotFreeDims(bs.rank(), d.rhs_batch_dimensions, d.rhs_contracting_dimensions);
  // Each operand in whichever orientation needs no transpose, else
  // lhs [m, k] and rhs [k, n].
  Grouping ga{d.lhs_batch_dimensions, a_free, d.lhs_contracting_dimensions};
  Grouping ga_t{d.lhs_batch_dimensions, d.lhs_contracting_dimensions, a_free};
  bool a_transposed = !IsIdentity(ga.Perm()) && IsIdentity(ga_t.Perm());
  Grouping gb{d.rhs_batch_dimensions, d.rhs_contracting_dimensions, b_free};
  Grouping gb_t{d.rhs_batch_dimensions, b_free, d.rhs_contracting_dimensions};
  bool b_transposed = !IsIdentity(gb.Perm()) && IsIdentity(gb_t.Perm());
  int64_t nb = d.lhs_batch_dimensions.empty() ? 0 : 1;
  int64_t m = Product(as, a_free), n = Product(bs, b_free);
  Instruction* a2 = Regroup(c, a, a_transposed ? ga_t : ga);
  Instruction* b2 = Regroup(c, b, b_transposed ? gb_t : gb);
  std::vector<int64_t> out;
  if (nb) out.push_back(Product(as, d.lhs_batch_dimensions));
  out.push_back(m);
  out.push_back(n);
  auto nd = std::make_unique<Instruction>(Opcode::kDot, hlo::Shape(hlo::F32, out));
  nd->AppendOperand(a2);
  nd->AppendOperand(b2);
  nd->metadata = dot->metadata;
  nd->precision = dot->precision;
  nd->frontend_attributes = dot->frontend_attributes;
  if (nb) nd->dot_dnums.lhs_batch_dimensions = nd->dot_dnums.rhs_batch_dimensions = {0};
  nd->dot_dnums.lhs_contracting_dimensions = {nb + (a_transposed ? 0 : 1)};
  nd->dot_dnums.rhs_contracting_dimensions = {nb + (b_transposed ? 1 : 0)};
  Instruction* product = c->AddInstruction(std::move(nd));
  return hlo::AddReshape(c, product, dot->shape().dims, dot);
}

}  // namespace

absl::StatusOr<bool> DotCanonicalization::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    std::vector<Instruction*> dots;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kDot) dots.push_back(i.get());
    bool any = false;
    for (Instruction* dot : dots) {
      if (Instruction* r = Canonical(c.get(), dot)) {
        c->ReplaceAllUsesWith(dot, r);
        any = true;
      }
    }
    if (any) c->Canonicalize();
    changed |= any;
  }
  return changed;
}

}  // namespace xonnx::cpu
