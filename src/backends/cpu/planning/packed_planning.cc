// Products by block-quantized weights on their packed bytes. The importer
// writes MatMulNBits (4- or 8-bit weights in blocks along K, a scale and a
// zero point per block) in one form:
//   q = u8 [N, blocks, block]: the bytes themselves (8 bits), or
//       reshape(concatenate(reshape(and(p, 15)), reshape(shift-right(p, 4))))
//       of bytes p [N, blocks, block / 2] (4 bits: low nibble first)
//   w = (convert<f32>(q) - broadcast(zero)) * broadcast(scales [N, blocks])
//   W = [slice](reshape(w, [N, blocks * block]))
//   y = dot(x [..., K], W [N, K])
// with the zero a scalar or an f32 [N, blocks] value. Computed as written,
// the program unpacks and dequantizes every weight on every call (8x the
// bytes of 4-bit weights written and read again), where a decoder's step is
// bound by reading its weights once. This planner finds the form, checks
// every part of it (the masks, the shifts, the order of the nibbles, the
// shapes), and gives the dot the packed bytes, the scales and the zero
// points to read instead; the ops between them are never computed. A
// product that does not match exactly keeps the form as written.
#include <optional>
#include <vector>

#include "backends/cpu/kernels/cpu_features.h"
#include "backends/cpu/planning/planners.h"
#include "evaluator/evaluator.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// The value of a scalar constant, a broadcast of one, or a constant whose
// elements are all equal.
std::optional<double> UniformValue(const Instruction* i) {
  if (std::optional<double> v = ScalarValue(i)) return v;
  if (i->opcode() == Opcode::kConstant && i->literal->element_count() > 0 && i->literal->IsUniform())
    return i->literal->GetAsDouble(0);
  return std::nullopt;
}

// The value under row-major reshapes of `i` (which keep its bytes in
// order), recording the reshapes in `chain`.
const Instruction* UnderReshapes(const Instruction* i, std::vector<const Instruction*>* chain) {
  while (i->opcode() == Opcode::kReshape) {
    chain->push_back(i);
    i = i->operand(0);
  }
  return i;
}

// The values of an expression of constants alone, evaluated, or nullopt.
std::optional<hlo::Literal> ConstantExpression(const Instruction* i) {
  if (i->opcode() == Opcode::kConstant) return *i->literal;
  if (!i->shape().IsArray() || i->operand_count() == 0 || i->opcode() == Opcode::kParameter ||
      i->opcode() == Opcode::kRngBitGenerator)
    return std::nullopt;
  std::vector<hlo::Literal> values;
  for (const Instruction* op : i->operands()) {
    std::optional<hlo::Literal> v = ConstantExpression(op);
    if (!v) return std::nullopt;
    values.push_back(*std::move(v));
  }
  std::vector<const hlo::Literal*> ptrs;
  for (const hlo::Literal& v : values) ptrs.push_back(&v);
  absl::StatusOr<hlo::Literal> r = eval::EvaluateInstruction(*i, ptrs);
  if (!r.ok()) return std::nullopt;
  return *std::move(r);
}

// The literal of `i` when it is a constant of `type` with `count` elements.
const hlo::Literal* ConstantOf(const Instruction* i, hlo::PrimitiveType type, int64_t count) {
  if (!i || i->opcode() != Opcode::kConstant || i->shape().element_type != type || i->literal->element_count() != count)
    return nullptr;
  return &*i->literal;
}

// An f32 constant whose values are all whole numbers in [0, 255], as u8.
std::shared_ptr<const hlo::Literal> NarrowedBytes(const Instruction* i) {
  if (i->opcode() != Opcode::kConstant || i->shape().element_type != hlo::F32) return nullptr;
  auto bytes = std::make_shared<hlo::Literal>(hlo::Shape(hlo::U8, i->shape().dims));
  const float* from = i->literal->data<float>();
  uint8_t* to = bytes->data<uint8_t>();
  for (int64_t k = 0; k < i->literal->element_count(); ++k) {
    if (!(from[k] >= 0 && from[k] <= 255) || from[k] != static_cast<float>(static_cast<int>(from[k]))) return nullptr;
    to[k] = static_cast<uint8_t>(from[k]);
  }
  return bytes;
}

bool Is(const Instruction* i, Opcode op, hlo::PrimitiveType t) {
  return i->opcode() == op && i->shape().element_type == t;
}

// A broadcast of an [N, blocks] value to [N, blocks, block] along the
// first two dims: that value, else null.
const Instruction* PerBlock(const Instruction* b, int64_t n, int64_t blocks) {
  if (b->opcode() != Opcode::kBroadcast || b->dimensions != std::vector<int64_t>{0, 1}) return nullptr;
  const Instruction* v = b->operand(0);
  if (v->shape().element_type != hlo::F32 || v->shape().dims != std::vector<int64_t>{n, blocks}) return nullptr;
  return v;
}

// The 4-bit unpacking of bytes p [N, blocks, block / 2] into q [N, blocks,
// block], low nibble first: p, else null.
const Instruction* Nibbles(const Instruction* q, std::vector<const Instruction*>* chain) {
  const std::vector<int64_t>& d = q->shape().dims;
  if (q->opcode() != Opcode::kReshape || d[2] % 2) return nullptr;
  const Instruction* c = q->operand(0);
  if (c->opcode() != Opcode::kConcatenate || c->operand_count() != 2 || c->dimensions != std::vector<int64_t>{3} ||
      c->shape().dims != std::vector<int64_t>{d[0], d[1], d[2] / 2, 2})
    return nullptr;
  const Instruction* lo = c->operand(0);
  const Instruction* hi = c->operand(1);
  if (lo->opcode() != Opcode::kReshape || hi->opcode() != Opcode::kReshape) return nullptr;
  const Instruction* mask = lo->operand(0);
  const Instruction* shift = hi->operand(0);
  if (!Is(mask, Opcode::kAnd, hlo::U8) || !Is(shift, Opcode::kShiftRightLogical, hlo::U8) ||
      mask->operand(0) != shift->operand(0) || UniformValue(mask->operand(1)) != 15.0 ||
      UniformValue(shift->operand(1)) != 4.0)
    return nullptr;
  const Instruction* p = mask->operand(0);
  if (p->shape().dims != std::vector<int64_t>{d[0], d[1], d[2] / 2}) return nullptr;
  chain->insert(chain->end(), {q, c, lo, hi, mask, shift, mask->operand(1), shift->operand(1)});
  return p;
}

// The packed weights `w` (a dot's [N, K] operand) reads, or nullopt; the
// ops between them and the dot go to `chain`.
std::optional<PackedWeights> MatchPacked(const Instruction* w, std::vector<const Instruction*>* chain) {
  if (w->shape().rank() != 2 || w->shape().element_type != hlo::F32) return std::nullopt;
  const int64_t n = w->shape().dims[0], k = w->shape().dims[1];
  const Instruction* x = w;
  // The dot canonicalization's reshape of an operand to the dims it has.
  while (x->opcode() == Opcode::kReshape && x->operand(0)->shape().dims == x->shape().dims) {
    chain->push_back(x);
    x = x->operand(0);
  }
  if (x->opcode() == Opcode::kSlice) {  // K short of whole blocks
    const Instruction* whole = x->operand(0);
    if (x->slice_starts != std::vector<int64_t>{0, 0} || x->slice_strides != std::vector<int64_t>{1, 1} ||
        whole->shape().dims[0] != n)
      return std::nullopt;
    chain->push_back(x);
    x = whole;
  }
  if (x->opcode() != Opcode::kReshape || x->operand(0)->shape().rank() != 3) return std::nullopt;
  chain->push_back(x);
  const Instruction* m = x->operand(0);
  const std::vector<int64_t> d = m->shape().dims;  // [N, blocks, block]
  if (d[0] != n || d[1] * d[2] < k || d[1] * d[2] - k >= d[2] || !Is(m, Opcode::kMultiply, hlo::F32))
    return std::nullopt;
  PackedWeights p;
  p.n = n;
  p.k = k;
  p.blocks = d[1];
  p.block = d[2];
  const Instruction* sub = m->operand(0);
  const Instruction* scales = PerBlock(m->operand(1), n, p.blocks);
  if (!scales || !Is(sub, Opcode::kSubtract, hlo::F32)) return std::nullopt;
  chain->insert(chain->end(), {m, m->operand(1), sub, sub->operand(1)});
  p.scales = UnderReshapes(scales, chain);
  if (const Instruction* z = PerBlock(sub->operand(1), n, p.blocks)) {
    // Zero points unpacked from constant bytes (a few per weight row):
    // unpacked here once instead of on every call.
    if (std::optional<hlo::Literal> v = ConstantExpression(z)) {
      p.zero_values = std::make_shared<const hlo::Literal>(*std::move(v));
      for (std::vector<const Instruction*> stack = {z}; !stack.empty();) {
        const Instruction* e = stack.back();
        stack.pop_back();
        chain->push_back(e);
        stack.insert(stack.end(), e->operands().begin(), e->operands().end());
      }
    } else {
      p.zeros = UnderReshapes(z, chain);
    }
  } else if (std::optional<double> z = UniformValue(sub->operand(1))) {
    p.zero = static_cast<float>(*z);
  } else {
    return std::nullopt;
  }
  const Instruction* cv = sub->operand(0);
  // 8-bit weights of a constant: folded to f32 by the constant folding
  // (its convert is not a broadcast), narrowed back here.
  if (std::shared_ptr<const hlo::Literal> bytes = NarrowedBytes(cv)) {
    p.bits = 8;
    p.packed_values = std::move(bytes);
    chain->push_back(cv);
    if (p.block < 16 || (p.block & (p.block - 1))) return std::nullopt;
    return p;
  }
  if (cv->opcode() != Opcode::kConvert || cv->operand(0)->shape().element_type != hlo::U8) return std::nullopt;
  chain->push_back(cv);
  const Instruction* q = cv->operand(0);
  if (const Instruction* bytes = Nibbles(q, chain)) {
    p.bits = 4;
    p.packed = UnderReshapes(bytes, chain);
  } else {
    p.bits = 8;
    p.packed = UnderReshapes(q, chain);
  }
  if (p.block < 16 || (p.block & (p.block - 1))) return std::nullopt;  // the kernel's chunks
  p.packed_constant = ConstantOf(p.packed, hlo::U8, p.n * p.blocks * p.block * p.bits / 8);
  p.scales_constant = ConstantOf(p.scales, hlo::F32, p.n * p.blocks);
  return p;
}

// Whether `dot` is y [..., N] = x [..., K] . W [N, K] in f32: x's last dim
// contracted with W's second, no batch dims.
bool RowsByWeights(const Instruction* dot) {
  if (dot->opcode() != Opcode::kDot) return false;
  const hlo::DotDimensionNumbers& d = dot->dot_dnums;
  const Instruction* x = dot->operand(0);
  return dot->shape().element_type == hlo::F32 && x->shape().element_type == hlo::F32 && x->shape().rank() >= 1 &&
         d.lhs_batch_dimensions.empty() &&
         d.lhs_contracting_dimensions == std::vector<int64_t>{x->shape().rank() - 1} &&
         d.rhs_contracting_dimensions == std::vector<int64_t>{1};
}

}  // namespace

void PlanPackedProducts(Plan* plan) {
  // The kernel's vector form needs AVX-512 (F, BW, VL, DQ); elsewhere the
  // program as written (fused unpacking, oneDNN's product) is the faster.
  if (!CpuHasAvx512Bw()) return;
  auto& pp = plan->packed_products;
  std::vector<const Instruction*> between;  // ops between the products and what they read
  for (Instruction* dot : plan->order()) {
    if (!RowsByWeights(dot)) continue;
    std::vector<const Instruction*> chain;
    std::optional<PackedWeights> w = MatchPacked(dot->operand(1), &chain);
    if (!w) continue;
    auto allowed = dot->frontend_attributes.find(hlo::kInt8ActivationsAttribute);
    w->int8_activations = allowed != dot->frontend_attributes.end() && allowed->second == "true" && CpuHasAvx512Vnni();
    for (const Instruction* v : {w->packed, w->scales, w->zeros})
      if (v) pp.read.insert(v);
    pp.of[dot] = *w;
    between.insert(between.end(), chain.begin(), chain.end());
  }
  // Those ops are computed only for other readers: none is when all its
  // users are packed products reading it as their weights (not as the
  // activation, which the kernel reads as a buffer) or ops never computed
  // themselves.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Instruction* x : between) {
      if (x == plan->root() || x->opcode() == Opcode::kParameter || pp.replaced.contains(x) || pp.read.contains(x))
        continue;
      const auto& us = plan->users(x);
      if (std::all_of(us.begin(), us.end(), [&](Instruction* u) {
            return (pp.of.contains(u) && u->operand(0) != x) || pp.replaced.contains(u);
          })) {
        pp.replaced.insert(x);
        changed = true;
      }
    }
  }
}

void PlanSiblingProducts(Plan* plan) {
  auto& pp = plan->packed_products;
  // By activation (under the reshapes each product may read it through)
  // and by how they prepare it, in program order: the products the group
  // kernel takes, with the same K and blocks, which then share one
  // preparation of the activation.
  using Key = std::pair<const Instruction*, int>;  // the activation, how it is prepared
  absl::flat_hash_map<Key, std::vector<Instruction*>> by_x;
  std::vector<Key> activations;
  for (Instruction* dot : plan->order()) {
    auto w = pp.of.find(dot);
    // Its weights' own ops never run (a later member moves above them).
    if (w == pp.of.end() || !pp.replaced.contains(dot->operand(1))) continue;
    const int shared = PackedDotSharedPreparation(*dot, w->second);
    if (shared == 0) continue;
    std::vector<const Instruction*> chain;
    const Key key(UnderReshapes(dot->operand(0), &chain), shared);
    auto& siblings = by_x[key];
    if (siblings.empty()) activations.push_back(key);
    if (siblings.empty() || PackedDotsSharePreparation(*siblings.front(), pp.of.at(siblings.front()), *dot, w->second))
      siblings.push_back(dot);
  }
  for (const Key& x : activations) {
    std::vector<Instruction*>& members = by_x.at(x);
    if (members.size() < 2) continue;
    const int g = static_cast<int>(pp.groups.size());
    for (Instruction* m : members) pp.group_of[m] = g;
    pp.groups.push_back(std::move(members));
  }
  if (pp.groups.empty()) return;
  // The later members move up next to the first, and the reshapes they
  // read the activation through (which read only the activation, defined
  // before the first) in front of it: the group's step reads them all.
  absl::flat_hash_map<const Instruction*, int> first_of;
  absl::flat_hash_set<const Instruction*> moved;
  std::vector<std::vector<Instruction*>> ahead(pp.groups.size());
  for (size_t g = 0; g < pp.groups.size(); ++g) {
    first_of[pp.groups[g].front()] = static_cast<int>(g);
    for (size_t k = 1; k < pp.groups[g].size(); ++k) {
      std::vector<Instruction*> chain;
      for (Instruction* r = pp.groups[g][k]->operand(0); r->opcode() == Opcode::kReshape; r = r->operand(0))
        chain.push_back(r);
      for (auto r = chain.rbegin(); r != chain.rend(); ++r)
        if (plan->pos(*r) > plan->pos(pp.groups[g].front()) && moved.insert(*r).second) ahead[g].push_back(*r);
      moved.insert(pp.groups[g][k]);
    }
  }
  std::vector<Instruction*> order;
  order.reserve(plan->order().size());
  for (Instruction* i : plan->order()) {
    if (auto f = first_of.find(i); f != first_of.end()) {
      order.insert(order.end(), ahead[f->second].begin(), ahead[f->second].end());
      order.insert(order.end(), pp.groups[f->second].begin(), pp.groups[f->second].end());
    } else if (!moved.contains(i)) {
      order.push_back(i);
    }
  }
  plan->Reorder(std::move(order));
}

}  // namespace xonnx::cpu
