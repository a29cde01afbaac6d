#include "hlo/parser.h"

#include <cctype>
#include <cmath>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"

namespace xonnx::hlo {

namespace {

// A cursor over one instruction line.
class Cursor {
 public:
  explicit Cursor(absl::string_view s) : s_(s) {}
  void Skip() {
    while (!s_.empty() && std::isspace(static_cast<unsigned char>(s_[0]))) s_.remove_prefix(1);
  }
  bool Consume(absl::string_view t) {
    Skip();
    if (!absl::StartsWith(s_, t)) return false;
    s_.remove_prefix(t.size());
    return true;
  }
  absl::Status Expect(absl::string_view t) {
    if (!Consume(t)) return InvalidArgument("expected '%s' at '%s'", t, s_.substr(0, 30));
    return absl::OkStatus();
  }
  // A name: letters, digits, '_', '.', '-'.
  std::string Name() {
    Skip();
    size_t n = 0;
    while (n < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[n])) || s_[n] == '_' || s_[n] == '.' || s_[n] == '-'))
      ++n;
    std::string out(s_.substr(0, n));
    s_.remove_prefix(n);
    return out;
  }
  // Text up to the matching close of the bracket just consumed.
  absl::StatusOr<std::string> Balanced(char open, char close) {
    int depth = 1;
    size_t n = 0;
    bool quoted = false;
    for (; n < s_.size(); ++n) {
      char c = s_[n];
      if (c == '"' && (n == 0 || s_[n - 1] != '\\')) quoted = !quoted;
      if (quoted) continue;
      if (c == open) ++depth;
      if (c == close && --depth == 0) break;
    }
    if (depth != 0) return InvalidArgument("unbalanced '%c'", open);
    std::string out(s_.substr(0, n));
    s_.remove_prefix(n + 1);
    return out;
  }
  bool empty() {
    Skip();
    return s_.empty();
  }
  absl::string_view rest() const { return s_; }

 private:
  absl::string_view s_;
};

absl::StatusOr<std::vector<int64_t>> Ints(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  text = absl::StripPrefix(text, "{");
  text = absl::StripSuffix(text, "}");
  std::vector<int64_t> out;
  for (absl::string_view d : absl::StrSplit(text, absl::ByAnyChar(",x"), absl::SkipEmpty())) {
    int64_t v;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(d), &v)) return InvalidArgument("bad integer list '%s'", text);
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<Shape> ParseShape(Cursor& c) {
  if (c.Consume("(")) {
    std::vector<Shape> elems;
    if (!c.Consume(")")) {
      do {
        ASSIGN_OR_RETURN(Shape s, ParseShape(c));
        elems.push_back(std::move(s));
      } while (c.Consume(","));
      RETURN_IF_ERROR(c.Expect(")"));
    }
    return Shape::Tuple(std::move(elems));
  }
  std::string type = c.Name();
  ASSIGN_OR_RETURN(PrimitiveType t, PrimitiveTypeFromName(type));
  RETURN_IF_ERROR(c.Expect("["));
  ASSIGN_OR_RETURN(std::string dims_text, c.Balanced('[', ']'));
  auto dims = Ints(dims_text);
  if (!dims.ok()) return Annotate(dims.status(), "dimensions");
  Shape s(t, *dims);
  if (c.Consume("{")) {
    ASSIGN_OR_RETURN(std::string layout, c.Balanced('{', '}'));
    auto m2m = Ints(layout);
    if (!m2m.ok()) return Annotate(m2m.status(), "layout");
    if (*m2m != s.minor_to_major) return Unimplemented("only row-major layouts are supported, got {%s}", layout);
  }
  return s;
}

// Literal values "{{1, 2}, {3, 4}}" or a scalar, into `shape`.
absl::StatusOr<Literal> ParseLiteral(absl::string_view text, const Shape& shape) {
  Literal l(shape);
  std::vector<std::string> tokens;
  std::string cur;
  for (char ch : text) {
    if (ch == '{' || ch == '}' || ch == ',' || std::isspace(static_cast<unsigned char>(ch))) {
      if (!cur.empty()) tokens.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) tokens.push_back(cur);
  if (static_cast<int64_t>(tokens.size()) != l.element_count())
    return InvalidArgument("constant has %d values, shape %s needs %d", tokens.size(), shape.ToString(),
                           l.element_count());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& tok = tokens[i];
    double v;
    if (tok == "true")
      v = 1;
    else if (tok == "false")
      v = 0;
    else if (tok == "nan")
      v = NAN;
    else if (tok == "inf")
      v = INFINITY;
    else if (tok == "-inf")
      v = -INFINITY;
    else if (!absl::SimpleAtod(tok, &v))
      return InvalidArgument("bad constant value '%s'", tok);
    TypeSwitch(shape.element_type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
        int64_t iv;
        l.data<T>()[i] = absl::SimpleAtoi(tok, &iv) ? static_cast<T>(iv) : ConvertValue<T, double>(v);
      } else {
        l.data<T>()[i] = ConvertValue<T, double>(v);
      }
    });
  }
  return l;
}

absl::StatusOr<Window> ParseWindow(absl::string_view text) {
  Window w;
  std::map<std::string, std::string> fields;
  for (absl::string_view kv : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.size() == 2) fields[p[0]] = p[1];
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> size, Ints(fields["size"]));
  w.dimensions.resize(size.size());
  for (size_t i = 0; i < size.size(); ++i) w.dimensions[i].size = size[i];
  auto per_dim = [&](const std::string& key, auto set) -> absl::Status {
    if (!fields.count(key)) return absl::OkStatus();
    std::vector<std::string> parts = absl::StrSplit(fields[key], 'x');
    if (parts.size() != size.size())
      return InvalidArgument("window %s has %d entries, expected %d", key, parts.size(), size.size());
    for (size_t i = 0; i < parts.size(); ++i) RETURN_IF_ERROR(set(w.dimensions[i], parts[i]));
    return absl::OkStatus();
  };
  auto int_field = [](int64_t WindowDimension::*m) {
    return [m](WindowDimension& d, const std::string& s) -> absl::Status {
      if (!absl::SimpleAtoi(s, &(d.*m))) return InvalidArgument("bad window value '%s'", s);
      return absl::OkStatus();
    };
  };
  RETURN_IF_ERROR(per_dim("stride", int_field(&WindowDimension::stride)));
  RETURN_IF_ERROR(per_dim("lhs_dilate", int_field(&WindowDimension::base_dilation)));
  RETURN_IF_ERROR(per_dim("rhs_dilate", int_field(&WindowDimension::window_dilation)));
  RETURN_IF_ERROR(per_dim("rhs_reversal", [](WindowDimension& d, const std::string& s) -> absl::Status {
    d.window_reversal = s == "1";
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(per_dim("pad", [](WindowDimension& d, const std::string& s) -> absl::Status {
    std::vector<std::string> lh = absl::StrSplit(s, '_');
    if (lh.size() != 2 || !absl::SimpleAtoi(lh[0], &d.padding_low) || !absl::SimpleAtoi(lh[1], &d.padding_high))
      return InvalidArgument("bad window padding '%s'", s);
    return absl::OkStatus();
  }));
  return w;
}

// operand_precision={highest,highest}: one precision for both operands,
// the highest named.
// {key="value",...}: values quoted, with \" and \\ escaped.
absl::Status ParseFrontendAttributes(absl::string_view v, std::map<std::string, std::string>* out) {
  std::string inner(absl::StripPrefix(absl::StripSuffix(v, "}"), "{"));
  for (size_t p = 0; p < inner.size();) {
    size_t eq = inner.find("=\"", p);
    if (eq == std::string::npos) return InvalidArgument("bad frontend_attributes '%s'", v);
    std::string name(absl::StripAsciiWhitespace(inner.substr(p, eq - p))), value;
    for (p = eq + 2; p < inner.size() && inner[p] != '"'; ++p) {
      if (inner[p] == '\\' && p + 1 < inner.size()) ++p;
      value += inner[p];
    }
    if (p >= inner.size() || name.empty()) return InvalidArgument("bad frontend_attributes '%s'", v);
    (*out)[name] = value;
    p = inner.find_first_not_of(", ", p + 1);
    if (p == std::string::npos) break;
  }
  return absl::OkStatus();
}

absl::Status ParsePrecision(absl::string_view v, Precision* precision) {
  for (absl::string_view p : absl::StrSplit(absl::StripPrefix(absl::StripSuffix(v, "}"), "{"), ',')) {
    p = absl::StripAsciiWhitespace(p);
    Precision q = p == "highest" ? Precision::kHighest : p == "high" ? Precision::kHigh : Precision::kDefault;
    if (q == Precision::kDefault && p != "default") return InvalidArgument("bad operand_precision '%s'", v);
    *precision = std::max(*precision, q);
  }
  return absl::OkStatus();
}

absl::StatusOr<ConvolutionDimensionNumbers> ParseDimLabels(absl::string_view text) {
  std::vector<std::string> io = absl::StrSplit(text, "->");
  if (io.size() != 2) return InvalidArgument("bad dim_labels '%s'", text);
  std::vector<std::string> lhs_rhs = absl::StrSplit(io[0], '_');
  if (lhs_rhs.size() != 2) return InvalidArgument("bad dim_labels '%s'", text);
  ConvolutionDimensionNumbers d;
  auto parse = [](const std::string& l, char a, char b, int64_t* da, int64_t* db, std::vector<int64_t>* sp) {
    std::map<int, int64_t> spatial;
    for (size_t i = 0; i < l.size(); ++i) {
      if (l[i] == a)
        *da = i;
      else if (l[i] == b)
        *db = i;
      else
        spatial[l[i] - '0'] = i;
    }
    sp->clear();
    for (auto& [k, v] : spatial) sp->push_back(v);
  };
  parse(lhs_rhs[0], 'b', 'f', &d.input_batch_dimension, &d.input_feature_dimension, &d.input_spatial_dimensions);
  parse(lhs_rhs[1], 'i', 'o', &d.kernel_input_feature_dimension, &d.kernel_output_feature_dimension,
        &d.kernel_spatial_dimensions);
  parse(io[1], 'b', 'f', &d.output_batch_dimension, &d.output_feature_dimension, &d.output_spatial_dimensions);
  return d;
}

class Parser {
 public:
  absl::StatusOr<std::unique_ptr<Module>> Run(absl::string_view text) {
    std::vector<std::string> lines = absl::StrSplit(text, '\n');
    for (size_t ln = 0; ln < lines.size(); ++ln) {
      absl::string_view line = absl::StripAsciiWhitespace(lines[ln]);
      if (line.empty()) continue;
      absl::Status st = Line(line);
      if (!st.ok()) return Annotate(st, absl::StrCat("line ", ln + 1));
    }
    if (!module_) return InvalidArgument("no 'HloModule' line");
    if (comp_) return InvalidArgument("computation '%s' is not closed", comp_->name());
    if (!module_->entry()) return InvalidArgument("no ENTRY computation");
    RETURN_IF_ERROR(Verify(*module_));
    return std::move(module_);
  }

 private:
  absl::Status Line(absl::string_view line) {
    if (absl::ConsumePrefix(&line, "HloModule ")) {
      std::string name(absl::StripAsciiWhitespace(line.substr(0, line.find(','))));
      module_ = std::make_unique<Module>(name);
      return absl::OkStatus();
    }
    if (!module_) return InvalidArgument("expected 'HloModule' first");
    if (line == "}") {
      if (!comp_) return InvalidArgument("'}' outside a computation");
      if (!root_) return InvalidArgument("computation '%s' has no ROOT", comp_->name());
      comp_->set_root(root_);
      std::string name = comp_->name();
      Computation* added = module_->AddComputation(std::move(comp_));
      added->set_name(name);
      computations_[name] = added;
      if (is_entry_) module_->set_entry(added);
      root_ = nullptr;
      return absl::OkStatus();
    }
    if (absl::EndsWith(line, "{") && line.find('=') == absl::string_view::npos) {
      if (comp_) return InvalidArgument("nested computation");
      is_entry_ = absl::ConsumePrefix(&line, "ENTRY ");
      std::string name(absl::StripAsciiWhitespace(absl::StripSuffix(line, "{")));
      module_->NoteNameUsed(name);
      comp_ = std::make_unique<Computation>(name);
      comp_->set_parent(module_.get());
      values_.clear();
      return absl::OkStatus();
    }
    if (!comp_) return InvalidArgument("instruction outside a computation");
    return Instruction_(line);
  }

  absl::Status Instruction_(absl::string_view line) {
    Cursor c(line);
    bool is_root = c.Consume("ROOT ");
    std::string name = c.Name();
    RETURN_IF_ERROR(c.Expect("="));
    ASSIGN_OR_RETURN(Shape shape, ParseShape(c));
    std::string opname = c.Name();
    ASSIGN_OR_RETURN(Opcode op, OpcodeFromName(opname));
    auto instr = std::make_unique<Instruction>(op, shape);
    RETURN_IF_ERROR(c.Expect("("));
    ASSIGN_OR_RETURN(std::string args, c.Balanced('(', ')'));
    if (op == Opcode::kParameter) {
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(args), &instr->parameter_number))
        return InvalidArgument("bad parameter number");
    } else if (op == Opcode::kConstant) {
      ASSIGN_OR_RETURN(Literal l, ParseLiteral(args, shape));
      instr->literal = std::move(l);
    } else {
      for (absl::string_view a : absl::StrSplit(args, ',', absl::SkipEmpty())) {
        std::string operand(absl::StripAsciiWhitespace(a));
        auto it = values_.find(operand);
        if (it == values_.end()) return InvalidArgument("operand '%s' of '%s' is not defined before it", operand, name);
        instr->AppendOperand(it->second);
      }
    }
    while (c.Consume(",")) {
      std::string key = c.Name();
      RETURN_IF_ERROR(c.Expect("="));
      std::string value;
      if (c.Consume("{")) {
        ASSIGN_OR_RETURN(std::string inner, c.Balanced('{', '}'));
        value = "{" + inner + "}";
      } else {
        absl::string_view rest = c.rest();
        size_t end = rest.find(',');
        value = std::string(absl::StripAsciiWhitespace(rest.substr(0, end)));
        c = Cursor(end == absl::string_view::npos ? absl::string_view() : rest.substr(end));
      }
      RETURN_IF_ERROR(Attribute(*instr, key, value));
    }
    if (!c.empty()) return InvalidArgument("unexpected '%s'", c.rest());
    auto inferred = InferShape(*instr);
    if (!inferred.ok()) return Annotate(inferred.status(), name);
    if (!inferred->Compatible(shape))
      return InvalidArgument("%s: shape %s differs from the inferred %s", name, shape.ToString(), inferred->ToString());
    // AddInstruction reserves the name (a duplicate would be renamed; the
    // original name is restored so the verifier reports it).
    instr->set_name(name);
    Instruction* raw = comp_->AddInstruction(std::move(instr));
    raw->set_name(name);
    values_[name] = raw;
    if (is_root) root_ = raw;
    return absl::OkStatus();
  }

  absl::StatusOr<Computation*> Callee(const std::string& name) {
    auto it = computations_.find(name);
    if (it == computations_.end()) return InvalidArgument("computation '%s' is not defined before its use", name);
    return it->second;
  }

  absl::Status Attribute(Instruction& i, const std::string& key, const std::string& v) {
    auto ints = [&](std::vector<int64_t>* out) -> absl::Status {
      ASSIGN_OR_RETURN(*out, Ints(v));
      return absl::OkStatus();
    };
    if (key == "dimensions") return ints(&i.dimensions);
    if (key == "iota_dimension") return ints(&i.dimensions);
    if (key == "dynamic_slice_sizes") return ints(&i.dynamic_slice_sizes);
    if (key == "index") {
      if (!absl::SimpleAtoi(v, &i.tuple_index)) return InvalidArgument("bad index");
      return absl::OkStatus();
    }
    if (key == "direction") {
      ASSIGN_OR_RETURN(i.comparison_direction, ComparisonDirectionFromName(v));
      return absl::OkStatus();
    }
    if (key == "slice") {
      std::string inner(absl::StripPrefix(absl::StripSuffix(v, "}"), "{"));
      for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipEmpty())) {
        part = absl::StripAsciiWhitespace(part);
        part = absl::StripPrefix(absl::StripSuffix(part, "]"), "[");
        std::vector<std::string> f = absl::StrSplit(part, ':');
        int64_t s = 0, l = 0, st = 1;
        if (f.size() < 2 || !absl::SimpleAtoi(f[0], &s) || !absl::SimpleAtoi(f[1], &l) ||
            (f.size() == 3 && !absl::SimpleAtoi(f[2], &st)))
          return InvalidArgument("bad slice '%s'", v);
        i.slice_starts.push_back(s);
        i.slice_limits.push_back(l);
        i.slice_strides.push_back(st);
      }
      return absl::OkStatus();
    }
    if (key == "padding") {
      for (absl::string_view d : absl::StrSplit(v, 'x')) {
        std::vector<std::string> f = absl::StrSplit(d, '_');
        PaddingDimension p;
        if (f.size() < 2 || !absl::SimpleAtoi(f[0], &p.edge_padding_low) ||
            !absl::SimpleAtoi(f[1], &p.edge_padding_high) ||
            (f.size() == 3 && !absl::SimpleAtoi(f[2], &p.interior_padding)))
          return InvalidArgument("bad padding '%s'", v);
        i.padding_config.push_back(p);
      }
      return absl::OkStatus();
    }
    if (key == "window") {
      ASSIGN_OR_RETURN(i.window, ParseWindow(absl::StripPrefix(absl::StripSuffix(v, "}"), "{")));
      return absl::OkStatus();
    }
    if (key == "dim_labels") {
      ASSIGN_OR_RETURN(i.conv_dnums, ParseDimLabels(v));
      return absl::OkStatus();
    }
    if (key == "feature_group_count")
      return absl::SimpleAtoi(v, &i.feature_group_count) ? absl::OkStatus() : InvalidArgument("bad %s", key);
    if (key == "batch_group_count")
      return absl::SimpleAtoi(v, &i.batch_group_count) ? absl::OkStatus() : InvalidArgument("bad %s", key);
    if (key == "operand_precision") return ParsePrecision(v, &i.precision);
    if (key == "lhs_batch_dims") return ints(&i.dot_dnums.lhs_batch_dimensions);
    if (key == "rhs_batch_dims") return ints(&i.dot_dnums.rhs_batch_dimensions);
    if (key == "lhs_contracting_dims") return ints(&i.dot_dnums.lhs_contracting_dimensions);
    if (key == "rhs_contracting_dims") return ints(&i.dot_dnums.rhs_contracting_dimensions);
    if (key == "offset_dims") return ints(&i.gather_dnums.offset_dims);
    if (key == "collapsed_slice_dims") return ints(&i.gather_dnums.collapsed_slice_dims);
    if (key == "start_index_map") return ints(&i.gather_dnums.start_index_map);
    if (key == "slice_sizes") return ints(&i.gather_slice_sizes);
    if (key == "update_window_dims") return ints(&i.scatter_dnums.update_window_dims);
    if (key == "inserted_window_dims") return ints(&i.scatter_dnums.inserted_window_dims);
    if (key == "scatter_dims_to_operand_dims") return ints(&i.scatter_dnums.scatter_dims_to_operand_dims);
    if (key == "index_vector_dim") {
      int64_t d;
      if (!absl::SimpleAtoi(v, &d)) return InvalidArgument("bad index_vector_dim");
      i.gather_dnums.index_vector_dim = i.scatter_dnums.index_vector_dim = d;
      return absl::OkStatus();
    }
    if (key == "is_stable") {
      i.is_stable = v == "true";
      return absl::OkStatus();
    }
    if (key == "to_apply" || key == "condition" || key == "body") {
      ASSIGN_OR_RETURN(Computation * callee, Callee(v));
      pending_[key] = callee;
      // XLA's order for while: body, then condition.
      if (key == "to_apply") i.AppendCalledComputation(callee);
      if (pending_.count("condition") && pending_.count("body")) {
        i.AppendCalledComputation(pending_["body"]);
        i.AppendCalledComputation(pending_["condition"]);
        pending_.clear();
      }
      if (key == "to_apply") pending_.clear();
      return absl::OkStatus();
    }
    if (key == "branch_computations") {
      std::string inner(absl::StripPrefix(absl::StripSuffix(v, "}"), "{"));
      for (absl::string_view n : absl::StrSplit(inner, ',', absl::SkipEmpty())) {
        ASSIGN_OR_RETURN(Computation * callee, Callee(std::string(absl::StripAsciiWhitespace(n))));
        i.AppendCalledComputation(callee);
      }
      return absl::OkStatus();
    }
    if (key == "frontend_attributes") return ParseFrontendAttributes(v, &i.frontend_attributes);
    if (key == "metadata") {
      auto field = [&](const std::string& k) {
        size_t p = v.find(k + "=\"");
        if (p == std::string::npos) return std::string();
        p += k.size() + 2;
        std::string out;
        for (; p < v.size() && v[p] != '"'; ++p) {
          if (v[p] == '\\' && p + 1 < v.size()) ++p;
          out += v[p];
        }
        return out;
      };
      i.metadata.op_type = field("op_type");
      i.metadata.op_name = field("op_name");
      return absl::OkStatus();
    }
    return Unimplemented("unknown attribute '%s'", key);
  }

  std::unique_ptr<Module> module_;
  std::unique_ptr<Computation> comp_;
  bool is_entry_ = false;
  Instruction* root_ = nullptr;
  std::map<std::string, Instruction*> values_;
  std::map<std::string, Computation*> computations_;
  std::map<std::string, Computation*> pending_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Module>> ParseText(absl::string_view text) {
  Parser p;
  return p.Run(text);
}

}  // namespace xonnx::hlo
