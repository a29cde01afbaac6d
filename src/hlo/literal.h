// A host value of a Shape: a dense row-major array, or a tuple of literals.
#ifndef XONNX_HLO_LITERAL_H_
#define XONNX_HLO_LITERAL_H_

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/shape.h"

namespace xonnx::hlo {

// A floating value as an int64 the way XLA converts: NaN is 0, values
// beyond the range clamp to its ends (a plain cast of those is undefined,
// and models may hold any float where an integer is read).
int64_t SaturatingInt64(double v);

class Literal {
 public:
  Literal() = default;
  // A zero-filled literal of `shape` (tuples get zero-filled elements).
  explicit Literal(Shape shape);

  // A scalar or vector from native values.
  template <typename T>
  static Literal Scalar(T v) {
    Literal l(Shape(NativeToPrimitive<T>(), {}));
    l.data<T>()[0] = v;
    return l;
  }
  template <typename T>
  static Literal Vector(const std::vector<T>& v) {
    Literal l(Shape(NativeToPrimitive<T>(), {static_cast<int64_t>(v.size())}));
    for (size_t i = 0; i < v.size(); ++i) l.data<T>()[i] = v[i];
    return l;
  }
  // A scalar of type `t` holding `v` converted with C++ semantics.
  static Literal ScalarOf(PrimitiveType t, double v);
  static Literal MakeTuple(std::vector<Literal> elements);
  // An array literal that reads the shape.ByteSize() bytes at `data`
  // without copying them: `owner` (not null) keeps them alive, and nobody
  // may change them while it does. Copies of the literal share them too;
  // the first write (through a non-const accessor) gives the literal a
  // private copy. Lets a compiler bind large weights as constants without a
  // copy per program.
  static Literal Borrow(Shape shape, const void* data, std::shared_ptr<const void> owner);

  const Shape& shape() const { return shape_; }
  int64_t element_count() const { return shape_.ElementCount(); }
  size_t size_bytes() const { return owner_ ? shape_.ByteSize() : bytes_.size(); }
  // Whether the bytes are borrowed (see Borrow) rather than owned, and
  // what keeps them alive (null when owned).
  bool borrowed() const { return owner_ != nullptr; }
  const std::shared_ptr<const void>& owner() const { return owner_; }
  void* untyped_data() { return MutableBytes(); }
  const void* untyped_data() const { return Bytes(); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(MutableBytes());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(Bytes());
  }

  std::vector<Literal>& tuple_elements() { return tuple_; }
  const std::vector<Literal>& tuple_elements() const { return tuple_; }

  // Element i (row-major) converted to double / int64.
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;
  // All elements as int64 (for shape-like values).
  std::vector<int64_t> ToInt64Vector() const;
  // A copy converted element-wise to `t` (HLO convert semantics).
  Literal Convert(PrimitiveType t) const;
  // A copy with new dims of the same element count.
  Literal Reshape(std::vector<int64_t> dims) const;

  // True when every element equals the first one.
  bool IsUniform() const;
  // True when shapes are compatible and bytes identical.
  bool operator==(const Literal& o) const;
  // Values in HLO text form: "{1, 2, 3}" nested by dimension.
  std::string ValuesToString(int64_t max_elements = -1) const;

 private:
  // A moved-from literal has no owner_ and reads as its (empty) bytes_.
  const uint8_t* Bytes() const { return owner_ ? borrowed_ : bytes_.data(); }
  uint8_t* MutableBytes();

  Shape shape_;
  std::vector<uint8_t> bytes_;         // owned bytes, when not borrowed
  const uint8_t* borrowed_ = nullptr;  // borrowed bytes, valid while owner_ is set
  std::shared_ptr<const void> owner_;
  std::vector<Literal> tuple_;
};

// Converts one value with HLO convert semantics: floats to integers truncate
// toward zero, saturate at the bounds and map NaN to 0; to pred is "!= 0".
template <typename To, typename From>
To ConvertValue(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<float>(v) != 0;
  } else if constexpr (std::is_integral_v<To> && !(std::is_integral_v<From> || std::is_same_v<From, bool>)) {
    double d = static_cast<double>(static_cast<float>(v));
    if constexpr (std::is_same_v<From, double>) d = v;
    if (d != d) return 0;
    if (d <= static_cast<double>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<From, double>)
      return To(static_cast<float>(v));
    else
      return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_LITERAL_H_
