#include "serve/wire.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xonnx::serve {
namespace {

struct WireType {
  DataType dtype;
  const char* name;
};
// One row per type the protocol and xonnx share.
constexpr WireType kWireTypes[] = {
    {DataType::kBool, "BOOL"},     {DataType::kUInt8, "UINT8"},   {DataType::kUInt16, "UINT16"},
    {DataType::kUInt32, "UINT32"}, {DataType::kUInt64, "UINT64"}, {DataType::kInt8, "INT8"},
    {DataType::kInt16, "INT16"},   {DataType::kInt32, "INT32"},   {DataType::kInt64, "INT64"},
    {DataType::kFloat16, "FP16"},  {DataType::kFloat32, "FP32"},  {DataType::kFloat64, "FP64"},
    {DataType::kBFloat16, "BF16"}, {DataType::kString, "BYTES"},
};

uint32_t ReadLength(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

std::string WireName(DataType t) {
  for (const auto& w : kWireTypes)
    if (w.dtype == t) return w.name;
  return "INVALID";
}

StatusOr<DataType> DataTypeFromWire(std::string_view name) {
  for (const auto& w : kWireTypes)
    if (name == w.name) return w.dtype;
  std::vector<std::string> known;
  for (const auto& w : kWireTypes) known.push_back(w.name);
  return Invalid(absl::StrCat("unknown datatype '", std::string(name), "' (known: ", absl::StrJoin(known, ", "), ")"));
}

StatusOr<int64_t> ElementCount(const std::vector<int64_t>& shape, int64_t max_elements, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return Invalid(absl::StrCat(what, ": shape [", absl::StrJoin(shape, ","), "] has a negative dimension"));
    if (d != 0 && n > max_elements / d)
      return Invalid(absl::StrCat(what, ": shape [", absl::StrJoin(shape, ","), "] has more than ", max_elements,
                                  " elements, more than a request may carry"));
    n *= d;
  }
  return n;
}

Status CheckRawSize(DataType dtype, const std::vector<int64_t>& shape, size_t n, const std::string& what) {
  StatusOr<int64_t> count = ElementCount(shape, std::numeric_limits<int64_t>::max() / 16, what);
  if (!count.ok()) return count.status();
  size_t want = static_cast<size_t>(*count) * DataTypeSize(dtype);
  if (n != want)
    return Invalid(absl::StrCat(what, ": ", n, " bytes of data for shape [", absl::StrJoin(shape, ","), "] of ",
                                WireName(dtype), ", which takes ", want));
  return OkStatus();
}

StatusOr<Tensor> TensorFromRaw(DataType dtype, const std::vector<int64_t>& shape, std::string_view raw,
                               const std::string& what) {
  StatusOr<int64_t> count = ElementCount(shape, std::numeric_limits<int64_t>::max() / 16, what);
  if (!count.ok()) return count.status();
  if (dtype != DataType::kString) {
    Status s = CheckRawSize(dtype, shape, raw.size(), what);
    if (!s.ok()) return s;
    return Tensor::FromData(dtype, shape, raw.data());
  }
  std::vector<std::string> values;
  size_t at = 0;
  for (int64_t i = 0; i < *count; ++i) {
    if (raw.size() - at < 4)
      return Invalid(absl::StrCat(what, ": BYTES data ends inside element ", i, "'s length (", *count, " elements)"));
    uint32_t len = ReadLength(raw.data() + at);
    at += 4;
    if (raw.size() - at < len)
      return Invalid(
          absl::StrCat(what, ": BYTES element ", i, " declares ", len, " bytes, only ", raw.size() - at, " remain"));
    values.emplace_back(raw.substr(at, len));
    at += len;
  }
  if (at != raw.size())
    return Invalid(absl::StrCat(what, ": ", raw.size() - at, " bytes left after the ", *count, " BYTES elements"));
  return Tensor::FromStrings(shape, std::move(values));
}

size_t RawSize(const Tensor& t) {
  if (t.dtype() != DataType::kString) return t.byte_size();
  size_t n = 0;
  for (const auto& s : t.strings()) n += 4 + s.size();
  return n;
}

void AppendRaw(const Tensor& t, std::string& out) {
  if (t.dtype() != DataType::kString) {
    out.append(static_cast<const char*>(t.data()), t.byte_size());
    return;
  }
  for (const auto& s : t.strings()) {
    uint32_t len = static_cast<uint32_t>(s.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
    out.append(s);
  }
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kDeadlineExceeded:
      return 504;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kUnimplemented:
      return 501;
    case StatusCode::kInternal:
    case StatusCode::kUnknown:
    case StatusCode::kDataLoss:
      return 500;
    default:
      return 400;
  }
}

}  // namespace xonnx::serve
