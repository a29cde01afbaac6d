#include "backends/cpu/canonicalization/wide_integer_weights.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/planning/planners.h"
#include "backends/cpu/runtime/thunks.h"
#include "hlo/rewrite.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Where a product's weights keep their output features: a convolution's
// kernel output feature dim, a dot's single free rhs dim; and where the
// result does. Nullopt for other dots.
std::optional<std::pair<int64_t, int64_t>> FeatureDims(const Instruction* p) {
  if (p->opcode() == Opcode::kConvolution)
    return std::make_pair(p->conv_dnums.kernel_output_feature_dimension, p->conv_dnums.output_feature_dimension);
  const auto& d = p->dot_dnums;
  int64_t rank = p->operand(1)->shape().rank();
  std::vector<int64_t> free;
  for (int64_t k = 0; k < rank; ++k)
    if (std::find(d.rhs_contracting_dimensions.begin(), d.rhs_contracting_dimensions.end(), k) ==
            d.rhs_contracting_dimensions.end() &&
        std::find(d.rhs_batch_dimensions.begin(), d.rhs_batch_dimensions.end(), k) == d.rhs_batch_dimensions.end())
      free.push_back(k);
  if (free.size() != 1) return std::nullopt;
  return std::make_pair(free[0], p->shape().rank() - 1);
}

class Splitter {
 public:
  explicit Splitter(hlo::Computation* c) : c_(c) {}

  // The replacement of product p, or null when its weights already fit
  // (or are not constant, or span more than the 8-bit range per feature).
  Instruction* Split(Instruction* p) {
    if (p->shape().element_type != hlo::S32 || !DnnlIntegerProductEligible(*p)) return nullptr;
    auto dims = FeatureDims(p);
    if (!dims) return nullptr;
    auto [w_axis, out_axis] = *dims;
    std::optional<hlo::Literal> w = ConstantValue(p->operand(1));
    if (!w) return nullptr;
    const auto [lo, hi] = ExactWeightRange();
    const std::vector<int64_t>& wd = w->shape().dims;
    int64_t features = wd[w_axis], inner = 1;
    for (size_t k = w_axis + 1; k < wd.size(); ++k) inner *= wd[k];
    const int32_t* v = w->data<int32_t>();
    std::vector<int64_t> fmin(features, INT64_MAX), fmax(features, INT64_MIN);
    bool fits = true;
    for (int64_t i = 0; i < w->element_count(); ++i) {
      int64_t f = (i / inner) % features;
      fmin[f] = std::min<int64_t>(fmin[f], v[i]);
      fmax[f] = std::max<int64_t>(fmax[f], v[i]);
      fits &= v[i] >= lo && v[i] <= hi;
    }
    if (fits) return nullptr;
    // The shift per feature: its smallest weight goes to lo.
    hlo::Literal shift(hlo::Shape(hlo::S32, {features}));
    for (int64_t f = 0; f < features; ++f) {
      if (fmax[f] - fmin[f] > hi - lo) return nullptr;
      shift.data<int32_t>()[f] = static_cast<int32_t>(fmin[f] - lo);
    }
    hlo::Literal shifted(w->shape());
    for (int64_t i = 0; i < w->element_count(); ++i)
      shifted.data<int32_t>()[i] = v[i] - shift.data<int32_t>()[(i / inner) % features];
    // The window sums: the same product with one output feature of ones
    // per group (a group's features all read its inputs).
    const int64_t groups = p->opcode() == Opcode::kConvolution ? p->feature_group_count : 1;
    std::vector<int64_t> ones_dims = wd;
    ones_dims[w_axis] = groups;
    hlo::Literal ones(hlo::Shape(hlo::S32, ones_dims));
    std::fill(ones.data<int32_t>(), ones.data<int32_t>() + ones.element_count(), 1);
    const std::vector<int64_t>& out = p->shape().dims;
    std::vector<int64_t> sums_dims = out;
    sums_dims[out_axis] = groups;

    Instruction* main =
        hlo::AddCopyOf(c_, *p, {nullptr, hlo::AddConstant(c_, std::move(shifted))}, hlo::Shape(hlo::S32, out));
    Instruction* sums =
        hlo::AddCopyOf(c_, *p, {nullptr, hlo::AddConstant(c_, std::move(ones))}, hlo::Shape(hlo::S32, sums_dims));
    // Each group's sums spread over its features (numbered group by group).
    // One feature per group (depthwise): as they are. One group: without
    // the unit dim, broadcast, which fused loops read in place. Otherwise
    // [.., G, ..] -> [.., G, F/G, ..] -> [.., F, ..].
    Instruction* spread = sums;
    if (groups == 1) {
      std::vector<int64_t> flat, map;
      for (int64_t k = 0; k < static_cast<int64_t>(out.size()); ++k)
        if (k != out_axis) {
          flat.push_back(out[k]);
          map.push_back(k);
        }
      spread = hlo::AddBroadcast(c_, hlo::AddReshape(c_, sums, flat, p), out, map, p);
    } else if (out[out_axis] != groups) {
      std::vector<int64_t> split = sums_dims, map;
      split.insert(split.begin() + out_axis + 1, out[out_axis] / groups);
      for (int64_t k = 0; k < static_cast<int64_t>(split.size()); ++k)
        if (k != out_axis + 1) map.push_back(k);
      spread = hlo::AddReshape(c_, hlo::AddBroadcast(c_, sums, split, map, p), out, p);
    }
    Instruction* shifts = hlo::AddBroadcast(c_, hlo::AddConstant(c_, std::move(shift)), out, {out_axis}, p);
    return hlo::AddBinary(c_, Opcode::kAdd, main, hlo::AddBinary(c_, Opcode::kMultiply, spread, shifts, p), p);
  }

 private:
  hlo::Computation* c_;
};

}  // namespace

absl::StatusOr<bool> SplitWideIntegerWeights::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    Splitter splitter(c.get());
    changed |= hlo::ReplaceEach(c.get(), {Opcode::kConvolution, Opcode::kDot},
                                [&](Instruction* p) { return splitter.Split(p); });
  }
  return changed;
}

}  // namespace xonnx::cpu
