#include "passes/algebraic_simplifier.h"

#include <algorithm>
#include <cmath>

#include "hlo/builder.h"
#include "hlo/rewrite.h"

namespace xonnx::passes {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// The scalar value of a constant (or broadcast of one) whose elements are all equal.
std::optional<double> UniformValue(const Instruction* i) {
  if (i->opcode() == Opcode::kBroadcast) i = i->operand(0);
  if (i->opcode() != Opcode::kConstant || i->literal->element_count() == 0 || !i->literal->IsUniform())
    return std::nullopt;
  return i->literal->GetAsDouble(0);
}

bool IsValue(const Instruction* i, double v) {
  auto u = UniformValue(i);
  return u && *u == v;
}

// Whether every value of i is an integer, an infinity or NaN: what
// rounding leaves as it is. Quantizers round twice (round(x / s) + zp, then
// round again before saturating); the second round has nothing to do.
bool IntegralValued(const Instruction* i, int depth = 0) {
  if (depth > 8) return false;
  switch (i->opcode()) {
    case Opcode::kRoundNearestEven:
    case Opcode::kRoundNearestAfz:
    case Opcode::kFloor:
    case Opcode::kCeil:
      return true;
    case Opcode::kConvert:
      return !hlo::IsFloatingPoint(i->operand(0)->shape().element_type) || IntegralValued(i->operand(0), depth + 1);
    case Opcode::kConstant: {
      if (!hlo::IsFloatingPoint(i->shape().element_type)) return true;
      for (int64_t k = 0; k < i->literal->element_count(); ++k) {
        double v = i->literal->GetAsDouble(k);
        if (std::isfinite(v) && v != std::nearbyint(v)) return false;
      }
      return true;
    }
    // Sums, differences and products of integers are integers, and f32
    // rounds them to integers (every float of magnitude 2^24 or more is one).
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kNegate:
    case Opcode::kAbs:
    case Opcode::kClamp:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
      for (const Instruction* op : i->operands())
        if (!IntegralValued(op, depth + 1)) return false;
      return true;
    default:
      return false;
  }
}

// convolution(pad(x, 0), w) -> convolution(x, w) with the pad's edges
// added to the window's padding, which pads with zeros too: explicit Pad
// nodes before a Conv (causal and "same" padding written out, models
// converted from frameworks that pad separately) then cost no pass over the
// input. Only edges on spatial dims fold, and only where the window has no
// base dilation (there its padding applies to the dilated input).
bool FoldPadIntoConvolution(Instruction* conv) {
  const Instruction* pad = conv->operand(0);
  if (pad->opcode() != Opcode::kPad || !IsValue(pad->operand(1), 0)) return false;
  const auto& dn = conv->conv_dnums;
  const auto& config = pad->padding_config;
  for (size_t d = 0; d < config.size(); ++d) {
    if (config[d].interior_padding != 0 || config[d].edge_padding_low < 0 || config[d].edge_padding_high < 0)
      return false;
    bool spatial = std::find(dn.input_spatial_dimensions.begin(), dn.input_spatial_dimensions.end(),
                             static_cast<int64_t>(d)) != dn.input_spatial_dimensions.end();
    if (!spatial && (config[d].edge_padding_low != 0 || config[d].edge_padding_high != 0)) return false;
  }
  if (conv->window.dimensions.size() != dn.input_spatial_dimensions.size()) return false;
  for (const auto& w : conv->window.dimensions)
    if (w.base_dilation != 1) return false;
  for (size_t k = 0; k < dn.input_spatial_dimensions.size(); ++k) {
    const auto& p = config[dn.input_spatial_dimensions[k]];
    conv->window.dimensions[k].padding_low += p.edge_padding_low;
    conv->window.dimensions[k].padding_high += p.edge_padding_high;
  }
  conv->ReplaceOperand(0, pad->operand(0));
  return true;
}

// Returns the replacement for `i`, or null to keep it. May add instructions to `c`.
Instruction* Simplify(hlo::Computation* c, Instruction* i) {
  const auto& ops = i->operands();
  bool fp = hlo::IsFloatingPoint(i->shape().element_type);
  switch (i->opcode()) {
    case Opcode::kAdd:
      if (IsValue(ops[1], 0) && !fp) return ops[0];  // x + 0 -> x (ints; -0.0 + 0 != -0.0 for floats)
      if (IsValue(ops[0], 0) && !fp) return ops[1];  // 0 + x -> x
      break;
    case Opcode::kSubtract:
      if (IsValue(ops[1], 0)) return ops[0];  // x - 0 -> x
      break;
    case Opcode::kMultiply:
      if (IsValue(ops[1], 1)) return ops[0];  // x * 1 -> x
      if (IsValue(ops[0], 1)) return ops[1];  // 1 * x -> x
      break;
    case Opcode::kDivide:
      if (IsValue(ops[1], 1)) return ops[0];  // x / 1 -> x
      break;
    case Opcode::kNegate:
      if (ops[0]->opcode() == Opcode::kNegate) return ops[0]->operand(0);  // -(-x) -> x
      break;
    case Opcode::kPower:
      // As XLA's simplifier: pow(x, 1) -> x and pow(x, 2) -> x * x, one
      // rounding either way (an RMS norm's square otherwise runs a pow
      // per element); and, as ONNX Runtime's Pow kernel computes it,
      // pow(x, 3) -> x * x * x (the tanh form of GELU).
      if (IsValue(ops[1], 1)) return ops[0];
      if (IsValue(ops[1], 2) || IsValue(ops[1], 3)) {
        Instruction* square = hlo::AddBinary(c, Opcode::kMultiply, ops[0], ops[0], i);
        return IsValue(ops[1], 2) ? square : hlo::AddBinary(c, Opcode::kMultiply, square, ops[0], i);
      }
      break;
    case Opcode::kRoundNearestEven:
    case Opcode::kRoundNearestAfz:
    case Opcode::kFloor:
    case Opcode::kCeil:
      if (IntegralValued(ops[0])) return ops[0];  // round(x) -> x for integral x
      break;
    case Opcode::kConvert:
    case Opcode::kCopy:
      if (ops[0]->shape().Compatible(i->shape())) return ops[0];  // convert(x: T) to T -> x
      break;
    case Opcode::kReshape:
      if (ops[0]->shape().dims == i->shape().dims) return ops[0];  // reshape to own shape -> x
      if (ops[0]->opcode() == Opcode::kReshape) {                  // reshape(reshape(x)) -> reshape(x)
        i->ReplaceOperand(0, ops[0]->operand(0));
        return i;
      }
      break;
    case Opcode::kBroadcast:
      if (ops[0]->shape().dims == i->shape().dims) return ops[0];  // broadcast to own shape -> x
      break;
    case Opcode::kTranspose: {
      bool identity = true;
      for (size_t k = 0; k < i->dimensions.size(); ++k) identity &= i->dimensions[k] == static_cast<int64_t>(k);
      if (identity) return ops[0];  // transpose(x, identity) -> x
      // A transpose that moves only size-1 dims keeps every element in its
      // row-major place: a reshape, which backends run as a free view.
      std::vector<int64_t> kept;
      for (int64_t d : i->dimensions)
        if (ops[0]->shape().dims[d] != 1) kept.push_back(d);
      if (std::is_sorted(kept.begin(), kept.end())) {
        return hlo::AddReshape(c, ops[0], i->shape().dims, i);
      }
      if (ops[0]->opcode() == Opcode::kTranspose) {  // transpose(transpose(x, p), q) -> transpose(x, p[q])
        std::vector<int64_t> composed(i->dimensions.size());
        for (size_t k = 0; k < composed.size(); ++k) composed[k] = ops[0]->dimensions[i->dimensions[k]];
        i->dimensions = composed;
        i->ReplaceOperand(0, ops[0]->operand(0));
        return i;
      }
      break;
    }
    case Opcode::kSlice:
      if (ops[0]->shape().dims == i->shape().dims) return ops[0];  // full slice -> x
      break;
    case Opcode::kPad: {
      bool none = true;
      for (const auto& p : i->padding_config)
        none &= p.edge_padding_low == 0 && p.edge_padding_high == 0 && p.interior_padding == 0;
      if (none) return ops[0];  // pad with nothing -> x
      break;
    }
    case Opcode::kSelect:
      if (ops[1] == ops[2]) return ops[1];                                  // select(p, x, x) -> x
      if (auto u = UniformValue(ops[0])) return *u != 0 ? ops[1] : ops[2];  // select(const, a, b) -> a or b
      break;
    case Opcode::kConcatenate:
      if (ops.size() == 1) return ops[0];  // concatenate(x) -> x
      break;
    case Opcode::kConvolution:
      if (FoldPadIntoConvolution(i)) return i;
      break;
    default:
      break;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<bool> AlgebraicSimplifier::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    bool local = false;
    std::vector<Instruction*> order;
    for (const auto& i : c->instructions()) order.push_back(i.get());
    for (Instruction* i : order) {
      Instruction* r = Simplify(c.get(), i);
      if (!r) continue;
      local = true;
      if (r != i) c->ReplaceAllUsesWith(i, r);
    }
    if (local) c->Canonicalize();
    changed |= local;
  }
  return changed;
}

}  // namespace xonnx::passes
