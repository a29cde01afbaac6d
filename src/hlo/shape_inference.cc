#include "hlo/shape_inference.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"

namespace xonnx::hlo {

namespace {

using Operands = std::vector<const Shape*>;

std::string Dims(const std::vector<int64_t>& d) { return absl::StrCat("{", absl::StrJoin(d, ","), "}"); }

absl::Status Err(const std::string& msg) { return absl::InvalidArgumentError(msg); }

// Output size of one windowed dimension (reduce-window and convolution).
absl::StatusOr<int64_t> WindowedSize(int64_t in, const WindowDimension& w) {
  if (w.size < 1 || w.stride < 1 || w.window_dilation < 1 || w.base_dilation < 1)
    return Err("window size, stride and dilations must be >= 1");
  int64_t dilated_in = in == 0 ? 0 : (in - 1) * w.base_dilation + 1;
  int64_t padded = dilated_in + w.padding_low + w.padding_high;
  int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
  if (padded < dilated_window) return int64_t{0};
  return (padded - dilated_window) / w.stride + 1;
}

bool IsScalarIntegral(const Shape& s) { return s.rank() == 0 && IsInteger(s.element_type); }

absl::StatusOr<Shape> InferGather(const Shape& x, const Shape& idx, const Instruction& in) {
  const auto& d = in.gather_dnums;
  const auto& sizes = in.gather_slice_sizes;
  if (!IsInteger(idx.element_type)) return Err("gather indices must be integers");
  if (static_cast<int64_t>(sizes.size()) != x.rank()) return Err("gather slice_sizes rank mismatch");
  for (int64_t i = 0; i < x.rank(); ++i)
    if (sizes[i] < 0 || sizes[i] > x.dims[i]) return Err("gather slice size out of bounds");
  std::vector<int64_t> idx_dims = idx.dims;
  if (d.index_vector_dim == idx.rank()) idx_dims.push_back(1);
  if (d.index_vector_dim > idx.rank()) return Err("gather index_vector_dim out of range");
  if (static_cast<int64_t>(d.start_index_map.size()) != idx_dims[d.index_vector_dim])
    return Err("gather start_index_map size != index vector size");
  for (int64_t c : d.collapsed_slice_dims)
    if (c < 0 || c >= x.rank() || sizes[c] > 1) return Err("gather collapsed dim must have slice size <= 1");
  std::vector<int64_t> offset_sizes;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (std::find(d.collapsed_slice_dims.begin(), d.collapsed_slice_dims.end(), i) == d.collapsed_slice_dims.end())
      offset_sizes.push_back(sizes[i]);
  if (offset_sizes.size() != d.offset_dims.size()) return Err("gather offset_dims count mismatch");
  std::vector<int64_t> batch;
  for (int64_t i = 0; i < static_cast<int64_t>(idx_dims.size()); ++i)
    if (i != d.index_vector_dim) batch.push_back(idx_dims[i]);
  int64_t out_rank = batch.size() + offset_sizes.size();
  std::vector<int64_t> out(out_rank);
  size_t bi = 0, oi = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::find(d.offset_dims.begin(), d.offset_dims.end(), i) != d.offset_dims.end())
      out[i] = offset_sizes[oi++];
    else if (bi < batch.size())
      out[i] = batch[bi++];
    else
      return Err("gather offset_dims out of range");
  }
  return Shape(x.element_type, out);
}

absl::Status RequireArray(const Instruction& in, const Operands& ops, int i) {
  if (!ops[i]->IsArray()) return Err(absl::StrCat(OpcodeName(in.opcode()), " operand ", i, " must be an array"));
  return absl::OkStatus();
}

absl::StatusOr<Shape> InferBroadcast(const Instruction& in, const Operands& ops) {
  RETURN_IF_ERROR(RequireArray(in, ops, 0));
  const Shape& x = *ops[0];
  const auto& out = in.shape().dims;
  if (static_cast<int64_t>(in.dimensions.size()) != x.rank())
    return Err(absl::StrCat("broadcast dimensions ", Dims(in.dimensions), " do not match operand rank ", x.rank()));
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t d = in.dimensions[i];
    if (d < 0 || d >= static_cast<int64_t>(out.size()) || out[d] != x.dims[i] || (i > 0 && d <= in.dimensions[i - 1]))
      return Err(absl::StrCat("broadcast of ", x.ToString(), " to ", Dims(out), " with dimensions ",
                              Dims(in.dimensions), " is invalid"));
  }
  return Shape(x.element_type, out);
}

absl::StatusOr<Shape> InferTranspose(const Instruction& in, const Operands& ops) {
  RETURN_IF_ERROR(RequireArray(in, ops, 0));
  std::vector<int64_t> p = in.dimensions;
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < static_cast<int64_t>(sorted.size()); ++i)
    if (sorted[i] != i || static_cast<int64_t>(p.size()) != ops[0]->rank())
      return Err(absl::StrCat("transpose permutation ", Dims(p), " is invalid for rank ", ops[0]->rank()));
  std::vector<int64_t> out(p.size());
  for (size_t i = 0; i < p.size(); ++i) out[i] = ops[0]->dims[p[i]];
  return Shape(ops[0]->element_type, out);
}

absl::StatusOr<Shape> InferSlice(const Instruction& in, const Operands& ops) {
  RETURN_IF_ERROR(RequireArray(in, ops, 0));
  const Shape& x = *ops[0];
  if (static_cast<int64_t>(in.slice_starts.size()) != x.rank() || in.slice_limits.size() != in.slice_starts.size() ||
      in.slice_strides.size() != in.slice_starts.size())
    return Err("slice attributes must have one entry per dimension");
  std::vector<int64_t> out(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t s = in.slice_starts[i], l = in.slice_limits[i], st = in.slice_strides[i];
    if (s < 0 || l < s || l > x.dims[i] || st < 1)
      return Err(absl::StrCat("slice [", s, ":", l, ":", st, "] out of bounds for dimension of size ", x.dims[i]));
    out[i] = (l - s + st - 1) / st;
  }
  return Shape(x.element_type, out);
}

absl::StatusOr<Shape> InferDynamicSlice(const Instruction& in, const Operands& ops) {
  const Shape& x = *ops[0];
  if (static_cast<int64_t>(ops.size()) != x.rank() + 1 ||
      static_cast<int64_t>(in.dynamic_slice_sizes.size()) != x.rank())
    return Err("dynamic-slice needs one start index and one size per dimension");
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!IsScalarIntegral(*ops[i + 1]) || in.dynamic_slice_sizes[i] > x.dims[i] || in.dynamic_slice_sizes[i] < 0)
      return Err("dynamic-slice start must be an integer scalar and size within bounds");
  return Shape(x.element_type, in.dynamic_slice_sizes);
}

absl::StatusOr<Shape> InferDynamicUpdateSlice(const Instruction& in, const Operands& ops) {
  const Shape& x = *ops[0];
  const Shape& u = *ops[1];
  if (static_cast<int64_t>(ops.size()) != x.rank() + 2 || u.rank() != x.rank() || u.element_type != x.element_type)
    return Err("dynamic-update-slice needs an update of the same rank and type and one start per dimension");
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!IsScalarIntegral(*ops[i + 2]) || u.dims[i] > x.dims[i])
      return Err("dynamic-update-slice update larger than operand");
  return x;
}

absl::StatusOr<Shape> InferConcatenate(const Instruction& in, const Operands& ops) {
  if (ops.empty()) return Err("concatenate needs operands");
  int64_t dim = in.dimensions.empty() ? -1 : in.dimensions[0];
  const Shape& first = *ops[0];
  if (dim < 0 || dim >= first.rank()) return Err("concatenate dimension out of range");
  std::vector<int64_t> out = first.dims;
  for (size_t k = 1; k < ops.size(); ++k) {
    const Shape& s = *ops[k];
    if (s.element_type != first.element_type || s.rank() != first.rank())
      return Err("concatenate operands must share type and rank");
    for (int64_t i = 0; i < s.rank(); ++i)
      if (i != dim && s.dims[i] != first.dims[i])
        return Err(absl::StrCat("concatenate operands differ outside dimension ", dim, ": ", first.ToString(), " vs ",
                                s.ToString()));
    out[dim] += s.dims[dim];
  }
  return Shape(first.element_type, out);
}

absl::StatusOr<Shape> InferPad(const Instruction& in, const Operands& ops) {
  const Shape& x = *ops[0];
  if (ops[1]->rank() != 0 || ops[1]->element_type != x.element_type)
    return Err("pad value must be a scalar of the operand type");
  if (static_cast<int64_t>(in.padding_config.size()) != x.rank())
    return Err("pad config needs one entry per dimension");
  std::vector<int64_t> out(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) {
    const auto& p = in.padding_config[i];
    if (p.interior_padding < 0) return Err("negative interior padding");
    out[i] =
        p.edge_padding_low + p.edge_padding_high + x.dims[i] + std::max<int64_t>(x.dims[i] - 1, 0) * p.interior_padding;
    if (out[i] < 0) return Err("pad produces a negative dimension");
  }
  return Shape(x.element_type, out);
}

absl::StatusOr<Shape> InferScatter(const Instruction& in, const Operands& ops) {
  if (!IsInteger(ops[1]->element_type)) return Err("scatter indices must be integers");
  if (ops[2]->element_type != ops[0]->element_type) return Err("scatter updates must match operand type");
  const auto& d = in.scatter_dnums;
  if (static_cast<int64_t>(d.update_window_dims.size() + d.inserted_window_dims.size()) != ops[0]->rank())
    return Err("scatter window dims must cover the operand rank");
  return *ops[0];
}

absl::StatusOr<Shape> InferDot(const Instruction& in, const Operands& ops) {
  const Shape& a = *ops[0];
  const Shape& b = *ops[1];
  const auto& d = in.dot_dnums;
  if (a.element_type != b.element_type) return Err("dot operands must have the same type");
  if (d.lhs_batch_dimensions.size() != d.rhs_batch_dimensions.size() ||
      d.lhs_contracting_dimensions.size() != d.rhs_contracting_dimensions.size())
    return Err("dot dimension numbers mismatch");
  std::set<int64_t> la, rb;
  if (!a.IsArray() || !b.IsArray()) return Err("dot operands must be arrays");
  for (size_t i = 0; i < d.lhs_batch_dimensions.size(); ++i) {
    int64_t l = d.lhs_batch_dimensions[i], r = d.rhs_batch_dimensions[i];
    if (l < 0 || l >= a.rank() || r < 0 || r >= b.rank() || a.dims[l] != b.dims[r])
      return Err(absl::StrCat("dot batch dimensions differ: ", a.ToString(), " . ", b.ToString()));
    la.insert(d.lhs_batch_dimensions[i]);
    rb.insert(d.rhs_batch_dimensions[i]);
  }
  for (size_t i = 0; i < d.lhs_contracting_dimensions.size(); ++i) {
    int64_t l = d.lhs_contracting_dimensions[i], r = d.rhs_contracting_dimensions[i];
    if (l < 0 || l >= a.rank() || r < 0 || r >= b.rank() || a.dims[l] != b.dims[r])
      return Err(absl::StrCat("dot contracting dimensions differ: ", a.ToString(), " . ", b.ToString()));
    la.insert(l);
    rb.insert(r);
  }
  if (la.size() != d.lhs_batch_dimensions.size() + d.lhs_contracting_dimensions.size() ||
      rb.size() != d.rhs_batch_dimensions.size() + d.rhs_contracting_dimensions.size())
    return Err("dot names a dimension twice");
  std::vector<int64_t> out;
  for (int64_t x : d.lhs_batch_dimensions) out.push_back(a.dims[x]);
  for (int64_t i = 0; i < a.rank(); ++i)
    if (!la.count(i)) out.push_back(a.dims[i]);
  for (int64_t i = 0; i < b.rank(); ++i)
    if (!rb.count(i)) out.push_back(b.dims[i]);
  return Shape(in.shape().element_type != PRIMITIVE_TYPE_INVALID ? in.shape().element_type : a.element_type, out);
}

// Whether `a`, `b` and `rest` together name each of 0..rank-1 once (a
// convolution's dimension numbers for one operand).
bool IsPermutation(int64_t a, int64_t b, const std::vector<int64_t>& rest, int64_t rank) {
  std::vector<int64_t> all = rest;
  all.push_back(a);
  all.push_back(b);
  if (static_cast<int64_t>(all.size()) != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t d : all) {
    if (d < 0 || d >= rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

absl::StatusOr<Shape> InferConvolution(const Instruction& in, const Operands& ops) {
  const Shape& x = *ops[0];
  const Shape& w = *ops[1];
  const auto& d = in.conv_dnums;
  int64_t ns = d.input_spatial_dimensions.size();
  if (x.element_type != w.element_type) return Err("convolution operands must have the same type");
  if (x.rank() != ns + 2 || w.rank() != ns + 2 || static_cast<int64_t>(d.kernel_spatial_dimensions.size()) != ns ||
      static_cast<int64_t>(in.window.dimensions.size()) != ns)
    return Err(absl::StrCat("convolution ranks inconsistent: input ", x.ToString(), ", kernel ", w.ToString()));
  if (!IsPermutation(d.input_batch_dimension, d.input_feature_dimension, d.input_spatial_dimensions, ns + 2) ||
      !IsPermutation(d.kernel_input_feature_dimension, d.kernel_output_feature_dimension, d.kernel_spatial_dimensions,
                     ns + 2) ||
      !IsPermutation(d.output_batch_dimension, d.output_feature_dimension, d.output_spatial_dimensions, ns + 2))
    return Err("convolution dimension numbers must name each dimension of their operand once");
  int64_t fgc = in.feature_group_count, bgc = in.batch_group_count;
  if (fgc < 1 || bgc < 1) return Err("group counts must be >= 1");
  if (x.dims[d.input_feature_dimension] != w.dims[d.kernel_input_feature_dimension] * fgc)
    return Err(absl::StrCat("convolution input features ", x.dims[d.input_feature_dimension],
                            " != kernel input features ", w.dims[d.kernel_input_feature_dimension], " x groups ", fgc));
  if (w.dims[d.kernel_output_feature_dimension] % (fgc * bgc) != 0)
    return Err("kernel output features not divisible by groups");
  if (x.dims[d.input_batch_dimension] % bgc != 0) return Err("batch not divisible by batch_group_count");
  std::vector<int64_t> out(ns + 2);
  out[d.output_batch_dimension] = x.dims[d.input_batch_dimension] / bgc;
  out[d.output_feature_dimension] = w.dims[d.kernel_output_feature_dimension];
  for (int64_t i = 0; i < ns; ++i) {
    if (in.window.dimensions[i].size != w.dims[d.kernel_spatial_dimensions[i]])
      return Err("convolution window size != kernel spatial size");
    ASSIGN_OR_RETURN(out[d.output_spatial_dimensions[i]],
                     WindowedSize(x.dims[d.input_spatial_dimensions[i]], in.window.dimensions[i]));
  }
  return Shape(x.element_type, out);
}

absl::StatusOr<Shape> InferReduce(const Instruction& in, const Operands& ops) {
  size_t n = ops.size() / 2;
  if (ops.size() % 2 || n == 0) return Err("reduce needs N inputs and N inits");
  if (!in.to_apply()) return Err("reduce without a computation");
  std::vector<int64_t> out;
  const Shape& x = *ops[0];
  for (int64_t d : in.dimensions)
    if (d < 0 || d >= x.rank()) return Err("reduce dimension out of range");
  for (int64_t i = 0; i < x.rank(); ++i)
    if (std::find(in.dimensions.begin(), in.dimensions.end(), i) == in.dimensions.end()) out.push_back(x.dims[i]);
  std::vector<Shape> results;
  for (size_t k = 0; k < n; ++k) {
    if (ops[k]->dims != x.dims) return Err("reduce inputs must share dimensions");
    if (ops[n + k]->rank() != 0 || ops[n + k]->element_type != ops[k]->element_type)
      return Err("reduce init must be a scalar of the input type");
    results.emplace_back(ops[k]->element_type, out);
  }
  return n == 1 ? results[0] : Shape::Tuple(results);
}

absl::StatusOr<Shape> InferReduceWindow(const Instruction& in, const Operands& ops) {
  const Shape& x = *ops[0];
  if (static_cast<int64_t>(in.window.dimensions.size()) != x.rank())
    return Err("reduce-window needs one window dimension per dimension");
  if (ops[1]->rank() != 0 || ops[1]->element_type != x.element_type) return Err("reduce-window init must be a scalar");
  std::vector<int64_t> out(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) {
    ASSIGN_OR_RETURN(out[i], WindowedSize(x.dims[i], in.window.dimensions[i]));
  }
  return Shape(x.element_type, out);
}

absl::StatusOr<Shape> InferSort(const Instruction& in, const Operands& ops) {
  if (ops.empty() || in.dimensions.size() != 1) return Err("sort needs operands and one dimension");
  std::vector<Shape> results;
  for (const Shape* s : ops) {
    if (s->dims != ops[0]->dims) return Err("sort operands must share dimensions");
    results.push_back(*s);
  }
  if (in.dimensions[0] < 0 || in.dimensions[0] >= ops[0]->rank()) return Err("sort dimension out of range");
  return ops.size() == 1 ? results[0] : Shape::Tuple(results);
}

// An elementwise op: operands of one shape, and a type the op is defined on.
absl::StatusOr<Shape> InferElementwise(const Instruction& in, const Operands& ops) {
  Opcode op = in.opcode();
  uint32_t traits = OpcodeTraitsOf(op);
  for (size_t i = 0; i < ops.size(); ++i) {
    RETURN_IF_ERROR(RequireArray(in, ops, i));
    if (!ops[i]->Compatible(*ops[0]))
      return Err(absl::StrCat(OpcodeName(op), " operands differ: ", ops[0]->ToString(), " vs ", ops[i]->ToString()));
  }
  PrimitiveType t = ops[0]->element_type;
  if ((traits & kFloatOnly) && !IsFloatingPoint(t))
    return Err(absl::StrCat(OpcodeName(op), " is defined for floating-point types, not ", PrimitiveTypeName(t)));
  bool bitwise = op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor || op == Opcode::kNot;
  if (bitwise && IsFloatingPoint(t)) return Err(absl::StrCat(OpcodeName(op), " needs integer or pred operands"));
  bool shift = op == Opcode::kShiftLeft || op == Opcode::kShiftRightArithmetic || op == Opcode::kShiftRightLogical;
  if (shift && !IsInteger(t)) return Err(absl::StrCat(OpcodeName(op), " needs integer operands"));
  if (!bitwise && t == PRED && op != Opcode::kCopy)
    return Err(absl::StrCat(OpcodeName(op), " is not defined for pred"));
  return *ops[0];
}

}  // namespace

// call, while and conditional: each called computation's signature
// against the operands.
absl::StatusOr<Shape> InferControlFlow(const Instruction& in, const std::vector<const Shape*>& ops) {
  switch (in.opcode()) {
    case Opcode::kCall: {
      if (!in.to_apply()) return Err("call without computation");
      std::vector<Instruction*> params = in.to_apply()->parameters();
      if (params.size() != ops.size()) return Err("call passes a different number of arguments than it takes");
      for (size_t k = 0; k < ops.size(); ++k)
        if (!params[k]->shape().Compatible(*ops[k])) return Err("call argument's shape differs from the parameter's");
      return in.to_apply()->root()->shape();
    }
    case Opcode::kWhile: {
      if (in.called_computations().size() != 2) return Err("while needs condition and body");
      for (Computation* c : in.called_computations()) {
        std::vector<Instruction*> params = c->parameters();
        if (params.size() != 1 || !params[0]->shape().Compatible(*ops[0]))
          return Err("while condition and body must take one parameter of the init's shape");
      }
      if (!in.called_computations()[0]->root()->shape().Compatible(*ops[0]))
        return Err("while body result must match its init");
      if (!in.called_computations()[1]->root()->shape().Compatible(Shape(PRED, {})))
        return Err("while condition must return pred[]");
      return *ops[0];
    }
    case Opcode::kConditional: {
      const auto& branches = in.called_computations();
      if (branches.empty() || branches.size() + 1 != ops.size()) return Err("conditional needs one operand per branch");
      bool by_pred = ops[0]->element_type == PRED;
      if (ops[0]->rank() != 0 || (!by_pred && ops[0]->element_type != S32) || (by_pred && branches.size() != 2))
        return Err("conditional selects by a pred[] (two branches) or an s32[] index");
      for (size_t k = 0; k < branches.size(); ++k) {
        std::vector<Instruction*> params = branches[k]->parameters();
        if (params.size() != 1 || !params[0]->shape().Compatible(*ops[k + 1]))
          return Err("conditional branch must take one parameter of its operand's shape");
        if (!branches[k]->root()->shape().Compatible(branches[0]->root()->shape()))
          return Err("conditional branches must return the same shape");
      }
      return branches[0]->root()->shape();
    }
    default:
      return Err("not control flow");
  }
}

absl::StatusOr<Shape> InferShape(const Instruction& in) {
  std::vector<const Shape*> ops;
  for (Instruction* o : in.operands()) ops.push_back(&o->shape());
  Opcode op = in.opcode();
  int arity = OpcodeArity(op);
  if (arity >= 0 && static_cast<int>(ops.size()) != arity)
    return Err(absl::StrCat(OpcodeName(op), " takes ", arity, " operands, got ", ops.size()));
  auto array = [&](int i) -> absl::Status {
    if (!ops[i]->IsArray()) return Err(absl::StrCat(OpcodeName(op), " operand ", i, " must be an array"));
    return absl::OkStatus();
  };
  switch (op) {
    case Opcode::kParameter:
    case Opcode::kIota:
      return in.shape();
    case Opcode::kConstant:
      if (!in.literal) return Err("constant without literal");
      return in.literal->shape();
    case Opcode::kConvert:
      RETURN_IF_ERROR(array(0));
      return Shape(in.shape().element_type, ops[0]->dims);
    case Opcode::kBitcastConvert:
      RETURN_IF_ERROR(array(0));
      if (ByteWidth(in.shape().element_type) != ByteWidth(ops[0]->element_type))
        return Err("bitcast-convert between types of different widths");
      return Shape(in.shape().element_type, ops[0]->dims);
    case Opcode::kIsFinite:
      RETURN_IF_ERROR(array(0));
      if (!IsFloatingPoint(ops[0]->element_type)) return Err("is-finite needs a floating-point operand");
      return Shape(PRED, ops[0]->dims);
    case Opcode::kCompare:
      RETURN_IF_ERROR(array(0));
      if (!ops[0]->Compatible(*ops[1]))
        return Err(absl::StrCat("compare operands differ: ", ops[0]->ToString(), " vs ", ops[1]->ToString()));
      return Shape(PRED, ops[0]->dims);
    case Opcode::kSelect:
      if (ops[0]->element_type != PRED || !ops[1]->Compatible(*ops[2]) ||
          (ops[0]->dims != ops[1]->dims && ops[0]->rank() != 0))
        return Err(absl::StrCat("select needs pred[same dims] and two equal shapes, got ", ops[0]->ToString(), ", ",
                                ops[1]->ToString(), ", ", ops[2]->ToString()));
      return *ops[1];
    case Opcode::kClamp:
      for (int i : {0, 2})
        if (ops[i]->element_type != ops[1]->element_type || (ops[i]->rank() != 0 && ops[i]->dims != ops[1]->dims))
          return Err("clamp bounds must be scalars or match the operand");
      return *ops[1];
    case Opcode::kBroadcast:
      return InferBroadcast(in, ops);
    case Opcode::kReshape:
      RETURN_IF_ERROR(array(0));
      if (Shape(ops[0]->element_type, in.shape().dims).ElementCount() != ops[0]->ElementCount())
        return Err(absl::StrCat("reshape of ", ops[0]->ToString(), " to ", Dims(in.shape().dims),
                                " changes the element count"));
      return Shape(ops[0]->element_type, in.shape().dims);
    case Opcode::kTranspose:
      return InferTranspose(in, ops);
    case Opcode::kSlice:
      return InferSlice(in, ops);
    case Opcode::kDynamicSlice:
      return InferDynamicSlice(in, ops);
    case Opcode::kDynamicUpdateSlice:
      return InferDynamicUpdateSlice(in, ops);
    case Opcode::kConcatenate:
      return InferConcatenate(in, ops);
    case Opcode::kPad:
      return InferPad(in, ops);
    case Opcode::kReverse:
      for (int64_t d : in.dimensions)
        if (d < 0 || d >= ops[0]->rank()) return Err("reverse dimension out of range");
      return *ops[0];
    case Opcode::kGather:
      return InferGather(*ops[0], *ops[1], in);
    case Opcode::kScatter:
      return InferScatter(in, ops);
    case Opcode::kDot:
      return InferDot(in, ops);
    case Opcode::kConvolution:
      return InferConvolution(in, ops);
    case Opcode::kReduce:
      return InferReduce(in, ops);
    case Opcode::kReduceWindow:
      return InferReduceWindow(in, ops);
    case Opcode::kSort:
      return InferSort(in, ops);
    case Opcode::kTuple: {
      std::vector<Shape> s;
      for (const Shape* o : ops) s.push_back(*o);
      return Shape::Tuple(s);
    }
    case Opcode::kGetTupleElement:
      if (!ops[0]->IsTuple() || in.tuple_index < 0 ||
          in.tuple_index >= static_cast<int64_t>(ops[0]->tuple_shapes.size()))
        return Err("get-tuple-element index out of range");
      return ops[0]->tuple_shapes[in.tuple_index];
    case Opcode::kCall:
    case Opcode::kWhile:
    case Opcode::kConditional:
      return InferControlFlow(in, ops);
    case Opcode::kRngBitGenerator:
      return in.shape();
    default:
      break;
  }
  if (OpcodeTraitsOf(op) & kElementwise) return InferElementwise(in, ops);
  return Err(absl::StrCat("no shape inference for ", OpcodeName(op)));
}

std::vector<int64_t> DotFreeDims(int64_t rank, const std::vector<int64_t>& batch,
                                 const std::vector<int64_t>& contracted) {
  std::vector<int64_t> free;
  for (int64_t i = 0; i < rank; ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contracted.begin(), contracted.end(), i) == contracted.end())
      free.push_back(i);
  return free;
}

}  // namespace xonnx::hlo
