#include "hlo/stablehlo_lexer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "hlo/stablehlo_syntax.h"

namespace xonnx::hlo::mlir_text {

namespace {

bool IdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' || c == '-';
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = absl::ascii_tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> Attr::Ints() const {
  if (kind == Kind::kInt) return std::vector<int64_t>{i};
  if (kind != Kind::kList) return InvalidArgument("expected a list of integers");
  std::vector<int64_t> out;
  for (const Attr& a : items) {
    if (a.kind == Kind::kInt) {
      out.push_back(a.i);
    } else if (a.kind == Kind::kBool) {
      out.push_back(a.b);
    } else {
      return InvalidArgument("expected a list of integers");
    }
  }
  return out;
}

void Cursor::Skip() {
  while (pos_ < text_.size()) {
    if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    } else if (text_.substr(pos_, 2) == "//") {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

bool Cursor::AtEnd() {
  Skip();
  return pos_ >= text_.size();
}

bool Cursor::Peek(absl::string_view token) {
  Skip();
  return absl::StartsWith(text_.substr(pos_), token);
}

bool Cursor::Consume(absl::string_view token) {
  if (!Peek(token)) return false;
  pos_ += token.size();
  return true;
}

absl::Status Cursor::Expect(absl::string_view token) {
  if (Consume(token)) return absl::OkStatus();
  return Error(absl::StrCat("expected '", token, "'"));
}

absl::Status Cursor::Error(absl::string_view what) const {
  size_t at = std::min(pos_, text_.size());
  int64_t line = 1 + std::count(text_.begin(), text_.begin() + at, '\n');
  size_t end = text_.find('\n', at);
  absl::string_view rest =
      text_.substr(at, std::min<size_t>(40, (end == absl::string_view::npos ? text_.size() : end) - at));
  return InvalidArgument("StableHLO line %d: %s at '%s'", line, what, rest);
}

absl::Status Cursor::Enter() {
  if (++depth_ > kMaxDepth) {
    --depth_;
    return Error(absl::StrCat("nested more than ", kMaxDepth, " levels deep"));
  }
  return absl::OkStatus();
}

namespace {
// Leaves a level of nesting when it goes out of scope.
struct Level {
  explicit Level(Cursor* c) : c(c) {}
  ~Level() { c->Leave(); }
  Cursor* c;
};
}  // namespace

absl::StatusOr<std::string> Cursor::Identifier() {
  Skip();
  size_t n = pos_;
  while (n < text_.size() && IdentChar(text_[n])) ++n;
  if (n == pos_) return Error("expected a name");
  std::string out(text_.substr(pos_, n - pos_));
  pos_ = n;
  return out;
}

absl::StatusOr<std::string> Cursor::String() {
  RETURN_IF_ERROR(Expect("\""));
  std::string out;
  while (pos_ < text_.size() && text_[pos_] != '"') {
    char c = text_[pos_++];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= text_.size()) break;
    char e = text_[pos_++];
    if (e == 'n') {
      out += '\n';
    } else if (e == 't') {
      out += '\t';
    } else if (e == '"' || e == '\\') {
      out += e;
    } else if (pos_ < text_.size() && HexDigit(e) >= 0 && HexDigit(text_[pos_]) >= 0) {
      out += static_cast<char>(HexDigit(e) * 16 + HexDigit(text_[pos_++]));
    } else {
      return Error("bad escape in a string");
    }
  }
  if (pos_ >= text_.size()) return Error("unterminated string");
  ++pos_;
  return out;
}

absl::StatusOr<int64_t> Cursor::Integer() {
  Skip();
  size_t n = pos_;
  if (n < text_.size() && (text_[n] == '-' || text_[n] == '+')) ++n;
  while (n < text_.size() && std::isdigit(static_cast<unsigned char>(text_[n]))) ++n;
  int64_t v;
  if (!absl::SimpleAtoi(text_.substr(pos_, n - pos_), &v)) return Error("expected an integer");
  pos_ = n;
  return v;
}

absl::StatusOr<std::pair<std::string, int64_t>> Cursor::Value() {
  RETURN_IF_ERROR(Expect("%"));
  size_t n = pos_;
  while (n < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[n])) || text_[n] == '_')) ++n;
  if (n == pos_) return Error("expected a value name after '%'");
  std::string name(text_.substr(pos_, n - pos_));
  pos_ = n;
  int64_t index = -1;
  if (pos_ < text_.size() && text_[pos_] == '#') {
    ++pos_;
    ASSIGN_OR_RETURN(index, Integer());
  }
  return std::make_pair(name, index);
}

absl::StatusOr<std::string> Cursor::Symbol() {
  RETURN_IF_ERROR(Expect("@"));
  if (Peek("\"")) return String();
  return Identifier();
}

absl::StatusOr<Shape> Cursor::Type() {
  RETURN_IF_ERROR(Enter());
  Level level(this);
  if (Consume("!stablehlo.token")) return Shape(TOKEN, {});
  if (Consume("tuple<")) {
    std::vector<Shape> parts;
    while (!Consume(">")) {
      if (!parts.empty()) RETURN_IF_ERROR(Expect(","));
      ASSIGN_OR_RETURN(Shape s, Type());
      parts.push_back(std::move(s));
    }
    return Shape::Tuple(std::move(parts));
  }
  RETURN_IF_ERROR(Expect("tensor<"));
  std::vector<int64_t> dims;
  while (true) {
    Skip();
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      ASSIGN_OR_RETURN(int64_t d, Integer());
      dims.push_back(d);
      RETURN_IF_ERROR(Expect("x"));
      continue;
    }
    if (Peek("?")) return Error("dynamic dimensions are not supported");
    break;
  }
  ASSIGN_OR_RETURN(std::string element, Identifier());
  absl::StatusOr<PrimitiveType> t = PrimitiveTypeFromMlir(element);
  if (!t.ok()) return Error(t.status().message());
  RETURN_IF_ERROR(Expect(">"));
  return Shape(*t, std::move(dims));
}

absl::StatusOr<std::vector<Shape>> Cursor::TypeList() {
  RETURN_IF_ERROR(Expect("("));
  std::vector<Shape> out;
  while (!Consume(")")) {
    if (!out.empty()) RETURN_IF_ERROR(Expect(","));
    ASSIGN_OR_RETURN(Shape s, Type());
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status Cursor::Scalars(std::vector<std::string>* out) {
  RETURN_IF_ERROR(Enter());
  Level level(this);
  if (Consume("[")) {
    bool first = true;
    while (!Consume("]")) {
      if (!first) RETURN_IF_ERROR(Expect(","));
      first = false;
      RETURN_IF_ERROR(Scalars(out));
    }
    return absl::OkStatus();
  }
  Skip();
  size_t n = pos_;
  while (n < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[n])) || strchr("+-.", text_[n]))) ++n;
  if (n == pos_) return Error("expected a number");
  out->emplace_back(text_.substr(pos_, n - pos_));
  pos_ = n;
  return absl::OkStatus();
}

absl::StatusOr<Attr> Cursor::Dense() {
  std::string hex;
  std::vector<std::string> scalars;
  bool is_hex = false;
  if (Peek("\"")) {
    ASSIGN_OR_RETURN(hex, String());
    if (!absl::StartsWith(hex, "0x") || hex.size() % 2) return Error("expected \"0x...\" in dense<>");
    is_hex = true;
  } else if (!Peek(">")) {
    RETURN_IF_ERROR(Scalars(&scalars));
  }
  RETURN_IF_ERROR(Expect(">"));
  RETURN_IF_ERROR(Expect(":"));
  ASSIGN_OR_RETURN(Shape shape, Type());
  if (!shape.IsArray()) return Error("dense<> of a type that is not a tensor");
  Attr a;
  a.kind = Attr::Kind::kDense;
  a.dense = Literal(shape);
  auto* bytes = static_cast<uint8_t*>(a.dense.untyped_data());
  const size_t width = ByteWidth(shape.element_type), total = a.dense.size_bytes();
  const int64_t count = shape.ElementCount();
  if (is_hex) {
    size_t n = (hex.size() - 2) / 2;
    if (n != total && !(n == width && count > 0)) return Error("dense<> hex data does not match the type's size");
    for (size_t k = 0; k < total; ++k) {
      size_t src = 2 + 2 * (k % n);
      int hi = HexDigit(hex[src]), lo = HexDigit(hex[src + 1]);
      if (hi < 0 || lo < 0) return Error("bad hex digit in dense<>");
      bytes[k] = static_cast<uint8_t>(hi * 16 + lo);
    }
    return a;
  }
  if (scalars.size() != static_cast<size_t>(count) && !(scalars.size() == 1 && count > 0))
    return Error(absl::StrCat("dense<> has ", scalars.size(), " values for ", count, " elements"));
  for (int64_t k = 0; k < count; ++k) {
    const std::string& s = scalars[scalars.size() == 1 ? 0 : k];
    Literal one;
    int64_t iv;
    double dv;
    if (s == "true" || s == "false") {
      one = Literal::Scalar<int64_t>(s == "true").Convert(shape.element_type);
    } else if (absl::SimpleAtoi(s, &iv) && !IsFloatingPoint(shape.element_type)) {
      one = Literal::Scalar<int64_t>(iv).Convert(shape.element_type);
    } else if (absl::SimpleAtod(s, &dv)) {
      one = Literal::ScalarOf(shape.element_type, dv);
    } else {
      return Error(absl::StrCat("bad value '", s, "' in dense<>"));
    }
    std::memcpy(bytes + k * width, one.untyped_data(), width);
  }
  return a;
}

absl::StatusOr<Attr> Cursor::Fields(bool raw) {
  Attr a;
  a.kind = Attr::Kind::kStruct;
  if (raw) RETURN_IF_ERROR(Expect("raw"));
  while (!Consume(">")) {
    if (!a.fields.empty()) RETURN_IF_ERROR(Expect(","));
    ASSIGN_OR_RETURN(std::string key, Identifier());
    RETURN_IF_ERROR(Expect("="));
    ASSIGN_OR_RETURN(Attr v, Attribute());
    a.fields[key] = std::move(v);
  }
  return a;
}

absl::StatusOr<Attr> Cursor::Attribute() {
  RETURN_IF_ERROR(Enter());
  Level level(this);
  Attr a;
  if (Consume("dense<")) return Dense();
  if (Consume("array<")) {
    a.kind = Attr::Kind::kList;
    ASSIGN_OR_RETURN(std::string element, Identifier());
    if (Consume(":")) {
      do {
        Attr item;
        if (element == "i1") {
          item.kind = Attr::Kind::kBool;
          if (Consume("true")) {
            item.b = true;
          } else if (!Consume("false")) {
            return Error("expected true or false");
          }
        } else {
          ASSIGN_OR_RETURN(item.i, Integer());
        }
        a.items.push_back(std::move(item));
      } while (Consume(","));
    }
    RETURN_IF_ERROR(Expect(">"));
    return a;
  }
  if (Consume("#stablehlo.conv<")) return Fields(/*raw=*/true);
  if (Consume("#stablehlo.")) {
    RETURN_IF_ERROR(Identifier().status());  // dot, gather, scatter
    RETURN_IF_ERROR(Expect("<"));
    return Fields(/*raw=*/false);
  }
  if (Consume("#stablehlo<")) {
    a.kind = Attr::Kind::kEnum;
    RETURN_IF_ERROR(Identifier().status());  // the enum's kind
    ASSIGN_OR_RETURN(a.text, Identifier());
    RETURN_IF_ERROR(Expect(">"));
    return a;
  }
  if (Consume("[")) {
    a.kind = Attr::Kind::kList;
    while (!Consume("]")) {
      if (!a.items.empty()) RETURN_IF_ERROR(Expect(","));
      ASSIGN_OR_RETURN(Attr item, Attribute());
      a.items.push_back(std::move(item));
    }
    return a;
  }
  if (Peek("@")) {
    a.kind = Attr::Kind::kSymbol;
    ASSIGN_OR_RETURN(a.text, Symbol());
    return a;
  }
  if (Consume("true") || Consume("false")) {
    a.kind = Attr::Kind::kBool;
    a.b = text_.substr(pos_ - 4, 4) == "true";
    return a;
  }
  ASSIGN_OR_RETURN(a.i, Integer());
  if (Consume(":")) RETURN_IF_ERROR(Identifier().status());  // i64, i32
  return a;
}

absl::StatusOr<std::string> Cursor::Location() {
  if (!Consume("loc(")) return std::string();
  ASSIGN_OR_RETURN(std::string s, String());
  RETURN_IF_ERROR(Expect(")"));
  return s;
}

}  // namespace xonnx::hlo::mlir_text
