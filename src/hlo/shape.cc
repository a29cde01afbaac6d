#include "hlo/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xonnx::hlo {

std::vector<int64_t> DefaultLayout(int64_t rank) {
  std::vector<int64_t> l(rank);
  for (int64_t i = 0; i < rank; ++i) l[i] = rank - 1 - i;
  return l;
}

Shape::Shape(PrimitiveType t, std::vector<int64_t> d)
    : element_type(t), dims(std::move(d)), minor_to_major(DefaultLayout(dims.size())) {}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.element_type = TUPLE;
  s.tuple_shapes = std::move(elements);
  return s;
}

int64_t Shape::ElementCount() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::optional<int64_t> Shape::CheckedByteSize() const {
  int64_t n = ByteWidth(element_type);
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

std::vector<int64_t> Shape::Strides() const {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (int64_t i = rank() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

bool Shape::Compatible(const Shape& o) const {
  if (element_type != o.element_type) return false;
  if (IsTuple()) {
    if (tuple_shapes.size() != o.tuple_shapes.size()) return false;
    for (size_t i = 0; i < tuple_shapes.size(); ++i)
      if (!tuple_shapes[i].Compatible(o.tuple_shapes[i])) return false;
    return true;
  }
  return dims == o.dims;
}

bool Shape::operator==(const Shape& o) const {
  return Compatible(o) && (IsTuple() || minor_to_major == o.minor_to_major);
}

std::string Shape::ToString(bool with_layout) const {
  if (IsTuple()) {
    std::vector<std::string> parts;
    for (const Shape& s : tuple_shapes) parts.push_back(s.ToString(with_layout));
    return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
  }
  std::string out = absl::StrCat(PrimitiveTypeName(element_type), "[", absl::StrJoin(dims, ","), "]");
  if (with_layout && !dims.empty()) absl::StrAppend(&out, "{", absl::StrJoin(minor_to_major, ","), "}");
  return out;
}

}  // namespace xonnx::hlo
