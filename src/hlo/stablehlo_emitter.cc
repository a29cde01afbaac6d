// ToStableHlo: a module as StableHLO MLIR text (see stablehlo.h).
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "hlo/stablehlo.h"
#include "hlo/stablehlo_syntax.h"

namespace xonnx::hlo {

// Named, not anonymous: unity builds compile this file with printer.cc.
namespace stablehlo_writer {

std::string I64Array(const std::vector<int64_t>& v) {
  return v.empty() ? "array<i64>" : absl::StrCat("array<i64: ", absl::StrJoin(v, ", "), ">");
}

std::string List(const std::vector<int64_t>& v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }

// [[low, high], ...] as a dense i64 tensor of shape Nx2.
std::string PaddingAttr(const std::vector<std::pair<int64_t, int64_t>>& pads) {
  std::vector<std::string> rows;
  for (const auto& [lo, hi] : pads) rows.push_back(absl::StrCat("[", lo, ", ", hi, "]"));
  return absl::StrCat(rows.empty() ? "dense<>" : absl::StrCat("dense<[", absl::StrJoin(rows, ", "), "]>"), " : tensor<",
                      pads.size(), "x2xi64>");
}

std::string PrecisionAttr(Precision p) {
  std::string one = absl::StrCat("#stablehlo<precision ", absl::AsciiStrToUpper(PrecisionName(p)), ">");
  return absl::StrCat("[", one, ", ", one, "]");
}

std::string CompareType(PrimitiveType t) {
  if (IsFloatingPoint(t)) return "FLOAT";
  return IsSignedInteger(t) ? "SIGNED" : "UNSIGNED";
}

// Nested lists of true/false for a pred constant (MLIR's hex form packs i1
// values in a way of its own).
std::string PredValues(const Literal& l, size_t dim, int64_t* k) {
  const std::vector<int64_t>& dims = l.shape().dims;
  if (dim == dims.size()) return l.data<bool>()[(*k)++] ? "true" : "false";
  std::vector<std::string> parts;
  for (int64_t i = 0; i < dims[dim]; ++i) parts.push_back(PredValues(l, dim + 1, k));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string DenseValue(const Literal& l) {
  if (l.shape().ElementCount() == 0) return "dense<>";
  if (l.shape().element_type == PRED) {
    int64_t k = 0;
    return absl::StrCat("dense<", PredValues(l, 0, &k), ">");
  }
  static const char kHex[] = "0123456789ABCDEF";
  std::string hex = "\"0x";
  const auto* bytes = static_cast<const uint8_t*>(l.untyped_data());
  // A tensor of one repeated value is written as that value (a splat).
  const size_t n = l.IsUniform() ? ByteWidth(l.shape().element_type) : l.size_bytes();
  hex.reserve(3 + 2 * n + 1);
  for (size_t i = 0; i < n; ++i) {
    hex += kHex[bytes[i] >> 4];
    hex += kHex[bytes[i] & 15];
  }
  return absl::StrCat("dense<", hex, "\">");
}

std::string Location(const OpMetadata& m) {
  if (m.empty()) return "";
  return absl::StrCat(" loc(", QuoteMlirString(absl::StrCat(m.op_type, ":", m.op_name)), ")");
}

class Emitter {
 public:
  absl::StatusOr<std::string> Run(const Module& m);

 private:
  std::string Fresh() { return absl::StrCat("%", next_++); }
  void Line(int indent, absl::string_view s) { absl::StrAppend(out_, std::string(2 * indent, ' '), s, "\n"); }
  // The values of a tuple-shaped value's elements (get-tuple-element where
  // the producer is not a tuple instruction).
  std::vector<std::string> Elements(const Instruction& producer, int indent);
  // Emits `c`'s instructions with its parameters bound to `params`; returns
  // the values it returns (the root's elements when `flatten` and the root
  // is a tuple).
  absl::StatusOr<std::vector<std::string>> Body(const Computation& c, const std::vector<std::string>& params,
                                                bool flatten, int indent);
  enum class Args { kScalars, kTupleElements, kNone };
  // `c` as a region: block arguments per `args`, its body, stablehlo.return.
  absl::StatusOr<std::string> Region(const Computation& c, Args args, const std::string& bound, int indent);
  absl::Status Instruction_(const Instruction& i, int indent);
  // Writes `%r = "name"(operands) (regions) {attrs} : (types) -> results`
  // and binds the instruction's value (re-tupling several results).
  void Op(const Instruction& i, absl::string_view name, const std::vector<std::string>& operands,
          const std::vector<Shape>& operand_shapes, const std::vector<std::string>& regions,
          const std::vector<std::string>& attrs, const std::vector<Shape>& results, int indent);
  absl::Status Function(const Computation& c, bool entry);

  std::string* out_ = nullptr;
  int64_t next_ = 0;
  absl::flat_hash_map<const Instruction*, std::string> value_;
  std::vector<const Computation*> functions_;  // computations named by a call
};

std::vector<std::string> Emitter::Elements(const Instruction& producer, int indent) {
  std::vector<std::string> out;
  if (producer.opcode() == Opcode::kTuple) {
    for (const Instruction* op : producer.operands()) out.push_back(value_.at(op));
    return out;
  }
  const std::string& v = value_.at(&producer);
  for (size_t k = 0; k < producer.shape().tuple_shapes.size(); ++k) {
    std::string r = Fresh();
    Line(indent, absl::StrCat(r, " = \"stablehlo.get_tuple_element\"(", v, ") {index = ", k, " : i32} : (",
                              MlirType(producer.shape()), ") -> ", MlirType(producer.shape().tuple_shapes[k])));
    out.push_back(r);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> Emitter::Body(const Computation& c, const std::vector<std::string>& params,
                                                       bool flatten, int indent) {
  std::vector<Instruction*> ps = c.parameters();
  if (ps.size() != params.size())
    return InvalidArgument("computation '%s' has %d parameters, %d bound", c.name(), ps.size(), params.size());
  for (size_t k = 0; k < ps.size(); ++k) value_[ps[k]] = params[k];
  for (const auto& i : c.instructions()) RETURN_IF_ERROR(Instruction_(*i, indent));
  if (flatten && c.root()->shape().IsTuple()) return Elements(*c.root(), indent);
  return std::vector<std::string>{value_.at(c.root())};
}

absl::StatusOr<std::string> Emitter::Region(const Computation& c, Args args, const std::string& bound, int indent) {
  std::string text, *saved = out_;
  out_ = &text;
  std::vector<std::string> params, block_args;
  std::vector<Instruction*> ps = c.parameters();
  if (args == Args::kScalars) {
    for (const Instruction* p : ps) {
      params.push_back(absl::StrCat("%arg", next_++));
      block_args.push_back(absl::StrCat(params.back(), ": ", MlirType(p->shape())));
    }
  } else if (args == Args::kTupleElements) {
    if (ps.size() != 1 || !ps[0]->shape().IsTuple())
      return InvalidArgument("loop computation '%s' must take one tuple", c.name());
    std::vector<std::string> elems;
    for (const Shape& s : ps[0]->shape().tuple_shapes) {
      elems.push_back(absl::StrCat("%arg", next_++));
      block_args.push_back(absl::StrCat(elems.back(), ": ", MlirType(s)));
    }
    Line(indent + 1, absl::StrCat("^bb0(", absl::StrJoin(block_args, ", "), "):"));
    block_args.clear();
    std::string t = Fresh();
    std::vector<std::string> types;
    for (const Shape& s : ps[0]->shape().tuple_shapes) types.push_back(MlirType(s));
    Line(indent + 2, absl::StrCat(t, " = \"stablehlo.tuple\"(", absl::StrJoin(elems, ", "), ") : (",
                                  absl::StrJoin(types, ", "), ") -> ", MlirType(ps[0]->shape())));
    params.push_back(t);
  } else {
    for (size_t k = 0; k < ps.size(); ++k) params.push_back(bound);
  }
  if (!block_args.empty()) Line(indent + 1, absl::StrCat("^bb0(", absl::StrJoin(block_args, ", "), "):"));
  absl::StatusOr<std::vector<std::string>> results = Body(c, params, /*flatten=*/true, indent + 2);
  out_ = saved;
  if (!results.ok()) return results.status();
  std::vector<std::string> types;
  const Shape& root = c.root()->shape();
  if (root.IsTuple()) {
    for (const Shape& s : root.tuple_shapes) types.push_back(MlirType(s));
  } else {
    types.push_back(MlirType(root));
  }
  absl::StrAppend(&text, std::string(2 * (indent + 2), ' '), "\"stablehlo.return\"(", absl::StrJoin(*results, ", "),
                  ") : (", absl::StrJoin(types, ", "), ") -> ()\n");
  return absl::StrCat("{\n", text, std::string(2 * (indent + 1), ' '), "}");
}

void Emitter::Op(const Instruction& i, absl::string_view name, const std::vector<std::string>& operands,
                 const std::vector<Shape>& operand_shapes, const std::vector<std::string>& regions,
                 const std::vector<std::string>& attrs, const std::vector<Shape>& results, int indent) {
  std::string r = Fresh();
  std::vector<std::string> in_types, out_types;
  for (const Shape& s : operand_shapes) in_types.push_back(MlirType(s));
  for (const Shape& s : results) out_types.push_back(MlirType(s));
  std::string text = absl::StrCat(results.size() == 1 ? r : absl::StrCat(r, ":", results.size()), " = \"", name, "\"(",
                                  absl::StrJoin(operands, ", "), ")");
  if (!regions.empty()) absl::StrAppend(&text, " (", absl::StrJoin(regions, ", "), ")");
  if (!attrs.empty()) absl::StrAppend(&text, " {", absl::StrJoin(attrs, ", "), "}");
  absl::StrAppend(&text, " : (", absl::StrJoin(in_types, ", "), ") -> ",
                  results.size() == 1 ? out_types[0] : absl::StrCat("(", absl::StrJoin(out_types, ", "), ")"),
                  Location(i.metadata));
  Line(indent, text);
  if (results.size() == 1 && !(i.shape().IsTuple() && !results[0].IsTuple())) {
    value_[&i] = r;
    return;
  }
  std::vector<std::string> parts;
  for (size_t k = 0; k < results.size(); ++k) parts.push_back(results.size() == 1 ? r : absl::StrCat(r, "#", k));
  std::string t = Fresh();
  Line(indent, absl::StrCat(t, " = \"stablehlo.tuple\"(", absl::StrJoin(parts, ", "), ") : (",
                            absl::StrJoin(out_types, ", "), ") -> ", MlirType(i.shape())));
  value_[&i] = t;
}

std::vector<std::string> ConvolutionAttributes(const Instruction& i) {
  const ConvolutionDimensionNumbers& d = i.conv_dnums;
  std::vector<int64_t> strides, lhs, rhs;
  std::vector<std::pair<int64_t, int64_t>> pads;
  std::vector<std::string> reversal;
  for (const WindowDimension& w : i.window.dimensions) {
    strides.push_back(w.stride);
    lhs.push_back(w.base_dilation);
    rhs.push_back(w.window_dilation);
    pads.emplace_back(w.padding_low, w.padding_high);
    reversal.push_back(w.window_reversal ? "true" : "false");
  }
  return {absl::StrCat("window_strides = ", I64Array(strides)),
          absl::StrCat("padding = ", PaddingAttr(pads)),
          absl::StrCat("lhs_dilation = ", I64Array(lhs)),
          absl::StrCat("rhs_dilation = ", I64Array(rhs)),
          absl::StrCat("window_reversal = ",
                       reversal.empty() ? "array<i1>" : absl::StrCat("array<i1: ", absl::StrJoin(reversal, ", "), ">")),
          absl::StrCat("dimension_numbers = #stablehlo.conv<raw input_batch_dimension = ", d.input_batch_dimension,
                       ", input_feature_dimension = ", d.input_feature_dimension,
                       ", input_spatial_dimensions = ", List(d.input_spatial_dimensions),
                       ", kernel_input_feature_dimension = ", d.kernel_input_feature_dimension,
                       ", kernel_output_feature_dimension = ", d.kernel_output_feature_dimension,
                       ", kernel_spatial_dimensions = ", List(d.kernel_spatial_dimensions),
                       ", output_batch_dimension = ", d.output_batch_dimension,
                       ", output_feature_dimension = ", d.output_feature_dimension,
                       ", output_spatial_dimensions = ", List(d.output_spatial_dimensions), ">"),
          absl::StrCat("feature_group_count = ", i.feature_group_count, " : i64"),
          absl::StrCat("batch_group_count = ", i.batch_group_count, " : i64"),
          absl::StrCat("precision_config = ", PrecisionAttr(i.precision))};
}

// The attributes of `i` in StableHLO's syntax (regions and operands are
// the emitter's).
absl::StatusOr<std::vector<std::string>> Attributes(const Instruction& i) {
  std::vector<std::string> attrs;
  switch (i.opcode()) {
    case Opcode::kConstant:
      if (!i.shape().IsArray())
        return Unimplemented("a constant of shape %s has no StableHLO form", i.shape().ToString());
      attrs.push_back(absl::StrCat("value = ", DenseValue(*i.literal), " : ", MlirType(i.shape())));
      break;
    case Opcode::kIota:
    case Opcode::kConcatenate:
      attrs.push_back(absl::StrCat(i.opcode() == Opcode::kIota ? "iota_dimension" : "dimension", " = ",
                                   i.dimensions.at(0), " : i64"));
      break;
    case Opcode::kBroadcast:
      attrs.push_back(absl::StrCat("broadcast_dimensions = ", I64Array(i.dimensions)));
      break;
    case Opcode::kTranspose:
      attrs.push_back(absl::StrCat("permutation = ", I64Array(i.dimensions)));
      break;
    case Opcode::kReverse:
      attrs.push_back(absl::StrCat("dimensions = ", I64Array(i.dimensions)));
      break;
    case Opcode::kSlice:
      attrs = {absl::StrCat("start_indices = ", I64Array(i.slice_starts)),
               absl::StrCat("limit_indices = ", I64Array(i.slice_limits)),
               absl::StrCat("strides = ", I64Array(i.slice_strides))};
      break;
    case Opcode::kDynamicSlice:
      attrs.push_back(absl::StrCat("slice_sizes = ", I64Array(i.dynamic_slice_sizes)));
      break;
    case Opcode::kPad: {
      std::vector<int64_t> lo, hi, in;
      for (const auto& p : i.padding_config) {
        lo.push_back(p.edge_padding_low);
        hi.push_back(p.edge_padding_high);
        in.push_back(p.interior_padding);
      }
      attrs = {absl::StrCat("edge_padding_low = ", I64Array(lo)), absl::StrCat("edge_padding_high = ", I64Array(hi)),
               absl::StrCat("interior_padding = ", I64Array(in))};
      break;
    }
    case Opcode::kGetTupleElement:
      attrs.push_back(absl::StrCat("index = ", i.tuple_index, " : i32"));
      break;
    case Opcode::kCompare:
      attrs = {absl::StrCat("comparison_direction = #stablehlo<comparison_direction ",
                            ComparisonDirectionName(i.comparison_direction), ">"),
               absl::StrCat("compare_type = #stablehlo<comparison_type ",
                            CompareType(i.operand(0)->shape().element_type), ">")};
      break;
    case Opcode::kDot: {
      const DotDimensionNumbers& d = i.dot_dnums;
      attrs = {absl::StrCat("dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = ",
                            List(d.lhs_batch_dimensions), ", rhs_batching_dimensions = ", List(d.rhs_batch_dimensions),
                            ", lhs_contracting_dimensions = ", List(d.lhs_contracting_dimensions),
                            ", rhs_contracting_dimensions = ", List(d.rhs_contracting_dimensions), ">"),
               absl::StrCat("precision_config = ", PrecisionAttr(i.precision))};
      break;
    }
    case Opcode::kConvolution:
      attrs = ConvolutionAttributes(i);
      break;
    case Opcode::kGather: {
      const GatherDimensionNumbers& d = i.gather_dnums;
      attrs = {absl::StrCat("dimension_numbers = #stablehlo.gather<offset_dims = ", List(d.offset_dims),
                            ", collapsed_slice_dims = ", List(d.collapsed_slice_dims), ", start_index_map = ",
                            List(d.start_index_map), ", index_vector_dim = ", d.index_vector_dim, ">"),
               absl::StrCat("slice_sizes = ", I64Array(i.gather_slice_sizes)),
               absl::StrCat("indices_are_sorted = ", i.indices_are_sorted ? "true" : "false")};
      break;
    }
    case Opcode::kScatter: {
      const ScatterDimensionNumbers& d = i.scatter_dnums;
      attrs = {absl::StrCat("scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = ",
                            List(d.update_window_dims), ", inserted_window_dims = ", List(d.inserted_window_dims),
                            ", scatter_dims_to_operand_dims = ", List(d.scatter_dims_to_operand_dims),
                            ", index_vector_dim = ", d.index_vector_dim, ">"),
               absl::StrCat("indices_are_sorted = ", i.indices_are_sorted ? "true" : "false"),
               absl::StrCat("unique_indices = ", i.unique_indices ? "true" : "false")};
      break;
    }
    case Opcode::kReduce:
      attrs.push_back(absl::StrCat("dimensions = ", I64Array(i.dimensions)));
      break;
    case Opcode::kReduceWindow: {
      std::vector<int64_t> size, strides, base, win;
      std::vector<std::pair<int64_t, int64_t>> pads;
      for (const WindowDimension& w : i.window.dimensions) {
        size.push_back(w.size);
        strides.push_back(w.stride);
        base.push_back(w.base_dilation);
        win.push_back(w.window_dilation);
        pads.emplace_back(w.padding_low, w.padding_high);
      }
      attrs = {absl::StrCat("window_dimensions = ", I64Array(size)),
               absl::StrCat("window_strides = ", I64Array(strides)), absl::StrCat("base_dilations = ", I64Array(base)),
               absl::StrCat("window_dilations = ", I64Array(win)), absl::StrCat("padding = ", PaddingAttr(pads))};
      break;
    }
    case Opcode::kSort:
      attrs = {absl::StrCat("dimension = ", i.dimensions.at(0), " : i64"),
               absl::StrCat("is_stable = ", i.is_stable ? "true" : "false")};
      break;
    case Opcode::kRngBitGenerator: {
      static const char* kAlgorithms[] = {"DEFAULT", "THREE_FRY", "PHILOX"};
      if (i.rng_algorithm < 0 || i.rng_algorithm > 2) return InvalidArgument("rng algorithm %d", i.rng_algorithm);
      attrs.push_back(absl::StrCat("rng_algorithm = #stablehlo<rng_algorithm ", kAlgorithms[i.rng_algorithm], ">"));
      break;
    }
    default:
      break;
  }
  return attrs;
}

absl::Status Emitter::Instruction_(const Instruction& i, int indent) {
  std::vector<std::string> ops, attrs, regions;
  std::vector<Shape> op_shapes;
  for (const Instruction* o : i.operands()) {
    auto it = value_.find(o);
    if (it == value_.end()) return Internal("operand of '%s' emitted after it", i.name());
    ops.push_back(it->second);
    op_shapes.push_back(o->shape());
  }
  std::vector<Shape> results{i.shape()};
  const auto& called = i.called_computations();
  auto region = [&](const Computation* c, Args args, const std::string& bound = "") -> absl::Status {
    ASSIGN_OR_RETURN(std::string r, Region(*c, args, bound, indent));
    regions.push_back(std::move(r));
    return absl::OkStatus();
  };
  // Ops whose result is a tuple of several values get one result per value.
  auto flat_results = [&] {
    if (i.shape().IsTuple()) results = i.shape().tuple_shapes;
  };
  std::string name(StableHloOpName(i.opcode()));
  ASSIGN_OR_RETURN(attrs, Attributes(i));
  switch (i.opcode()) {
    case Opcode::kParameter:
      return absl::OkStatus();  // bound by the caller
    case Opcode::kCopy:
      value_[&i] = ops.at(0);  // StableHLO values are immutable; a copy is the value
      return absl::OkStatus();
    case Opcode::kScatter:
    case Opcode::kReduceWindow:
      RETURN_IF_ERROR(region(called.at(0), Args::kScalars));
      break;
    case Opcode::kReduce:
    case Opcode::kSort:
      RETURN_IF_ERROR(region(called.at(0), Args::kScalars));
      flat_results();
      break;
    case Opcode::kRngBitGenerator:
      flat_results();
      break;
    case Opcode::kCall:
      attrs.push_back(absl::StrCat("callee = @", QuoteMlirString(called.at(0)->name())));
      if (std::find(functions_.begin(), functions_.end(), called[0]) == functions_.end())
        functions_.push_back(called[0]);
      break;
    case Opcode::kWhile: {
      // The loop state is one tuple in HLO and separate values in StableHLO.
      ops = Elements(*i.operand(0), indent);
      op_shapes = i.operand(0)->shape().tuple_shapes;
      RETURN_IF_ERROR(region(called.at(1), Args::kTupleElements));
      RETURN_IF_ERROR(region(called.at(0), Args::kTupleElements));
      flat_results();
      break;
    }
    case Opcode::kConditional: {
      // Branch regions take no arguments: each reads its operand from the
      // enclosing function.
      name = i.operand(0)->shape().element_type == PRED ? "stablehlo.if" : "stablehlo.case";
      for (size_t k = 0; k < called.size(); ++k) RETURN_IF_ERROR(region(called[k], Args::kNone, ops.at(k + 1)));
      ops.resize(1);
      op_shapes.resize(1);
      flat_results();
      break;
    }
    default:
      if (name.empty()) return Unimplemented("opcode %s has no StableHLO form", OpcodeName(i.opcode()));
      break;
  }
  Op(i, name, ops, op_shapes, regions, attrs, results, indent);
  return absl::OkStatus();
}

absl::Status Emitter::Function(const Computation& c, bool entry) {
  std::vector<std::string> args, params;
  for (const Instruction* p : c.parameters()) {
    params.push_back(absl::StrCat("%arg", next_++));
    args.push_back(absl::StrCat(params.back(), ": ", MlirType(p->shape()), Location(p->metadata)));
  }
  std::vector<std::string> types;
  const Shape& root = c.root()->shape();
  if (entry && root.IsTuple()) {
    for (const Shape& s : root.tuple_shapes) types.push_back(MlirType(s));
  } else {
    types.push_back(MlirType(root));
  }
  Line(1, absl::StrCat("func.func ", entry ? "public @main" : absl::StrCat("private @", QuoteMlirString(c.name())), "(",
                       absl::StrJoin(args, ", "), ") -> (", absl::StrJoin(types, ", "), ") {"));
  ASSIGN_OR_RETURN(std::vector<std::string> results, Body(c, params, /*flatten=*/entry, 2));
  Line(2,
       absl::StrCat("\"func.return\"(", absl::StrJoin(results, ", "), ") : (", absl::StrJoin(types, ", "), ") -> ()"));
  Line(1, "}");
  return absl::OkStatus();
}

absl::StatusOr<std::string> Emitter::Run(const Module& m) {
  if (!m.entry()) return InvalidArgument("module '%s' has no entry computation", m.name());
  std::string text;
  out_ = &text;
  RETURN_IF_ERROR(Function(*m.entry(), /*entry=*/true));
  // Functions for the computations calls name, and for those their bodies
  // call in turn.
  for (size_t k = 0; k < functions_.size(); ++k) RETURN_IF_ERROR(Function(*functions_[k], /*entry=*/false));
  return absl::StrCat("module @", QuoteMlirString(m.name()), " {\n", text, "}\n");
}

}  // namespace stablehlo_writer

absl::StatusOr<std::string> ToStableHlo(const Module& m) { return stablehlo_writer::Emitter().Run(m); }

}  // namespace xonnx::hlo
