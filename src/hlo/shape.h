// Array and tuple shapes with row-major layouts.
#ifndef XONNX_HLO_SHAPE_H_
#define XONNX_HLO_SHAPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "hlo/types.h"

namespace xonnx::hlo {

// An array shape (element type, dimensions, minor_to_major layout) or a
// tuple of shapes. xonnx only produces the default (row-major) layout.
struct Shape {
  PrimitiveType element_type = PRIMITIVE_TYPE_INVALID;
  std::vector<int64_t> dims;
  std::vector<int64_t> minor_to_major;
  std::vector<Shape> tuple_shapes;

  Shape() = default;
  // An array shape with the row-major layout.
  Shape(PrimitiveType t, std::vector<int64_t> d);
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Scalar(PrimitiveType t) { return Shape(t, {}); }

  bool IsTuple() const { return element_type == TUPLE; }
  bool IsArray() const { return IsArrayType(element_type); }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t dim(int64_t i) const { return dims[i]; }
  int64_t ElementCount() const;
  int64_t ByteSize() const { return ElementCount() * ByteWidth(element_type); }
  // ByteSize of an array, or nullopt when the dims' product or the bytes
  // overflow int64 (or a dim is negative): for sizes that come from input.
  std::optional<int64_t> CheckedByteSize() const;
  // Row-major strides in elements.
  std::vector<int64_t> Strides() const;
  // Same type and dims (and tuple elements); layouts are not compared.
  bool Compatible(const Shape& o) const;
  bool operator==(const Shape& o) const;
  // "f32[2,3]{1,0}" or "(f32[], s32[4]{0})"; without the layout when asked.
  std::string ToString(bool with_layout = true) const;
};

// Row-major layout of a rank-r array: {r-1, ..., 0}.
std::vector<int64_t> DefaultLayout(int64_t rank);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_SHAPE_H_
