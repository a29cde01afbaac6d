#include "backends/cpu/canonicalization/layout_pass.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "backends/cpu/canonicalization/axis_maps.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/status.h"
#include "hlo/builder.h"
#include "hlo/rewrite.h"
#include "passes/algebraic_simplifier.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/pipeline.h"
#include "passes/scale_folding.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

bool IsNchwConv(const Instruction* c) {
  const auto& d = c->conv_dnums;
  int64_t ns = d.input_spatial_dimensions.size();
  // f32, and s32: the integer products of quantized models, whose 8-bit
  // kernels also want channels last.
  hlo::PrimitiveType t = c->shape().element_type;
  if ((t != hlo::F32 && t != hlo::S32) || ns < 1 || ns > 3 || c->batch_group_count != 1) return false;
  if (d.input_batch_dimension != 0 || d.input_feature_dimension != 1 || d.output_batch_dimension != 0 ||
      d.output_feature_dimension != 1)
    return false;
  for (int64_t i = 0; i < ns; ++i)
    if (d.input_spatial_dimensions[i] != i + 2 || d.output_spatial_dimensions[i] != i + 2) return false;
  // A base-dilated (transposed) convolution runs on oneDNN's deconvolution
  // when its weights are constant; it too is fastest channels-last.
  bool weights_constant = c->operand(1)->opcode() == Opcode::kConstant;
  for (const auto& w : c->window.dimensions)
    if ((w.base_dilation != 1 && (!weights_constant || w.stride != 1)) || w.window_reversal || w.padding_low < 0 ||
        w.padding_high < 0)
      return false;
  return true;
}

}  // namespace

absl::StatusOr<bool> ChannelsLastConvolutions::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    std::vector<Instruction*> convs;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kConvolution && IsNchwConv(i.get())) convs.push_back(i.get());
    for (Instruction* conv : convs) {
      int64_t r = conv->shape().rank();
      std::vector<int64_t> to_last = {0}, to_first = {0, r - 1};
      for (int64_t i = 2; i < r; ++i) to_last.push_back(i);
      to_last.push_back(1);
      for (int64_t i = 1; i < r - 1; ++i) to_first.push_back(i);
      Instruction* x = hlo::AddTranspose(c.get(), conv->operand(0), to_last, conv->operand(0));
      auto nhwc = std::make_unique<Instruction>(*conv);
      nhwc->set_name("");
      nhwc->ReplaceOperand(0, x);
      auto& d = nhwc->conv_dnums;
      d.input_feature_dimension = d.output_feature_dimension = r - 1;
      for (int64_t i = 0; i < r - 2; ++i) d.input_spatial_dimensions[i] = d.output_spatial_dimensions[i] = i + 1;
      std::vector<int64_t> out_dims(r);
      for (int64_t i = 0; i < r; ++i) out_dims[i] = conv->shape().dims[to_last[i]];
      nhwc->set_shape(hlo::Shape(conv->shape().element_type, out_dims));
      Instruction* y = c->AddInstruction(std::move(nhwc));
      Instruction* back = hlo::AddTranspose(c.get(), y, to_first, y);
      c->ReplaceAllUsesWith(conv, back);
      changed = true;
    }
    if (!convs.empty()) c->Canonicalize();
  }
  return changed;
}

namespace {

// reduce(transpose(a, P), dims D) -> transpose(reduce(a, P[D]), Q), where Q
// restores the order of the kept dims.
Instruction* SinkReduce(hlo::Computation* c, Instruction* i, const std::vector<int64_t>& perm) {
  if (i->operand_count() != 2 || i->operand(0)->opcode() != Opcode::kTranspose) return nullptr;
  Instruction* a = i->operand(0)->operand(0);
  int64_t r = perm.size();
  std::vector<bool> reduced(r, false);
  std::vector<int64_t> dims;
  for (int64_t d : i->dimensions) {
    dims.push_back(perm[d]);
    reduced[d] = true;
  }
  std::sort(dims.begin(), dims.end());
  std::vector<int64_t> kept_a;  // a's kept dims, increasing: the new result's order
  for (int64_t k = 0; k < r; ++k)
    if (!std::binary_search(dims.begin(), dims.end(), k)) kept_a.push_back(k);
  std::vector<int64_t> q;  // result dim m of i <- new result dim q[m]
  for (int64_t k = 0; k < r; ++k)
    if (!reduced[k]) q.push_back(std::find(kept_a.begin(), kept_a.end(), perm[k]) - kept_a.begin());
  std::vector<int64_t> new_dims;
  for (int64_t k : kept_a) new_dims.push_back(a->shape().dims[k]);
  auto copy = std::make_unique<Instruction>(*i);
  copy->set_name("");
  copy->ReplaceOperand(0, a);
  copy->dimensions = dims;
  copy->set_shape(hlo::Shape(i->shape().element_type, new_dims));
  Instruction* moved = c->AddInstruction(std::move(copy));
  bool identity = true;
  for (size_t m = 0; m < q.size(); ++m) identity &= q[m] == static_cast<int64_t>(m);
  return identity ? moved : hlo::AddTranspose(c, moved, q, moved);
}

// broadcast(transpose(a, P)) -> transpose(broadcast(a), Q). In the new
// broadcast a's dims keep their order, and each added dim stays right after
// the dim it follows in the result (a nearest upsample's copy dim after the
// width it doubles), so that a reshape merging the two can sink too.
Instruction* SinkBroadcast(hlo::Computation* c, Instruction* i, const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& d = i->dimensions;
  if (!std::is_sorted(d.begin(), d.end())) return nullptr;
  const int64_t r = perm.size(), rank = i->shape().rank();
  std::vector<int64_t> left(rank, -1);  // an added dim's nearest mapped dim on its left
  for (int64_t m = 0, last = -1; m < rank; ++m) {
    if (std::find(d.begin(), d.end(), m) != d.end())
      last = m;
    else
      left[m] = last;
  }
  auto added_after = [&](int64_t mapped, std::vector<int64_t>* order) {
    for (int64_t m = 0; m < rank; ++m)
      if (std::find(d.begin(), d.end(), m) == d.end() && left[m] == mapped) order->push_back(m);
  };
  std::vector<int64_t> order;  // the new result's dims, as dims of i's result
  added_after(-1, &order);
  std::vector<int64_t> mapped_at(r);  // a's dim j -> its dim in the new result
  for (int64_t j = 0; j < r; ++j) {
    int64_t k = std::find(perm.begin(), perm.end(), j) - perm.begin();  // op dim holding a's dim j
    mapped_at[j] = order.size();
    order.push_back(d[k]);
    added_after(d[k], &order);
  }
  std::vector<int64_t> pos(rank), dims(rank);
  for (int64_t n = 0; n < rank; ++n) {
    pos[order[n]] = n;
    dims[n] = i->shape().dims[order[n]];
  }
  auto copy = std::make_unique<Instruction>(*i);
  copy->set_name("");
  copy->ReplaceOperand(0, i->operand(0)->operand(0));
  copy->dimensions = mapped_at;
  copy->set_shape(hlo::Shape(i->shape().element_type, dims));
  Instruction* moved = c->AddInstruction(std::move(copy));
  return hlo::AddTranspose(c, moved, pos, moved);
}

// reshape(transpose(a, P)) -> transpose(reshape(a), Q) for a reshape that
// only merges runs of adjacent dims which P keeps adjacent and in order
// (a nearest upsample's width and copy dims): the runs merge in a's order.
Instruction* SinkReshape(hlo::Computation* c, Instruction* i, const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& from = i->operand(0)->shape().dims;
  const std::vector<int64_t>& to = i->shape().dims;
  const int64_t r = from.size(), rank = to.size();
  std::vector<int64_t> first(rank);  // the op dim each result dim's run starts at
  int64_t k = 0;
  for (int64_t m = 0; m < rank; ++m) {
    first[m] = k;
    int64_t prod = 1;
    do {
      if (k == r) return nullptr;
      prod *= from[k];
      if (k > first[m] && perm[k] != perm[k - 1] + 1) return nullptr;  // the run is not adjacent in a
      ++k;
    } while (prod < to[m]);
    if (prod != to[m]) return nullptr;
  }
  if (k != r) return nullptr;
  std::vector<int64_t> runs(rank);  // result dims in the order of their runs in a
  std::iota(runs.begin(), runs.end(), 0);
  std::sort(runs.begin(), runs.end(), [&](int64_t x, int64_t y) { return perm[first[x]] < perm[first[y]]; });
  std::vector<int64_t> pos(rank), dims(rank);
  for (int64_t n = 0; n < rank; ++n) {
    pos[runs[n]] = n;
    dims[n] = to[runs[n]];
  }
  auto copy = std::make_unique<Instruction>(*i);
  copy->set_name("");
  copy->ReplaceOperand(0, i->operand(0)->operand(0));
  copy->set_shape(hlo::Shape(i->shape().element_type, dims));
  Instruction* moved = c->AddInstruction(std::move(copy));
  return hlo::AddTranspose(c, moved, pos, moved);
}

// dot(W, transpose(x, P)) along axis k (an in-place sparse product) ->
// transpose(dot(W, x) along axis P[k], P): the axis keeps its place, so
// the same permutation comes out.
Instruction* SinkAxisMap(hlo::Computation* c, Instruction* i, const std::vector<int64_t>& perm) {
  const Instruction* t = i->operand(1);
  if (t->opcode() != Opcode::kTranspose || t->dimensions != perm) return nullptr;
  const int64_t axis = i->dot_dnums.rhs_contracting_dimensions[0];
  Instruction* w = AxisMapWeights(*i);
  Instruction* moved = w ? AddAxisMap(c, w, i->shape().dims[axis], t->operand(0), perm[axis], i) : nullptr;
  return moved ? hlo::AddTranspose(c, moved, perm, moved) : nullptr;
}

// The value v with transpose(v, perm) == t, for a transpose t: t's operand
// when t applies `perm`, else one transpose of that operand (the simplifier
// composes the two).
Instruction* Untransposed(hlo::Computation* c, Instruction* t, const std::vector<int64_t>& perm) {
  if (t->dimensions == perm) return t->operand(0);
  std::vector<int64_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[perm[k]] = k;
  return hlo::AddTranspose(c, t, inverse, t);
}

// Rewrites `i` to work on the values under its transposed operands, taken
// out of permutation `perm` (operands transposed otherwise keep one composed
// transpose); returns the replacement or null.
Instruction* Sink(hlo::Computation* c, Instruction* i, const std::vector<int64_t>& perm) {
  int64_t r = perm.size();
  if (i->opcode() == Opcode::kReduce) return SinkReduce(c, i, perm);
  if (i->opcode() == Opcode::kBroadcast) return SinkBroadcast(c, i, perm);
  if (i->opcode() == Opcode::kReshape) return SinkReshape(c, i, perm);
  if (i->opcode() == Opcode::kDot) return SinkAxisMap(c, i, perm);
  // Dims of the untransposed result: i's dim k sits at position perm[k].
  std::vector<int64_t> new_dims(r);
  for (int64_t k = 0; k < r; ++k) new_dims[perm[k]] = i->shape().dims[k];
  auto copy = std::make_unique<Instruction>(*i);
  copy->set_name("");
  copy->set_shape(hlo::Shape(i->shape().element_type, new_dims));
  switch (i->opcode()) {
    case Opcode::kReduceWindow: {
      if (i->operand(0)->opcode() != Opcode::kTranspose || i->operand(0)->dimensions != perm) return nullptr;
      copy->ReplaceOperand(0, i->operand(0)->operand(0));
      for (int64_t k = 0; k < r; ++k) copy->window.dimensions[perm[k]] = i->window.dimensions[k];
      break;
    }
    case Opcode::kPad: {
      if (i->operand(0)->opcode() != Opcode::kTranspose || i->operand(0)->dimensions != perm) return nullptr;
      copy->ReplaceOperand(0, i->operand(0)->operand(0));
      for (int64_t k = 0; k < r; ++k) copy->padding_config[perm[k]] = i->padding_config[k];
      break;
    }
    case Opcode::kConcatenate: {
      for (int64_t k = 0; k < i->operand_count(); ++k) {
        if (i->operand(k)->opcode() != Opcode::kTranspose) return nullptr;
        copy->ReplaceOperand(k, Untransposed(c, i->operand(k), perm));
      }
      copy->dimensions = {perm[i->dimensions[0]]};
      break;
    }
    default: {
      // Elementwise: transposes with `perm` lose it, broadcasts are re-aimed.
      for (int64_t k = 0; k < i->operand_count(); ++k) {
        Instruction* op = i->operand(k);
        if (op->opcode() == Opcode::kTranspose) {
          copy->ReplaceOperand(k, Untransposed(c, op, perm));
        } else if (op->shape().rank() == 0) {
          // Scalar operands (clamp bounds, select predicates) have no layout.
        } else if (op->opcode() == Opcode::kBroadcast) {
          std::vector<int64_t> map;
          for (int64_t d : op->dimensions) map.push_back(perm[d]);
          if (!std::is_sorted(map.begin(), map.end())) return nullptr;
          auto b = std::make_unique<Instruction>(*op);
          b->set_name("");
          b->dimensions = map;
          b->set_shape(hlo::Shape(op->shape().element_type, new_dims));
          copy->ReplaceOperand(k, c->AddInstruction(std::move(b)));
        } else {
          return nullptr;
        }
      }
      break;
    }
  }
  Instruction* moved = c->AddInstruction(std::move(copy));
  return hlo::AddTranspose(c, moved, perm, moved);
}

// The permutation of i's transposed operands, when i is an op that can take
// the transpose to its output.
std::optional<std::vector<int64_t>> SinkablePerm(const Instruction* i) {
  bool elementwise = hlo::IsElementwise(i->opcode()) && i->shape().IsArray();
  bool structural =
      i->opcode() == Opcode::kReduceWindow || i->opcode() == Opcode::kPad || i->opcode() == Opcode::kConcatenate ||
      (i->opcode() == Opcode::kReduce && i->operand_count() == 2) || i->opcode() == Opcode::kBroadcast ||
      i->opcode() == Opcode::kReshape || (i->opcode() == Opcode::kDot && SparseDotInPlace(*i) && SparseDotTakes(*i));
  if (!elementwise && !structural) return std::nullopt;
  std::vector<std::vector<int64_t>> perms;  // of the transposed operands, each once
  for (const Instruction* op : i->operands())
    if (op->opcode() == Opcode::kTranspose && std::find(perms.begin(), perms.end(), op->dimensions) == perms.end())
      perms.push_back(op->dimensions);
  if (perms.empty()) return std::nullopt;
  std::optional<std::vector<int64_t>> perm = perms[0];
  if (perms.size() > 1) {
    // Operands transposed in different ways (a channels-last activation
    // brought back to channels-first beside a resize's own transposes, both
    // concatenated): sinking one permutation leaves the others one composed
    // transpose each, so it only pays when the result's one user undoes
    // that permutation (a channels-last convolution reading the concat).
    if (!elementwise && i->opcode() != Opcode::kConcatenate) return std::nullopt;
    if (i->users().size() != 1 || i->users()[0]->opcode() != Opcode::kTranspose) return std::nullopt;
    const std::vector<int64_t>& after = i->users()[0]->dimensions;
    perm.reset();
    for (const auto& p : perms) {
      bool undone = true;
      for (size_t k = 0; k < p.size(); ++k) undone &= p[after[k]] == static_cast<int64_t>(k);
      if (undone) perm = p;
    }
    if (!perm) return std::nullopt;
  }
  if (elementwise)
    for (const Instruction* op : i->operands())
      if (op->shape().rank() != i->shape().rank() && op->shape().rank() != 0) return std::nullopt;
  return perm;
}

}  // namespace

absl::StatusOr<bool> TransposeSinking::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    std::vector<Instruction*> order;
    for (const auto& i : c->instructions()) order.push_back(i.get());
    bool local = false;
    for (Instruction* i : order) {
      if (i == c->root()) continue;
      std::optional<std::vector<int64_t>> perm = SinkablePerm(i);
      if (!perm) continue;
      Instruction* r = Sink(c.get(), i, *perm);
      if (!r) continue;
      c->ReplaceAllUsesWith(i, r);
      local = true;
    }
    if (local) c->Canonicalize();
    changed |= local;
  }
  return changed;
}

namespace {

// Whether `op` is a scalar or a broadcast scalar: an operand with no layout.
bool LayoutFree(const Instruction* op) {
  return op->shape().rank() == 0 || (op->opcode() == Opcode::kBroadcast && op->operand(0)->shape().rank() == 0);
}

// Whether `op` is a broadcast of a vector along its last dim (a bias or a
// scale per output feature of a product).
bool LastDimVector(const Instruction* op) {
  return op->opcode() == Opcode::kBroadcast && op->operand(0)->shape().rank() == 1 && op->shape().rank() > 0 &&
         op->dimensions == std::vector<int64_t>{op->shape().rank() - 1};
}

// An elementwise chain above a transpose or reshape: each op with the index
// of its one data operand, the view's side first.
using Chain = std::vector<std::pair<Instruction*, int>>;

// The chain above `view`: ops each read only by the next (the first by the
// view), walked along the one operand that is not layout-free (nor, with
// `last_dim_vectors`, a vector along the last dim).
Chain ChainAbove(const hlo::Computation& c, const Instruction* view, bool last_dim_vectors) {
  Chain chain;
  for (Instruction* y = view->operand(0); c.SingleUse(y) && hlo::IsElementwise(y->opcode()) && y->shape().IsArray();) {
    int data = -1;
    for (int k = 0; k < y->operand_count() && data != -2; ++k) {
      const Instruction* op = y->operand(k);
      if (!LayoutFree(op) && !(last_dim_vectors && LastDimVector(op))) data = data == -1 ? k : -2;
    }
    if (data < 0) break;
    chain.emplace_back(y, data);
    y = y->operand(data);
  }
  return chain;
}

// Rebuilds chain[0, count) over `x`, a value of `dims`, from the top down:
// scalar operands kept, splats and last-dim vectors broadcast to `dims`.
Instruction* RebuildChain(hlo::Computation* c, const Chain& chain, size_t count, Instruction* x,
                          const std::vector<int64_t>& dims) {
  for (size_t k = count; k-- > 0;) {
    auto [y, data] = chain[k];
    std::vector<Instruction*> ops(y->operand_count(), nullptr);  // null: kept
    ops[data] = x;
    for (int j = 0; j < y->operand_count(); ++j) {
      const Instruction* op = y->operand(j);
      if (j == data || op->shape().rank() == 0) continue;
      std::vector<int64_t> along;
      if (LastDimVector(op)) along = {static_cast<int64_t>(dims.size()) - 1};
      ops[j] = hlo::AddBroadcast(c, op->operand(0), dims, along, op);
    }
    x = hlo::AddCopyOf(c, *y, ops, hlo::Shape(y->shape().element_type, dims));
  }
  return x;
}

}  // namespace

absl::StatusOr<bool> TransposeNarrowing::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    std::vector<Instruction*> transposes;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kTranspose) transposes.push_back(i.get());
    bool local = false;
    for (Instruction* t : transposes) {
      const Chain chain = ChainAbove(*c, t, /*last_dim_vectors=*/false);
      size_t keep = 0;  // ops of the chain above the narrowest value
      int narrowest = hlo::ByteWidth(t->shape().element_type);
      for (size_t k = 0; k < chain.size(); ++k) {
        const int width = hlo::ByteWidth(chain[k].first->operand(chain[k].second)->shape().element_type);
        if (width < narrowest) {
          narrowest = width;
          keep = k + 1;
        }
      }
      if (keep == 0) continue;
      auto [top, top_data] = chain[keep - 1];
      Instruction* x = hlo::AddTranspose(c.get(), top->operand(top_data), t->dimensions, t);
      c->ReplaceAllUsesWith(t, RebuildChain(c.get(), chain, keep, x, t->shape().dims));
      local = true;
    }
    if (local) c->Canonicalize();
    changed |= local;
  }
  return changed;
}

absl::StatusOr<bool> ReshapeHoisting::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    std::vector<Instruction*> reshapes;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kReshape && i->shape().IsArray() && i->shape().rank() > 0) reshapes.push_back(i.get());
    bool local = false;
    for (Instruction* r : reshapes) {
      const std::vector<int64_t>& dims = r->shape().dims;
      const hlo::Shape& from = r->operand(0)->shape();
      // The last dim stays, so a vector along it stays one.
      if (from.rank() == 0 || from.dims.back() != dims.back()) continue;
      const Chain chain = ChainAbove(*c, r, /*last_dim_vectors=*/true);
      if (chain.empty()) continue;
      auto [top, top_data] = chain.back();
      const hlo::PrimitiveType source = top->operand(top_data)->shape().element_type;
      if (top->opcode() != Opcode::kConvert || !hlo::IsInteger(source)) continue;
      Instruction* x = hlo::AddCopyOf(c.get(), *r, {top->operand(top_data)}, hlo::Shape(source, dims));
      c->ReplaceAllUsesWith(r, RebuildChain(c.get(), chain, chain.size(), x, dims));
      local = true;
    }
    if (local) c->Canonicalize();
    changed |= local;
  }
  return changed;
}

namespace {
class LayoutRound : public passes::Pipeline {
 public:
  LayoutRound() : Pipeline("layout") {
    AddPass<TransposeSinking>();
    AddPass<passes::AlgebraicSimplifier>();
    // After the transposes sink, a layer scale meets its product.
    AddPass<passes::ScaleFolding>();
    AddPass<passes::Cse>();
    AddPass<passes::Dce>();
  }
};
}  // namespace

absl::Status RunLayoutPasses(hlo::Module* module) {
  ChannelsLastConvolutions cl;
  ASSIGN_OR_RETURN(bool any, cl.Run(module));
  if (any) {
    passes::FixedPoint<LayoutRound> round;
    RETURN_IF_ERROR(round.Run(module).status());
  }
  TransposeNarrowing narrowing;
  RETURN_IF_ERROR(narrowing.Run(module).status());
  ReshapeHoisting hoisting;
  return hoisting.Run(module).status();
}

}  // namespace xonnx::cpu
