#include "backends/cpu/canonicalization/precision_pass.h"

#include <set>

#include "absl/container/flat_hash_map.h"
#include "base/status.h"
#include "hlo/builder.h"
#include "hlo/rewrite.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

bool IsHalf(hlo::PrimitiveType t) { return t == hlo::F16 || t == hlo::BF16; }

// `x` as f32: a converted constant, or a convert instruction.
Instruction* ToF32(hlo::Computation* c, Instruction* x) {
  if (x->opcode() == Opcode::kConstant) {
    Instruction* k = hlo::AddConstant(c, x->literal->Convert(hlo::F32));
    k->metadata = x->metadata;
    return k;
  }
  return hlo::AddConvert(c, x, hlo::F32, x);
}

// The f32 version of a scalar reducer `a op b` (max, min, add), or null when
// the reducer is anything else (the op is then left in half precision).
hlo::Computation* F32Reducer(hlo::Module* m, const hlo::Computation* reducer) {
  const Instruction* root = reducer ? reducer->root() : nullptr;
  if (!root || root->operand_count() != 2) return nullptr;
  Opcode op = root->opcode();
  if (op != Opcode::kMaximum && op != Opcode::kMinimum && op != Opcode::kAdd) return nullptr;
  for (const Instruction* p : root->operands())
    if (p->opcode() != Opcode::kParameter) return nullptr;
  hlo::Builder b(m, absl::StrCat(reducer->name(), ".f32"));
  hlo::Shape s(hlo::F32, {});
  Instruction* lhs = b.Parameter(0, s, "a");
  Instruction* rhs = b.Parameter(1, s, "b");
  auto built = b.Build(b.Binary(op, root->operand(0)->parameter_number == 0 ? lhs : rhs,
                                root->operand(1)->parameter_number == 0 ? lhs : rhs));
  if (!built.ok()) return nullptr;
  m->MoveLeafToFront(*built);
  return *built;
}

// Whether `op` only moves or selects its operands' elements (its result's
// values are some of theirs, wherever they go).
bool MovesElements(Opcode op) {
  switch (op) {
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse:
    case Opcode::kGather:
      return true;
    default:
      return false;
  }
}

// Whether `i` can be rebuilt on f32 values with the same attributes.
bool Widenable(const Instruction* i) {
  Opcode op = i->opcode();
  if (op == Opcode::kConvert || op == Opcode::kBitcastConvert) return false;
  if (hlo::IsElementwise(op) || MovesElements(op)) return true;
  switch (op) {
    case Opcode::kDot:
    case Opcode::kConvolution:
    case Opcode::kIota:
      return true;
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
      return i->operand_count() == 2;  // one input and its init (the reducer is checked when rebuilding)
    default:
      return false;
  }
}

// Whether `i`'s result holds only values of its operands (moved, selected,
// or the larger or smaller of two): half-precision operands give a result
// that needs no rounding back to half.
bool KeepsValues(const Instruction* i) {
  if (MovesElements(i->opcode())) return true;
  switch (i->opcode()) {
    case Opcode::kCopy:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kClamp:
    case Opcode::kSelect:
    case Opcode::kNegate:
    case Opcode::kAbs:
      return true;
    case Opcode::kReduce:
    case Opcode::kReduceWindow: {
      // A max or min reducer picks a value; an add makes a new one.
      const Instruction* root = i->to_apply()->root();
      return root->opcode() == Opcode::kMaximum || root->opcode() == Opcode::kMinimum;
    }
    default:
      return false;
  }
}

bool HasHalf(const Instruction* i) {
  if (i->shape().IsArray() && IsHalf(i->shape().element_type)) return true;
  for (const Instruction* o : i->operands())
    if (o->shape().IsArray() && IsHalf(o->shape().element_type)) return true;
  return false;
}

}  // namespace

absl::StatusOr<bool> UpcastHalfPrecision::Run(hlo::Module* module) {
  bool changed = false;
  // Scalar computations applied by reductions, scatters and sorts stay as
  // they are: a widened reduction gets an f32 copy of its reducer instead.
  std::set<const hlo::Computation*> applied;
  for (const auto& c : module->computations())
    for (const auto& i : c->instructions()) {
      Opcode op = i->opcode();
      if (op == Opcode::kWhile || op == Opcode::kConditional || op == Opcode::kCall) continue;
      for (const hlo::Computation* called : i->called_computations()) applied.insert(called);
    }
  std::vector<hlo::Computation*> computations;
  for (const auto& c : module->computations())
    if (!applied.count(c.get())) computations.push_back(c.get());
  for (hlo::Computation* c : computations) {
    std::vector<Instruction*> work;
    for (const auto& i : c->instructions())
      if (HasHalf(i.get()) && Widenable(i.get())) work.push_back(i.get());
    // The f32 version of each half value, made once however many widened
    // ops read it. Operands come first (instructions() is in that order), so
    // a widened op's users find its f32 result here and skip the round trip.
    absl::flat_hash_map<Instruction*, Instruction*> f32_of;
    auto wide_operand = [&](Instruction* x) {
      Instruction*& w = f32_of[x];
      if (!w) w = ToF32(c, x);
      return w;
    };
    for (Instruction* i : work) {
      hlo::Computation* reducer = nullptr;
      if (i->opcode() == Opcode::kReduce || i->opcode() == Opcode::kReduceWindow) {
        if (!IsHalf(i->shape().element_type) || !(reducer = F32Reducer(module, i->to_apply()))) continue;
      }
      auto wide = std::make_unique<Instruction>(*i);
      wide->set_name("");
      for (int64_t k = 0; k < i->operand_count(); ++k) {
        Instruction* o = i->operand(k);
        if (o->shape().IsArray() && IsHalf(o->shape().element_type)) wide->ReplaceOperand(k, wide_operand(o));
      }
      if (reducer) wide->ReplaceCalledComputation(0, reducer);
      bool half_result = IsHalf(i->shape().element_type);
      if (half_result) wide->set_shape(hlo::Shape(hlo::F32, i->shape().dims));
      Instruction* w = c->AddInstruction(std::move(wide));
      Instruction* result = w;
      if (half_result) {
        result = hlo::AddConvert(c, w, i->shape().element_type, i);
        // Readers of the result read it rounded (a convert back from
        // half), unless rounding would change nothing.
        if (excess_precision_ || KeepsValues(i)) f32_of[result] = w;
      }
      c->ReplaceAllUsesWith(i, result);
      changed = true;
    }
    // convert(convert(x: f32 -> half) -> f32) -> x for the round trips the
    // program already had (an f32 reduction's result going back to half):
    // the excess precision. Not a Cast the model itself wrote: that
    // rounding is the model's (a float32 model casting to float16 and back
    // gets float16 values, as in ONNX Runtime).
    auto round_trip = [&](const Instruction* up) -> Instruction* {
      if (!excess_precision_) return nullptr;  // each rounding is the program's
      if (up->opcode() != Opcode::kConvert || up->shape().element_type != hlo::F32) return nullptr;
      Instruction* down = up->operand(0);
      if (down->opcode() != Opcode::kConvert || !IsHalf(down->shape().element_type)) return nullptr;
      if (down->metadata.op_type == "Cast" || down->metadata.op_type == "CastLike") return nullptr;
      Instruction* x = down->operand(0);
      return x->shape().element_type == hlo::F32 ? x : nullptr;
    };
    for (const auto& i : c->instructions())
      for (int64_t k = 0; k < i->operand_count(); ++k)
        if (Instruction* x = round_trip(i->operand(k))) i->ReplaceOperand(k, x);
    if (Instruction* x = round_trip(c->root())) c->set_root(x);
    if (!work.empty()) c->Canonicalize();
  }
  return changed;
}

}  // namespace xonnx::cpu
