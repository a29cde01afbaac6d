#include "xonnx/tensor.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_join.h"
#include "base/status.h"
#include "runtime/dtype.h"

namespace xonnx {

namespace {
struct Row {
  DataType dtype;
  hlo::PrimitiveType hlo;
  PJRT_Buffer_Type pjrt;
  const char* name;
};
// The one table of public element types.
constexpr Row kRows[] = {
    {DataType::kFloat32, hlo::F32, PJRT_Buffer_Type_F32, "float32"},
    {DataType::kFloat16, hlo::F16, PJRT_Buffer_Type_F16, "float16"},
    {DataType::kBFloat16, hlo::BF16, PJRT_Buffer_Type_BF16, "bfloat16"},
    {DataType::kFloat64, hlo::F64, PJRT_Buffer_Type_F64, "float64"},
    {DataType::kInt8, hlo::S8, PJRT_Buffer_Type_S8, "int8"},
    {DataType::kInt16, hlo::S16, PJRT_Buffer_Type_S16, "int16"},
    {DataType::kInt32, hlo::S32, PJRT_Buffer_Type_S32, "int32"},
    {DataType::kInt64, hlo::S64, PJRT_Buffer_Type_S64, "int64"},
    {DataType::kUInt8, hlo::U8, PJRT_Buffer_Type_U8, "uint8"},
    {DataType::kUInt16, hlo::U16, PJRT_Buffer_Type_U16, "uint16"},
    {DataType::kUInt32, hlo::U32, PJRT_Buffer_Type_U32, "uint32"},
    {DataType::kUInt64, hlo::U64, PJRT_Buffer_Type_U64, "uint64"},
    {DataType::kBool, hlo::PRED, PJRT_Buffer_Type_PRED, "bool"},
    {DataType::kString, hlo::PRIMITIVE_TYPE_INVALID, PJRT_Buffer_Type_INVALID, "string"},
};
const Row& RowOf(DataType t) {
  for (const Row& r : kRows)
    if (r.dtype == t) return r;
  return kRows[0];
}
}  // namespace

hlo::PrimitiveType ToHlo(DataType t) { return RowOf(t).hlo; }

absl::StatusOr<PJRT_Buffer_Type> ToPjrt(DataType t) {
  if (t == DataType::kString) return InvalidArgument("string tensors have no PjRT buffer type");
  return RowOf(t).pjrt;
}

absl::StatusOr<DataType> FromHlo(hlo::PrimitiveType t) {
  for (const Row& r : kRows)
    if (r.hlo == t && t != hlo::PRIMITIVE_TYPE_INVALID) return r.dtype;
  return Unimplemented("element type %s has no public DataType", hlo::PrimitiveTypeName(t));
}

hlo::Literal LiteralOf(const Tensor& t) {
  hlo::Literal lit(hlo::Shape(ToHlo(t.dtype()), t.dims()));
  if (t.byte_size()) std::memcpy(lit.untyped_data(), t.data(), t.byte_size());
  return lit;
}

absl::StatusOr<Tensor> TensorOf(const hlo::Literal& lit) {
  ASSIGN_OR_RETURN(DataType t, FromHlo(lit.shape().element_type));
  return Tensor::FromData(t, lit.shape().dims, lit.untyped_data());
}

std::string DataTypeName(DataType t) { return RowOf(t).name; }
int DataTypeSize(DataType t) { return hlo::ByteWidth(ToHlo(t)); }

Tensor::Tensor(DataType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  if (dtype_ == DataType::kString)
    strings_.resize(element_count());
  else
    bytes_.assign(element_count() * DataTypeSize(dtype_), 0);
}

Tensor Tensor::ForOverwrite(DataType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  if (dtype == DataType::kString)
    t.strings_.resize(t.element_count());
  else
    t.bytes_.resize(t.element_count() * DataTypeSize(dtype));  // default-initialized: see HostAllocator
  return t;
}

Tensor Tensor::FromStrings(std::vector<int64_t> dims, std::vector<std::string> values) {
  Tensor t(DataType::kString, std::move(dims));
  t.strings_ = std::move(values);
  t.strings_.resize(t.element_count());
  return t;
}

Tensor Tensor::FromData(DataType dtype, std::vector<int64_t> dims, const void* data) {
  Tensor t(dtype, std::move(dims));
  if (t.byte_size()) std::memcpy(t.data(), data, t.byte_size());
  return t;
}

Tensor Tensor::View(DataType dtype, std::vector<int64_t> dims, const void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  if (dtype == DataType::kString) {  // strings live in std::string: a copy
    t.strings_.resize(t.element_count());
    return t;
  }
  t.view_size_ = t.element_count() * DataTypeSize(dtype);
  t.view_ = t.view_size_ ? data : nullptr;
  return t;
}

int64_t Tensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

double Tensor::GetAsDouble(int64_t i) const {
  if (dtype_ == DataType::kString) return std::strtod(strings_[i].c_str(), nullptr);
  return hlo::TypeSwitch(ToHlo(dtype_), [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      return static_cast<double>(data_as<T>()[i]);
    else
      return static_cast<double>(static_cast<float>(data_as<T>()[i]));
  });
}

std::string Tensor::ShapeString() const {
  return absl::StrCat(DataTypeName(dtype_), "[", absl::StrJoin(dims_, ","), "]");
}

}  // namespace xonnx
