#include "passes/convert_precision.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "hlo/ir.h"
#include "hlo/rewrite.h"

namespace xonnx::passes {

namespace {

using hlo::Instruction;
using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;

// `s` with every f32 element type replaced by `to`.
Shape Retyped(const Shape& s, PrimitiveType to) {
  Shape out = s;
  if (out.IsTuple()) {
    for (auto& e : out.tuple_shapes) e = Retyped(e, to);
  } else if (out.element_type == hlo::F32) {
    out.element_type = to;
  }
  return out;
}

bool HasF32(const Shape& s) {
  if (s.IsTuple()) {
    for (const auto& e : s.tuple_shapes)
      if (HasF32(e)) return true;
    return false;
  }
  return s.element_type == hlo::F32;
}

// A reduction that keeps accumulating in f32.
bool AccumulatesInF32(const Instruction& i) {
  return (i.opcode() == Opcode::kReduce || i.opcode() == Opcode::kReduceWindow) && !i.shape().IsTuple() &&
         i.shape().element_type == hlo::F32;
}

// An f32 convert of 32- or 64-bit integers read only by multiplies: a
// quantized product's s32 sums, scaled down by the next op. They may
// exceed f16's range (65504) before the scale brings them back, so the
// convert and its multiplies stay f32 and only the scaled values come down.
bool WideIntegerToScale(const Instruction& i, const std::vector<Instruction*>& users) {
  if (i.opcode() != Opcode::kConvert || i.shape().element_type != hlo::F32 || users.empty()) return false;
  PrimitiveType from = i.operand(0)->shape().element_type;
  if (hlo::IsFloatingPoint(from) || hlo::ByteWidth(from) < 4) return false;
  for (const Instruction* u : users)
    if (u->opcode() != Opcode::kMultiply) return false;
  return true;
}

Instruction* AddConvert(hlo::Computation* c, Instruction* x, PrimitiveType to) { return hlo::AddConvert(c, x, to, x); }

// Makes every use of `x` a use of convert(x) to `to`.
Instruction* ConvertUses(hlo::Computation* c, Instruction* x, PrimitiveType to) {
  Instruction* conv = AddConvert(c, x, to);
  c->ReplaceAllUsesWith(x, conv);
  conv->ReplaceOperand(0, x);
  return conv;
}

}  // namespace

absl::StatusOr<bool> ConvertPrecision::Run(hlo::Module* module) {
  if (compute_ == hlo::F32 && io_ == hlo::F32) return false;
  // Computations applied by the f32 reductions stay f32; they must serve
  // nothing else.
  std::set<const hlo::Computation*> keep_f32, other_called;
  for (const auto& c : module->computations())
    for (const auto& i : c->instructions())
      for (const hlo::Computation* called : i->called_computations())
        (AccumulatesInF32(*i) ? keep_f32 : other_called).insert(called);
  for (const hlo::Computation* c : keep_f32)
    if (other_called.count(c))
      return absl::UnimplementedError(
          absl::StrCat("computation '", c->name(),
                       "' is applied both by an f32 reduction and by another op; it cannot be "
                       "computed in two precisions"));
  // Checked before anything changes: a bit-level reinterpretation of f32
  // values has no 16-bit meaning.
  if (compute_ != hlo::F32)
    for (const auto& c : module->computations())
      for (const auto& i : c->instructions())
        if (i->opcode() == Opcode::kBitcastConvert && (HasF32(i->shape()) || HasF32(i->operand(0)->shape())))
          return absl::UnimplementedError(absl::StrCat("'", i->name(),
                                                       "': bitcast-convert of f32 values cannot be computed in ",
                                                       hlo::PrimitiveTypeName(compute_)));
  bool changed = false;
  for (const auto& cp : module->computations()) {
    hlo::Computation* c = cp.get();
    if (keep_f32.count(c)) continue;
    bool is_entry = c == module->entry();
    const Shape original_root = c->root()->shape();
    bool root_had_f32 = HasF32(original_root);
    std::vector<Instruction*> order;
    for (const auto& i : c->instructions()) order.push_back(i.get());
    std::set<const Instruction*> scaled_in_f32;  // the multiplies of WideIntegerToScale converts
    if (compute_ != hlo::F32) {
      auto users = c->ComputeUsers();
      for (size_t k = 0; k < order.size(); ++k)
        if (WideIntegerToScale(*order[k], users[k])) {
          scaled_in_f32.insert(order[k]);
          scaled_in_f32.insert(users[k].begin(), users[k].end());
        }
    }
    for (Instruction* i : order) {
      if (!HasF32(i->shape())) continue;
      changed = true;
      if (scaled_in_f32.count(i)) {
        if (i->opcode() == Opcode::kConvert) continue;  // stays f32 for its multiplies
        // A multiply: its other operands (already lowered) go up, the
        // product comes down.
        for (int64_t k = 0; k < i->operand_count(); ++k)
          if (i->operand(k)->shape().element_type == compute_)
            i->ReplaceOperand(k, AddConvert(c, i->operand(k), hlo::F32));
        ConvertUses(c, i, compute_);
        continue;
      }
      if (AccumulatesInF32(*i)) {
        // Operands (already lowered) go up to f32; the result comes down.
        for (int64_t k = 0; k < i->operand_count(); ++k)
          if (i->operand(k)->shape().element_type == compute_ && compute_ != hlo::F32)
            i->ReplaceOperand(k, AddConvert(c, i->operand(k), hlo::F32));
        if (compute_ != hlo::F32) ConvertUses(c, i, compute_);
        continue;
      }
      if (is_entry && i->opcode() == Opcode::kParameter) {
        bool weight = i->metadata.op_type == hlo::kWeightParameterOpType;
        i->set_shape(Retyped(i->shape(), weight ? compute_ : io_));
        if (!weight && io_ != compute_ && !i->shape().IsTuple()) ConvertUses(c, i, compute_);
        continue;
      }
      if (i->opcode() == Opcode::kConstant && i->literal) i->literal = i->literal->Convert(compute_);
      i->set_shape(Retyped(i->shape(), compute_));
    }
    // The entry's f32 results leave in the io type.
    if (is_entry && root_had_f32 && io_ != compute_) {
      Instruction* root = c->root();
      if (root->opcode() == Opcode::kTuple) {
        for (int64_t k = 0; k < root->operand_count(); ++k)
          if (HasF32(original_root.tuple_shapes[k])) root->ReplaceOperand(k, AddConvert(c, root->operand(k), io_));
        root->set_shape(Retyped(original_root, io_));
      } else if (!root->shape().IsTuple()) {
        c->set_root(AddConvert(c, root, io_));
      }
    }
    c->Canonicalize();
  }
  return changed;
}

}  // namespace xonnx::passes
