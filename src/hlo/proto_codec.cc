#include "hlo/proto_codec.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"

namespace xonnx::hlo {

wire::ShapeProto ShapeToProto(const Shape& s) {
  wire::ShapeProto p;
  p.set_element_type(static_cast<wire::PrimitiveType>(s.element_type));
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes) *p.add_tuple_shapes() = ShapeToProto(e);
    return p;
  }
  for (int64_t d : s.dims) {
    p.add_dimensions(d);
    p.add_is_dynamic_dimension(false);
  }
  auto* layout = p.mutable_layout();
  for (int64_t m : s.minor_to_major) layout->add_minor_to_major(m);
  return p;
}

absl::StatusOr<Shape> ShapeFromProto(const wire::ShapeProto& p) {
  auto t = static_cast<PrimitiveType>(p.element_type());
  if (t == TUPLE) {
    std::vector<Shape> elems;
    for (const auto& e : p.tuple_shapes()) {
      ASSIGN_OR_RETURN(Shape s, ShapeFromProto(e));
      elems.push_back(std::move(s));
    }
    return Shape::Tuple(std::move(elems));
  }
  if (!IsArrayType(t)) return Unimplemented("unsupported element type %d", static_cast<int>(t));
  std::vector<int64_t> dims(p.dimensions().begin(), p.dimensions().end());
  for (int64_t d : dims)
    if (d < 0) return InvalidArgument("negative dimension in shape");
  Shape s(t, dims);
  if (p.has_layout() && p.layout().minor_to_major_size() > 0) {
    std::vector<int64_t> m2m(p.layout().minor_to_major().begin(), p.layout().minor_to_major().end());
    if (m2m != s.minor_to_major)
      return Unimplemented("only row-major layouts are supported, got {%s}", absl::StrJoin(m2m, ","));
  }
  return s;
}

wire::LiteralProto LiteralToProto(const Literal& l) {
  wire::LiteralProto p;
  *p.mutable_shape() = ShapeToProto(l.shape());
  if (l.shape().IsTuple()) {
    for (const Literal& e : l.tuple_elements()) *p.add_tuple_literals() = LiteralToProto(e);
    return p;
  }
  int64_t n = l.element_count();
  const char* bytes = static_cast<const char*>(l.untyped_data());
  switch (l.shape().element_type) {
    case PRED:
      for (int64_t i = 0; i < n; ++i) p.add_preds(l.data<bool>()[i]);
      break;
    case S8:
      p.set_s8s(bytes, n);
      break;
    case U8:
      p.set_u8s(bytes, n);
      break;
    case S16:
      p.set_s16s(bytes, n * 2);
      break;
    case U16:
      p.set_u16s(bytes, n * 2);
      break;
    case S32:
      p.mutable_s32s()->Add(l.data<int32_t>(), l.data<int32_t>() + n);
      break;
    case U32:
      p.mutable_u32s()->Add(l.data<uint32_t>(), l.data<uint32_t>() + n);
      break;
    case S64:
      for (int64_t i = 0; i < n; ++i) p.add_s64s(l.data<int64_t>()[i]);
      break;
    case U64:
      for (int64_t i = 0; i < n; ++i) p.add_u64s(l.data<uint64_t>()[i]);
      break;
    case F16:
      p.set_f16s(bytes, n * 2);
      break;
    case BF16:
      p.set_bf16s(bytes, n * 2);
      break;
    case F32:
      p.mutable_f32s()->Add(l.data<float>(), l.data<float>() + n);
      break;
    case F64:
      p.mutable_f64s()->Add(l.data<double>(), l.data<double>() + n);
      break;
    default:
      break;
  }
  return p;
}

absl::StatusOr<Literal> LiteralFromProto(const wire::LiteralProto& p) {
  ASSIGN_OR_RETURN(Shape shape, ShapeFromProto(p.shape()));
  if (shape.IsTuple()) {
    std::vector<Literal> elems;
    for (const auto& e : p.tuple_literals()) {
      ASSIGN_OR_RETURN(Literal l, LiteralFromProto(e));
      elems.push_back(std::move(l));
    }
    return Literal::MakeTuple(std::move(elems));
  }
  Literal l(shape);
  int64_t n = l.element_count();
  auto copy_repeated = [&](const auto& field, auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if (field.size() != n)
      return InvalidArgument("literal has %d values, shape %s needs %d", field.size(), shape.ToString(), n);
    for (int64_t i = 0; i < n; ++i) l.data<T>()[i] = static_cast<T>(field.Get(i));
    return absl::OkStatus();
  };
  auto copy_bytes = [&](const std::string& field) -> absl::Status {
    if (static_cast<int64_t>(field.size()) != shape.ByteSize())
      return InvalidArgument("literal has %d bytes, shape %s needs %d", field.size(), shape.ToString(),
                             shape.ByteSize());
    std::memcpy(l.untyped_data(), field.data(), field.size());
    return absl::OkStatus();
  };
  switch (shape.element_type) {
    case PRED:
      RETURN_IF_ERROR(copy_repeated(p.preds(), TypeTag<bool>{}));
      break;
    case S8:
      RETURN_IF_ERROR(copy_bytes(p.s8s()));
      break;
    case U8:
      RETURN_IF_ERROR(copy_bytes(p.u8s()));
      break;
    case S16:
      RETURN_IF_ERROR(copy_bytes(p.s16s()));
      break;
    case U16:
      RETURN_IF_ERROR(copy_bytes(p.u16s()));
      break;
    case S32:
      RETURN_IF_ERROR(copy_repeated(p.s32s(), TypeTag<int32_t>{}));
      break;
    case U32:
      RETURN_IF_ERROR(copy_repeated(p.u32s(), TypeTag<uint32_t>{}));
      break;
    case S64:
      RETURN_IF_ERROR(copy_repeated(p.s64s(), TypeTag<int64_t>{}));
      break;
    case U64:
      RETURN_IF_ERROR(copy_repeated(p.u64s(), TypeTag<uint64_t>{}));
      break;
    case F16:
      RETURN_IF_ERROR(copy_bytes(p.f16s()));
      break;
    case BF16:
      RETURN_IF_ERROR(copy_bytes(p.bf16s()));
      break;
    case F32:
      RETURN_IF_ERROR(copy_repeated(p.f32s(), TypeTag<float>{}));
      break;
    case F64:
      RETURN_IF_ERROR(copy_repeated(p.f64s(), TypeTag<double>{}));
      break;
    default:
      return Unimplemented("literal of type %s", PrimitiveTypeName(shape.element_type));
  }
  return l;
}

namespace {

// The proto's names are proto3 strings, which must be valid UTF-8 (the
// decoder refuses the whole module otherwise); ONNX names need not be.
// Each byte that does not start a well-formed sequence becomes U+FFFD.
std::string Utf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size() && (n != 2 || c >= 0xc2);
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && n >= 3) {  // no overlong forms, surrogates or values past U+10FFFF
      unsigned char c1 = s[i + 1];
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0) && !(c == 0xf0 && c1 < 0x90) &&
           !(c == 0xf4 && c1 >= 0x90) && c <= 0xf4;
    }
    if (ok) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

wire::HloInstructionProto InstructionToProto(const Instruction& i) {
  wire::HloInstructionProto p;
  p.set_name(Utf8(i.name()));
  p.set_opcode(std::string(OpcodeName(i.opcode())));
  *p.mutable_shape() = ShapeToProto(i.shape());
  p.set_id(i.id());
  for (Instruction* op : i.operands()) p.add_operand_ids(op->id());
  for (Computation* c : i.called_computations()) p.add_called_computation_ids(c->id());
  if (!i.metadata.empty()) {
    p.mutable_metadata()->set_op_type(Utf8(i.metadata.op_type));
    p.mutable_metadata()->set_op_name(Utf8(i.metadata.op_name));
  }
  for (const auto& [key, value] : i.frontend_attributes)
    (*p.mutable_frontend_attributes()->mutable_map())[Utf8(key)] = Utf8(value);
  if (i.literal) *p.mutable_literal() = LiteralToProto(*i.literal);
  if (i.opcode() == Opcode::kParameter) p.set_parameter_number(i.parameter_number);
  if (i.opcode() == Opcode::kGetTupleElement) p.set_tuple_index(i.tuple_index);
  for (int64_t d : i.dimensions) p.add_dimensions(d);
  for (size_t k = 0; k < i.slice_starts.size(); ++k) {
    auto* s = p.add_slice_dimensions();
    s->set_start(i.slice_starts[k]);
    s->set_limit(i.slice_limits[k]);
    s->set_stride(i.slice_strides[k]);
  }
  for (int64_t d : i.dynamic_slice_sizes) p.add_dynamic_slice_sizes(d);
  if (i.opcode() == Opcode::kPad) {
    for (const auto& d : i.padding_config) {
      auto* pd = p.mutable_padding_config()->add_dimensions();
      pd->set_edge_padding_low(d.edge_padding_low);
      pd->set_edge_padding_high(d.edge_padding_high);
      pd->set_interior_padding(d.interior_padding);
    }
  }
  if (i.opcode() == Opcode::kConvolution || i.opcode() == Opcode::kReduceWindow) {
    for (const auto& d : i.window.dimensions) {
      auto* w = p.mutable_window()->add_dimensions();
      w->set_size(d.size);
      w->set_stride(d.stride);
      w->set_padding_low(d.padding_low);
      w->set_padding_high(d.padding_high);
      w->set_window_dilation(d.window_dilation);
      w->set_base_dilation(d.base_dilation);
      w->set_window_reversal(d.window_reversal);
    }
  }
  if (i.opcode() == Opcode::kConvolution) {
    const auto& d = i.conv_dnums;
    auto* c = p.mutable_convolution_dimension_numbers();
    c->set_input_batch_dimension(d.input_batch_dimension);
    c->set_input_feature_dimension(d.input_feature_dimension);
    for (int64_t x : d.input_spatial_dimensions) c->add_input_spatial_dimensions(x);
    c->set_kernel_input_feature_dimension(d.kernel_input_feature_dimension);
    c->set_kernel_output_feature_dimension(d.kernel_output_feature_dimension);
    for (int64_t x : d.kernel_spatial_dimensions) c->add_kernel_spatial_dimensions(x);
    c->set_output_batch_dimension(d.output_batch_dimension);
    c->set_output_feature_dimension(d.output_feature_dimension);
    for (int64_t x : d.output_spatial_dimensions) c->add_output_spatial_dimensions(x);
    p.set_feature_group_count(i.feature_group_count);
    p.set_batch_group_count(i.batch_group_count);
  }
  if ((i.opcode() == Opcode::kConvolution || i.opcode() == Opcode::kDot) && i.precision != Precision::kDefault)
    for (int k = 0; k < 2; ++k)
      p.mutable_precision_config()->add_operand_precision(static_cast<wire::PrecisionConfig::Precision>(i.precision));
  if (i.opcode() == Opcode::kDot) {
    const auto& d = i.dot_dnums;
    auto* q = p.mutable_dot_dimension_numbers();
    for (int64_t x : d.lhs_contracting_dimensions) q->add_lhs_contracting_dimensions(x);
    for (int64_t x : d.rhs_contracting_dimensions) q->add_rhs_contracting_dimensions(x);
    for (int64_t x : d.lhs_batch_dimensions) q->add_lhs_batch_dimensions(x);
    for (int64_t x : d.rhs_batch_dimensions) q->add_rhs_batch_dimensions(x);
  }
  if (i.opcode() == Opcode::kGather) {
    const auto& d = i.gather_dnums;
    auto* q = p.mutable_gather_dimension_numbers();
    for (int64_t x : d.offset_dims) q->add_offset_dims(x);
    for (int64_t x : d.collapsed_slice_dims) q->add_collapsed_slice_dims(x);
    for (int64_t x : d.start_index_map) q->add_start_index_map(x);
    q->set_index_vector_dim(d.index_vector_dim);
    for (int64_t x : i.gather_slice_sizes) p.add_gather_slice_sizes(x);
    p.set_indices_are_sorted(i.indices_are_sorted);
  }
  if (i.opcode() == Opcode::kScatter) {
    const auto& d = i.scatter_dnums;
    auto* q = p.mutable_scatter_dimension_numbers();
    for (int64_t x : d.update_window_dims) q->add_update_window_dims(x);
    for (int64_t x : d.inserted_window_dims) q->add_inserted_window_dims(x);
    for (int64_t x : d.scatter_dims_to_operand_dims) q->add_scatter_dims_to_operand_dims(x);
    q->set_index_vector_dim(d.index_vector_dim);
    p.set_indices_are_sorted(i.indices_are_sorted);
    p.set_unique_indices(i.unique_indices);
  }
  if (i.opcode() == Opcode::kCompare)
    p.set_comparison_direction(std::string(ComparisonDirectionName(i.comparison_direction)));
  if (i.opcode() == Opcode::kSort) p.set_is_stable(i.is_stable);
  if (i.opcode() == Opcode::kRngBitGenerator) p.set_rng_algorithm(static_cast<int32_t>(i.rng_algorithm));
  return p;
}

wire::ProgramShapeProto ProgramShape(const Computation& c) {
  wire::ProgramShapeProto p;
  for (Instruction* param : c.parameters()) {
    *p.add_parameters() = ShapeToProto(param->shape());
    p.add_parameter_names(Utf8(param->name()));
  }
  *p.mutable_result() = ShapeToProto(c.root()->shape());
  return p;
}

}  // namespace

wire::HloModuleProto ToProto(const Module& m) {
  wire::HloModuleProto p;
  p.set_name(Utf8(m.name()));
  p.set_id(1);
  for (const auto& c : m.computations()) {
    auto* cp = p.add_computations();
    cp->set_name(Utf8(c->name()));
    cp->set_id(c->id());
    cp->set_root_id(c->root()->id());
    for (const auto& i : c->instructions()) *cp->add_instructions() = InstructionToProto(*i);
    *cp->mutable_program_shape() = ProgramShape(*c);
  }
  p.set_entry_computation_name(Utf8(m.entry()->name()));
  p.set_entry_computation_id(m.entry()->id());
  *p.mutable_host_program_shape() = ProgramShape(*m.entry());
  const bool tuple_root = m.entry()->root()->shape().IsTuple();
  for (const Module::Alias& a : m.aliases()) {
    auto* e = p.mutable_input_output_alias()->add_entries();
    if (tuple_root) e->add_output_shape_index(a.output);
    e->set_parameter_number(a.parameter);
    e->set_kind(1);  // may alias
  }
  return p;
}

std::string SerializeModule(const Module& m) { return ToProto(m).SerializeAsString(); }

// The attributes of an instruction (everything but its opcode, shape,
// operands, callees and literal) from its proto.
absl::Status ReadAttributes(const wire::HloInstructionProto& ip, Instruction* i) {
  i->parameter_number = ip.parameter_number();
  i->tuple_index = ip.tuple_index();
  i->dimensions.assign(ip.dimensions().begin(), ip.dimensions().end());
  for (const auto& s : ip.slice_dimensions()) {
    i->slice_starts.push_back(s.start());
    i->slice_limits.push_back(s.limit());
    i->slice_strides.push_back(s.stride());
  }
  i->dynamic_slice_sizes.assign(ip.dynamic_slice_sizes().begin(), ip.dynamic_slice_sizes().end());
  for (const auto& d : ip.padding_config().dimensions())
    i->padding_config.push_back({d.edge_padding_low(), d.edge_padding_high(), d.interior_padding()});
  for (const auto& d : ip.window().dimensions()) {
    WindowDimension w;
    w.size = d.size();
    w.stride = d.stride() ? d.stride() : 1;
    w.padding_low = d.padding_low();
    w.padding_high = d.padding_high();
    w.window_dilation = d.window_dilation() ? d.window_dilation() : 1;
    w.base_dilation = d.base_dilation() ? d.base_dilation() : 1;
    w.window_reversal = d.window_reversal();
    i->window.dimensions.push_back(w);
  }
  const auto& cd = ip.convolution_dimension_numbers();
  i->conv_dnums = {cd.input_batch_dimension(),
                   cd.input_feature_dimension(),
                   {cd.input_spatial_dimensions().begin(), cd.input_spatial_dimensions().end()},
                   cd.kernel_input_feature_dimension(),
                   cd.kernel_output_feature_dimension(),
                   {cd.kernel_spatial_dimensions().begin(), cd.kernel_spatial_dimensions().end()},
                   cd.output_batch_dimension(),
                   cd.output_feature_dimension(),
                   {cd.output_spatial_dimensions().begin(), cd.output_spatial_dimensions().end()}};
  i->feature_group_count = ip.feature_group_count() ? ip.feature_group_count() : 1;
  i->batch_group_count = ip.batch_group_count() ? ip.batch_group_count() : 1;
  // One precision for both operands: the highest asked for either.
  for (int pr : ip.precision_config().operand_precision())
    i->precision = std::max(i->precision, static_cast<Precision>(std::clamp(pr, 0, 2)));
  const auto& dd = ip.dot_dimension_numbers();
  i->dot_dnums = {{dd.lhs_contracting_dimensions().begin(), dd.lhs_contracting_dimensions().end()},
                  {dd.rhs_contracting_dimensions().begin(), dd.rhs_contracting_dimensions().end()},
                  {dd.lhs_batch_dimensions().begin(), dd.lhs_batch_dimensions().end()},
                  {dd.rhs_batch_dimensions().begin(), dd.rhs_batch_dimensions().end()}};
  const auto& gd = ip.gather_dimension_numbers();
  i->gather_dnums = {{gd.offset_dims().begin(), gd.offset_dims().end()},
                     {gd.collapsed_slice_dims().begin(), gd.collapsed_slice_dims().end()},
                     {gd.start_index_map().begin(), gd.start_index_map().end()},
                     gd.index_vector_dim()};
  i->gather_slice_sizes.assign(ip.gather_slice_sizes().begin(), ip.gather_slice_sizes().end());
  const auto& sd = ip.scatter_dimension_numbers();
  i->scatter_dnums = {{sd.update_window_dims().begin(), sd.update_window_dims().end()},
                      {sd.inserted_window_dims().begin(), sd.inserted_window_dims().end()},
                      {sd.scatter_dims_to_operand_dims().begin(), sd.scatter_dims_to_operand_dims().end()},
                      sd.index_vector_dim()};
  i->indices_are_sorted = ip.indices_are_sorted();
  i->unique_indices = ip.unique_indices();
  if (i->opcode() == Opcode::kCompare) {
    auto dir = ComparisonDirectionFromName(ip.comparison_direction());
    if (!dir.ok()) return dir.status();
    i->comparison_direction = *dir;
  }
  i->is_stable = ip.is_stable();
  i->rng_algorithm = ip.rng_algorithm();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Module>> FromProto(const wire::HloModuleProto& p) {
  auto m = std::make_unique<Module>(p.name().empty() ? "module" : p.name());
  absl::flat_hash_map<int64_t, Computation*> computations;
  int64_t max_id = 0;
  for (const auto& cp : p.computations()) {
    auto c = std::make_unique<Computation>(cp.name());
    c->set_parent(m.get());
    absl::flat_hash_map<int64_t, Instruction*> by_id;
    for (const auto& ip : cp.instructions()) {
      std::string where = absl::StrCat("computation '", cp.name(), "', instruction '", ip.name(), "'");
      auto opcode = OpcodeFromName(ip.opcode());
      if (!opcode.ok()) return Annotate(opcode.status(), where);
      ASSIGN_OR_RETURN(Shape shape, ShapeFromProto(ip.shape()));
      auto i = std::make_unique<Instruction>(*opcode, shape);
      for (int64_t id : ip.operand_ids()) {
        auto it = by_id.find(id);
        if (it == by_id.end()) return InvalidArgument("%s: operand id %d is not defined before it", where, id);
        i->AppendOperand(it->second);
      }
      for (int64_t id : ip.called_computation_ids()) {
        auto it = computations.find(id);
        if (it == computations.end())
          return InvalidArgument("%s: called computation id %d is not defined before it", where, id);
        i->AppendCalledComputation(it->second);
      }
      if (ip.has_literal()) {
        auto lit = LiteralFromProto(ip.literal());
        if (!lit.ok()) return Annotate(lit.status(), where);
        i->literal = *std::move(lit);
      }
      if (*opcode == Opcode::kConstant && !i->literal) return InvalidArgument("%s: constant without a literal", where);
      RETURN_IF_ERROR(Annotate(ReadAttributes(ip, i.get()), where));
      i->metadata.op_type = ip.metadata().op_type();
      i->metadata.op_name = ip.metadata().op_name();
      for (const auto& [key, value] : ip.frontend_attributes().map()) i->frontend_attributes[key] = value;
      auto inferred = InferShape(*i);
      if (!inferred.ok()) return Annotate(inferred.status(), where);
      if (!inferred->Compatible(shape))
        return InvalidArgument("%s: shape %s differs from the inferred %s", where, shape.ToString(),
                               inferred->ToString());
      if (ip.name().empty() || by_id.contains(ip.id()))
        return InvalidArgument("%s: missing name or duplicate id", where);
      i->set_name(ip.name());
      i->set_id(ip.id());
      max_id = std::max(max_id, ip.id());
      Instruction* raw = i.get();
      // Names and ids come from the proto; AddInstruction reserves the name.
      c->AddInstruction(std::move(i));
      raw->set_name(ip.name());
      raw->set_id(ip.id());
      by_id[ip.id()] = raw;
    }
    auto root = by_id.find(cp.root_id());
    if (root == by_id.end()) return InvalidArgument("computation '%s': root id %d not found", cp.name(), cp.root_id());
    c->set_root(root->second);
    max_id = std::max(max_id, cp.id());
    m->NoteNameUsed(cp.name());
    computations[cp.id()] = c.get();
    int64_t id = cp.id();
    Computation* added = m->AddComputation(std::move(c));
    added->set_name(cp.name());
    added->set_id(id);
  }
  auto entry = computations.find(p.entry_computation_id());
  if (entry == computations.end()) {
    for (const auto& c : m->computations())
      if (c->name() == p.entry_computation_name()) m->set_entry(c.get());
    if (!m->entry()) return InvalidArgument("module '%s': entry computation not found", p.name());
  } else {
    m->set_entry(entry->second);
  }
  while (m->NextId() <= max_id) {
  }
  std::vector<Module::Alias> aliases;
  for (const auto& e : p.input_output_alias().entries()) {
    if (e.output_shape_index_size() > 1 || e.parameter_shape_index_size() > 0)
      return InvalidArgument("module '%s': an input/output alias reaches into nested tuples", p.name());
    // Only "may alias" is kept: a must-alias would oblige this reader to
    // write in place.
    if (e.kind() != 1) return InvalidArgument("module '%s': an input/output alias of kind %d", p.name(), e.kind());
    aliases.push_back({e.output_shape_index_size() ? e.output_shape_index(0) : 0, e.parameter_number()});
  }
  m->set_aliases(std::move(aliases));
  RETURN_IF_ERROR(Verify(*m));
  return m;
}

absl::StatusOr<std::unique_ptr<Module>> ParseModule(absl::string_view bytes) {
  wire::HloModuleProto p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return InvalidArgument("bytes are not a valid HloModuleProto");
  return FromProto(p);
}

}  // namespace xonnx::hlo
