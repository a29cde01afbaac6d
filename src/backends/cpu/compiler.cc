// Compiles an hlo::Module into an Executable: fusion grouping, buffer
// assignment by liveness, thunk selection.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/layout_pass.h"
#include "backends/cpu/precision_pass.h"
#include "backends/cpu/thunks.h"
#include "base/status.h"
#include "evaluator/evaluator.h"
#include "evaluator/kernels.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;
using Read = RowFusionSpec::Read;

namespace {

constexpr int64_t kAlign = 64;

int64_t AlignUp(int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

bool Fusible(const Instruction* i) {
  return hlo::IsElementwise(i->opcode()) && i->shape().IsArray() && i->shape().ElementCount() > 0;
}

// Places buffers in one arena: a buffer may reuse the bytes of any buffer
// whose last use came before its definition.
class ArenaPlanner {
 public:
  int64_t Place(int64_t size, int64_t def, int64_t last_use) {
    size = AlignUp(std::max<int64_t>(size, 1));
    std::erase_if(live_, [&](const Block& b) { return b.last_use < def; });
    std::sort(live_.begin(), live_.end(), [](const Block& a, const Block& b) { return a.offset < b.offset; });
    int64_t offset = 0;
    for (const Block& b : live_) {
      if (b.offset - offset >= size) break;
      offset = std::max(offset, b.offset + b.size);
    }
    live_.push_back({offset, size, last_use});
    total_ = std::max(total_, offset + size);
    return offset;
  }
  int64_t total() const { return total_; }

 private:
  struct Block {
    int64_t offset, size, last_use;
  };
  std::vector<Block> live_;
  int64_t total_ = 0;
};

}  // namespace

class Compiler {
 public:
  Compiler(std::unique_ptr<hlo::Module> module, const CompileOptions& options)
      : exe_(new Executable), options_(options) {
    exe_->module_ = std::move(module);
  }

  absl::StatusOr<std::unique_ptr<Executable>> Run() {
    RETURN_IF_ERROR(hlo::Verify(*exe_->module_));
    hlo::Computation* c = exe_->module_->entry();
    for (const auto& i : c->instructions()) order_.push_back(i.get());
    for (size_t k = 0; k < order_.size(); ++k) pos_[order_[k]] = k;
    auto users = c->ComputeUsers();
    for (size_t k = 0; k < order_.size(); ++k) users_[order_[k]] = users[k];
    for (Instruction* p : c->parameters()) {
      if (!p->shape().IsArray()) return Unimplemented("tuple-shaped parameters are not supported");
      exe_->parameter_shapes_.push_back(p->shape());
    }
    if (options_.use_dnnl) PlanEpilogues(c->root());
    if (options_.use_dnnl && options_.blocked_layouts) PlanBlockedLayouts(c->root());
    if (options_.fuse_elementwise) PlanRowFusions(c->root());
    if (options_.fuse_elementwise) PlanFusions(c->root());
    if (options_.use_dnnl) PlanDotViews(c->root());
    RETURN_IF_ERROR(AssignBuffers(c->root()));
    RETURN_IF_ERROR(EmitThunks());
    int64_t scratch = 0;
    for (const Thunk& t : exe_->thunks_) scratch = std::max(scratch, t.scratch_bytes);
    exe_->scratch_offset_ = AlignUp(exe_->arena_bytes_);
    if (scratch > 0) exe_->arena_bytes_ = exe_->scratch_offset_ + AlignUp(scratch);
    for (const auto& leaf : leaves_.at(c->root())) exe_->output_refs_.push_back(leaf);
    if (c->root()->shape().IsTuple()) exe_->output_shapes_ = c->root()->shape().tuple_shapes;
    else exe_->output_shapes_ = {c->root()->shape()};
    for (const hlo::Shape& s : exe_->output_shapes_)
      if (!s.IsArray()) return Unimplemented("nested tuple results are not supported");
    return std::move(exe_);
  }

 private:
  // The scalar value of a constant or of a broadcast of one.
  static std::optional<double> ScalarValue(const Instruction* i) {
    if (i->opcode() == Opcode::kBroadcast) i = i->operand(0);
    if (i->opcode() != Opcode::kConstant || i->literal->element_count() != 1) return std::nullopt;
    return i->literal->GetAsDouble(0);
  }

  // Whether the epilogues planned so far leave i's value in a buffer: not
  // a conv or dot whose epilogue writes its result, nor an op folded into
  // one before its last.
  bool KeptByEpilogues(const Instruction* i) const {
    if (epilogue_.contains(i)) return false;
    auto a = absorbed_into_.find(i);
    return a == absorbed_into_.end() || epilogue_last_.at(a->second) == i;
  }

  // conv -> add(per-channel bias) -> add(residual) -> relu | clamp | swish | sigmoid
  // becomes one oneDNN convolution with bias and post-ops, and likewise a
  // dot with a per-column bias (ONNX MatMul + Add, Gemm) becomes one oneDNN
  // matmul. A dot's result may be reshaped on the way to its epilogue (the
  // importer flattens MatMul's leading dims): a row-major reshape that keeps
  // the column count leaves every element's column, so the bias still
  // applies per column and the bytes are the same.
  void PlanEpilogues(Instruction* root) {
    for (Instruction* c : order_) {
      std::optional<int64_t> columns;
      if (c->opcode() == Opcode::kConvolution) {
        if (!DnnlConvEligible(*c)) continue;
      } else if (c->opcode() == Opcode::kDot) {
        columns = DnnlDotColumns(*c);
        if (!columns) continue;
      } else {
        continue;
      }
      Epilogue e;
      // The one user of i, unless another epilogue took it.
      auto single_user = [&](Instruction* i) -> Instruction* {
        const auto& us = users_.at(i);
        return us.size() == 1 && i != root && !absorbed_into_.contains(us[0]) ? us[0] : nullptr;
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
                   other->shape().Compatible(value->shape()) && KeptByEpilogues(other)) {
          e.bias = other;
        }
        if (e.bias) {
          last = add;
          absorbed.push_back(add);
        }
      }
      // A residual connection: add(op + bias, r) with r of the same shape.
      if (Instruction* add = single_user(last); add && add->opcode() == Opcode::kAdd) {
        Instruction* other = add->operand(0) == last ? add->operand(1) : add->operand(0);
        if (other != last && other->opcode() != Opcode::kBroadcast && other->shape().Compatible(last->shape()) &&
            KeptByEpilogues(other) && other->opcode() != Opcode::kConvolution) {
          e.residual = other;
          last = add;
          absorbed.push_back(add);
        }
      }
      const auto& lu = users_.at(last);
      if (Instruction* act = single_user(last)) {
        if (act->opcode() == Opcode::kMaximum) {
          Instruction* other = act->operand(0) == last ? act->operand(1) : act->operand(0);
          if (other != last && ScalarValue(other) == 0.0) {
            e.activation = Epilogue::kRelu;
            last = act;
            absorbed.push_back(act);
          }
        } else if (act->opcode() == Opcode::kLogistic) {
          e.activation = Epilogue::kSigmoid;
          last = act;
          absorbed.push_back(act);
        } else if (act->opcode() == Opcode::kClamp && act->operand(1) == last) {
          auto lo = ScalarValue(act->operand(0)), hi = ScalarValue(act->operand(2));
          if (lo && hi) {
            e.activation = Epilogue::kClip;
            e.lo = *lo;
            e.hi = *hi;
            last = act;
            absorbed.push_back(act);
          }
        }
      } else if (lu.size() == 2 && last != root) {
        // swish: y * logistic(y)
        Instruction* sig = lu[0]->opcode() == Opcode::kLogistic ? lu[0] : lu[1];
        Instruction* mul = sig == lu[0] ? lu[1] : lu[0];
        bool is_swish = sig->opcode() == Opcode::kLogistic && mul->opcode() == Opcode::kMultiply &&
                        users_.at(sig).size() == 1 && users_.at(sig)[0] == mul &&
                        ((mul->operand(0) == last && mul->operand(1) == sig) || (mul->operand(1) == last && mul->operand(0) == sig));
        if (is_swish) {
          e.activation = Epilogue::kSwish;
          absorbed.push_back(sig);
          absorbed.push_back(mul);
          last = mul;
        }
      }
      // Reshapes alone are free already; they join only with real work.
      if (last == value) continue;
      epilogue_[c] = e;
      epilogue_last_[c] = last;
      for (Instruction* x : absorbed) absorbed_into_[x] = c;
    }
    // Operands only the absorbed ops read (the bias broadcast, the relu
    // zero) are never computed; the bias and residual the primitive reads
    // itself still are.
    absl::flat_hash_set<const Instruction*> read_by_epilogue;
    for (const auto& [op, e] : epilogue_) {
      if (e.bias) read_by_epilogue.insert(e.bias);
      if (e.residual) read_by_epilogue.insert(e.residual);
    }
    for (Instruction* i : order_) {
      const auto& us = users_.at(i);
      if (i == root || us.empty() || absorbed_into_.contains(i) || epilogue_.contains(i) || read_by_epilogue.contains(i))
        continue;
      if (std::all_of(us.begin(), us.end(), [&](Instruction* u) { return absorbed_into_.contains(u); }))
        unused_.insert(i);
    }
  }

  // The value a convolution writes: its epilogue's last op, or itself.
  const Instruction* ResultOf(const Instruction* conv) const {
    auto e = epilogue_last_.find(conv);
    return e == epilogue_last_.end() ? conv : e->second;
  }

  // Results of convolutions that run faster on oneDNN's blocked layout
  // (DnnlConvRunsBlocked) stay in it when every reader is such a
  // convolution, reading it as its source or as the residual its epilogue
  // adds: a ResNet stage's 1x1 and Winograd convolutions then pass blocked
  // activations along and never change layouts between them. A convolution
  // with a residual writes its result over the residual's bytes, so the two
  // must share a layout; where they would not, both stay plain. Elsewhere
  // (the first convolution after a pool, the last before one) the
  // convolution changes the layout on its way in or out.
  void PlanBlockedLayouts(Instruction* root) {
    absl::flat_hash_set<const Instruction*> runs_blocked;
    for (Instruction* c : order_) {
      if (c->opcode() != Opcode::kConvolution) continue;
      bool constant_weights = c->operand(1)->opcode() == Opcode::kConstant;
      if (DnnlConvRunsBlocked(*c, constant_weights, options_.winograd)) runs_blocked.insert(c);
    }
    auto winograd = [&](const Instruction* c) {
      return DnnlConvRunsWinograd(*c, c->operand(1)->opcode() == Opcode::kConstant, options_.winograd);
    };
    // Whether u is such a convolution with v as its source (and not also its weights).
    auto source_of_blocked = [&](const Instruction* u, const Instruction* v) {
      return runs_blocked.contains(u) && u->operand(0) == v && u->operand(1) != v;
    };
    // The candidates: results of such convolutions that only such
    // convolutions read, as their source or their residual.
    absl::flat_hash_map<const Instruction*, const Instruction*> producer;  // candidate -> its convolution
    for (Instruction* c : order_) {
      if (!runs_blocked.contains(c)) continue;
      const Instruction* v = ResultOf(c);
      if (v == root || v->shape().dims != c->shape().dims) continue;
      bool ok = true;
      for (Instruction* u : users_.at(v)) {
        if (source_of_blocked(u, v)) continue;
        auto a = absorbed_into_.find(u);
        if (a != absorbed_into_.end() && runs_blocked.contains(a->second) && epilogue_.at(a->second).residual == v)
          continue;
        ok = false;
        break;
      }
      if (ok) producer[v] = c;
    }
    // A residual and the result written over it share a layout, so values
    // linked by residuals (a ResNet stage's outputs) form one group, blocked
    // as a whole or not at all.
    absl::flat_hash_map<const Instruction*, const Instruction*> parent;
    auto find = [&](const Instruction* v) {
      while (true) {
        auto p = parent.find(v);
        if (p == parent.end() || p->second == v) return v;
        v = p->second;
      }
    };
    for (Instruction* c : order_) {
      auto e = epilogue_.find(c);
      if (e == epilogue_.end() || !e->second.residual || !runs_blocked.contains(c)) continue;
      const Instruction *x = find(ResultOf(c)), *y = find(e->second.residual);
      if (x != y) parent[x] = y;
    }
    absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>> groups;  // root -> members
    for (Instruction* i : order_)
      if (producer.contains(i) || parent.contains(i)) groups[find(i)].push_back(i);
    for (const auto& [g, members] : groups)
      if (std::all_of(members.begin(), members.end(), [&](const Instruction* v) { return producer.contains(v); }))
        blocked_.insert(members.begin(), members.end());
    // Only the layout of a group blocked for nothing would change twice:
    // where no convolution producing or reading a member as its source runs
    // blocked on both sides, or runs Winograd's algorithm (which changes
    // layouts anyway), the group stays plain. (MobileNet's 1x1
    // convolutions each sit between a depthwise one, which runs plain, and a
    // value they would block.)
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [g, members] : groups) {
        if (!blocked_.contains(members[0])) continue;
        bool pays = false;
        for (const Instruction* v : members) {
          const Instruction* c = producer.at(v);
          if (winograd(c) || blocked_.contains(c->operand(0))) pays = true;
          for (Instruction* u : users_.at(v))
            if (source_of_blocked(u, v) && (winograd(u) || blocked_.contains(ResultOf(u))))
              pays = true;
        }
        if (!pays) {
          for (const Instruction* v : members) blocked_.erase(v);
          changed = true;
        }
      }
    }
  }

  ConvLayouts LayoutsOf(const Instruction* conv) const {
    return {blocked_.contains(conv->operand(0)), blocked_.contains(ResultOf(conv))};
  }

  // Whether the matrices of a view's batch dims lie inside each other's
  // span (a head split of K or V: each row of the projection holds a row of
  // every head). oneDNN runs a product over such a view on its generic gemm
  // kernel, at about half the speed of its brgemm one; a copy costs a pass
  // over the operand. On the Transformer encoder's attention (4 heads of
  // 64x64 per sequence) the views paid at batch 1 (16K elements per
  // operand: whole model 1.8% faster than with the copies), and the copies
  // from batch 2 up (32K: even; 64K: 4% faster; 128K: 7%).
  static bool BatchesInterleaved(const StridedView& v) {
    size_t r = v.dims.size();
    int64_t span = 0;  // of one matrix, in elements
    for (size_t i = r - 2; i < r; ++i) span = std::max(span, v.strides[i] * v.dims[i]);
    for (size_t i = 0; i + 2 < r; ++i)
      if (v.dims[i] > 1 && v.strides[i] < span) return true;
    return false;
  }
  static constexpr int64_t kMaxInterleavedViewElements = 16384;

  // A dot operand made by slices, transposes and reshapes (attention's head
  // split: slice the QKV projection, reshape, transpose) is read in place
  // through a strided view of the value they start from, so those copies
  // are never made. Each op of the chain must have the chain as its only
  // user; an op that is not a view (a gathering reshape) stays and the view
  // starts after it.
  void PlanDotViews(Instruction* root) {
    auto is_view_op = [&](Instruction* i) {
      Opcode op = i->opcode();
      return (op == Opcode::kSlice || op == Opcode::kTranspose || op == Opcode::kReshape) && i != root &&
             i->shape().element_type == hlo::F32 && users_.at(i).size() == 1 && Materialized(i);
    };
    for (Instruction* d : order_) {
      if (d->opcode() != Opcode::kDot || !DnnlDotColumns(*d)) continue;
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
        if (first == chain.size() || !v || !DnnlDotViewable(*d, *v)) continue;
        if (BatchesInterleaved(*v) && d->operand(k)->shape().ElementCount() > kMaxInterleavedViewElements) continue;
        Instruction* source = chain[first]->operand(0);
        if (!source->shape().IsArray() || !Materialized(source)) continue;
        dot_views_[d][k] = {source, *v};
        for (size_t j = first; j < chain.size(); ++j) viewed_.insert(chain[j]);
      }
    }
  }

  // Groups elementwise chains: an elementwise instruction joins its users'
  // fusion when all of them are members of one fusion of the same shape.
  void PlanFusions(Instruction* root) {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      Instruction* i = *it;
      const auto& us = users_[i];
      int group = -1;
      bool joinable = i != root && !us.empty();
      for (Instruction* u : us) {
        auto g = member_group_.find(u);
        if (g == member_group_.end() || (group >= 0 && g->second != group)) { joinable = false; break; }
        group = g->second;
      }
      if (joinable && groups_[group].back()->shape().dims != i->shape().dims) joinable = false;
      if (Fusible(i) && !absorbed_into_.contains(i) && !epilogue_.contains(i) && !row_group_of_.contains(i) &&
          !row_internal_.contains(i)) {
        if (joinable) {
          groups_[group].push_back(i);
          member_group_[i] = group;
        } else {
          member_group_[i] = groups_.size();
          groups_.push_back({i});
        }
      } else if (i->opcode() == Opcode::kBroadcast && i != root && !us.empty() && i->shape().ElementCount() > 0 &&
                 !row_internal_.contains(i) &&
                 std::all_of(us.begin(), us.end(), [&](Instruction* u) {
                   if (absorbed_into_.contains(u)) return true;
                   auto g = member_group_.find(u);
                   return g != member_group_.end() && groups_[g->second].back()->shape().dims == i->shape().dims;
                 })) {
        // A broadcast read only by fusions is recomputed inside each of them
        // (one CSE-merged splat often feeds many fusions) instead of stored.
        absorbed_broadcast_.insert(i);
      }
    }
    // Members were collected root first; store them operand-first.
    for (auto& g : groups_) std::reverse(g.begin(), g.end());
  }

  bool IsGroupRoot(Instruction* i) const {
    auto g = member_group_.find(i);
    return g != member_group_.end() && groups_[g->second].back() == i;
  }
  bool Materialized(Instruction* i) const {
    if (absorbed_broadcast_.contains(i) || unused_.contains(i) || viewed_.contains(i)) return false;
    if (row_internal_.contains(i)) return false;
    if (auto rg = row_group_of_.find(i); rg != row_group_of_.end()) {
      const auto& outs = row_groups_[rg->second].outputs;
      return std::find(outs.begin(), outs.end(), i) != outs.end();
    }
    // A conv or dot with an epilogue writes the epilogue's last buffer.
    if (epilogue_.contains(i)) return false;
    if (auto a = absorbed_into_.find(i); a != absorbed_into_.end()) return epilogue_last_.at(a->second) == i;
    auto g = member_group_.find(i);
    return g == member_group_.end() || groups_[g->second].back() == i;
  }

  // An arena value: the leaf of `owner` it holds, its bytes, and the program
  // positions of its definition and last read.
  struct Slot {
    Instruction* owner;
    int leaf;
    int64_t size, def, last_use;
  };

  // The arena slot of an input that the fusion rooted at `root` may
  // overwrite with its result, or -1. A fused loop reads each input element
  // at the index it writes (block by block, every read of a block before its
  // write), so its result can take the slot of an input of the same element
  // width and count whose last reader it is: the squeeze-and-excitation
  // scale then rewrites its input where it lies in cache instead of filling
  // a second buffer. Not an input that the loop also reads another way (as
  // a broadcast's operand), nor one read twice.
  int InPlaceFusionInput(Instruction* root, const absl::flat_hash_map<const Instruction*, std::vector<int>>& backing,
                         const std::vector<Slot>& slots) {
    auto ob = backing.find(root);
    if (ob == backing.end() || ob->second.size() != 1 || ob->second[0] < 0) return -1;
    const Slot& out = slots[ob->second[0]];
    if (out.owner != root) return -1;
    int g = member_group_.at(root);
    absl::flat_hash_map<int, int> reads;  // slot -> inputs backed by it
    absl::flat_hash_set<const Instruction*> seen;
    std::vector<int> candidates;
    for (const Instruction* m : groups_[g]) {
      for (Instruction* op : m->operands()) {
        if (auto mg = member_group_.find(op); mg != member_group_.end() && mg->second == g) continue;
        if (!seen.insert(op).second) continue;  // one input, however many members read it
        const Instruction* buffer = absorbed_broadcast_.contains(op) ? op->operand(0) : op;
        auto bk = backing.find(buffer);
        if (bk == backing.end() || bk->second.size() != 1 || bk->second[0] < 0) continue;
        int r = bk->second[0];
        ++reads[r];
        if (buffer == op && op->shape().ElementCount() == root->shape().ElementCount() &&
            hlo::ByteWidth(op->shape().element_type) == hlo::ByteWidth(root->shape().element_type))
          candidates.push_back(r);
      }
    }
    for (int r : candidates)
      if (reads[r] == 1 && slots[r].size == out.size && slots[r].last_use == out.def) return r;
    return -1;
  }

  // The buffers an instruction's value occupies (aliases resolved).
  absl::Status AssignBuffers(Instruction* root) {
    std::vector<Slot> slots;
    absl::flat_hash_map<const Instruction*, std::vector<int>> slot_of;  // leaf -> slot index (-1 for non-arena)
    // Which arena slot backs each leaf (following aliases), for liveness.
    absl::flat_hash_map<const Instruction*, std::vector<int>> backing;
    for (Instruction* i : order_) {
      switch (i->opcode()) {
        case Opcode::kParameter:
          leaves_[i] = {{BufferRef::kParameter, i->parameter_number}};
          backing[i] = {-1};
          continue;
        case Opcode::kConstant:
          leaves_[i] = {{BufferRef::kConstant, static_cast<int64_t>(exe_->constants_.size())}};
          // Read-only: a write access would copy a borrowed literal.
          exe_->constants_.push_back(std::as_const(*i->literal).untyped_data());
          backing[i] = {-1};
          continue;
        case Opcode::kReshape:
        case Opcode::kBitcastConvert:
          if (Materialized(i->operand(0))) {
            // Copy before inserting: flat_hash_map insertions move elements.
            std::vector<BufferRef> l = leaves_.at(i->operand(0));
            std::vector<int> bk = backing.at(i->operand(0));
            leaves_[i] = std::move(l);
            backing[i] = std::move(bk);
            continue;
          }
          break;
        case Opcode::kGetTupleElement: {
          BufferRef l = leaves_.at(i->operand(0)).at(i->tuple_index);
          int bk = backing.at(i->operand(0)).at(i->tuple_index);
          leaves_[i] = {l};
          backing[i] = {bk};
          continue;
        }
        case Opcode::kTuple: {
          std::vector<BufferRef> l;
          std::vector<int> bk;
          for (Instruction* op : i->operands()) {
            if (!op->shape().IsArray()) return Unimplemented("nested tuples are not supported");
            if (!Materialized(op)) return Internal("tuple operand %s is not materialized", op->name());
            l.push_back(leaves_.at(op)[0]);
            bk.push_back(backing.at(op)[0]);
          }
          leaves_[i] = l;
          backing[i] = bk;
          continue;
        }
        default:
          break;
      }
      if (!Materialized(i)) continue;
      std::vector<hlo::Shape> shapes = i->shape().IsTuple() ? i->shape().tuple_shapes : std::vector<hlo::Shape>{i->shape()};
      std::vector<int> bk;
      for (size_t k = 0; k < shapes.size(); ++k) {
        if (!shapes[k].IsArray()) return Unimplemented("%s: nested tuples are not supported", i->name());
        bk.push_back(slots.size());
        slots.push_back({i, static_cast<int>(k), shapes[k].ByteSize(), pos_.at(i), pos_.at(i)});
      }
      leaves_[i] = std::vector<BufferRef>(shapes.size());
      backing[i] = bk;
    }
    // Liveness: a use of any alias extends the backing slot's life. A fused
    // member's operands are used by its group's root.
    auto use_point = [&](Instruction* user) -> int64_t {
      // A row fusion reads its inputs when it runs, at its last member.
      if (auto rg = row_group_of_.find(user); rg != row_group_of_.end())
        return pos_.at(row_groups_[rg->second].members.back());
      if (auto ri = row_internal_.find(user); ri != row_internal_.end()) return ri->second;
      if (auto e = epilogue_last_.find(user); e != epilogue_last_.end()) return pos_.at(e->second);
      if (auto a = absorbed_into_.find(user); a != absorbed_into_.end()) return pos_.at(epilogue_last_.at(a->second));
      auto g = member_group_.find(user);
      if (g != member_group_.end()) return pos_.at(groups_[g->second].back());
      if (absorbed_broadcast_.contains(user)) {
        int64_t last = pos_.at(user);
        for (Instruction* u : users_.at(user)) {
          if (auto g = member_group_.find(u); g != member_group_.end()) last = std::max(last, pos_.at(groups_[g->second].back()));
        }
        return last;
      }
      return pos_.at(user);
    };
    auto read_at = [&](const Instruction* x, int64_t at) {
      auto bk = backing.find(x);
      if (bk == backing.end()) return;
      for (int s : bk->second)
        if (s >= 0) slots[s].last_use = std::max(slots[s].last_use, at);
    };
    for (Instruction* i : order_) {
      for (Instruction* op : i->operands()) read_at(op, use_point(i));
      for (const Instruction* x : HiddenReads(i)) read_at(x, use_point(i));
    }
    for (int s : backing.at(root))
      if (s >= 0) slots[s].last_use = INT64_MAX;
    // An epilogue that reads its residual last writes its result over it:
    // oneDNN's sum post-op accumulates into the output buffer, which
    // otherwise must first receive a copy of the residual.
    // In program order, so that a chain (one block's result is the next
    // one's residual) ends in the first slot, which the planner places.
    std::vector<int> share_of(slots.size(), -1);  // slot -> the first slot of its chain
    auto share = [&](int r, int o) {
      int first = share_of[r] >= 0 ? share_of[r] : r;
      share_of[o] = first;
      slots[first].last_use = std::max(slots[first].last_use, slots[o].last_use);
    };
    for (Instruction* op : order_) {
      if (IsGroupRoot(op)) {
        if (int r = InPlaceFusionInput(op, backing, slots); r >= 0) share(r, backing.at(op).at(0));
        continue;
      }
      auto found = epilogue_.find(op);
      if (found == epilogue_.end() || !found->second.residual) continue;
      const Epilogue& e = found->second;
      Instruction* last = epilogue_last_.at(op);
      auto rb = backing.find(e.residual), ob = backing.find(last);
      if (rb == backing.end() || ob == backing.end()) continue;
      int r = rb->second.at(0), o = ob->second.at(0);
      if (r < 0 || o < 0 || slots[o].owner != last || slots[r].size != slots[o].size || slots[r].last_use != slots[o].def)
        continue;
      // Not when the primitive also reads those bytes as an operand, its bias
      // or a view's source: it would read what it has begun to overwrite.
      bool read_otherwise = false;
      auto check = [&](const Instruction* x) {
        if (auto bk = backing.find(x); bk != backing.end())
          for (int s : bk->second) read_otherwise |= s == r;
      };
      for (const Instruction* x : op->operands()) check(x);
      for (const Instruction* x : HiddenReads(op))
        if (x != e.residual) check(x);
      if (read_otherwise) continue;
      share(r, o);
    }
    ArenaPlanner planner;
    std::vector<int64_t> offsets(slots.size());
    for (size_t s = 0; s < slots.size(); ++s)
      offsets[s] = share_of[s] >= 0 ? offsets[share_of[s]] : planner.Place(slots[s].size, slots[s].def, slots[s].last_use);
    exe_->arena_bytes_ = planner.total();
    // Resolve arena refs of owners, then re-resolve aliases in order.
    for (size_t s = 0; s < slots.size(); ++s) leaves_[slots[s].owner][slots[s].leaf] = {BufferRef::kArena, offsets[s]};
    for (Instruction* i : order_) {
      switch (i->opcode()) {
        case Opcode::kReshape: case Opcode::kBitcastConvert:
          if (Materialized(i->operand(0)) && backing.at(i) == backing.at(i->operand(0))) {
            std::vector<BufferRef> l = leaves_.at(i->operand(0));
            leaves_[i] = std::move(l);
          }
          break;
        case Opcode::kGetTupleElement: {
          BufferRef l = leaves_.at(i->operand(0)).at(i->tuple_index);
          leaves_[i] = {l};
          break;
        }
        case Opcode::kTuple: {
          std::vector<BufferRef> l;
          for (Instruction* op : i->operands()) l.push_back(leaves_.at(op)[0]);
          leaves_[i] = l;
          break;
        }
        default: break;
      }
    }
    return absl::OkStatus();
  }

  // Values a oneDNN primitive reads that are not operands of its anchor:
  // an epilogue's bias and residual (operands of the broadcast and adds,
  // which are never emitted) and the sources of a dot's views. The
  // primitive reads them when it runs, so they live until then.
  std::vector<const Instruction*> HiddenReads(const Instruction* i) const {
    std::vector<const Instruction*> reads;
    if (auto e = epilogue_.find(i); e != epilogue_.end()) {
      if (e->second.bias) reads.push_back(e->second.bias);
      if (e->second.residual) reads.push_back(e->second.residual);
    }
    if (auto v = dot_views_.find(i); v != dot_views_.end())
      for (const auto& pv : v->second)
        if (pv) reads.push_back(pv->source);
    return reads;
  }

  // The buffers i reads, one per operand leaf; a dot reads a viewed
  // operand from its view's source.
  std::vector<BufferRef> InputsOf(Instruction* i) {
    std::vector<BufferRef> in;
    auto v = dot_views_.find(i);
    for (int64_t k = 0; k < i->operand_count(); ++k) {
      bool viewed = v != dot_views_.end() && v->second[k];
      for (const BufferRef& r : leaves_.at(viewed ? v->second[k]->source : i->operand(k))) in.push_back(r);
    }
    return in;
  }

  ThunkIo IoOf(Instruction* i) { return {InputsOf(i), leaves_.at(i)}; }

  void Add(Thunk t, std::string kind) {
    exe_->thunk_kinds_.push_back(t.kind.empty() ? std::move(kind) : t.kind);
    exe_->thunks_.push_back(std::move(t));
  }

  absl::Status EmitThunks() {
    for (Instruction* i : order_) {
      switch (i->opcode()) {
        case Opcode::kParameter: case Opcode::kConstant: case Opcode::kGetTupleElement: case Opcode::kTuple:
          continue;
        case Opcode::kReshape: case Opcode::kBitcastConvert:
          if (Materialized(i->operand(0))) continue;
          break;
        default:
          break;
      }
      if (auto rg = row_group_of_.find(i); rg != row_group_of_.end()) {
        if (row_groups_[rg->second].members.back() == i) RETURN_IF_ERROR(EmitRowFusion(rg->second));
        continue;
      }
      if (row_internal_.contains(i)) continue;
      if (auto a = absorbed_into_.find(i); a != absorbed_into_.end()) {
        if (epilogue_last_.at(a->second) != i) continue;
        RETURN_IF_ERROR(EmitWithEpilogue(a->second, i));
        continue;
      }
      if (!Materialized(i)) continue;
      if (IsGroupRoot(i)) {
        RETURN_IF_ERROR(EmitFusion(i));
        continue;
      }
      ThunkIo io = IoOf(i);
      if (options_.use_dnnl && i->opcode() == Opcode::kDot) {
        const Instruction* rhs = i->operand(1);
        const hlo::Literal* cr = rhs->opcode() == Opcode::kConstant ? &*rhs->literal : nullptr;
        if (auto t = MakeDnnlDotThunk(*i, io, cr, Epilogue{}, ViewsOf(i), &exe_->keep_alive_)) {
          Add(*std::move(t), "dnnl-matmul");
          continue;
        }
        if (dot_views_.contains(i)) return Unimplemented("%s: oneDNN rejected a dot planned to read views", i->name());
      }
      if (options_.use_dnnl && i->opcode() == Opcode::kConvolution) {
        const Instruction* w = i->operand(1);
        const hlo::Literal* cw = w->opcode() == Opcode::kConstant ? &*w->literal : nullptr;
        ConvLayouts layouts = LayoutsOf(i);
        if (auto t = MakeDnnlConvThunk(*i, io, cw, Epilogue{}, options_.winograd, layouts, &exe_->keep_alive_)) {
          Add(*std::move(t), "dnnl-conv");
          continue;
        }
        if (layouts.src_blocked || layouts.dst_blocked)
          return Unimplemented("%s: oneDNN rejected a convolution planned on blocked activations", i->name());
      }
      if (i->opcode() == Opcode::kReduce) {
        if (auto t = MakeFastReduceThunk(*i, io)) {
          Add(*std::move(t), "reduce");
          continue;
        }
      }
      if (i->opcode() == Opcode::kReduceWindow) {
        if (auto t = MakeFastReduceWindowThunk(*i, io)) {
          Add(*std::move(t), "reduce-window");
          continue;
        }
      }
      if (i->opcode() == Opcode::kTranspose || i->opcode() == Opcode::kSlice || i->opcode() == Opcode::kBroadcast) {
        if (auto t = MakeFastMoveThunk(*i, io)) {
          Add(*std::move(t), std::string(hlo::OpcodeName(i->opcode())));
          continue;
        }
      }
      if (i->opcode() == Opcode::kWhile) {
        if (auto t = NativeWhileThunk(i, io)) {
          Add(*std::move(t), "while");
          continue;
        }
      }
      if (i->opcode() == Opcode::kConditional) {
        if (auto t = NativeConditionalThunk(i, io)) {
          Add(*std::move(t), "conditional");
          continue;
        }
      }
      if (i->opcode() == Opcode::kWhile || i->opcode() == Opcode::kConditional || i->opcode() == Opcode::kCall) {
        Add(EvaluatorThunk(i, io), "control-flow");
        continue;
      }
      Add(KernelThunk(i, io), absl::StrCat("kernel:", hlo::OpcodeName(i->opcode())));
    }
    return absl::OkStatus();
  }

  DotViews ViewsOf(Instruction* dot) const {
    DotViews views;
    if (auto v = dot_views_.find(dot); v != dot_views_.end()) {
      if (v->second[0]) views.lhs = v->second[0]->view;
      if (v->second[1]) views.rhs = v->second[1]->view;
    }
    return views;
  }

  // The conv or dot and its epilogue in one oneDNN primitive. The planner
  // only chose forms oneDNN takes, so a refusal is an internal error.
  absl::Status EmitWithEpilogue(Instruction* op, Instruction* last) {
    bool conv = op->opcode() == Opcode::kConvolution;
    ThunkIo io{InputsOf(op), leaves_.at(last)};
    const Epilogue& e = epilogue_.at(op);
    if (e.bias) io.inputs.push_back(leaves_.at(e.bias).at(0));
    if (e.residual) io.inputs.push_back(leaves_.at(e.residual).at(0));
    const Instruction* w = op->operand(1);
    const hlo::Literal* cw = w->opcode() == Opcode::kConstant ? &*w->literal : nullptr;
    std::optional<Thunk> t = conv ? MakeDnnlConvThunk(*op, io, cw, e, options_.winograd, LayoutsOf(op), &exe_->keep_alive_)
                                  : MakeDnnlDotThunk(*op, io, cw, e, ViewsOf(op), &exe_->keep_alive_);
    if (!t) return Unimplemented("%s: oneDNN rejected a %s it was planned for", op->name(), conv ? "convolution" : "dot");
    Add(*std::move(t), conv ? "dnnl-conv" : "dnnl-matmul");
    return absl::OkStatus();
  }

  // A row fusion, emitted at its last member in program order.
  struct RowGroup {
    std::vector<Instruction*> members;  // program order
    std::vector<Instruction*> inputs;   // the values read from outside, in spec order
    std::vector<Instruction*> outputs;  // members read outside, in spec order
    std::vector<Instruction*> views;    // the reshapes and broadcasts it reads through
    RowFusionSpec spec;
  };

  absl::Status EmitRowFusion(int g) {
    const RowGroup& group = row_groups_[g];
    ThunkIo io;
    for (Instruction* in : group.inputs) {
      auto l = leaves_.find(in);
      if (l == leaves_.end() || l->second.empty())
        return Internal("row fusion at %s reads %s, which no kernel writes", group.members.back()->name(), in->name());
      io.inputs.push_back(l->second[0]);
    }
    for (Instruction* out : group.outputs) io.outputs.push_back(leaves_.at(out).at(0));
    ASSIGN_OR_RETURN(Thunk t, MakeRowFusionThunk(group.spec, io));
    Add(std::move(t), "row-fusion");
    return absl::OkStatus();
  }

  // Row fusions: a reduce along the last dim of an f32 value of shape
  // [..., C] starts a group; it grows through operands and users that are
  // f32 elementwise ops of that shape or with one element per row, and
  // other such reduces, reading through reshapes and through broadcasts of
  // a row value, a C-vector or a scalar back along the rows. A layer norm
  // (two reductions, eight kernels before) or a softmax (two, four) becomes
  // one kernel that keeps each row in cache. A group is dropped when it
  // cannot run as one step: a value it reads depends on one it writes, or
  // it reads a value no kernel writes (one folded into another's epilogue).
  void PlanRowFusions(Instruction* root) {
    for (Instruction* seed : order_) {
      if (row_group_of_.contains(seed) || !RowReduce(seed, nullptr)) continue;
      const std::vector<int64_t> full = seed->operand(0)->shape().dims;
      int64_t cols = full.back(), rows = seed->shape().ElementCount();
      if (cols < 2 || cols > (1 << 16)) continue;
      std::vector<Instruction*> members = {seed};
      absl::flat_hash_set<Instruction*> in_group = {seed};
      int64_t first = pos_.at(seed);
      for (size_t k = 0; k < members.size(); ++k) {
        Instruction* m = members[k];
        // x joins when no value it reads from outside depends on a member
        // (as the next layer's attention does, between a layer norm and the
        // residual add after it): the group runs as one step. Values before
        // the first member cannot; those after it are searched back to it.
        auto depends_on_group = [&](Instruction* v) {
          std::vector<Instruction*> stack = {v};
          absl::flat_hash_set<Instruction*> seen;
          while (!stack.empty()) {
            Instruction* y = stack.back();
            stack.pop_back();
            if (in_group.contains(y)) return true;
            if (pos_.at(y) < first || !seen.insert(y).second) continue;
            for (Instruction* op : y->operands()) stack.push_back(op);
          }
          return false;
        };
        auto consider = [&](Instruction* x) {
          if (in_group.contains(x) || !RowMember(x, full, rows)) return;
          for (Instruction* op : x->operands()) {
            Instruction* v = ThroughRowViews(op, full, rows).value;
            if (!in_group.contains(v) && depends_on_group(v)) return;
          }
          in_group.insert(x);
          members.push_back(x);
          first = std::min(first, pos_.at(x));
        };
        for (Instruction* op : m->operands()) consider(ThroughRowViews(op, full, rows).value);
        std::vector<Instruction*> readers = users_.at(m);
        for (size_t r = 0; r < readers.size(); ++r) {
          Instruction* u = readers[r];
          if (RowView(u, full, rows)) readers.insert(readers.end(), users_.at(u).begin(), users_.at(u).end());
          else consider(u);
        }
      }
      std::sort(members.begin(), members.end(), [&](Instruction* a, Instruction* b) { return pos_.at(a) < pos_.at(b); });
      RowGroup group;
      group.members = members;
      if (!BuildRowGroup(root, full, rows, in_group, &group)) continue;
      int g = row_groups_.size();
      for (Instruction* m : group.members) row_group_of_[m] = g;
      const int64_t emit = pos_.at(group.members.back());
      for (Instruction* view : group.views) row_views_[view] = std::max(row_views_[view], emit);
      row_groups_.push_back(std::move(group));
    }
    // A reshape or broadcast that only row fusions read (directly or through
    // other such views) is never computed: they read what is under it.
    for (const auto& [view, emit] : row_views_)
      if (OnlyReadThroughViews(
              view, root, [&](Instruction* v) { return row_views_.contains(v); },
              [&](Instruction* u) { return row_group_of_.contains(u); }))
        row_internal_[view] = emit;
  }

  // Whether `view` (not the root) is read only by `reader`s, directly or
  // through other views (`is_view`) read the same way.
  template <typename IsView, typename IsReader>
  bool OnlyReadThroughViews(Instruction* view, Instruction* root, const IsView& is_view, const IsReader& reader) const {
    if (view == root || !is_view(view)) return false;
    for (Instruction* u : users_.at(view))
      if (!reader(u) && !OnlyReadThroughViews(u, root, is_view, reader)) return false;
    return true;
  }

  // Whether i is a reduce along the last dim of an f32 value (of shape
  // `full`, when given) with a scalar init and an add, multiply, max or min
  // reducer.
  bool RowReduce(const Instruction* i, const std::vector<int64_t>* full) const {
    if (i->opcode() != Opcode::kReduce || i->operand_count() != 2 || !i->shape().IsArray()) return false;
    const hlo::Shape& xs = i->operand(0)->shape();
    if (xs.element_type != hlo::F32 || xs.rank() < 1 || i->dimensions != std::vector<int64_t>{xs.rank() - 1}) return false;
    if (full && xs.dims != *full) return false;
    if (i->operand(1)->shape().ElementCount() != 1 || absorbed_into_.contains(i)) return false;
    std::optional<Opcode> op = eval::MatchScalarBinary(*i->to_apply());
    return op && (*op == Opcode::kAdd || *op == Opcode::kMultiply || *op == Opcode::kMaximum || *op == Opcode::kMinimum);
  }

  // Whether i can be a member: a reduce as above, or an f32 elementwise op
  // of one or two operands, of shape `full` or with `rows` elements, not
  // already part of an epilogue or another row fusion.
  bool RowMember(const Instruction* i, const std::vector<int64_t>& full, int64_t rows) const {
    if (row_group_of_.contains(i) || absorbed_into_.contains(i) || epilogue_.contains(i)) return false;
    if (RowReduce(i, &full)) return true;
    if (!Fusible(i) || i->shape().element_type != hlo::F32 || i->operand_count() < 1 || i->operand_count() > 2) return false;
    for (const Instruction* op : i->operands())
      if (op->shape().element_type != hlo::F32) return false;
    return i->shape().dims == full || i->shape().ElementCount() == rows;
  }

  // A reshape (any) or a broadcast of a row value, a C-vector or a scalar to
  // the full shape or to one element per row: the ways a row fusion reads
  // a value other than directly.
  std::optional<Read> RowBroadcastRead(const Instruction* b, const std::vector<int64_t>& full, int64_t rows) const {
    if (b->opcode() != Opcode::kBroadcast) return std::nullopt;
    const hlo::Shape& src = b->operand(0)->shape();
    if (src.ElementCount() == 1) return Read::kScalar;
    if (b->shape().dims != full) return std::nullopt;
    int64_t r = full.size();
    if (src.rank() == 1 && b->dimensions == std::vector<int64_t>{r - 1} && src.dims[0] == full.back()) return Read::kColumns;
    std::vector<int64_t> lead(r - 1);
    for (int64_t d = 0; d < r - 1; ++d) lead[d] = d;
    if (b->dimensions == lead && src.ElementCount() == rows &&
        std::equal(src.dims.begin(), src.dims.end(), full.begin(), full.end() - 1))
      return Read::kRow;
    return std::nullopt;
  }
  bool RowView(const Instruction* i, const std::vector<int64_t>& full, int64_t rows) const {
    return i->opcode() == Opcode::kReshape || RowBroadcastRead(i, full, rows).has_value();
  }

  // The value an operand reaches through reshapes and at most one
  // broadcast, and how the broadcast (if any) reads it.
  struct ThroughViews {
    Instruction* value;
    std::optional<Read> broadcast;
  };
  ThroughViews ThroughRowViews(Instruction* x, const std::vector<int64_t>& full, int64_t rows) const {
    std::optional<Read> b;
    while (true) {
      if (x->opcode() == Opcode::kReshape) {
        x = x->operand(0);
      } else if (!b && (b = RowBroadcastRead(x, full, rows))) {
        x = x->operand(0);
      } else {
        return {x, b};
      }
    }
  }

  // Resolves the group's operands into its program; false when it cannot
  // run as one step (see PlanRowFusions).
  bool BuildRowGroup(Instruction* root, const std::vector<int64_t>& full, int64_t rows,
                     const absl::flat_hash_set<Instruction*>& in_group, RowGroup* group) {
    const int64_t cols = full.back();
    absl::flat_hash_set<Instruction*> views;
    RowFusionSpec& spec = group->spec;
    spec.rows = rows;
    spec.cols = cols;
    absl::flat_hash_map<const Instruction*, int> node_of, input_of;
    auto is_full = [&](const Instruction* i) { return i->opcode() != Opcode::kReduce && i->shape().dims == full; };
    // A value read from outside: written by some kernel (not folded away).
    auto readable = [&](Instruction* v) {
      return v->opcode() != Opcode::kBroadcast && !unused_.contains(v) && KeptByEpilogues(v) && v->shape().IsArray() &&
             v->shape().element_type == hlo::F32;
    };
    auto input = [&](Instruction* v) {
      auto [it, added] = input_of.try_emplace(v, group->inputs.size());
      if (added) group->inputs.push_back(v);
      return it->second;
    };
    for (Instruction* m : group->members) {
      RowFusionSpec::Node node;
      node.instr = m;
      node.full = is_full(m);
      if (!node.full && m->shape().ElementCount() != rows) return false;
      node.reduce = m->opcode() == Opcode::kReduce;
      if (node.reduce) node.reduce_op = *eval::MatchScalarBinary(*m->to_apply());
      for (int64_t k = 0; k < m->operand_count(); ++k) {
        Instruction* x = m->operand(k);
        RowFusionSpec::Operand o;
        if (node.reduce && k == 1) {  // the init: one value from outside
          if (!readable(x) || in_group.contains(x)) return false;
          o.index = input(x);
          o.read = Read::kScalar;
          node.operands.push_back(o);
          continue;
        }
        auto [v, b] = ThroughRowViews(x, full, rows);
        bool wants_full = node.full || node.reduce;
        if (in_group.contains(v)) {
          auto n = node_of.find(v);
          if (n == node_of.end()) return false;  // read before it is computed
          o.member = true;
          o.index = n->second;
          bool v_full = spec.nodes[n->second].full;
          if (v_full) {
            if (b || !wants_full) return false;
            o.read = Read::kFull;
          } else {
            if (b && *b != Read::kRow && !(*b == Read::kScalar && rows == 1)) return false;
            if (!b && wants_full) return false;
            o.read = Read::kRow;
          }
        } else {
          if (!readable(v)) return false;
          int64_t count = v->shape().ElementCount();
          if (b) {
            o.read = *b;
          } else {
            o.read = wants_full ? Read::kFull : Read::kRow;
          }
          int64_t want = o.read == Read::kFull ? rows * cols : o.read == Read::kRow ? rows : o.read == Read::kColumns ? cols : 1;
          if (count != want) return false;
          if (!wants_full && o.read != Read::kRow && o.read != Read::kScalar) return false;
          o.index = input(v);
        }
        node.operands.push_back(o);
        // The reshapes and broadcasts between.
        for (Instruction* view = x; view != v; view = view->operand(0))
          if (views.insert(view).second) group->views.push_back(view);
      }
      node_of[m] = spec.nodes.size();
      spec.nodes.push_back(std::move(node));
    }
    // A view that something outside the group reads too stays a kernel (or
    // an alias) of its own; then the member under it is an output.
    auto internal_view = [&](Instruction* view) {
      return OnlyReadThroughViews(
          view, root, [&](Instruction* v) { return views.contains(v); },
          [&](Instruction* u) { return in_group.contains(u); });
    };
    // Outputs: members read by anything outside (directly or through a view
    // that stays), which must all run after the group's last member.
    const int64_t emit = pos_.at(group->members.back());
    for (Instruction* m : group->members) {
      bool output = m == root;
      std::vector<Instruction*> readers = users_.at(m);
      for (size_t r = 0; r < readers.size(); ++r) {
        Instruction* u = readers[r];
        if (in_group.contains(u) || internal_view(u)) continue;
        output = true;
        if (pos_.at(u) <= emit && u->opcode() != Opcode::kReshape) return false;
        if (u->opcode() == Opcode::kReshape) readers.insert(readers.end(), users_.at(u).begin(), users_.at(u).end());
      }
      if (output) {
        spec.outputs.push_back(node_of.at(m));
        group->outputs.push_back(m);
      }
    }
    // The inputs must not depend on the group: each is defined before the
    // group's first member reads it, and none is computed from a member
    // (checked through the outputs' readers above: a value computed from a
    // member would be such a reader positioned before the last member).
    spec.inputs = group->inputs.size();
    // Scratch per thread, a row per full node: keep it within the caches.
    int64_t full_nodes = 0;
    for (const auto& n : spec.nodes) full_nodes += n.full;
    if ((full_nodes + 2) * cols > (1 << 20)) return false;
    return full_nodes > 0;
  }

  absl::Status EmitFusion(Instruction* root) {
    int g = member_group_.at(root);
    FusionSpec spec;
    spec.members.assign(groups_[g].begin(), groups_[g].end());
    std::sort(spec.members.begin(), spec.members.end(),
              [&](const Instruction* a, const Instruction* b) { return pos_.at(a) < pos_.at(b); });
    ThunkIo io;
    absl::flat_hash_map<const Instruction*, bool> seen;
    for (const Instruction* m : spec.members) {
      for (Instruction* op : m->operands()) {
        auto mg = member_group_.find(op);
        if (mg != member_group_.end() && mg->second == g) continue;
        if (seen[op]) continue;
        seen[op] = true;
        spec.inputs.push_back(op);
        if (absorbed_broadcast_.contains(op)) io.inputs.push_back(leaves_.at(op->operand(0)).at(0));
        else io.inputs.push_back(leaves_.at(op).at(0));
      }
    }
    io.outputs = leaves_.at(root);
    ASSIGN_OR_RETURN(Thunk t, MakeFusionThunk(spec, io));
    Add(std::move(t), "fusion");
    return absl::OkStatus();
  }

  Thunk KernelThunk(Instruction* i, ThunkIo io) {
    Thunk t;
    t.name = i->name();
    t.run = [i, io](Frame& f) -> absl::Status {
      std::vector<const void*> ins;
      for (const BufferRef& r : io.inputs) ins.push_back(f.Ptr(r));
      std::vector<void*> outs;
      for (const BufferRef& r : io.outputs) outs.push_back(f.Ptr(r));
      return eval::RunKernel(*i, ins, outs, [](const hlo::Computation& c, std::vector<hlo::Literal> args) {
        return eval::Evaluate(c, std::move(args));
      });
    };
    return t;
  }

  // A copy of the module whose entry is `comp` with its tuple parameter
  // split into one parameter per element, compiled on its own.
  absl::StatusOr<std::shared_ptr<Executable>> CompileFlattened(const hlo::Computation* comp) {
    std::unique_ptr<hlo::Module> m = exe_->module_->Clone();
    hlo::Computation* c = nullptr;
    for (const auto& k : m->computations())
      if (k->name() == comp->name()) c = k.get();
    if (!c || c->num_parameters() != 1 || !c->parameter(0)->shape().IsTuple())
      return Unimplemented("%s: not a single tuple parameter", comp->name());
    Instruction* p = c->parameter(0);
    const auto& shapes = p->shape().tuple_shapes;
    std::vector<Instruction*> params;
    for (size_t k = 0; k < shapes.size(); ++k) {
      if (!shapes[k].IsArray()) return Unimplemented("%s: nested tuple state", comp->name());
      auto np = std::make_unique<Instruction>(Opcode::kParameter, shapes[k]);
      np->parameter_number = k + 1;  // renumbered once the tuple parameter is gone
      np->set_name(absl::StrCat("state_", k));
      params.push_back(c->AddInstruction(std::move(np)));
    }
    std::vector<Instruction*> gtes;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kGetTupleElement && i->operand(0) == p) gtes.push_back(i.get());
    for (Instruction* g : gtes) c->ReplaceAllUsesWith(g, params[g->tuple_index]);
    for (const auto& i : c->instructions())
      for (Instruction* op : i->operands())
        if (op == p && i->opcode() != Opcode::kGetTupleElement) return Unimplemented("%s: the state tuple is used whole", comp->name());
    if (c->root() == p) return Unimplemented("%s: returns its parameter", comp->name());
    c->Canonicalize();  // drops the replaced get-tuple-elements
    c->RemoveInstruction(p);
    for (Instruction* np : params) np->parameter_number -= 1;
    m->set_entry(c);
    m->RemoveUnreachableComputations();
    CompileOptions opts = options_;
    ASSIGN_OR_RETURN(std::unique_ptr<Executable> e, Executable::Compile(std::move(m), opts));
    return std::shared_ptr<Executable>(std::move(e));
  }

  // while: the condition and body run as compiled programs over two state
  // buffers that swap every iteration.
  std::optional<Thunk> NativeWhileThunk(Instruction* i, ThunkIo io) {
    auto body = CompileFlattened(i->called_computations()[0]);
    auto cond = CompileFlattened(i->called_computations()[1]);
    if (!body.ok() || !cond.ok()) return std::nullopt;
    std::shared_ptr<Executable> b = *body, c = *cond;
    exe_->keep_alive_.push_back(b);
    exe_->keep_alive_.push_back(c);
    std::vector<int64_t> sizes;
    for (const hlo::Shape& s : i->shape().tuple_shapes) sizes.push_back(s.ByteSize());
    Thunk t;
    t.name = i->name();
    t.run = [b, c, io, sizes](Frame& f) -> absl::Status {
      size_t n = sizes.size();
      std::vector<std::vector<uint8_t>> cur(n), next(n);
      for (size_t k = 0; k < n; ++k) {
        cur[k].resize(std::max<int64_t>(sizes[k], 1));
        next[k].resize(std::max<int64_t>(sizes[k], 1));
        std::memcpy(cur[k].data(), f.Ptr(io.inputs[k]), sizes[k]);
      }
      std::vector<const void*> args(n);
      std::vector<void*> outs(n);
      while (true) {
        for (size_t k = 0; k < n; ++k) args[k] = cur[k].data();
        bool go = false;
        void* pred = &go;
        RETURN_IF_ERROR(c->Execute(args, absl::Span<void* const>(&pred, 1)));
        if (!go) break;
        for (size_t k = 0; k < n; ++k) outs[k] = next[k].data();
        RETURN_IF_ERROR(b->Execute(args, outs));
        std::swap(cur, next);
      }
      for (size_t k = 0; k < n; ++k) std::memcpy(f.Ptr(io.outputs[k]), cur[k].data(), sizes[k]);
      return absl::OkStatus();
    };
    return t;
  }

  // conditional: every branch compiled as a program over the leaves of its
  // operand; the predicate (true runs branch 0) or s32 index picks one per
  // run, out-of-range indices the last branch (XLA's rule). Results go
  // through scratch buffers because the arena may give an output the slot of
  // an operand whose last use this is.
  std::optional<Thunk> NativeConditionalThunk(Instruction* i, ThunkIo io) {
    hlo::PrimitiveType selector = i->operand(0)->shape().element_type;
    if (selector != hlo::PRED && selector != hlo::S32) return std::nullopt;
    std::vector<std::shared_ptr<Executable>> branches;
    for (const hlo::Computation* c : i->called_computations()) {
      auto e = CompileFlattened(c);
      if (!e.ok()) return std::nullopt;
      branches.push_back(*std::move(e));
    }
    if (branches.size() + 1 != static_cast<size_t>(i->operand_count())) return std::nullopt;
    for (const auto& e : branches) exe_->keep_alive_.push_back(e);
    std::vector<std::pair<size_t, size_t>> ranges;  // each branch operand's first leaf in io.inputs, and count
    for (size_t k = 1, at = 1; k < static_cast<size_t>(i->operand_count()); ++k) {
      size_t n = leaves_.at(i->operand(k)).size();
      ranges.push_back({at, n});
      at += n;
    }
    std::vector<int64_t> sizes;
    if (i->shape().IsTuple())
      for (const hlo::Shape& s : i->shape().tuple_shapes) sizes.push_back(s.ByteSize());
    else
      sizes.push_back(i->shape().ByteSize());
    if (sizes.size() != io.outputs.size()) return std::nullopt;
    Thunk t;
    t.name = i->name();
    t.run = [branches, ranges, sizes, io, selector](Frame& f) -> absl::Status {
      const void* sel = f.Ptr(io.inputs[0]);
      int64_t n = branches.size(), k;
      if (selector == hlo::PRED) {
        k = *static_cast<const bool*>(sel) ? 0 : 1;
      } else {
        k = *static_cast<const int32_t*>(sel);
        if (k < 0 || k >= n) k = n - 1;
      }
      std::vector<const void*> args;
      for (size_t j = 0; j < ranges[k].second; ++j) args.push_back(f.Ptr(io.inputs[ranges[k].first + j]));
      std::vector<std::vector<uint8_t>> scratch(sizes.size());
      std::vector<void*> outs;
      for (size_t j = 0; j < sizes.size(); ++j) {
        scratch[j].resize(std::max<int64_t>(sizes[j], 1));
        outs.push_back(scratch[j].data());
      }
      RETURN_IF_ERROR(branches[k]->Execute(args, outs));
      for (size_t j = 0; j < sizes.size(); ++j) std::memcpy(f.Ptr(io.outputs[j]), scratch[j].data(), sizes[j]);
      return absl::OkStatus();
    };
    return t;
  }

  // Calls run on the reference evaluator (and control flow the native thunks
  // decline): operands are copied into literals and the result leaves copied
  // back.
  Thunk EvaluatorThunk(Instruction* i, ThunkIo io) {
    Thunk t;
    t.name = i->name();
    t.run = [i, io](Frame& f) -> absl::Status {
      std::vector<hlo::Literal> vals;
      size_t leaf = 0;
      for (Instruction* op : i->operands()) {
        hlo::Literal l(op->shape());
        std::vector<void*> dst;
        if (l.shape().IsTuple()) for (auto& e : l.tuple_elements()) dst.push_back(e.untyped_data());
        else dst.push_back(l.untyped_data());
        std::vector<hlo::Shape> shapes = op->shape().IsTuple() ? op->shape().tuple_shapes : std::vector<hlo::Shape>{op->shape()};
        for (size_t k = 0; k < dst.size(); ++k) std::memcpy(dst[k], f.Ptr(io.inputs[leaf++]), shapes[k].ByteSize());
        vals.push_back(std::move(l));
      }
      std::vector<const hlo::Literal*> ptrs;
      for (auto& v : vals) ptrs.push_back(&v);
      ASSIGN_OR_RETURN(hlo::Literal r, eval::EvaluateInstruction(*i, ptrs));
      if (r.shape().IsTuple()) {
        for (size_t k = 0; k < r.tuple_elements().size(); ++k)
          std::memcpy(f.Ptr(io.outputs[k]), r.tuple_elements()[k].untyped_data(), r.tuple_elements()[k].size_bytes());
      } else {
        std::memcpy(f.Ptr(io.outputs[0]), r.untyped_data(), r.size_bytes());
      }
      return absl::OkStatus();
    };
    return t;
  }

  std::unique_ptr<Executable> exe_;
  CompileOptions options_;
  std::vector<Instruction*> order_;
  absl::flat_hash_map<const Instruction*, int64_t> pos_;
  absl::flat_hash_map<const Instruction*, std::vector<Instruction*>> users_;
  std::vector<std::vector<Instruction*>> groups_;
  absl::flat_hash_map<const Instruction*, int> member_group_;
  absl::flat_hash_set<const Instruction*> absorbed_broadcast_;
  absl::flat_hash_set<const Instruction*> unused_;
  // Row fusions, their members' groups, and the reshapes and broadcasts only
  // row fusions read.
  std::vector<RowGroup> row_groups_;
  absl::flat_hash_map<const Instruction*, int> row_group_of_;
  absl::flat_hash_map<Instruction*, int64_t> row_views_;            // view -> last emit position reading it
  absl::flat_hash_map<const Instruction*, int64_t> row_internal_;  // view only row fusions read -> that position
  absl::flat_hash_map<const Instruction*, Epilogue> epilogue_;          // conv or dot -> its epilogue
  absl::flat_hash_map<const Instruction*, Instruction*> epilogue_last_;  // conv or dot -> last absorbed op
  absl::flat_hash_map<const Instruction*, Instruction*> absorbed_into_;  // absorbed op -> its conv or dot
  absl::flat_hash_set<const Instruction*> blocked_;  // conv results kept in oneDNN's blocked layout
  struct PlannedView {
    Instruction* source;  // the materialized value the view reads
    StridedView view;
  };
  absl::flat_hash_map<const Instruction*, std::array<std::optional<PlannedView>, 2>> dot_views_;  // dot -> operand views
  absl::flat_hash_set<const Instruction*> viewed_;  // ops dots read through views, never computed
  absl::flat_hash_map<const Instruction*, std::vector<BufferRef>> leaves_;
};

namespace {

// XONNX_DUMP_TO=DIR, this backend's counterpart of XLA's --xla_dump_to: each
// program compiled writes DIR/<module>.<pid>.<n>.cpu.txt with the HLO it
// runs (after the backend's passes) and its kernels in order, to see what
// became of a model's ops. A dump that cannot be written is a warning: it
// never fails the compilation.
void MaybeDump(const Executable& exe) {
  const char* dir = std::getenv("XONNX_DUMP_TO");
  if (!dir || !*dir) return;
  static std::atomic<int> counter{0};
  std::string name = exe.module().name();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
  std::filesystem::path path =
      std::filesystem::path(dir) / absl::StrCat(name, ".", ::getpid(), ".", counter++, ".cpu.txt");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream f(path);
  f << "# The program as the CPU backend runs it, after its passes.\n"
    << hlo::ToText(exe.module()) << "\n# Kernels in run order (" << exe.arena_bytes()
    << " bytes of working memory per call):\n"
    << exe.KernelListing();
  f.close();
  if (!f) std::cerr << "xonnx: warning: cannot write " << path.string() << " (XONNX_DUMP_TO)\n";
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executable>> Executable::Compile(std::unique_ptr<hlo::Module> module,
                                                                const CompileOptions& options) {
  UpcastHalfPrecision upcast;
  RETURN_IF_ERROR(upcast.Run(module.get()).status());
  if (options.use_dnnl) RETURN_IF_ERROR(RunLayoutPasses(module.get()));
  Compiler c(std::move(module), options);
  ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, c.Run());
  MaybeDump(*exe);
  return exe;
}

}  // namespace xonnx::cpu
