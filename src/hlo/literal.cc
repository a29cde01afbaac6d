#include "hlo/literal.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace xonnx::hlo {

Literal::Literal(Shape shape) : shape_(std::move(shape)) {
  if (shape_.IsTuple()) {
    for (const Shape& s : shape_.tuple_shapes) tuple_.emplace_back(s);
  } else {
    bytes_.assign(shape_.ByteSize(), 0);
  }
}

Literal Literal::Borrow(Shape shape, const void* data, std::shared_ptr<const void> owner) {
  Literal l;
  l.shape_ = std::move(shape);
  l.borrowed_ = static_cast<const uint8_t*>(data);
  l.owner_ = std::move(owner);
  return l;
}

uint8_t* Literal::MutableBytes() {
  if (owner_) {
    bytes_.assign(borrowed_, borrowed_ + shape_.ByteSize());
    borrowed_ = nullptr;
    owner_.reset();
  }
  return bytes_.data();
}

Literal Literal::ScalarOf(PrimitiveType t, double v) {
  Literal l(Shape(t, {}));
  TypeSwitch(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    l.data<T>()[0] = ConvertValue<T, double>(v);
  });
  return l;
}

Literal Literal::MakeTuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const Literal& e : elements) shapes.push_back(e.shape());
  Literal l;
  l.shape_ = Shape::Tuple(std::move(shapes));
  l.tuple_ = std::move(elements);
  return l;
}

double Literal::GetAsDouble(int64_t i) const {
  return TypeSwitch(shape_.element_type, [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    // Integers and doubles convert directly; f32, f16 and bf16 through
    // float, the one conversion the half types have. (Going through float
    // for f64 too, as this once did, dropped 29 bits of every f64 read.)
    if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>) {
      return static_cast<double>(data<T>()[i]);
    } else {
      return static_cast<double>(static_cast<float>(data<T>()[i]));
    }
  });
}

int64_t SaturatingInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

int64_t Literal::GetAsInt64(int64_t i) const {
  return TypeSwitch(shape_.element_type, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      return static_cast<int64_t>(data<T>()[i]);
    else
      return SaturatingInt64(static_cast<double>(static_cast<float>(data<T>()[i])));
  });
}

std::vector<int64_t> Literal::ToInt64Vector() const {
  std::vector<int64_t> v(element_count());
  for (int64_t i = 0; i < element_count(); ++i) v[i] = GetAsInt64(i);
  return v;
}

Literal Literal::Convert(PrimitiveType t) const {
  Literal out(Shape(t, shape_.dims));
  int64_t n = element_count();
  TypeSwitch(shape_.element_type, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    TypeSwitch(t, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* src = data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0; i < n; ++i) dst[i] = ConvertValue<To, From>(src[i]);
    });
  });
  return out;
}

Literal Literal::Reshape(std::vector<int64_t> dims) const {
  Literal out = *this;
  out.shape_ = Shape(shape_.element_type, std::move(dims));
  return out;
}

bool Literal::IsUniform() const {
  int64_t w = ByteWidth(shape_.element_type);
  int64_t n = element_count();
  for (int64_t i = 1; i < n; ++i)
    if (std::memcmp(Bytes(), Bytes() + i * w, w) != 0) return false;
  return true;
}

bool Literal::operator==(const Literal& o) const {
  if (!shape_.Compatible(o.shape_)) return false;
  if (shape_.IsTuple()) {
    for (size_t i = 0; i < tuple_.size(); ++i)
      if (!(tuple_[i] == o.tuple_[i])) return false;
    return true;
  }
  // Empty literals hold no bytes (their data may be null, which memcmp must not see).
  return size_bytes() == o.size_bytes() && (size_bytes() == 0 || std::memcmp(Bytes(), o.Bytes(), size_bytes()) == 0);
}

namespace {
std::string FormatElement(const Literal& l, int64_t i) {
  PrimitiveType t = l.shape().element_type;
  if (t == PRED) return l.data<bool>()[i] ? "true" : "false";
  if (IsInteger(t)) {
    if (t == U64) return absl::StrCat(l.data<uint64_t>()[i]);
    return absl::StrCat(l.GetAsInt64(i));
  }
  double d = l.GetAsDouble(i);
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // %.9g keeps f32 exact; f64 needs 17 digits.
  return t == F64 ? absl::StrFormat("%.17g", d) : absl::StrFormat("%.9g", d);
}
}  // namespace

std::string Literal::ValuesToString(int64_t max_elements) const {
  if (shape_.IsTuple()) {
    std::string s = "(";
    for (size_t i = 0; i < tuple_.size(); ++i)
      absl::StrAppend(&s, i ? ", " : "", tuple_[i].ValuesToString(max_elements));
    return s + ")";
  }
  int64_t n = element_count();
  if (max_elements >= 0 && n > max_elements) return "{...}";
  if (shape_.rank() == 0) return FormatElement(*this, 0);
  std::vector<int64_t> strides = shape_.Strides();
  std::string out;
  // Emit nested braces: open at the start of each row of each dimension.
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < shape_.rank(); ++d)
      if (i % (strides[d] * shape_.dims[d]) == 0) out += "{";
    out += FormatElement(*this, i);
    int closes = 0;
    for (int64_t d = shape_.rank() - 1; d >= 0; --d) {
      if ((i + 1) % (strides[d] * shape_.dims[d]) == 0) {
        out += "}";
        ++closes;
      } else
        break;
    }
    if (i + 1 < n) out += ", ";
  }
  if (n == 0) {
    for (int64_t d = 0; d < shape_.rank(); ++d) out += "{";
    for (int64_t d = 0; d < shape_.rank(); ++d) out += "}";
  }
  return out;
}

}  // namespace xonnx::hlo
