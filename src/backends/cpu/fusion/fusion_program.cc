// Building the fused loop's program: nodes from a fusion spec, then its tables,
// one-pass quantizers, the nodes the block loop computes, and their slots.
#include "backends/cpu/fusion/fusion_program.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/status.h"

namespace xonnx::cpu {
namespace fused {

namespace {

using hlo::Opcode;

bool EightBit(hlo::PrimitiveType t) { return t == hlo::U8 || t == hlo::S8; }

}  // namespace

std::vector<int> BlockOperands(const Node& node) {
  if (node.table_source >= 0) return {node.table_source};
  if (!node.gelu.empty()) return node.gelu;
  std::vector<int> q;
  for (int k : node.quantize)
    if (k >= 0) q.push_back(k);
  return q.empty() ? node.operands : q;
}

namespace {

// Marks the nodes the block loop computes: those the result depends on
// through BlockOperands.
void MarkNeeded(Program* p) {
  for (Node& node : p->nodes) node.needed = false;
  p->nodes.back().needed = true;
  for (int k = p->nodes.size() - 1; k >= 0; --k)
    if (p->nodes[k].needed)
      for (int op : BlockOperands(p->nodes[k])) p->nodes[op].needed = true;
}

// Node k when it is an op node of opcode `op` and element type `type` not
// computed from a table (k < 0: none), else null: what the one-pass
// matchers below build on.
const Node* OpNode(const Program& p, int k, Opcode op, hlo::PrimitiveType type) {
  if (k < 0) return nullptr;
  const Node& n = p.nodes[k];
  return n.kind == Node::kOp && n.table_source < 0 && n.instr->opcode() == op && n.type == type ? &n : nullptr;
}

// Finds the quantizers (QuantizeLinear as imported) among the op nodes
// not computed from a table: a convert of f32 to u8 or s8 of
// clamp(lo, add(round-nearest-even(divide(x, scale)), zero point), hi),
// where x may be an integer product's rescaling, f32(acc) times a scale
// plus a bias (DequantizedProducts' epilogue). The nodes' work in one pass
// keeps the values in registers; the chain's inner nodes are then computed
// only if something else reads them.
void PlanQuantizers(Program* p) {
  auto op_node = [&](int k, Opcode op, hlo::PrimitiveType type = hlo::F32) { return OpNode(*p, k, op, type); };
  auto f32 = [&](int k) { return p->nodes[k].type == hlo::F32; };
  // The integer sum under x, with the multiplier and bias nodes (-1: none).
  auto rescaling = [&](int x, std::vector<int>* q) {
    int mul = -1, add = -1;
    if (const Node* a = op_node(x, Opcode::kAdd)) {
      for (int side : {0, 1})
        if (op_node(a->operands[side], Opcode::kMultiply) && f32(a->operands[1 - side])) {
          add = a->operands[1 - side];
          x = a->operands[side];
          break;
        }
      if (add < 0) return false;
    }
    if (const Node* m = op_node(x, Opcode::kMultiply)) {
      for (int side : {0, 1})
        if (op_node(m->operands[side], Opcode::kConvert) && f32(m->operands[1 - side])) {
          mul = m->operands[1 - side];
          x = m->operands[side];
          break;
        }
      if (mul < 0) return false;
    }
    const Node* c = op_node(x, Opcode::kConvert);
    if (!c || p->nodes[c->operands[0]].type != hlo::S32 || (mul < 0 && add < 0)) return false;
    (*q)[0] = c->operands[0];
    (*q)[5] = mul;
    (*q)[6] = add;
    return true;
  };
  for (Node& node : p->nodes) {
    if (node.kind != Node::kOp || node.table_source >= 0 || node.instr->opcode() != Opcode::kConvert) continue;
    if (!EightBit(node.type)) continue;
    const Node* clamp = op_node(node.operands[0], Opcode::kClamp);
    const Node* add = clamp ? op_node(clamp->operands[1], Opcode::kAdd) : nullptr;
    const Node* round = add ? op_node(add->operands[0], Opcode::kRoundNearestEven) : nullptr;
    const Node* divide = round ? op_node(round->operands[0], Opcode::kDivide) : nullptr;
    if (!divide) continue;
    std::vector<int> q = {
        divide->operands[0], divide->operands[1], add->operands[1], clamp->operands[0], clamp->operands[2], -1, -1};
    bool all_f32 = true;
    for (int k = 0; k < 5; ++k) all_f32 &= f32(q[k]);
    if (!all_f32) continue;
    node.quantize_acc = rescaling(q[0], &q);
    for (int k = 1; k < 7; ++k)
      if (q[k] >= 0 && p->nodes[q[k]].kind == Node::kInputScalar) node.quantize_scalar |= 1u << (k - 1);
    node.quantize = std::move(q);
  }
}

// Finds GELU's exact form among the op nodes not computed from a table:
// (x * u) * h or (x * h) * u with u = erf(s) + 1 and s = x / c or x * c,
// h and c scalar inputs and the 1 a constant (either operand order of each
// add and multiply: they commute exactly). Five passes over a block become
// one; the inner nodes are computed only if something else reads them.
// Quantized transformers run it in a loop between a product's rescaling
// and the next quantizer, where it cannot be the product's post-op.
void PlanGelus(Program* p) {
  // (A quantizer is a convert: never one of the ops matched here.)
  auto op_node = [&](int k, Opcode op) { return OpNode(*p, k, op, hlo::F32); };
  auto scalar = [&](int k) { return p->nodes[k].kind == Node::kInputScalar && p->nodes[k].type == hlo::F32; };
  auto is_one = [&](int k) {
    if (!scalar(k)) return false;
    const hlo::Instruction* v = p->nodes[k].instr->operand(0);
    return v->opcode() == Opcode::kConstant && v->literal->GetAsDouble(0) == 1.0;
  };
  // Whether u is erf(x / c or x * c) + 1 for this x; sets c and divide.
  auto erf_plus_one = [&](int u, int x, int* c, bool* divide) {
    const Node* add = op_node(u, Opcode::kAdd);
    for (int side = 0; add && side < 2; ++side) {
      const Node* erf = op_node(add->operands[side], Opcode::kErf);
      if (!erf || !is_one(add->operands[1 - side])) continue;
      int s = erf->operands[0];
      if (const Node* d = op_node(s, Opcode::kDivide); d && d->operands[0] == x && scalar(d->operands[1])) {
        *c = d->operands[1];
        *divide = true;
        return true;
      }
      const Node* m = op_node(s, Opcode::kMultiply);
      for (int k = 0; m && k < 2; ++k)
        if (m->operands[k] == x && scalar(m->operands[1 - k])) {
          *c = m->operands[1 - k];
          *divide = false;
          return true;
        }
    }
    return false;
  };
  for (size_t r = 0; r < p->nodes.size(); ++r) {
    const Node* root = op_node(r, Opcode::kMultiply);
    if (!root || root->operands[0] == root->operands[1]) continue;
    for (int side = 0; side < 2 && p->nodes[r].gelu.empty(); ++side) {
      const Node* inner = op_node(root->operands[side], Opcode::kMultiply);
      const int other = root->operands[1 - side];
      for (int k = 0; inner && k < 2; ++k) {
        const int x = inner->operands[k], y = inner->operands[1 - k];
        int c = -1;
        bool divide = false;
        if (scalar(other) && erf_plus_one(y, x, &c, &divide)) {  // (x * u) * h
          p->nodes[r].gelu = {x, c, other};
          p->nodes[r].gelu_half_first = false;
        } else if (scalar(y) && erf_plus_one(other, x, &c, &divide)) {  // (x * h) * u
          p->nodes[r].gelu = {x, c, y};
          p->nodes[r].gelu_half_first = true;
        } else {
          continue;
        }
        p->nodes[r].gelu_divide = divide;
        break;
      }
    }
  }
}

// Assigns the slots: a scalar input keeps its own (FillScalars fills it
// once per call); any other node takes a slot whose value no later node
// reads. The last node writes the fusion's result and takes none.
void AssignSlots(Program* p) {
  const int n = p->nodes.size();
  std::vector<int> last_use(n, -1);
  int width = 1;
  for (int k = 0; k < n; ++k) {
    if (!p->nodes[k].needed) continue;
    for (int op : BlockOperands(p->nodes[k])) last_use[op] = std::max(last_use[op], k);
    width = std::max(width, hlo::ByteWidth(p->nodes[k].type));
  }
  p->slot_bytes = static_cast<size_t>(kBlock) * width;
  p->slot.assign(n, -1);
  std::vector<int> owner;  // slot -> the node whose value it holds
  for (int k = 0; k + 1 < n; ++k) {
    const Node& node = p->nodes[k];
    if (!node.needed || node.kind == Node::kInputFull || (node.kind == Node::kInputBroadcast && node.period)) continue;
    bool pinned = node.kind == Node::kInputScalar;
    int s = -1;
    for (size_t c = 0; c < owner.size() && s < 0 && !pinned; ++c) {
      int o = owner[c];
      if (p->nodes[o].kind != Node::kInputScalar && last_use[o] < k) s = c;
    }
    if (s < 0) {
      s = owner.size();
      owner.push_back(k);
    }
    owner[s] = k;
    p->slot[k] = s;
  }
  p->slots = owner.size();
}

// Finds the chains worth a table (see Table): for each node, the one
// 8-bit node its value varies with, if any (scalar inputs are the same
// for every element of a call, periodic broadcasts the same at every
// position modulo their period), and the period it varies with; a table
// holds the last node of such a chain when the chain has at least two
// ops and the table pays for itself.
void PlanTables(Program* p) {
  constexpr int kInvariant = -2, kMixed = -1;
  constexpr int64_t kConflict = -1;
  // A periodic table of more bytes than this would be looked up from
  // beyond the L2 cache.
  constexpr int64_t kMaxTableBytes = 512 << 10;
  const int n = p->nodes.size();
  if (p->count < kBlock) return;
  std::vector<int> var(n, kMixed);
  std::vector<int64_t> period(n, 0);
  for (int k = 0; k < n; ++k) {
    Node& node = p->nodes[k];
    if (node.kind == Node::kInputScalar) {
      var[k] = kInvariant;
    } else if (node.kind == Node::kInputBroadcast && node.period > 0) {
      var[k] = kInvariant;
      period[k] = node.period;
    } else if (node.kind == Node::kOp) {
      var[k] = kInvariant;
      for (int op : node.operands) {
        if (period[op] != 0 && period[k] != period[op]) period[k] = period[k] == 0 ? period[op] : kConflict;
        if (var[op] == kInvariant || var[op] == var[k]) continue;
        var[k] = var[k] == kInvariant ? var[op] : kMixed;
      }
      if (period[k] == kConflict) var[k] = kMixed;
    }
    if (var[k] == kMixed && EightBit(node.type)) {
      var[k] = k;
      period[k] = 0;  // what varies with it is indexed by its value
    }
  }
  auto chained = [&](int k) { return p->nodes[k].kind == Node::kOp && var[k] >= 0 && var[k] != k; };
  std::vector<bool> read_elsewhere(n, false);  // by a node outside its chain
  for (int k = 0; k < n; ++k)
    for (int op : p->nodes[k].operands)
      if (!chained(k) || var[k] != var[op]) read_elsewhere[op] = true;
  for (int k = 0; k < n; ++k) {
    if (!chained(k) || !(k == n - 1 || read_elsewhere[k])) continue;
    // The chain: every node k depends on back to the source, in order.
    std::vector<bool> in_chain(n, false);
    in_chain[k] = true;
    int ops = 0;
    bool constant = true;
    for (int j = k; j >= 0; --j) {
      if (!in_chain[j]) continue;
      const Node& m = p->nodes[j];
      ops += m.kind == Node::kOp;
      if (m.kind != Node::kOp) constant = constant && m.constant != nullptr;
      for (int op : m.operands)
        if (op != var[k]) in_chain[op] = true;
    }
    if (ops < 2) continue;
    const int64_t entries = 256 * std::max<int64_t>(period[k], 1);
    if (period[k] > 0 &&
        (entries * hlo::ByteWidth(p->nodes[k].type) > kMaxTableBytes || (!constant && p->count < 4 * entries)))
      continue;
    Table t{k, var[k], {}, period[k], constant};
    for (int j = 0; j <= k; ++j)
      if (in_chain[j]) t.members.push_back(j);
    p->nodes[k].table_source = var[k];
    p->nodes[k].table_period = period[k];
    p->tables.push_back(std::move(t));
  }
}

// How a broadcast node reads its operand's buffer, from its strides per
// dim of the result (`src_strides`, already set): periodically, through
// repeated runs, or element by element (see Node::period, repeats_over).
void PlanBroadcastReads(const Program& p, Node* n) {
  const std::vector<int64_t>& dims = p.out_dims;
  const int64_t r = dims.size();
  // The values depend only on the index within the trailing dims that
  // follow the last leading dim the broadcast repeats along.
  int64_t lead = 0;
  while (lead < r && n->src_strides[lead] == 0) ++lead;
  int64_t period = 1;
  for (int64_t d = lead; d < r; ++d) period *= dims[d];
  if (lead > 0 && period <= kMaxPeriod && period + kBlock <= p.count) {
    n->period = period;
    return;
  }
  if (r < 2 || n->src_strides[r - 1] != 1) return;
  int over = 0;
  for (int64_t d = r - 2; d >= 0 && n->src_strides[d] == 0; --d) ++over;
  if (over > 0) n->repeats_over = over;
}

// The fused loop of a blocked fusion runs over [N, C / b, H, W, b]: the
// strides per dim of that order of a value read through strides `s` per
// dim of its logical [N, H, W, C].
std::vector<int64_t> BlockedOrder(const std::vector<int64_t>& s, int64_t b) {
  return {s[0], s[3] * b, s[1], s[2], s[3]};
}

}  // namespace

absl::StatusOr<std::shared_ptr<Program>> BuildProgram(const FusionSpec& spec) {
  auto p = std::make_shared<Program>();
  const hlo::Instruction* root = spec.members.back();
  if (root->shape().rank() > 16) return Unimplemented("fusions of rank above 16");
  const int64_t b = spec.block;
  if (b && (root->shape().rank() != 4 || root->shape().dims[3] % b != 0))
    return Internal("fusion at %s is planned on blocks of %d channels its shape does not take", root->name(), b);
  p->out_dims = root->shape().dims;
  if (b) {
    const std::vector<int64_t>& d = root->shape().dims;
    p->out_dims = {d[0], d[3] / b, d[1], d[2], b};
  }
  p->count = root->shape().ElementCount();
  absl::flat_hash_map<const hlo::Instruction*, int> index;
  int buffers = 0;  // io.inputs taken by the inputs before
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const hlo::Instruction* in = spec.inputs[k];
    Node n;
    n.input = buffers++;
    n.instr = in;
    n.type = in->shape().element_type;
    bool strided = k < spec.strided.size() && spec.strided[k];
    if (b && strided && in->opcode() != Opcode::kBroadcast)
      return Internal("blocked fusion at %s reads %s through a %s", root->name(), in->name(),
                      hlo::OpcodeName(in->opcode()));
    if (strided && in->opcode() == Opcode::kConcatenate) {
      n.kind = Node::kInputConcat;
      int64_t dim = in->dimensions.at(0), inner = 1;
      for (int64_t d = dim + 1; d < in->shape().rank(); ++d) inner *= in->shape().dims[d];
      for (const hlo::Instruction* part : in->operands()) {
        n.row += part->shape().dims[dim] * inner;
        n.part_ends.push_back(n.row);
      }
      buffers += in->operand_count() - 1;
    } else if (strided && in->opcode() == Opcode::kSlice) {
      // The input buffer is the slice's operand; read it through strides.
      n.kind = Node::kInputBroadcast;
      std::vector<int64_t> st = in->operand(0)->shape().Strides();
      for (int64_t d = 0; d < in->shape().rank(); ++d) {
        n.src_strides.push_back(st[d] * in->slice_strides[d]);
        n.src_base += st[d] * in->slice_starts[d];
      }
    } else if (strided && in->opcode() == Opcode::kBroadcast && in->operand(0)->shape().ElementCount() == 1) {
      n.kind = Node::kInputScalar;
    } else if (strided && in->opcode() == Opcode::kBroadcast) {
      // The input buffer is the broadcast's operand; read it through strides.
      n.kind = Node::kInputBroadcast;
      n.src_strides.assign(in->shape().rank(), 0);
      std::vector<int64_t> st = in->operand(0)->shape().Strides();
      for (size_t i = 0; i < in->dimensions.size(); ++i) n.src_strides[in->dimensions[i]] = st[i];
      if (b) n.src_strides = BlockedOrder(n.src_strides, b);
      PlanBroadcastReads(*p, &n);
    } else if (in->shape().ElementCount() == 1 && p->count != 1) {
      n.kind = Node::kInputScalar;
    } else {
      n.kind = Node::kInputFull;
    }
    // Scalars and broadcasts read their operand's buffer, the rest their own.
    const hlo::Instruction* source = n.kind == Node::kInputScalar && in->opcode() == Opcode::kBroadcast ? in->operand(0)
                                     : n.kind == Node::kInputBroadcast                                  ? in->operand(0)
                                                                                                        : in;
    if (n.kind != Node::kInputConcat && source->opcode() == Opcode::kConstant && source->literal) n.constant = source;
    index[in] = p->nodes.size();
    p->nodes.push_back(std::move(n));
  }
  for (const hlo::Instruction* m : spec.members) {
    Node n;
    n.kind = Node::kOp;
    n.instr = m;
    n.type = m->shape().element_type;
    for (const hlo::Instruction* op : m->operands()) {
      auto it = index.find(op);
      if (it == index.end())
        return Internal("fusion operand %s of %s is neither member nor input", op->name(), m->name());
      n.operands.push_back(it->second);
    }
    index[m] = p->nodes.size();
    p->nodes.push_back(std::move(n));
  }
  PlanTables(p.get());
  PlanQuantizers(p.get());
  PlanGelus(p.get());
  MarkNeeded(p.get());
  AssignSlots(p.get());
  return p;
}
}  // namespace fused

using fused::Node;
using fused::Program;

absl::StatusOr<FusionSummary> SummarizeFusion(const FusionSpec& spec) {
  ASSIGN_OR_RETURN(std::shared_ptr<Program> p, fused::BuildProgram(spec));
  FusionSummary sum;
  sum.tables = p->tables.size();
  for (const Node& node : p->nodes) {
    sum.quantizers += node.needed && !node.quantize.empty();
    sum.gelus += node.needed && !node.gelu.empty();
    sum.computed_ops += node.needed && node.kind == Node::kOp;
  }
  return sum;
}

}  // namespace xonnx::cpu
