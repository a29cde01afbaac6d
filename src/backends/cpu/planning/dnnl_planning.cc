// oneDNN planning: which users of a convolution or matrix product its
// primitive computes as post-ops, and which dot operands are read through
// views (blocked layouts: blocked_layout_planning.cc).
#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "backends/cpu/onednn/dnnl_primitives.h"
#include "backends/cpu/planning/activation_probe.h"
#include "backends/cpu/planning/planners.h"
#include "backends/cpu/runtime/thunks.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Whether the matrices of a view's batch dims lie inside each other's
// span (a head split of K or V: each row of the projection holds a row of
// every head). oneDNN runs a product over such a view on its generic gemm
// kernel, at about half the speed of its brgemm one; a copy costs a pass
// over the operand. On the Transformer encoder's attention (4 heads of
// 64x64 per sequence) the views paid at batch 1 (16K elements per
// operand: whole model 1.8% faster than with the copies), and the copies
// from batch 2 up (32K: even; 64K: 4% faster; 128K: 7%).
bool BatchesInterleaved(const StridedView& v) {
  size_t r = v.dims.size();
  int64_t span = 0;  // of one matrix, in elements
  for (size_t i = r - 2; i < r; ++i) span = std::max(span, v.strides[i] * v.dims[i]);
  for (size_t i = 0; i + 2 < r; ++i)
    if (v.dims[i] > 1 && v.strides[i] < span) return true;
  return false;
}
constexpr int64_t kMaxInterleavedViewElements = 16384;

// The clamp(y * a + b, 0, 1) of a hard sigmoid (HardSigmoid; HardSwish's
// gate with a = 1/6, b = 1/2) read from `m`, the product y * a, through
// single users: the ops in order, with a and b, or nullopt.
template <typename SingleUser>
std::optional<std::pair<std::vector<Instruction*>, std::pair<float, float>>> MatchHardSigmoid(
    Instruction* y, Instruction* m, const SingleUser& single_user) {
  if (m->opcode() != Opcode::kMultiply) return std::nullopt;
  std::optional<double> a = ScalarValue(m->operand(0) == y ? m->operand(1) : m->operand(0));
  Instruction* add = single_user(m);
  if (!a || !add || add->opcode() != Opcode::kAdd) return std::nullopt;
  std::optional<double> b = ScalarValue(add->operand(0) == m ? add->operand(1) : add->operand(0));
  Instruction* clamp = single_user(add);
  if (!b || !clamp || clamp->opcode() != Opcode::kClamp || clamp->operand(1) != add) return std::nullopt;
  if (ScalarValue(clamp->operand(0)) != 0.0 || ScalarValue(clamp->operand(2)) != 1.0) return std::nullopt;
  return std::make_pair(std::vector<Instruction*>{m, add, clamp},
                        std::make_pair(static_cast<float>(*a), static_cast<float>(*b)));
}

// Matches the activation after `last` (relu, clip, sigmoid, swish, hard
// sigmoid or hard swish by their forms; tanh and GELU by what they
// compute, ProbeActivation) into e; returns the op that ends the epilogue
// then, `last` when none matches.
template <typename SingleUser>
Instruction* MatchActivation(const Plan& plan, Instruction* last, const SingleUser& single_user, Epilogue* e,
                             std::vector<Instruction*>* absorbed) {
  const auto& lu = plan.users(last);
  if (Instruction* act = single_user(last); act && act->opcode() == Opcode::kMultiply) {
    if (auto hs = MatchHardSigmoid(last, act, single_user)) {
      e->activation = Epilogue::kHardSigmoid;
      std::tie(e->lo, e->hi) = hs->second;  // a, b
      absorbed->insert(absorbed->end(), hs->first.begin(), hs->first.end());
      return hs->first.back();
    }
  } else if (lu.size() == 2 && last != plan.root()) {
    // hard swish: y * clamp(y / 6 + 1/2, 0, 1), oneDNN's own form.
    for (int k = 0; k < 2; ++k) {
      Instruction* gate_mul = lu[k];
      Instruction* out = lu[1 - k];
      auto hs = MatchHardSigmoid(last, gate_mul, single_user);
      if (!hs || hs->second != std::make_pair(1.0f / 6, 0.5f) || out->opcode() != Opcode::kMultiply ||
          single_user(hs->first.back()) != out)
        continue;
      if (!((out->operand(0) == last && out->operand(1) == hs->first.back()) ||
            (out->operand(1) == last && out->operand(0) == hs->first.back())))
        continue;
      e->activation = Epilogue::kHardSwish;
      absorbed->insert(absorbed->end(), hs->first.begin(), hs->first.end());
      absorbed->push_back(out);
      return out;
    }
  }
  if (Instruction* act = single_user(last)) {
    if (act->opcode() == Opcode::kMaximum) {
      Instruction* other = act->operand(0) == last ? act->operand(1) : act->operand(0);
      if (other != last && ScalarValue(other) == 0.0) {
        e->activation = Epilogue::kRelu;
        last = act;
        absorbed->push_back(act);
      }
    } else if (act->opcode() == Opcode::kLogistic) {
      e->activation = Epilogue::kSigmoid;
      last = act;
      absorbed->push_back(act);
    } else if (act->opcode() == Opcode::kClamp && act->operand(1) == last) {
      auto lo = ScalarValue(act->operand(0)), hi = ScalarValue(act->operand(2));
      if (lo && hi) {
        e->activation = Epilogue::kClip;
        e->lo = *lo;
        e->hi = *hi;
        last = act;
        absorbed->push_back(act);
      }
    }
  } else if (lu.size() == 2 && last != plan.root()) {
    // swish: y * logistic(y)
    Instruction* sig = lu[0]->opcode() == Opcode::kLogistic ? lu[0] : lu[1];
    Instruction* mul = sig == lu[0] ? lu[1] : lu[0];
    bool is_swish =
        sig->opcode() == Opcode::kLogistic && mul->opcode() == Opcode::kMultiply && plan.users(sig).size() == 1 &&
        plan.users(sig)[0] == mul &&
        ((mul->operand(0) == last && mul->operand(1) == sig) || (mul->operand(1) == last && mul->operand(0) == sig));
    if (is_swish) {
      e->activation = Epilogue::kSwish;
      absorbed->push_back(sig);
      absorbed->push_back(mul);
      last = mul;
    }
  }
  if (e->activation == Epilogue::kNone) {
    auto taken = [&](const Instruction* i) { return plan.epilogues.absorbed.contains(i); };
    if (auto probed = ProbeActivation(plan, last, taken)) {
      e->activation = probed->activation;
      absorbed->insert(absorbed->end(), probed->region.begin(), probed->region.end());
      last = probed->region.back();
    }
  }
  return last;
}

// Operands only the absorbed ops read (the bias broadcast, the relu zero)
// are never computed; the bias and residual the primitive reads itself
// still are.
void MarkUnused(Plan* plan) {
  Instruction* root = plan->root();
  auto& epilogues = plan->epilogues;
  absl::flat_hash_set<const Instruction*> read_by_epilogue;
  for (const auto& [op, e] : epilogues.of) {
    if (e.bias) read_by_epilogue.insert(e.bias);
    if (e.residual) read_by_epilogue.insert(e.residual);
  }
  for (Instruction* i : plan->order()) {
    const auto& us = plan->users(i);
    if (i == root || us.empty() || epilogues.absorbed.contains(i) || epilogues.of.contains(i) ||
        read_by_epilogue.contains(i))
      continue;
    if (std::all_of(us.begin(), us.end(), [&](Instruction* u) { return epilogues.absorbed.contains(u); }))
      epilogues.unused.insert(i);
  }
}

}  // namespace

std::optional<double> ScalarValue(const Instruction* i) {
  if (i->opcode() == Opcode::kBroadcast) i = i->operand(0);
  if (i->opcode() != Opcode::kConstant || i->literal->element_count() != 1) return std::nullopt;
  return i->literal->GetAsDouble(0);
}

// conv -> add(per-channel bias) -> add(residual) -> relu | clamp | swish | sigmoid
// (or the residual added after the activation) becomes one oneDNN convolution with bias and post-ops, and likewise a
// dot with a per-column bias (ONNX MatMul + Add, Gemm) becomes one oneDNN
// matmul. A dot's result may be reshaped on the way to its epilogue (the
// importer flattens MatMul's leading dims): a row-major reshape that keeps
// the column count leaves every element's column, so the bias still
// applies per column and the bytes are the same.
void PlanEpilogues(const CompileOptions& options, Plan* plan) {
  Instruction* root = plan->root();
  auto& epilogues = plan->epilogues;
  for (Instruction* c : plan->order()) {
    std::optional<int64_t> columns;
    if (c->opcode() == Opcode::kConvolution) {
      // Not a transposed convolution: oneDNN 2.6's deconvolution adds a
      // bias and runs post-ops in a reference pass of its own after the
      // product (DCGAN's 1.3 ms deconvolutions took 3-11 ms with them),
      // where a fused loop after it costs a fraction of a millisecond.
      if (!DnnlConvEligible(*c)) continue;
    } else if (c->opcode() == Opcode::kDot) {
      columns = DnnlDotColumns(*c);
      // A product of at most 4 rows by constant weights runs on the gemv
      // kernel, about memory speed, where oneDNN's matmul pays a fixed
      // cost per call (a classifier at batch 1: 1280 x 1000 weights in
      // 0.14-0.16 ms against 0.23); its bias and activation, a few
      // thousand elements, are a fused loop after it.
      // An interpolation matrix's product reads only its nonzeros
      // (sparse-dot), far less than oneDNN's dense product.
      // A product by packed weights reads its operand row-major and adds
      // its bias in a fused loop after it, as the gemv kernel does; so
      // does a product of a few rows by a matrix known at run time
      // (small-dot: a decoder step's attention).
      if (!columns || GemvTakes(*c) || SparseDotTakes(*c) || SmallDotTakes(*c) || plan->packed_products.of.contains(c))
        continue;
    } else {
      continue;
    }
    Epilogue e;
    // The one user of i, unless another epilogue took it.
    auto single_user = [&](Instruction* i) -> Instruction* {
      const auto& us = plan->users(i);
      return us.size() == 1 && i != root && !epilogues.absorbed.contains(us[0]) ? us[0] : nullptr;
    };
    std::vector<Instruction*> absorbed;
    Instruction* last = c;
    // One element per feature (a 1x1 output at batch 1, as in a
    // squeeze-and-excitation block; a one-row product): element i is
    // feature i whatever the shape, so any reshape keeps the features and
    // any operand of the result's shape is a bias of its own bytes.
    int64_t features = columns ? *columns : c->shape().dims[c->conv_dnums.output_feature_dimension];
    bool one_per_feature = c->shape().ElementCount() == features;
    if (columns || one_per_feature) {
      while (Instruction* r = single_user(last)) {
        if (r->opcode() != Opcode::kReshape) break;
        if (!one_per_feature && (r->shape().rank() == 0 || r->shape().dims.back() != *columns)) break;
        absorbed.push_back(r);
        last = r;
      }
    }
    Instruction* value = last;  // the operation's result as its epilogue sees it
    int64_t feature = columns ? value->shape().rank() - 1 : c->conv_dnums.output_feature_dimension;
    if (value != c && one_per_feature) {
      const auto& dims = value->shape().dims;
      feature = std::find(dims.begin(), dims.end(), features) - dims.begin();
    }
    if (Instruction* add = single_user(last); add && add->opcode() == Opcode::kAdd) {
      Instruction* other = add->operand(0) == last ? add->operand(1) : add->operand(0);
      if (other != last && other->opcode() == Opcode::kBroadcast && other->operand(0)->shape().rank() == 1 &&
          other->dimensions == std::vector<int64_t>{feature}) {
        e.bias = other->operand(0);
      } else if (other != last && one_per_feature && other->opcode() != Opcode::kBroadcast &&
                 other->shape().Compatible(value->shape()) && plan->KeptByEpilogues(other)) {
        e.bias = other;
      }
      if (e.bias) {
        last = add;
        absorbed.push_back(add);
      }
    }
    // A residual connection: add(op + bias, r) with r of the same shape,
    // before the activation or, where none was before it, after it.
    auto match_residual = [&]() {
      Instruction* add = single_user(last);
      if (!add || add->opcode() != Opcode::kAdd) return false;
      Instruction* other = add->operand(0) == last ? add->operand(1) : add->operand(0);
      if (other == last || other->opcode() == Opcode::kBroadcast || !other->shape().Compatible(last->shape()) ||
          !plan->KeptByEpilogues(other) || other->opcode() == Opcode::kConvolution)
        return false;
      e.residual = other;
      last = add;
      absorbed.push_back(add);
      return true;
    };
    match_residual();
    const size_t before_activation = absorbed.size();
    Instruction* activation_input = last;
    last = MatchActivation(*plan, last, single_user, &e, &absorbed);
    // oneDNN's Winograd kernels take a ReLU and sums as post-ops, no other
    // activation: a convolution that pays for them leaves its activation to
    // a fused loop after it (ESPCN's tanh: 3.4 ms direct, 1.9 + 0.15 ms so)
    // rather than run direct. A swish the thunk applies itself after the
    // primitive (SwishAfter) stays: in place, it costs less than a loop of
    // its own (YOLO's convolutions, 6-13% slower with the loops).
    if (c->opcode() == Opcode::kConvolution && e.activation != Epilogue::kNone && e.activation != Epilogue::kRelu &&
        !dnnl_support::SwishAfter(e) &&
        DnnlConvRunsWinograd(*c, c->operand(1)->opcode() == Opcode::kConstant, options.winograd)) {
      absorbed.resize(before_activation);
      last = activation_input;
      e.activation = Epilogue::kNone;
    }
    if (!e.residual && e.activation != Epilogue::kNone && match_residual()) e.residual_after_activation = true;
    // Reshapes alone are free already; they join only with real work.
    if (last == value) continue;
    epilogues.of[c] = e;
    epilogues.last[c] = last;
    for (Instruction* x : absorbed) epilogues.absorbed[x] = c;
  }
  MarkUnused(plan);
}

namespace {

// The in-place sparse products' weights are broadcast over the batch
// dims only in form: the kernel reads its taps, made at compile time, so
// the broadcast is a view of the matrix and never made.
void PlanSparseWeightViews(Plan* plan) {
  Instruction* root = plan->root();
  for (Instruction* b : plan->order()) {
    if (b->opcode() != Opcode::kBroadcast || b == root || !plan->Materialized(b) || !plan->Materialized(b->operand(0)))
      continue;
    const auto& us = plan->users(b);
    if (us.empty() || !std::all_of(us.begin(), us.end(), [&](Instruction* u) {
          return u->opcode() == Opcode::kDot && u->operand(0) == b && u->operand(1) != b && SparseDotInPlace(*u) &&
                 SparseDotTakes(*u);
        }))
      continue;
    std::optional<StridedView> v = Apply(*b, StridedView::RowMajor(b->operand(0)->shape().dims));
    if (!v) continue;
    for (Instruction* u : us) plan->dot_views.of[u][0] = PlannedView{b->operand(0), *v};
    plan->dot_views.replaced.insert(b);
  }
}

}  // namespace

// A dot operand made by slices, transposes and reshapes (attention's head
// split: slice the QKV projection, reshape, transpose) is read in place
// through a strided view of the value they start from, so those copies
// are never made. Each op of the chain must have the chain as its only
// user; an op that is not a view (a gathering reshape) stays and the view
// starts after it.
void PlanDotViews(Plan* plan) {
  Instruction* root = plan->root();
  PlanSparseWeightViews(plan);
  auto is_view_op = [&](Instruction* i) {
    Opcode op = i->opcode();
    return (op == Opcode::kSlice || op == Opcode::kTranspose || op == Opcode::kReshape) && i != root &&
           i->shape().element_type == hlo::F32 && plan->users(i).size() == 1 && plan->Materialized(i);
  };
  for (Instruction* d : plan->order()) {
    if (d->opcode() != Opcode::kDot || !DnnlDotColumns(*d) || SparseDotTakes(*d) ||
        plan->packed_products.of.contains(d))
      continue;
    for (int k = 0; k < 2; ++k) {
      std::vector<Instruction*> chain;  // from the operand back
      for (Instruction* x = d->operand(k); is_view_op(x); x = x->operand(0)) chain.push_back(x);
      std::reverse(chain.begin(), chain.end());
      // Follow the chain forward from its start; restart after an op that
      // is not a view.
      size_t first = 0;
      std::optional<StridedView> v;
      for (size_t j = 0; j < chain.size(); ++j) {
        if (!v) v = StridedView::RowMajor(chain[j]->operand(0)->shape().dims);
        v = Apply(*chain[j], *v);
        if (!v) first = j + 1;
      }
      // The small-dot kernel reads a view of any strides and batch dims
      // (a decoder step's probabilities, sliced for the cached and the new
      // slots); oneDNN's matmul only some.
      const bool small = SmallDotTakes(*d);
      if (first == chain.size() || !v || !(small || DnnlDotViewable(*d, *v))) continue;
      if (!small && BatchesInterleaved(*v) && d->operand(k)->shape().ElementCount() > kMaxInterleavedViewElements)
        continue;
      Instruction* source = chain[first]->operand(0);
      if (!source->shape().IsArray() || !plan->Materialized(source)) continue;
      plan->dot_views.of[d][k] = {source, *v};
      for (size_t j = first; j < chain.size(); ++j) plan->dot_views.replaced.insert(chain[j]);
    }
  }
}

}  // namespace xonnx::cpu
