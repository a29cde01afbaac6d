// ParseStableHlo: the MLIR text ToStableHlo writes, back into a module (see
// stablehlo.h). Computations are built detached and added to the module at
// the end, callees first, since a region is complete before the op that
// holds it and a function may call one written after it.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "hlo/opcode.h"
#include "hlo/stablehlo.h"
#include "hlo/stablehlo_lexer.h"
#include "hlo/verifier.h"

namespace xonnx::hlo {

// A named namespace rather than an anonymous one: unity builds compile this
// file with parser.cc, whose Parser and Cursor are other classes.
namespace stablehlo_reader {

using mlir_text::Attr;
using mlir_text::Cursor;

OpMetadata MetadataOf(const std::string& loc) {
  OpMetadata m;
  size_t colon = loc.find(':');
  if (colon == std::string::npos) {
    m.op_name = loc;
  } else {
    m.op_type = loc.substr(0, colon);
    m.op_name = loc.substr(colon + 1);
  }
  return m;
}

// Where names resolve: one per function or region. A branch of an if or a
// case may read values of the enclosing scopes; each one read becomes an
// element of the branch's tuple parameter.
struct Scope {
  Computation* computation = nullptr;
  Scope* parent = nullptr;
  bool captures = false;
  std::map<std::string, std::vector<Instruction*>> values;  // %name -> its results
  Instruction* capture_parameter = nullptr;
  std::vector<Instruction*> captured;  // outer values, in parameter order
};

class Parser {
 public:
  explicit Parser(absl::string_view text) : in_(text) {}
  absl::StatusOr<std::unique_ptr<Module>> Run();

 private:
  Instruction* Add(Scope& s, Opcode op, Shape shape, std::vector<Instruction*> operands = {}) {
    auto i = std::make_unique<Instruction>(op, std::move(shape));
    for (Instruction* o : operands) i->AppendOperand(o);
    return s.computation->AddInstruction(std::move(i));
  }
  Instruction* Tuple(Scope& s, const std::vector<Instruction*>& parts);
  Instruction* Element(Scope& s, Instruction* tuple, int64_t k);
  Computation* NewComputation(const std::string& name) {
    owned_.push_back(std::make_unique<Computation>(name));
    return owned_.back().get();
  }
  absl::StatusOr<Instruction*> Lookup(Scope& s, const std::string& name, int64_t index);
  absl::Status Function();
  // Ops up to and including a return; the returned values.
  absl::StatusOr<std::vector<Instruction*>> Ops(Scope& s);
  // kLoopCondition and kLoopBody take the loop state's values as one tuple
  // parameter; a body returns a tuple, a condition its predicate.
  enum class RegionKind { kScalars, kLoopCondition, kLoopBody, kBranch };
  absl::StatusOr<Computation*> Region(Scope& parent, RegionKind kind, std::vector<Instruction*>* captured);
  absl::Status Op(Scope& s, const std::pair<std::string, int64_t>& result);

  Cursor in_;
  std::vector<std::unique_ptr<Computation>> owned_;
  std::map<std::string, Computation*> functions_;  // by symbol, created on first mention
  absl::flat_hash_set<std::string> defined_functions_;
  std::string module_name_ = "stablehlo";
};

Instruction* Parser::Tuple(Scope& s, const std::vector<Instruction*>& parts) {
  std::vector<Shape> shapes;
  for (const Instruction* p : parts) shapes.push_back(p->shape());
  return Add(s, Opcode::kTuple, Shape::Tuple(std::move(shapes)), parts);
}

Instruction* Parser::Element(Scope& s, Instruction* tuple, int64_t k) {
  Instruction* e = Add(s, Opcode::kGetTupleElement, tuple->shape().tuple_shapes[k], {tuple});
  e->tuple_index = k;
  return e;
}

absl::StatusOr<Instruction*> Parser::Lookup(Scope& s, const std::string& name, int64_t index) {
  auto it = s.values.find(name);
  if (it == s.values.end()) {
    if (!s.parent) return in_.Error(absl::StrCat("%", name, " is not defined"));
    if (!s.captures)
      return in_.Error(absl::StrCat("%", name, " is defined outside this region, which only if and case may read"));
    ASSIGN_OR_RETURN(Instruction * outer, Lookup(*s.parent, name, -1));
    // A branch reads an outer value through its parameter, a tuple whose
    // shape grows with each value read.
    s.captured.push_back(outer);
    Shape p = s.capture_parameter->shape();
    p.tuple_shapes.push_back(outer->shape());
    s.capture_parameter->set_shape(std::move(p));
    it =
        s.values.emplace(name, std::vector<Instruction*>{Element(s, s.capture_parameter, s.captured.size() - 1)}).first;
    if (index >= 0) return in_.Error(absl::StrCat("%", name, "#", index, ": a branch reads whole values only"));
  }
  const std::vector<Instruction*>& v = it->second;
  if (index < 0) {
    if (v.size() != 1) return in_.Error(absl::StrCat("%", name, " has ", v.size(), " results; name one with #"));
    return v[0];
  }
  if (index >= static_cast<int64_t>(v.size())) return in_.Error(absl::StrCat("%", name, " has no result #", index));
  return v[index];
}

absl::StatusOr<Computation*> Parser::Region(Scope& parent, RegionKind kind, std::vector<Instruction*>* captured) {
  RETURN_IF_ERROR(in_.Enter());
  struct Leave {
    Cursor& c;
    ~Leave() { c.Leave(); }
  } leave{in_};
  RETURN_IF_ERROR(in_.Expect("{"));
  Scope s;
  s.computation = NewComputation("region");
  s.parent = &parent;
  std::vector<std::pair<std::string, Shape>> args;
  if (in_.Consume("^bb0(")) {
    while (!in_.Consume(")")) {
      if (!args.empty()) RETURN_IF_ERROR(in_.Expect(","));
      ASSIGN_OR_RETURN(auto name, in_.Value());
      RETURN_IF_ERROR(in_.Expect(":"));
      ASSIGN_OR_RETURN(Shape shape, in_.Type());
      args.emplace_back(name.first, std::move(shape));
    }
    RETURN_IF_ERROR(in_.Expect(":"));
  }
  if (kind == RegionKind::kBranch) {
    if (!args.empty()) return in_.Error("a branch region takes no arguments");
    s.captures = true;
    s.capture_parameter = Add(s, Opcode::kParameter, Shape::Tuple({}));
    s.capture_parameter->parameter_number = 0;
  } else if (kind == RegionKind::kLoopCondition || kind == RegionKind::kLoopBody) {
    // A loop's state is separate values in StableHLO and one tuple in HLO.
    std::vector<Shape> shapes;
    for (const auto& a : args) shapes.push_back(a.second);
    Instruction* p = Add(s, Opcode::kParameter, Shape::Tuple(std::move(shapes)));
    p->parameter_number = 0;
    for (size_t k = 0; k < args.size(); ++k) s.values[args[k].first] = {Element(s, p, k)};
  } else {
    for (size_t k = 0; k < args.size(); ++k) {
      Instruction* p = Add(s, Opcode::kParameter, args[k].second);
      p->parameter_number = k;
      s.values[args[k].first] = {p};
    }
  }
  ASSIGN_OR_RETURN(std::vector<Instruction*> results, Ops(s));
  RETURN_IF_ERROR(in_.Expect("}"));
  if (results.empty()) return in_.Error("a region must return a value");
  s.computation->set_root(results.size() == 1 && kind != RegionKind::kLoopBody ? results[0] : Tuple(s, results));
  if (captured) *captured = s.captured;
  return s.computation;
}

absl::StatusOr<std::vector<Instruction*>> Parser::Ops(Scope& s) {
  while (true) {
    if (in_.Consume("\"stablehlo.return\"(") || in_.Consume("\"func.return\"(")) {
      std::vector<Instruction*> out;
      while (!in_.Consume(")")) {
        if (!out.empty()) RETURN_IF_ERROR(in_.Expect(","));
        ASSIGN_OR_RETURN(auto v, in_.Value());
        ASSIGN_OR_RETURN(Instruction * i, Lookup(s, v.first, v.second));
        out.push_back(i);
      }
      RETURN_IF_ERROR(in_.Expect(":"));
      RETURN_IF_ERROR(in_.TypeList().status());
      RETURN_IF_ERROR(in_.Expect("->"));
      RETURN_IF_ERROR(in_.TypeList().status());
      RETURN_IF_ERROR(in_.Location().status());
      return out;
    }
    if (!in_.Peek("%")) return in_.Error("expected an op or a return");
    ASSIGN_OR_RETURN(auto result, in_.Value());
    int64_t count = 1;
    if (in_.Consume(":")) {
      ASSIGN_OR_RETURN(count, in_.Integer());
    }
    RETURN_IF_ERROR(in_.Expect("="));
    RETURN_IF_ERROR(Op(s, {result.first, count}));
  }
}

// Reads named attributes: each accessor errors when the attribute is
// there but malformed, and gives a default when it is missing.
class Attrs {
 public:
  explicit Attrs(const std::map<std::string, Attr>& a) : a_(a) {}
  const Attr* Find(const std::string& key) const {
    auto it = a_.find(key);
    return it == a_.end() ? nullptr : &it->second;
  }
  absl::StatusOr<std::vector<int64_t>> Ints(const std::string& key) const {
    const Attr* a = Find(key);
    if (!a) return std::vector<int64_t>{};
    absl::StatusOr<std::vector<int64_t>> v = a->Ints();
    if (!v.ok()) return InvalidArgument("%s: %s", key, v.status().message());
    return v;
  }
  absl::StatusOr<int64_t> Int(const std::string& key, int64_t fallback) const {
    const Attr* a = Find(key);
    if (!a) return fallback;
    if (a->kind != Attr::Kind::kInt) return InvalidArgument("%s must be an integer", key);
    return a->i;
  }
  bool Bool(const std::string& key) const {
    const Attr* a = Find(key);
    return a && a->kind == Attr::Kind::kBool && a->b;
  }
  std::string Enum(const std::string& key) const {
    const Attr* a = Find(key);
    if (a && a->kind == Attr::Kind::kList && !a->items.empty()) a = &a->items[0];  // precision_config
    return a && a->kind == Attr::Kind::kEnum ? a->text : "";
  }
  // A struct attribute's fields (#stablehlo.dot<...> and the like).
  absl::StatusOr<Attrs> Struct(const std::string& key) const {
    const Attr* a = Find(key);
    if (!a || a->kind != Attr::Kind::kStruct) return InvalidArgument("%s is missing", key);
    return Attrs(a->fields);
  }
  // padding = dense<[[lo, hi], ...]> : tensor<Nx2xi64>.
  absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> Padding(size_t rank) const {
    std::vector<std::pair<int64_t, int64_t>> out(rank, {0, 0});
    const Attr* a = Find("padding");
    if (!a) return out;
    if (a->kind != Attr::Kind::kDense || a->dense.shape().dims != std::vector<int64_t>{int64_t(rank), 2})
      return InvalidArgument("padding must be a %dx2 tensor", rank);
    for (size_t k = 0; k < rank; ++k) out[k] = {a->dense.GetAsInt64(2 * k), a->dense.GetAsInt64(2 * k + 1)};
    return out;
  }

 private:
  const std::map<std::string, Attr>& a_;
};

absl::Status SetPrecision(Instruction* i, const Attrs& a) {
  std::string p = a.Enum("precision_config");
  if (p.empty() || p == "DEFAULT") {
    i->precision = Precision::kDefault;
  } else if (p == "HIGH") {
    i->precision = Precision::kHigh;
  } else if (p == "HIGHEST") {
    i->precision = Precision::kHighest;
  } else {
    return InvalidArgument("unknown precision %s", p);
  }
  return absl::OkStatus();
}

// A window of `rank` dimensions from the per-dimension attributes (sizes
// from `sizes`), as convolution and reduce_window write them.
absl::StatusOr<Window> WindowOf(const Attrs& a, const std::vector<int64_t>& sizes, const char* lhs, const char* rhs) {
  Window w;
  const size_t rank = sizes.size();
  ASSIGN_OR_RETURN(auto strides, a.Ints("window_strides"));
  ASSIGN_OR_RETURN(auto base, a.Ints(lhs));
  ASSIGN_OR_RETURN(auto dilation, a.Ints(rhs));
  ASSIGN_OR_RETURN(auto reversal, a.Ints("window_reversal"));
  ASSIGN_OR_RETURN(auto pads, a.Padding(rank));
  for (const auto* v : {&strides, &base, &dilation, &reversal})
    if (!v->empty() && v->size() != rank) return InvalidArgument("window attributes of %d dimensions", rank);
  for (size_t k = 0; k < rank; ++k) {
    WindowDimension d;
    d.size = sizes[k];
    d.stride = strides.empty() ? 1 : strides[k];
    d.base_dilation = base.empty() ? 1 : base[k];
    d.window_dilation = dilation.empty() ? 1 : dilation[k];
    d.window_reversal = !reversal.empty() && reversal[k];
    d.padding_low = pads[k].first;
    d.padding_high = pads[k].second;
    w.dimensions.push_back(d);
  }
  return w;
}

absl::Status SetConvolution(Instruction* i, const Attrs& a) {
  ASSIGN_OR_RETURN(Attrs d, a.Struct("dimension_numbers"));
  ConvolutionDimensionNumbers& n = i->conv_dnums;
  ASSIGN_OR_RETURN(n.input_batch_dimension, d.Int("input_batch_dimension", 0));
  ASSIGN_OR_RETURN(n.input_feature_dimension, d.Int("input_feature_dimension", 1));
  ASSIGN_OR_RETURN(n.input_spatial_dimensions, d.Ints("input_spatial_dimensions"));
  ASSIGN_OR_RETURN(n.kernel_input_feature_dimension, d.Int("kernel_input_feature_dimension", 1));
  ASSIGN_OR_RETURN(n.kernel_output_feature_dimension, d.Int("kernel_output_feature_dimension", 0));
  ASSIGN_OR_RETURN(n.kernel_spatial_dimensions, d.Ints("kernel_spatial_dimensions"));
  ASSIGN_OR_RETURN(n.output_batch_dimension, d.Int("output_batch_dimension", 0));
  ASSIGN_OR_RETURN(n.output_feature_dimension, d.Int("output_feature_dimension", 1));
  ASSIGN_OR_RETURN(n.output_spatial_dimensions, d.Ints("output_spatial_dimensions"));
  const Shape& kernel = i->operand(1)->shape();
  std::vector<int64_t> sizes;
  for (int64_t k : n.kernel_spatial_dimensions) {
    if (k < 0 || k >= kernel.rank()) return InvalidArgument("kernel spatial dimension %d out of range", k);
    sizes.push_back(kernel.dims[k]);
  }
  ASSIGN_OR_RETURN(i->window, WindowOf(a, sizes, "lhs_dilation", "rhs_dilation"));
  ASSIGN_OR_RETURN(i->feature_group_count, a.Int("feature_group_count", 1));
  ASSIGN_OR_RETURN(i->batch_group_count, a.Int("batch_group_count", 1));
  return SetPrecision(i, a);
}

absl::Status SetAttributes(Instruction* i, const std::map<std::string, Attr>& raw) {
  Attrs a(raw);
  switch (i->opcode()) {
    case Opcode::kConstant: {
      const Attr* v = a.Find("value");
      if (!v || v->kind != Attr::Kind::kDense) return InvalidArgument("needs a dense value");
      if (v->dense.shape() != i->shape()) return InvalidArgument("value's type differs from the result's");
      i->literal = v->dense;
      return absl::OkStatus();
    }
    case Opcode::kIota: {
      ASSIGN_OR_RETURN(int64_t d, a.Int("iota_dimension", 0));
      i->dimensions = {d};
      return absl::OkStatus();
    }
    case Opcode::kConcatenate: {
    }
    case Opcode::kSort: {
      ASSIGN_OR_RETURN(int64_t d, a.Int("dimension", -1));
      if (d < 0) d += i->operand(0)->shape().rank();
      i->dimensions = {d};
      i->is_stable = a.Bool("is_stable");
      return absl::OkStatus();
    }
    case Opcode::kBroadcast: {
      ASSIGN_OR_RETURN(i->dimensions, a.Ints("broadcast_dimensions"));
      return absl::OkStatus();
    }
    case Opcode::kTranspose: {
      ASSIGN_OR_RETURN(i->dimensions, a.Ints("permutation"));
      return absl::OkStatus();
    }
    case Opcode::kReverse:
    case Opcode::kReduce: {
      ASSIGN_OR_RETURN(i->dimensions, a.Ints("dimensions"));
      return absl::OkStatus();
    }
    case Opcode::kSlice: {
      ASSIGN_OR_RETURN(i->slice_starts, a.Ints("start_indices"));
      ASSIGN_OR_RETURN(i->slice_limits, a.Ints("limit_indices"));
      ASSIGN_OR_RETURN(i->slice_strides, a.Ints("strides"));
      if (i->slice_strides.empty()) i->slice_strides.assign(i->slice_starts.size(), 1);
      return absl::OkStatus();
    }
    case Opcode::kDynamicSlice: {
      ASSIGN_OR_RETURN(i->dynamic_slice_sizes, a.Ints("slice_sizes"));
      return absl::OkStatus();
    }
    case Opcode::kPad: {
      ASSIGN_OR_RETURN(auto lo, a.Ints("edge_padding_low"));
      ASSIGN_OR_RETURN(auto hi, a.Ints("edge_padding_high"));
      ASSIGN_OR_RETURN(auto in, a.Ints("interior_padding"));
      if (hi.size() != lo.size() || in.size() != lo.size()) return InvalidArgument("padding lists differ in length");
      for (size_t k = 0; k < lo.size(); ++k) i->padding_config.push_back({lo[k], hi[k], in[k]});
      return absl::OkStatus();
    }
    case Opcode::kGetTupleElement: {
      ASSIGN_OR_RETURN(i->tuple_index, a.Int("index", 0));
      return absl::OkStatus();
    }
    case Opcode::kCompare: {
      ASSIGN_OR_RETURN(i->comparison_direction, ComparisonDirectionFromName(a.Enum("comparison_direction")));
      return absl::OkStatus();
    }
    case Opcode::kDot: {
      ASSIGN_OR_RETURN(Attrs d, a.Struct("dot_dimension_numbers"));
      ASSIGN_OR_RETURN(i->dot_dnums.lhs_batch_dimensions, d.Ints("lhs_batching_dimensions"));
      ASSIGN_OR_RETURN(i->dot_dnums.rhs_batch_dimensions, d.Ints("rhs_batching_dimensions"));
      ASSIGN_OR_RETURN(i->dot_dnums.lhs_contracting_dimensions, d.Ints("lhs_contracting_dimensions"));
      ASSIGN_OR_RETURN(i->dot_dnums.rhs_contracting_dimensions, d.Ints("rhs_contracting_dimensions"));
      return SetPrecision(i, a);
    }
    case Opcode::kConvolution: {
      return SetConvolution(i, a);
    }
    case Opcode::kReduceWindow: {
      ASSIGN_OR_RETURN(auto sizes, a.Ints("window_dimensions"));
      ASSIGN_OR_RETURN(i->window, WindowOf(a, sizes, "base_dilations", "window_dilations"));
      return absl::OkStatus();
    }
    case Opcode::kGather: {
      ASSIGN_OR_RETURN(Attrs d, a.Struct("dimension_numbers"));
      GatherDimensionNumbers& g = i->gather_dnums;
      ASSIGN_OR_RETURN(g.offset_dims, d.Ints("offset_dims"));
      ASSIGN_OR_RETURN(g.collapsed_slice_dims, d.Ints("collapsed_slice_dims"));
      ASSIGN_OR_RETURN(g.start_index_map, d.Ints("start_index_map"));
      ASSIGN_OR_RETURN(g.index_vector_dim, d.Int("index_vector_dim", 0));
      ASSIGN_OR_RETURN(i->gather_slice_sizes, a.Ints("slice_sizes"));
      i->indices_are_sorted = a.Bool("indices_are_sorted");
      return absl::OkStatus();
    }
    case Opcode::kScatter: {
      ASSIGN_OR_RETURN(Attrs d, a.Struct("scatter_dimension_numbers"));
      ScatterDimensionNumbers& n = i->scatter_dnums;
      ASSIGN_OR_RETURN(n.update_window_dims, d.Ints("update_window_dims"));
      ASSIGN_OR_RETURN(n.inserted_window_dims, d.Ints("inserted_window_dims"));
      ASSIGN_OR_RETURN(n.scatter_dims_to_operand_dims, d.Ints("scatter_dims_to_operand_dims"));
      ASSIGN_OR_RETURN(n.index_vector_dim, d.Int("index_vector_dim", 0));
      i->indices_are_sorted = a.Bool("indices_are_sorted");
      i->unique_indices = a.Bool("unique_indices");
      return absl::OkStatus();
    }
    case Opcode::kRngBitGenerator: {
      std::string alg = a.Enum("rng_algorithm");
      i->rng_algorithm = alg == "THREE_FRY" ? 1 : alg == "PHILOX" ? 2 : 0;
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

absl::Status Parser::Op(Scope& s, const std::pair<std::string, int64_t>& result) {
  ASSIGN_OR_RETURN(std::string name, in_.String());
  const bool branches = name == "stablehlo.if" || name == "stablehlo.case", loop = name == "stablehlo.while";
  Opcode op = Opcode::kConditional;
  if (name == "func.call") {
    op = Opcode::kCall;
  } else if (!branches) {
    absl::StatusOr<Opcode> found = OpcodeFromStableHloName(name);
    if (!found.ok()) return in_.Error(found.status().message());
    op = *found;
  }
  RETURN_IF_ERROR(in_.Expect("("));
  std::vector<Instruction*> operands;
  while (!in_.Consume(")")) {
    if (!operands.empty()) RETURN_IF_ERROR(in_.Expect(","));
    ASSIGN_OR_RETURN(auto v, in_.Value());
    ASSIGN_OR_RETURN(Instruction * i, Lookup(s, v.first, v.second));
    operands.push_back(i);
  }
  std::vector<Computation*> regions;
  std::vector<std::vector<Instruction*>> captured;
  if (in_.Consume("(")) {
    do {
      captured.emplace_back();
      RegionKind kind = branches ? RegionKind::kBranch
                        : loop   ? (regions.empty() ? RegionKind::kLoopCondition : RegionKind::kLoopBody)
                                 : RegionKind::kScalars;
      ASSIGN_OR_RETURN(Computation * c, Region(s, kind, &captured.back()));
      regions.push_back(c);
    } while (in_.Consume(","));
    RETURN_IF_ERROR(in_.Expect(")"));
  }
  std::map<std::string, Attr> attrs;
  if (in_.Consume("{")) {
    while (!in_.Consume("}")) {
      if (!attrs.empty()) RETURN_IF_ERROR(in_.Expect(","));
      ASSIGN_OR_RETURN(std::string key, in_.Identifier());
      RETURN_IF_ERROR(in_.Expect("="));
      ASSIGN_OR_RETURN(attrs[key], in_.Attribute());
    }
  }
  RETURN_IF_ERROR(in_.Expect(":"));
  RETURN_IF_ERROR(in_.TypeList().status());
  RETURN_IF_ERROR(in_.Expect("->"));
  std::vector<Shape> results;
  if (in_.Peek("(")) {
    ASSIGN_OR_RETURN(results, in_.TypeList());
  } else {
    ASSIGN_OR_RETURN(Shape one, in_.Type());
    results.push_back(std::move(one));
  }
  ASSIGN_OR_RETURN(std::string loc, in_.Location());
  if (static_cast<int64_t>(results.size()) != result.second)
    return in_.Error(
        absl::StrCat("%", result.first, " names ", result.second, " results, the op has ", results.size()));
  if (branches) {
    operands.resize(1);
    for (const auto& c : captured) operands.push_back(Tuple(s, c));
  }
  if (loop) operands = {Tuple(s, operands)};
  const bool tupled = results.size() != 1 || loop;
  Instruction* i = Add(s, op, tupled ? Shape::Tuple(results) : results[0], operands);
  if (loop) {
    if (regions.size() != 2) return in_.Error("stablehlo.while needs a condition and a body");
    std::swap(regions[0], regions[1]);  // HLO's while names the body first
  }
  for (Computation* c : regions) i->AppendCalledComputation(c);
  if (op == Opcode::kCall) {
    auto callee = attrs.find("callee");
    if (callee == attrs.end() || callee->second.kind != Attr::Kind::kSymbol)
      return in_.Error("func.call needs a callee");
    Computation*& f = functions_[callee->second.text];
    if (!f) f = NewComputation(callee->second.text);
    i->AppendCalledComputation(f);
  }
  absl::Status st = SetAttributes(i, attrs);
  if (!st.ok()) return in_.Error(absl::StrCat(name, ": ", st.message()));
  if (!loc.empty()) i->metadata = MetadataOf(loc);
  std::vector<Instruction*>& bound = s.values[result.first];
  if (!bound.empty()) return in_.Error(absl::StrCat("%", result.first, " is defined twice"));
  if (!tupled) {
    bound = {i};
  } else {
    for (size_t k = 0; k < results.size(); ++k) bound.push_back(Element(s, i, k));
  }
  return absl::OkStatus();
}

absl::Status Parser::Function() {
  RETURN_IF_ERROR(in_.Expect("func.func"));
  if (!in_.Consume("public")) in_.Consume("private");
  ASSIGN_OR_RETURN(std::string symbol, in_.Symbol());
  if (!defined_functions_.insert(symbol).second) return in_.Error(absl::StrCat("@", symbol, " is defined twice"));
  Computation*& c = functions_[symbol];
  if (!c) c = NewComputation(symbol);
  Scope s;
  s.computation = c;
  RETURN_IF_ERROR(in_.Expect("("));
  for (int64_t k = 0; !in_.Consume(")"); ++k) {
    if (k > 0) RETURN_IF_ERROR(in_.Expect(","));
    ASSIGN_OR_RETURN(auto name, in_.Value());
    RETURN_IF_ERROR(in_.Expect(":"));
    ASSIGN_OR_RETURN(Shape shape, in_.Type());
    ASSIGN_OR_RETURN(std::string loc, in_.Location());
    Instruction* p = Add(s, Opcode::kParameter, std::move(shape));
    p->parameter_number = k;
    if (!loc.empty()) p->metadata = MetadataOf(loc);
    s.values[name.first] = {p};
  }
  RETURN_IF_ERROR(in_.Expect("->"));
  if (in_.Peek("(")) {
    RETURN_IF_ERROR(in_.TypeList().status());
  } else {
    RETURN_IF_ERROR(in_.Type().status());
  }
  RETURN_IF_ERROR(in_.Expect("{"));
  ASSIGN_OR_RETURN(std::vector<Instruction*> results, Ops(s));
  RETURN_IF_ERROR(in_.Expect("}"));
  // The entry returns a tuple of its outputs, as the ONNX importer's do.
  c->set_root(results.size() == 1 && symbol != "main" ? results[0] : Tuple(s, results));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Module>> Parser::Run() {
  RETURN_IF_ERROR(in_.Expect("module"));
  if (in_.Peek("@")) {
    ASSIGN_OR_RETURN(module_name_, in_.Symbol());
  }
  RETURN_IF_ERROR(in_.Expect("{"));
  while (!in_.Consume("}")) RETURN_IF_ERROR(Function());
  if (!in_.AtEnd()) return in_.Error("text after the module");
  for (const auto& [symbol, c] : functions_)
    if (!defined_functions_.count(symbol)) return InvalidArgument("StableHLO: @%s is called but not defined", symbol);
  auto main = functions_.find("main");
  if (main == functions_.end()) return InvalidArgument("StableHLO: the module has no @main function");
  // Callees first: a depth-first walk from @main, each computation added
  // after everything it calls.
  auto module = std::make_unique<Module>(module_name_);
  absl::flat_hash_set<Computation*> added;
  std::function<void(Computation*)> add = [&](Computation* c) {
    if (!added.insert(c).second) return;
    for (const auto& i : c->instructions())
      for (Computation* callee : i->called_computations()) add(callee);
    auto it = std::find_if(owned_.begin(), owned_.end(), [&](const auto& p) { return p.get() == c; });
    Computation* in_module = module->AddComputation(std::move(*it));
    for (const auto& i : in_module->instructions()) {
      i->set_name(module->UniqueName(OpcodeName(i->opcode())));
      i->set_id(module->NextId());
    }
    in_module->Canonicalize();
  };
  add(main->second);
  module->set_entry(main->second);
  RETURN_IF_ERROR(Verify(*module));
  return module;
}

}  // namespace stablehlo_reader

absl::StatusOr<std::unique_ptr<Module>> ParseStableHlo(absl::string_view text) {
  return stablehlo_reader::Parser(text).Run();
}

}  // namespace xonnx::hlo
