#include "passes/scale_folding.h"

#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "hlo/rewrite.h"

namespace xonnx::passes {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// The per-feature values of `v`, a broadcast of a vector of `n` f32
// constants onto dim `feature` of its result, or nullopt. A scalar scale
// stays: it is often part of an activation the product's epilogue takes
// as a whole (a hard sigmoid's 0.2 y + 0.5).
std::optional<std::vector<float>> FeatureValues(const Instruction* v, int64_t feature, int64_t n) {
  if (v->opcode() != Opcode::kBroadcast || v->shape().element_type != hlo::F32) return std::nullopt;
  const Instruction* c = v->operand(0);
  if (c->opcode() != Opcode::kConstant) return std::nullopt;
  const hlo::Literal& l = *c->literal;
  if (c->shape().rank() != 1 || l.element_count() != n || v->dimensions != std::vector<int64_t>{feature})
    return std::nullopt;
  return std::vector<float>(l.data<float>(), l.data<float>() + n);
}

// The dim of `p`'s result that holds its output features, and the dim of
// its weights (operand 1, a constant) that does: a dot of rank-2 weights
// with no batch dims (its columns come last), or a convolution.
std::optional<std::pair<int64_t, int64_t>> FeatureDims(const Instruction* p) {
  if ((p->opcode() != Opcode::kDot && p->opcode() != Opcode::kConvolution) || p->shape().element_type != hlo::F32 ||
      p->operand(1)->opcode() != Opcode::kConstant)
    return std::nullopt;
  if (p->opcode() == Opcode::kDot) {
    const auto& d = p->dot_dnums;
    if (p->operand(1)->shape().rank() != 2 || !d.rhs_batch_dimensions.empty() ||
        d.rhs_contracting_dimensions.size() != 1)
      return std::nullopt;
    return std::make_pair(p->shape().rank() - 1, 1 - d.rhs_contracting_dimensions[0]);
  }
  if (p->opcode() == Opcode::kConvolution && p->batch_group_count == 1)
    return std::make_pair(p->conv_dnums.output_feature_dimension, p->conv_dnums.kernel_output_feature_dimension);
  return std::nullopt;
}

// The weights with every slice along `dim` multiplied by its scale.
hlo::Literal ScaledWeights(const hlo::Literal& w, int64_t dim, const std::vector<float>& g) {
  hlo::Literal out = w.Convert(hlo::F32);
  const auto& dims = w.shape().dims;
  int64_t inner = 1;
  for (size_t d = dim + 1; d < dims.size(); ++d) inner *= dims[d];
  float* data = out.data<float>();
  for (int64_t i = 0; i < out.element_count(); ++i) data[i] *= g[(i / inner) % dims[dim]];
  return out;
}

}  // namespace

absl::StatusOr<bool> ScaleFolding::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    // Asked anew each time: a fold gives the product's value the
    // multiply's readers (two scales of one product, read by two paths,
    // must not both go into its weights).
    auto single_use = [&](const Instruction* i) { return c->SingleUse(i); };
    bool local = false;
    std::vector<Instruction*> multiplies;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kMultiply && i->shape().element_type == hlo::F32) multiplies.push_back(i.get());
    for (Instruction* m : multiplies) {
      for (int side = 0; side < 2; ++side) {
        Instruction* value = m->operand(1 - side);
        int64_t rank = m->shape().rank();
        // value = [add(y, bias)] over reshapes of the product.
        Instruction* bias_broadcast = nullptr;
        Instruction* y = value;
        if (y->opcode() == Opcode::kAdd && single_use(y)) {
          for (int k = 0; k < 2; ++k)
            if (y->operand(k)->opcode() == Opcode::kBroadcast) {
              bias_broadcast = y->operand(k);
              y = y->operand(1 - k);
              break;
            }
          if (!bias_broadcast) continue;
        }
        Instruction* p = y;
        while (p->opcode() == Opcode::kReshape && single_use(p)) p = p->operand(0);
        auto dims = FeatureDims(p);
        if (!dims || !single_use(p)) continue;
        auto [feature, weight_dim] = *dims;
        int64_t n = p->shape().dims[feature];
        // Reshapes keep the features only where they stay the last dim.
        if (y != p && (feature != p->shape().rank() - 1 || m->shape().dims.back() != n)) continue;
        int64_t at = y != p ? rank - 1 : feature;
        auto g = FeatureValues(m->operand(side), at, n);
        if (!g || !single_use(value)) continue;
        std::optional<std::vector<float>> b;
        if (bias_broadcast && !(b = FeatureValues(bias_broadcast, at, n))) continue;
        if (p->operand(1)->shape().dims[weight_dim] != n) continue;
        Instruction* w = hlo::AddConstant(c.get(), ScaledWeights(*p->operand(1)->literal, weight_dim, *g));
        p->ReplaceOperand(1, w);
        if (b) {
          for (int64_t k = 0; k < n; ++k) (*b)[k] *= (*g)[k];
          Instruction* bc = hlo::AddConstant(c.get(), hlo::Literal::Vector(*b));
          Instruction* bb = hlo::AddBroadcast(c.get(), bc, m->shape().dims, {at}, bias_broadcast);
          value->ReplaceOperand(value->operand(0) == bias_broadcast ? 0 : 1, bb);
        }
        c->ReplaceAllUsesWith(m, value);
        local = true;
        break;
      }
    }
    if (local) c->Canonicalize();
    changed |= local;
  }
  return changed;
}

}  // namespace xonnx::passes
