// Integer products on oneDNN's 8-bit primitives. The importer writes
// ConvInteger, MatMulInteger, QLinearConv and QLinearMatMul as s32
// convolutions and dots of widened operands:
//   convolution(convert<s32>(x) - broadcast(zero_point), weights)
// with x a u8 or s8 value and the weights a constant. oneDNN computes the
// same s32 sums from the 8-bit values themselves, with the activation's
// zero point as a run-time attribute (padding counts as the zero point,
// i.e. as 0 once centered, as in ONNX), an order of magnitude faster than
// the native s32 kernel. This planner finds such products, records the
// 8-bit sources they read instead, and marks the widening ops that nothing
// else reads as never computed.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "backends/cpu/planning/planners.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/evaluator.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

// Constant folding leaves the importer's `weights - zero_point` alone
// because the broadcast zero point is too large to fold.
std::optional<hlo::Literal> ConstantValue(const Instruction* i, int depth) {
  if (i->opcode() == Opcode::kConstant) return *i->literal;
  if (depth > 4 || !i->shape().IsArray()) return std::nullopt;
  switch (i->opcode()) {
    case Opcode::kBroadcast:
    case Opcode::kConvert:
    case Opcode::kSubtract:
    case Opcode::kAdd:
    case Opcode::kNegate:
    case Opcode::kReshape:
    case Opcode::kTranspose:
      break;
    default:
      return std::nullopt;
  }
  std::vector<hlo::Literal> values;
  values.reserve(i->operand_count());
  for (const Instruction* op : i->operands()) {
    std::optional<hlo::Literal> v = ConstantValue(op, depth + 1);
    if (!v) return std::nullopt;
    values.push_back(*std::move(v));
  }
  std::vector<const hlo::Literal*> ptrs;
  for (const hlo::Literal& v : values) ptrs.push_back(&v);
  auto r = eval::EvaluateInstruction(*i, ptrs);
  if (!r.ok()) return std::nullopt;
  return *std::move(r);
}

std::pair<int, int> ExactWeightRange() {
  static const bool vnni = DnnlHasVnni();
  return vnni ? std::make_pair(-128, 127) : std::make_pair(-64, 63);
}

namespace {

bool IsByte(hlo::PrimitiveType t) { return t == hlo::U8 || t == hlo::S8; }

// The constant operand as s8 values, when every value is in [lo, hi].
std::shared_ptr<const hlo::Literal> NarrowConstant(const Instruction* op, int lo, int hi) {
  if (op->shape().element_type != hlo::S32) return nullptr;
  std::optional<hlo::Literal> v = ConstantValue(op);
  if (!v) return nullptr;
  auto narrow = std::make_shared<hlo::Literal>(hlo::Shape(hlo::S8, op->shape().dims));
  const int32_t* from = v->data<int32_t>();
  int8_t* to = narrow->data<int8_t>();
  for (int64_t k = 0; k < v->element_count(); ++k) {
    if (from[k] < lo || from[k] > hi) return nullptr;
    to[k] = static_cast<int8_t>(from[k]);
  }
  return narrow;
}

// Operand `op` as an 8-bit value widened to s32, less a scalar zero point,
// seen through transposes and reshapes: the value, zero point and view,
// and the ops between them and the product (`chain`), or nullopt.
std::optional<NarrowOperand> MatchNarrowSource(Instruction* op, std::vector<Instruction*>* chain) {
  std::vector<Instruction*> views;  // product side first
  Instruction* x = op;
  while (x->opcode() == Opcode::kTranspose || x->opcode() == Opcode::kReshape) {
    views.push_back(x);
    x = x->operand(0);
  }
  NarrowOperand n;
  std::vector<Instruction*> ops = views;
  if (x->opcode() == Opcode::kSubtract) {
    Instruction* b = x->operand(1);
    if (b->shape().element_type != hlo::S32) return std::nullopt;
    if (b->opcode() == Opcode::kBroadcast && b->operand(0)->shape().rank() == 0) {
      n.zero_point = b->operand(0);
      ops.push_back(b);
    } else if (b->opcode() == Opcode::kConstant && b->literal->element_count() > 0 && b->literal->IsUniform()) {
      n.zero_point = b;  // a folded broadcast: the kernel reads its first element
    } else {
      return std::nullopt;
    }
    ops.push_back(x);
    x = x->operand(0);
  }
  if (x->opcode() != Opcode::kConvert || x->shape().element_type != hlo::S32 ||
      !IsByte(x->operand(0)->shape().element_type))
    return std::nullopt;
  ops.push_back(x);
  n.source = x->operand(0);
  std::optional<StridedView> v = StridedView::RowMajor(n.source->shape().dims);
  for (auto it = views.rbegin(); it != views.rend() && v; ++it) v = Apply(**it, *v);
  if (!v) return std::nullopt;
  n.view = *std::move(v);
  *chain = std::move(ops);
  return n;
}

}  // namespace

void PlanIntegerProducts(Plan* plan) {
  const auto [lo, hi] = ExactWeightRange();
  auto& ip = plan->integer_products;
  std::vector<Instruction*> widening;  // ops between the products and their 8-bit or constant values
  for (Instruction* p : plan->order()) {
    if (p->shape().element_type != hlo::S32 || !DnnlIntegerProductEligible(*p)) continue;
    std::vector<Instruction*> chain;
    std::optional<NarrowOperand> src = MatchNarrowSource(p->operand(0), &chain);
    if (!src) continue;
    // A dot reads its source in place; a convolution reorders it if need be.
    if (p->opcode() == Opcode::kDot && !DnnlDotViewable(*p, src->view)) continue;
    NarrowOperand weights;
    weights.constant = NarrowConstant(p->operand(1), lo, hi);
    if (!weights.constant) continue;
    ip.read.insert(src->source);
    if (src->zero_point) ip.read.insert(src->zero_point);
    ip.of[p] = {*std::move(src), std::move(weights)};
    widening.insert(widening.end(), chain.begin(), chain.end());
    // The weights' expression, down to its constants.
    for (std::vector<Instruction*> stack = {p->operand(1)}; !stack.empty();) {
      Instruction* x = stack.back();
      stack.pop_back();
      if (x->opcode() == Opcode::kConstant) continue;
      widening.push_back(x);
      stack.insert(stack.end(), x->operands().begin(), x->operands().end());
    }
  }
  // Those ops are computed only for other readers: none is when all of an
  // op's users are integer products or ops never computed themselves
  // (fire modules' two convolutions read one quantized input).
  for (bool changed = true; changed;) {
    changed = false;
    for (Instruction* x : widening) {
      if (x == plan->root() || x->opcode() == Opcode::kParameter || ip.replaced.contains(x) || ip.read.contains(x))
        continue;
      const auto& us = plan->users(x);
      if (std::all_of(us.begin(), us.end(),
                      [&](Instruction* u) { return ip.of.contains(u) || ip.replaced.contains(u); })) {
        ip.replaced.insert(x);
        changed = true;
      }
    }
  }
}

}  // namespace xonnx::cpu
