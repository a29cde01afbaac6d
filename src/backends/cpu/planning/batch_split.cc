#include "backends/cpu/planning/batch_split.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "passes/dce.h"

namespace xonnx::cpu {

namespace {

using hlo::Instruction;
using hlo::Opcode;

// Instructions reachable from the root, operands first.
std::vector<const Instruction*> PostOrder(const hlo::Computation& c) {
  std::vector<const Instruction*> order;
  absl::flat_hash_set<const Instruction*> seen;
  std::vector<std::pair<const Instruction*, size_t>> stack = {{c.root(), 0}};
  seen.insert(c.root());
  while (!stack.empty()) {
    auto& [i, next] = stack.back();
    if (next < i->operands().size()) {
      const Instruction* op = i->operand(next++);
      if (seen.insert(op).second) stack.push_back({op, 0});
      continue;
    }
    order.push_back(i);
    stack.pop_back();
  }
  return order;
}

// A literal seen as [outer, dims[d], inner bytes]: the rows along dim d.
struct RowView {
  int64_t outer = 1, inner = 0;
  explicit RowView(const hlo::Shape& s, int64_t d) : inner(hlo::ByteWidth(s.element_type)) {
    for (int64_t k = 0; k < d; ++k) outer *= s.dims[k];
    for (int64_t k = d + 1; k < s.rank(); ++k) inner *= s.dims[k];
  }
};

// Whether a literal's slices along dim d are all equal.
bool RowsEqual(const hlo::Literal& l, int64_t d) {
  const hlo::Shape& s = l.shape();
  const auto [outer, inner] = RowView(s, d);
  const uint8_t* b = static_cast<const uint8_t*>(l.untyped_data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 1; r < s.dims[d]; ++r)
      if (std::memcmp(b + (o * s.dims[d] + r) * inner, b + o * s.dims[d] * inner, inner) != 0) return false;
  return true;
}

// The rows [0, rows) of a literal along dim d.
hlo::Literal FirstRows(const hlo::Literal& l, int64_t d, int64_t rows) {
  hlo::Shape s = l.shape();
  const auto [outer, inner] = RowView(s, d);
  const int64_t full = s.dims[d];
  s.dims[d] = rows;
  hlo::Literal out(s);
  const uint8_t* src = static_cast<const uint8_t*>(l.untyped_data());
  uint8_t* dst = static_cast<uint8_t*>(out.untyped_data());
  for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * rows * inner, src + o * full * inner, rows * inner);
  return out;
}

// Finds which values carry the batch. Values that the rules make carry it
// without reading it (a broadcast constant an activation is added to) are
// found during a walk; another walk then starts from them too, until no new
// ones appear.
class RowAnalysis {
 public:
  RowAnalysis(const hlo::Computation& entry, int64_t batch) : entry_(entry), order_(PostOrder(entry)), batch_(batch) {}

  bool Run() {
    for (int walk = 0; walk < 8; ++walk) {
      size_t uniform = uniform_.size();
      if (!Walk()) return false;
      if (uniform_.size() == uniform) return Outputs();
    }
    return false;
  }
  absl::flat_hash_map<const Instruction*, int64_t> dims() { return std::move(dim_); }

 private:
  int64_t Tag(const Instruction* i) const {
    auto it = dim_.find(i);
    return it == dim_.end() ? -1 : it->second;
  }

  // Whether untagged value v can carry the batch along d: the same for
  // every row (a constant with equal rows, a broadcast along d, an iota
  // along another dim, elementwise ops of such values). Marks them.
  bool Uniform(const Instruction* v, int64_t d) {
    if (v->shape().rank() == 0) return true;
    if (!v->shape().IsArray() || d >= v->shape().rank() || v->shape().dims[d] != batch_) return false;
    if (auto it = uniform_.find(v); it != uniform_.end()) return it->second == d;
    bool ok = false;
    switch (v->opcode()) {
      case Opcode::kConstant:
        ok = RowsEqual(*v->literal, d);
        break;
      case Opcode::kIota:
        ok = v->dimensions.at(0) != d;
        break;
      case Opcode::kBroadcast: {
        auto from = std::find(v->dimensions.begin(), v->dimensions.end(), d);
        ok = from == v->dimensions.end() || Uniform(v->operand(0), from - v->dimensions.begin());
        break;
      }
      default:
        if (hlo::IsElementwise(v->opcode())) {
          ok = true;
          for (const Instruction* op : v->operands()) ok = ok && Uniform(op, d);
        }
        break;
    }
    if (ok) uniform_[v] = d;
    return ok;
  }

  // An operand read at dim d: tagged there, or made to carry the batch.
  bool ReadAt(const Instruction* op, int64_t d) {
    int64_t t = Tag(op);
    return t >= 0 ? t == d : Uniform(op, d);
  }

  // The dim of i's result that carries the batch, -1 for none, -2 when i
  // mixes rows.
  int64_t Rule(const Instruction* i) {
    constexpr int64_t kMixes = -2;
    std::vector<int64_t> tags;
    bool any = false;
    for (const Instruction* op : i->operands()) {
      tags.push_back(Tag(op));
      any |= tags.back() >= 0;
    }
    if (!any) return -1;
    const Instruction* x = i->operand(0);
    int64_t d = tags[0];
    switch (i->opcode()) {
      case Opcode::kBroadcast:
        return i->dimensions[d];
      case Opcode::kTranspose:
        return std::find(i->dimensions.begin(), i->dimensions.end(), d) - i->dimensions.begin();
      case Opcode::kReshape: {
        // The batch dim must stay whole, with the same elements before it.
        int64_t before = 1;
        for (int64_t k = 0; k < d; ++k) before *= x->shape().dims[k];
        int64_t prod = 1;
        for (int64_t k = 0; k < i->shape().rank(); ++k) {
          if (prod == before && i->shape().dims[k] == batch_) return k;
          prod *= i->shape().dims[k];
        }
        return kMixes;
      }
      case Opcode::kSlice:
        return i->slice_starts[d] == 0 && i->slice_limits[d] == batch_ && i->slice_strides[d] == 1 ? d : kMixes;
      case Opcode::kReverse:
      case Opcode::kSort:
        if (i->operand_count() != 1 || !i->shape().IsArray()) return kMixes;
        return std::find(i->dimensions.begin(), i->dimensions.end(), d) == i->dimensions.end() ? d : kMixes;
      case Opcode::kPad: {
        const hlo::PaddingDimension& p = i->padding_config[d];
        return tags[1] < 0 && p.edge_padding_low == 0 && p.edge_padding_high == 0 && p.interior_padding == 0 ? d
                                                                                                             : kMixes;
      }
      case Opcode::kReduce: {
        if (i->operand_count() != 2 || tags[1] >= 0 || !i->shape().IsArray()) return kMixes;
        if (std::find(i->dimensions.begin(), i->dimensions.end(), d) != i->dimensions.end()) return kMixes;
        return d - std::count_if(i->dimensions.begin(), i->dimensions.end(), [&](int64_t k) { return k < d; });
      }
      case Opcode::kReduceWindow: {
        if (i->operand_count() != 2 || tags[1] >= 0) return kMixes;
        const hlo::WindowDimension& w = i->window.dimensions[d];
        bool unit = w.size == 1 && w.stride == 1 && w.padding_low == 0 && w.padding_high == 0 &&
                    w.window_dilation == 1 && w.base_dilation == 1;
        return unit ? d : kMixes;
      }
      case Opcode::kConvolution:
        if (d != i->conv_dnums.input_batch_dimension || tags[1] >= 0 || i->batch_group_count != 1) return kMixes;
        return i->conv_dnums.output_batch_dimension;
      case Opcode::kDot:
        return DotRule(i, tags[0], tags[1]);
      default:
        break;
    }
    if (!hlo::IsElementwise(i->opcode()) && i->opcode() != Opcode::kConcatenate) return kMixes;
    // Every operand read at the same dim.
    int64_t at = -1;
    for (int64_t t : tags)
      if (t >= 0) {
        if (at >= 0 && t != at) return kMixes;
        at = t;
      }
    if (i->opcode() == Opcode::kConcatenate && i->dimensions[0] == at) return kMixes;
    for (const Instruction* op : i->operands())
      if (!ReadAt(op, at)) return kMixes;
    return at;
  }

  // The batch as a batch dim of both operands, or a free dim of one whose
  // other operand does not have it.
  int64_t DotRule(const Instruction* i, int64_t l, int64_t r) {
    const hlo::DotDimensionNumbers& d = i->dot_dnums;
    const int64_t nb = d.lhs_batch_dimensions.size();
    auto position = [](const std::vector<int64_t>& v, int64_t k) {
      auto it = std::find(v.begin(), v.end(), k);
      return it == v.end() ? -1 : it - v.begin();
    };
    auto free_index = [&](const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting, int64_t k) {
      int64_t index = 0;
      for (int64_t j = 0; j < k; ++j) index += position(batch, j) < 0 && position(contracting, j) < 0;
      return index;
    };
    const int64_t lhs_free = i->operand(0)->shape().rank() - nb - d.lhs_contracting_dimensions.size();
    if (l >= 0) {
      if (position(d.lhs_contracting_dimensions, l) >= 0) return -2;
      if (int64_t p = position(d.lhs_batch_dimensions, l); p >= 0)
        return ReadAt(i->operand(1), d.rhs_batch_dimensions[p]) ? p : -2;
      if (r >= 0) return -2;
      return nb + free_index(d.lhs_batch_dimensions, d.lhs_contracting_dimensions, l);
    }
    if (position(d.rhs_contracting_dimensions, r) >= 0) return -2;
    if (int64_t p = position(d.rhs_batch_dimensions, r); p >= 0)
      return ReadAt(i->operand(0), d.lhs_batch_dimensions[p]) ? p : -2;
    return nb + lhs_free + free_index(d.rhs_batch_dimensions, d.rhs_contracting_dimensions, r);
  }

  bool Walk() {
    dim_.clear();
    for (const Instruction* i : order_) {
      if (i->opcode() == Opcode::kParameter) {
        if (i->shape().IsArray() && i->shape().rank() >= 1 && i->shape().dims[0] == batch_) dim_[i] = 0;
        continue;
      }
      if (auto u = uniform_.find(i); u != uniform_.end()) {
        dim_[i] = u->second;
        continue;
      }
      if (i == entry_.root() && i->opcode() == Opcode::kTuple) continue;
      int64_t d = Rule(i);
      if (d == -2) return false;
      if (d >= 0) dim_[i] = d;
    }
    return true;
  }

  // Every result has the batch as its dim 0, and nothing else reads a
  // value that carries it without carrying it too.
  bool Outputs() {
    const Instruction* root = entry_.root();
    std::vector<const Instruction*> outs = {root};
    if (root->opcode() == Opcode::kTuple) outs.assign(root->operands().begin(), root->operands().end());
    for (const Instruction* o : outs)
      if (Tag(o) != 0) return false;
    for (const Instruction* i : order_) {
      if (i == root || Tag(i) >= 0) continue;
      for (const Instruction* op : i->operands())
        if (Tag(op) >= 0) return false;
    }
    return true;
  }

  const hlo::Computation& entry_;
  std::vector<const Instruction*> order_;
  int64_t batch_;
  absl::flat_hash_map<const Instruction*, int64_t> dim_, uniform_;
};

}  // namespace

std::optional<BatchRows> FindBatchRows(const hlo::Computation& entry) {
  std::vector<Instruction*> params = entry.parameters();
  if (params.empty() || !params[0]->shape().IsArray() || params[0]->shape().rank() < 1) return std::nullopt;
  const int64_t batch = params[0]->shape().dims[0];
  if (batch < 2) return std::nullopt;
  RowAnalysis a(entry, batch);
  if (!a.Run()) return std::nullopt;
  return BatchRows{batch, a.dims()};
}

std::optional<BatchSplit> SplitBatch(const hlo::Module& module, int64_t rows) {
  std::unique_ptr<hlo::Module> part = module.Clone();
  if (!passes::Dce().Run(part.get()).ok()) return std::nullopt;
  hlo::Computation* entry = part->entry();
  std::optional<BatchRows> found = FindBatchRows(*entry);
  if (!found || rows < 1 || found->batch % rows != 0 || rows == found->batch) return std::nullopt;
  BatchSplit split;
  split.rows = rows;
  split.parts = found->batch / rows;
  for (const Instruction* p : entry->parameters()) split.split_param.push_back(found->dim.contains(p));
  for (const auto& owned : entry->instructions()) {
    Instruction* i = owned.get();
    auto it = found->dim.find(i);
    if (it == found->dim.end()) continue;
    const int64_t d = it->second;
    hlo::Shape s = i->shape();
    s.dims[d] = rows;
    i->set_shape(s);
    if (i->opcode() == Opcode::kSlice) i->slice_limits[d] = rows;
    if (i->opcode() == Opcode::kConstant) i->literal = FirstRows(*i->literal, d, rows);
  }
  Instruction* root = entry->root();
  if (root->opcode() == Opcode::kTuple) {
    std::vector<hlo::Shape> shapes;
    for (const Instruction* op : root->operands()) shapes.push_back(op->shape());
    root->set_shape(hlo::Shape::Tuple(shapes));
  }
  split.part = std::move(part);
  return split;
}

}  // namespace xonnx::cpu
