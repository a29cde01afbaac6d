#include "onnx/tensor_proto.h"

#include <cstring>

#include "absl/strings/str_join.h"
#include "base/status.h"

namespace xonnx::onnx_import {

using hlo::PrimitiveType;
using TP = onnx::TensorProto;

namespace {
struct TypeRow {
  int32_t onnx;
  PrimitiveType hlo;
  const char* name;
};
// The one table mapping ONNX element types to HLO types.
constexpr TypeRow kTypes[] = {
    {TP::FLOAT, hlo::F32, "float"},        {TP::UINT8, hlo::U8, "uint8"},    {TP::INT8, hlo::S8, "int8"},
    {TP::UINT16, hlo::U16, "uint16"},      {TP::INT16, hlo::S16, "int16"},   {TP::INT32, hlo::S32, "int32"},
    {TP::INT64, hlo::S64, "int64"},        {TP::BOOL, hlo::PRED, "bool"},    {TP::FLOAT16, hlo::F16, "float16"},
    {TP::DOUBLE, hlo::F64, "double"},      {TP::UINT32, hlo::U32, "uint32"}, {TP::UINT64, hlo::U64, "uint64"},
    {TP::BFLOAT16, hlo::BF16, "bfloat16"},
};
}  // namespace

std::string OnnxTypeName(int32_t t) {
  for (const auto& r : kTypes)
    if (r.onnx == t) return r.name;
  switch (t) {
    case TP::STRING:
      return "string";
    case TP::COMPLEX64:
      return "complex64";
    case TP::COMPLEX128:
      return "complex128";
    default:
      return absl::StrCat("type#", t);
  }
}

absl::StatusOr<PrimitiveType> HloType(int32_t t) {
  for (const auto& r : kTypes)
    if (r.onnx == t) return r.hlo;
  return Unimplemented("element type %s is not supported", OnnxTypeName(t));
}

int32_t OnnxType(PrimitiveType t) {
  for (const auto& r : kTypes)
    if (r.hlo == t) return r.onnx;
  return TP::UNDEFINED;
}

absl::StatusOr<hlo::Literal> LiteralFromTensorProto(const TP& t, std::shared_ptr<const void> owner) {
  ASSIGN_OR_RETURN(PrimitiveType type, HloType(t.data_type()));
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  for (int64_t d : dims)
    if (d < 0) return InvalidArgument("tensor '%s' has a negative dimension", t.name());
  if (t.data_location() == TP::EXTERNAL)
    return InvalidArgument("tensor '%s': external data was not resolved", t.name());
  // The size, checked: dims that wrap around would otherwise describe a
  // huge tensor with a few bytes behind it.
  hlo::Shape shape(type, dims);
  if (!shape.CheckedByteSize())
    return InvalidArgument("tensor '%s': dims [%s] hold more elements than memory can", t.name(),
                           absl::StrJoin(dims, ","));
  int64_t count = shape.ElementCount();
  // Values stored in the typed fields must match before anything that size
  // is allocated.
  if (!t.has_raw_data()) {
    int64_t values = t.float_data_size() + t.int32_data_size() + t.int64_data_size() + t.double_data_size() +
                     t.uint64_data_size() + t.string_data_size();
    if (values != count)
      return InvalidArgument("tensor '%s' has %d values, its shape needs %d", t.name(), values, count);
  }
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != shape.ByteSize())
      return InvalidArgument("tensor '%s' has %d bytes of data, its shape needs %d", t.name(), t.raw_data().size(),
                             shape.ByteSize());
    if (owner) return hlo::Literal::Borrow(std::move(shape), t.raw_data().data(), std::move(owner));
    hlo::Literal l(std::move(shape));
    if (l.size_bytes() > 0)  // an empty tensor may have no storage: memcpy wants real pointers
      std::memcpy(l.untyped_data(), t.raw_data().data(), l.size_bytes());
    return l;
  }
  hlo::Literal l(std::move(shape));
  int64_t n = l.element_count();
  auto fill = [&](const auto& field, auto convert) -> absl::Status {
    if (field.size() != n)
      return InvalidArgument("tensor '%s' has %d values, its shape needs %d", t.name(), field.size(), n);
    for (int64_t i = 0; i < n; ++i) convert(i, field.Get(i));
    return absl::OkStatus();
  };
  switch (type) {
    case hlo::F32:
      RETURN_IF_ERROR(fill(t.float_data(), [&](int64_t i, float v) { l.data<float>()[i] = v; }));
      break;
    case hlo::F64:
      RETURN_IF_ERROR(fill(t.double_data(), [&](int64_t i, double v) { l.data<double>()[i] = v; }));
      break;
    case hlo::S64:
      RETURN_IF_ERROR(fill(t.int64_data(), [&](int64_t i, int64_t v) { l.data<int64_t>()[i] = v; }));
      break;
    case hlo::U32:
    case hlo::U64:
      RETURN_IF_ERROR(fill(t.uint64_data(), [&](int64_t i, uint64_t v) {
        if (type == hlo::U32)
          l.data<uint32_t>()[i] = static_cast<uint32_t>(v);
        else
          l.data<uint64_t>()[i] = v;
      }));
      break;
    default:
      // int32_data holds every type of 32 bits or less, 16-bit floats as bits.
      RETURN_IF_ERROR(fill(t.int32_data(), [&](int64_t i, int32_t v) {
        hlo::TypeSwitch(type, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
            l.data<T>()[i] = T::FromBits(static_cast<uint16_t>(v));
          else
            l.data<T>()[i] = static_cast<T>(v);
        });
      }));
  }
  return l;
}

TP TensorProtoFromLiteral(const hlo::Literal& l, const std::string& name) {
  TP t;
  t.set_name(name);
  t.set_data_type(OnnxType(l.shape().element_type));
  for (int64_t d : l.shape().dims) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(l.untyped_data()), l.size_bytes()));
  return t;
}

const onnx::TensorProto* FindInitializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

}  // namespace xonnx::onnx_import
