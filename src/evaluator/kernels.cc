#include "evaluator/kernels.h"

#include <algorithm>
#include <cstring>

#include "base/status.h"
#include "evaluator/kernels_internal.h"
#include "evaluator/scalar_ops.h"
#include "hlo/shape_inference.h"

namespace xonnx::eval {

using hlo::Computation;
using hlo::Instruction;
using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;
using namespace internal;  // the kernels RunKernel dispatches to

namespace {

absl::Status Elementwise(const Instruction& in, absl::Span<const void* const> ops, void* out) {
  const Shape& s = in.shape();
  int64_t n = s.ElementCount();
  PrimitiveType t = in.operand(0)->shape().element_type;
  hlo::Opcode op = in.opcode();
  bool ok = true;
  switch (op) {
    case hlo::Opcode::kConvert:
      hlo::TypeSwitch(t, [&](auto ft) {
        using From = typename decltype(ft)::type;
        hlo::TypeSwitch(s.element_type, [&](auto tt) {
          using To = typename decltype(tt)::type;
          ConvertKernel<To, From>(static_cast<const From*>(ops[0]), static_cast<To*>(out), n);
        });
      });
      return absl::OkStatus();
    case hlo::Opcode::kCompare:
      hlo::TypeSwitch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        CompareKernel<T>(in.comparison_direction, static_cast<const T*>(ops[0]), static_cast<const T*>(ops[1]),
                         static_cast<bool*>(out), n);
      });
      return absl::OkStatus();
    case hlo::Opcode::kIsFinite:
      hlo::TypeSwitch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        IsFiniteKernel<T>(static_cast<const T*>(ops[0]), static_cast<bool*>(out), n);
      });
      return absl::OkStatus();
    case hlo::Opcode::kSelect:
      hlo::TypeSwitch(s.element_type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        SelectKernel<T>(static_cast<const bool*>(ops[0]), in.operand(0)->shape().rank() == 0 ? 0 : 1,
                        static_cast<const T*>(ops[1]), static_cast<const T*>(ops[2]), static_cast<T*>(out), n);
      });
      return absl::OkStatus();
    case hlo::Opcode::kClamp:
      hlo::TypeSwitch(s.element_type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        ClampKernel<T>(static_cast<const T*>(ops[0]), in.operand(0)->shape().rank() == 0 ? 0 : 1,
                       static_cast<const T*>(ops[1]), static_cast<const T*>(ops[2]),
                       in.operand(2)->shape().rank() == 0 ? 0 : 1, static_cast<T*>(out), n);
      });
      return absl::OkStatus();
    default:
      break;
  }
  hlo::TypeSwitch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (in.operand_count() == 1)
      ok = UnaryKernel<T>(op, static_cast<const T*>(ops[0]), static_cast<T*>(out), n);
    else
      ok = BinaryKernel<T>(op, static_cast<const T*>(ops[0]), static_cast<const T*>(ops[1]), static_cast<T*>(out), n);
  });
  if (!ok) return Unimplemented("%s is not defined for %s", hlo::OpcodeName(op), hlo::PrimitiveTypeName(t));
  return absl::OkStatus();
}

}  // namespace

DotLoops DotLoopsOf(const hlo::Instruction& dot) {
  const hlo::Shape& as = dot.operand(0)->shape();
  const hlo::Shape& bs = dot.operand(1)->shape();
  const auto& d = dot.dot_dnums;
  std::vector<int64_t> ast = as.Strides(), bst = bs.Strides();
  DotLoops l;
  for (size_t k = 0; k < d.lhs_batch_dimensions.size(); ++k) {
    l.out_lhs.push_back(ast[d.lhs_batch_dimensions[k]]);
    l.out_rhs.push_back(bst[d.rhs_batch_dimensions[k]]);
  }
  for (int64_t i : hlo::DotFreeDims(as.rank(), d.lhs_batch_dimensions, d.lhs_contracting_dimensions)) {
    l.out_lhs.push_back(ast[i]);
    l.out_rhs.push_back(0);
  }
  for (int64_t i : hlo::DotFreeDims(bs.rank(), d.rhs_batch_dimensions, d.rhs_contracting_dimensions)) {
    l.out_lhs.push_back(0);
    l.out_rhs.push_back(bst[i]);
  }
  for (size_t k = 0; k < d.lhs_contracting_dimensions.size(); ++k) {
    l.contract_dims.push_back(as.dims[d.lhs_contracting_dimensions[k]]);
    l.contract_lhs.push_back(ast[d.lhs_contracting_dimensions[k]]);
    l.contract_rhs.push_back(bst[d.rhs_contracting_dimensions[k]]);
  }
  return l;
}

std::optional<hlo::Opcode> MatchScalarBinary(const Computation& c) {
  const Instruction* r = c.root();
  if (c.num_parameters() != 2 || r->operand_count() != 2 || !hlo::IsElementwiseBinary(r->opcode())) return std::nullopt;
  const Instruction* a = r->operand(0);
  const Instruction* b = r->operand(1);
  if (a->opcode() != hlo::Opcode::kParameter || b->opcode() != hlo::Opcode::kParameter) return std::nullopt;
  if (a->parameter_number == 0 && b->parameter_number == 1) return r->opcode();
  switch (r->opcode()) {
    case hlo::Opcode::kAdd:
    case hlo::Opcode::kMultiply:
    case hlo::Opcode::kMaximum:
    case hlo::Opcode::kMinimum:
    case hlo::Opcode::kAnd:
    case hlo::Opcode::kOr:
    case hlo::Opcode::kXor:
      if (a->parameter_number == 1 && b->parameter_number == 0) return r->opcode();
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::optional<bool> MatchSortDirection(const Computation& c) {
  const Instruction* r = c.root();
  if (r->opcode() != hlo::Opcode::kCompare) return std::nullopt;
  const Instruction* a = r->operand(0);
  const Instruction* b = r->operand(1);
  if (a->opcode() != hlo::Opcode::kParameter || b->opcode() != hlo::Opcode::kParameter) return std::nullopt;
  if (a->parameter_number != 0 || b->parameter_number != 1) return std::nullopt;
  if (r->comparison_direction == hlo::ComparisonDirection::kLt) return true;
  if (r->comparison_direction == hlo::ComparisonDirection::kGt) return false;
  return std::nullopt;
}

absl::Status RunKernel(const Instruction& in, absl::Span<const void* const> ops, absl::Span<void* const> outs,
                       const CallComputation& call) {
  using hlo::Opcode;
  void* out = outs.empty() ? nullptr : outs[0];
  switch (in.opcode()) {
    case Opcode::kConstant:
      std::memcpy(out, in.literal->untyped_data(), in.literal->size_bytes());
      return absl::OkStatus();
    case Opcode::kIota:
      Iota(in, out);
      return absl::OkStatus();
    case Opcode::kReshape:
    case Opcode::kBitcastConvert:
      if (out != ops[0]) std::memcpy(out, ops[0], in.shape().ByteSize());
      return absl::OkStatus();
    case Opcode::kBroadcast:
      Broadcast(in, ops[0], out);
      return absl::OkStatus();
    case Opcode::kTranspose:
      Transpose(in, ops[0], out);
      return absl::OkStatus();
    case Opcode::kSlice:
      Slice(in, ops[0], out);
      return absl::OkStatus();
    case Opcode::kPad:
      Pad(in, ops[0], ops[1], out);
      return absl::OkStatus();
    case Opcode::kConcatenate:
      Concatenate(in, ops, out);
      return absl::OkStatus();
    case Opcode::kReverse:
      Reverse(in, ops[0], out);
      return absl::OkStatus();
    case Opcode::kDynamicSlice:
      DynamicSlice(in, ops, out);
      return absl::OkStatus();
    case Opcode::kDynamicUpdateSlice:
      DynamicUpdateSlice(in, ops, out);
      return absl::OkStatus();
    case Opcode::kGather:
      Gather(in, ops[0], ops[1], out);
      return absl::OkStatus();
    case Opcode::kScatter:
      return Scatter(in, ops, out, call);
    case Opcode::kDot:
      DotKernel(in, ops[0], ops[1], out);
      return absl::OkStatus();
    case Opcode::kConvolution:
      ConvKernel(in, ops[0], ops[1], out);
      return absl::OkStatus();
    case Opcode::kReduce:
      return Reduce(in, ops, outs, call);
    case Opcode::kReduceWindow:
      return ReduceWindow(in, ops, out, call);
    case Opcode::kSort:
      return Sort(in, ops, outs, call);
    default:
      break;
  }
  if (hlo::IsElementwise(in.opcode())) return Elementwise(in, ops, out);
  return Unimplemented("no kernel for %s", hlo::OpcodeName(in.opcode()));
}

}  // namespace xonnx::eval
