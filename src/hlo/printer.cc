#include "hlo/printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xonnx::hlo {

namespace {

std::string Braces(const std::vector<int64_t>& v) { return absl::StrCat("{", absl::StrJoin(v, ","), "}"); }

std::string WindowText(const Window& w) {
  std::vector<std::string> size, stride, pad, lhs_dil, rhs_dil, rev;
  bool any_stride = false, any_pad = false, any_lhs = false, any_rhs = false, any_rev = false;
  for (const auto& d : w.dimensions) {
    size.push_back(absl::StrCat(d.size));
    stride.push_back(absl::StrCat(d.stride));
    pad.push_back(absl::StrCat(d.padding_low, "_", d.padding_high));
    lhs_dil.push_back(absl::StrCat(d.base_dilation));
    rhs_dil.push_back(absl::StrCat(d.window_dilation));
    rev.push_back(d.window_reversal ? "1" : "0");
    any_stride |= d.stride != 1;
    any_pad |= d.padding_low != 0 || d.padding_high != 0;
    any_lhs |= d.base_dilation != 1;
    any_rhs |= d.window_dilation != 1;
    any_rev |= d.window_reversal;
  }
  std::string s = absl::StrCat("size=", absl::StrJoin(size, "x"));
  if (any_stride) absl::StrAppend(&s, " stride=", absl::StrJoin(stride, "x"));
  if (any_pad) absl::StrAppend(&s, " pad=", absl::StrJoin(pad, "x"));
  if (any_lhs) absl::StrAppend(&s, " lhs_dilate=", absl::StrJoin(lhs_dil, "x"));
  if (any_rhs) absl::StrAppend(&s, " rhs_dilate=", absl::StrJoin(rhs_dil, "x"));
  if (any_rev) absl::StrAppend(&s, " rhs_reversal=", absl::StrJoin(rev, "x"));
  return s;
}

// dim_labels such as "b01f_01io->b01f".
std::string DimLabels(const ConvolutionDimensionNumbers& d) {
  int64_t rank = d.input_spatial_dimensions.size() + 2;
  auto label = [&](int64_t batch, int64_t feature, const std::vector<int64_t>& spatial, char b, char f) {
    std::string s(rank, '?');
    s[batch] = b;
    s[feature] = f;
    for (size_t i = 0; i < spatial.size(); ++i) s[spatial[i]] = static_cast<char>('0' + i);
    return s;
  };
  return absl::StrCat(
      label(d.input_batch_dimension, d.input_feature_dimension, d.input_spatial_dimensions, 'b', 'f'), "_",
      label(d.kernel_input_feature_dimension, d.kernel_output_feature_dimension, d.kernel_spatial_dimensions, 'i', 'o'),
      "->", label(d.output_batch_dimension, d.output_feature_dimension, d.output_spatial_dimensions, 'b', 'f'));
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string Attributes(const Instruction& i, const PrintOptions& o) {
  std::vector<std::string> a;
  switch (i.opcode()) {
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kReverse:
    case Opcode::kReduce:
    case Opcode::kConcatenate:
    case Opcode::kSort:
      a.push_back(absl::StrCat("dimensions=", Braces(i.dimensions)));
      break;
    case Opcode::kIota:
      a.push_back(absl::StrCat("iota_dimension=", i.dimensions.at(0)));
      break;
    case Opcode::kSlice: {
      std::vector<std::string> parts;
      for (size_t k = 0; k < i.slice_starts.size(); ++k)
        parts.push_back(absl::StrCat("[", i.slice_starts[k], ":", i.slice_limits[k],
                                     i.slice_strides[k] != 1 ? absl::StrCat(":", i.slice_strides[k]) : "", "]"));
      a.push_back(absl::StrCat("slice={", absl::StrJoin(parts, ", "), "}"));
      break;
    }
    case Opcode::kDynamicSlice:
      a.push_back(absl::StrCat("dynamic_slice_sizes=", Braces(i.dynamic_slice_sizes)));
      break;
    case Opcode::kPad: {
      std::vector<std::string> parts;
      for (const auto& p : i.padding_config)
        parts.push_back(absl::StrCat(p.edge_padding_low, "_", p.edge_padding_high,
                                     p.interior_padding ? absl::StrCat("_", p.interior_padding) : ""));
      a.push_back(absl::StrCat("padding=", absl::StrJoin(parts, "x")));
      break;
    }
    case Opcode::kGetTupleElement:
      a.push_back(absl::StrCat("index=", i.tuple_index));
      break;
    case Opcode::kCompare:
      a.push_back(absl::StrCat("direction=", ComparisonDirectionName(i.comparison_direction)));
      break;
    case Opcode::kDot: {
      const auto& d = i.dot_dnums;
      if (!d.lhs_batch_dimensions.empty()) a.push_back(absl::StrCat("lhs_batch_dims=", Braces(d.lhs_batch_dimensions)));
      a.push_back(absl::StrCat("lhs_contracting_dims=", Braces(d.lhs_contracting_dimensions)));
      if (!d.rhs_batch_dimensions.empty()) a.push_back(absl::StrCat("rhs_batch_dims=", Braces(d.rhs_batch_dimensions)));
      a.push_back(absl::StrCat("rhs_contracting_dims=", Braces(d.rhs_contracting_dimensions)));
      break;
    }
    case Opcode::kConvolution:
      if (!i.window.dimensions.empty()) a.push_back(absl::StrCat("window={", WindowText(i.window), "}"));
      a.push_back(absl::StrCat("dim_labels=", DimLabels(i.conv_dnums)));
      if (i.feature_group_count != 1) a.push_back(absl::StrCat("feature_group_count=", i.feature_group_count));
      if (i.batch_group_count != 1) a.push_back(absl::StrCat("batch_group_count=", i.batch_group_count));
      break;
    case Opcode::kReduceWindow:
      a.push_back(absl::StrCat("window={", WindowText(i.window), "}"));
      break;
    case Opcode::kGather: {
      const auto& d = i.gather_dnums;
      a.push_back(absl::StrCat("offset_dims=", Braces(d.offset_dims)));
      a.push_back(absl::StrCat("collapsed_slice_dims=", Braces(d.collapsed_slice_dims)));
      a.push_back(absl::StrCat("start_index_map=", Braces(d.start_index_map)));
      a.push_back(absl::StrCat("index_vector_dim=", d.index_vector_dim));
      a.push_back(absl::StrCat("slice_sizes=", Braces(i.gather_slice_sizes)));
      break;
    }
    case Opcode::kScatter: {
      const auto& d = i.scatter_dnums;
      a.push_back(absl::StrCat("update_window_dims=", Braces(d.update_window_dims)));
      a.push_back(absl::StrCat("inserted_window_dims=", Braces(d.inserted_window_dims)));
      a.push_back(absl::StrCat("scatter_dims_to_operand_dims=", Braces(d.scatter_dims_to_operand_dims)));
      a.push_back(absl::StrCat("index_vector_dim=", d.index_vector_dim));
      break;
    }
    default:
      break;
  }
  if (i.opcode() == Opcode::kSort && i.is_stable) a.push_back("is_stable=true");
  if ((i.opcode() == Opcode::kDot || i.opcode() == Opcode::kConvolution) && i.precision != Precision::kDefault)
    a.push_back(absl::StrCat("operand_precision={", PrecisionName(i.precision), ",", PrecisionName(i.precision), "}"));
  const auto& called = i.called_computations();
  if (i.opcode() == Opcode::kWhile && called.size() == 2) {
    a.push_back(absl::StrCat("condition=", called[1]->name()));
    a.push_back(absl::StrCat("body=", called[0]->name()));
  } else if (i.opcode() == Opcode::kConditional) {
    std::vector<std::string> names;
    for (Computation* c : called) names.push_back(c->name());
    a.push_back(absl::StrCat("branch_computations={", absl::StrJoin(names, ", "), "}"));
  } else if (!called.empty()) {
    a.push_back(absl::StrCat("to_apply=", called[0]->name()));
  }
  if (!i.frontend_attributes.empty()) {
    std::vector<std::string> kv;
    for (const auto& [key, value] : i.frontend_attributes) kv.push_back(absl::StrCat(key, "=\"", Escape(value), "\""));
    a.push_back(absl::StrCat("frontend_attributes={", absl::StrJoin(kv, ","), "}"));
  }
  if (o.print_metadata && !i.metadata.empty())
    a.push_back(absl::StrCat("metadata={op_type=\"", Escape(i.metadata.op_type), "\" op_name=\"",
                             Escape(i.metadata.op_name), "\"}"));
  return a.empty() ? "" : absl::StrCat(", ", absl::StrJoin(a, ", "));
}

}  // namespace

std::string ToText(const Instruction& i, const PrintOptions& o) {
  std::string operands;
  if (i.opcode() == Opcode::kParameter) {
    operands = absl::StrCat(i.parameter_number);
  } else if (i.opcode() == Opcode::kConstant) {
    operands = i.literal->ValuesToString(o.max_constant_elements);
  } else {
    std::vector<std::string> names;
    for (Instruction* op : i.operands()) names.push_back(op->name());
    operands = absl::StrJoin(names, ", ");
  }
  return absl::StrCat(i.name(), " = ", i.shape().ToString(), " ", OpcodeName(i.opcode()), "(", operands, ")",
                      Attributes(i, o));
}

std::string ToText(const Module& m, const PrintOptions& o) {
  std::string out = absl::StrCat("HloModule ", m.name(), "\n");
  for (const auto& c : m.computations()) {
    absl::StrAppend(&out, "\n", c.get() == m.entry() ? "ENTRY " : "", c->name(), " {\n");
    for (const auto& i : c->instructions())
      absl::StrAppend(&out, "  ", i.get() == c->root() ? "ROOT " : "", ToText(*i, o), "\n");
    absl::StrAppend(&out, "}\n");
  }
  return out;
}

}  // namespace xonnx::hlo
