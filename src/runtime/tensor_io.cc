// Tensor files: ONNX TensorProto (.pb, as in the ONNX test data) and NumPy
// (.npy, little-endian, C order).
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/exceptions.h"
#include "base/status.h"
#include "onnx/tensor_proto.h"
#include "runtime/dtype.h"
#include "runtime/public_status.h"
#include "xonnx/tensor.h"

namespace xonnx {

absl::StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrFormat("%s: cannot open the file", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

namespace {

absl::StatusOr<DataType> NpyType(absl::string_view descr) {
  struct Row {
    const char* d;
    DataType t;
  };
  static constexpr Row kRows[] = {
      {"<f4", DataType::kFloat32}, {"<f8", DataType::kFloat64}, {"<f2", DataType::kFloat16}, {"|i1", DataType::kInt8},
      {"<i2", DataType::kInt16},   {"<i4", DataType::kInt32},   {"<i8", DataType::kInt64},   {"|u1", DataType::kUInt8},
      {"<u2", DataType::kUInt16},  {"<u4", DataType::kUInt32},  {"<u8", DataType::kUInt64},  {"|b1", DataType::kBool},
  };
  for (const Row& r : kRows)
    if (descr == r.d) return r.t;
  return Unimplemented("NumPy dtype '%s' is not supported (little-endian numeric and bool only)", descr);
}

// Extracts the value text after `'key':` in the header dict.
std::string HeaderField(const std::string& header, const std::string& key) {
  size_t p = header.find("'" + key + "'");
  if (p == std::string::npos) return "";
  p = header.find(':', p);
  if (p == std::string::npos) return "";
  size_t start = header.find_first_not_of(' ', p + 1);
  if (start == std::string::npos) return "";
  char open = header[start];
  size_t end;
  if (open == '(')
    end = header.find(')', start) + 1;
  else if (open == '\'')
    end = header.find('\'', start + 1) + 1;
  else
    end = header.find_first_of(",}", start);
  return header.substr(start, end - start);
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path, const std::string& bytes) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return InvalidArgument("%s: not a NumPy file", path);
  int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else {
    if (bytes.size() < 12) return InvalidArgument("%s: truncated NumPy header", path);
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8) |
                 (static_cast<uint8_t>(bytes[10]) << 16) | (static_cast<size_t>(static_cast<uint8_t>(bytes[11])) << 24);
    offset = 12;
  }
  if (offset + header_len > bytes.size()) return InvalidArgument("%s: truncated NumPy header", path);
  std::string header = bytes.substr(offset, header_len);
  std::string descr(absl::StripPrefix(absl::StripSuffix(HeaderField(header, "descr"), "'"), "'"));
  ASSIGN_OR_RETURN(DataType t, NpyType(descr));
  if (HeaderField(header, "fortran_order") == "True")
    return Unimplemented("%s: Fortran-ordered arrays are not supported", path);
  std::string shape = HeaderField(header, "shape");
  std::vector<int64_t> dims;
  for (absl::string_view part : absl::StrSplit(absl::StripSuffix(absl::StripPrefix(shape, "("), ")"), ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    int64_t d;
    if (!absl::SimpleAtoi(part, &d) || d < 0) return InvalidArgument("%s: bad shape %s", path, shape);
    dims.push_back(d);
  }
  // The size the header claims, checked against the data before anything
  // is allocated: a header may claim any shape, and its product may wrap.
  std::optional<int64_t> need = hlo::Shape(ToHlo(t), dims).CheckedByteSize();
  if (!need) return InvalidArgument("%s: shape %s has more elements than memory can hold", path, shape);
  size_t data_at = offset + header_len;
  if (bytes.size() - data_at != static_cast<uint64_t>(*need))
    return InvalidArgument("%s: %d bytes of data, shape %s needs %d", path, bytes.size() - data_at, shape, *need);
  Tensor out(t, dims);
  if (out.byte_size()) std::memcpy(out.data(), bytes.data() + data_at, out.byte_size());
  return out;
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& p) {
  if (p.data_type() == onnx::TensorProto::STRING) {
    // The dims must account for the strings the file holds, checked before
    // anything of their size is allocated (they may claim any count).
    uint64_t count = 1;
    for (int64_t d : p.dims()) {
      if (d < 0 || (d && count > static_cast<uint64_t>(p.string_data_size()) / static_cast<uint64_t>(d)))
        return InvalidArgument("string tensor '%s': shape [%s] does not match its %d values", p.name(),
                               absl::StrJoin(p.dims(), ","), p.string_data_size());
      count *= static_cast<uint64_t>(d);
    }
    if (count != static_cast<uint64_t>(p.string_data_size()))
      return InvalidArgument("string tensor '%s': shape [%s] does not match its %d values", p.name(),
                             absl::StrJoin(p.dims(), ","), p.string_data_size());
    return Tensor::FromStrings({p.dims().begin(), p.dims().end()}, {p.string_data().begin(), p.string_data().end()});
  }
  ASSIGN_OR_RETURN(hlo::Literal lit, onnx_import::LiteralFromTensorProto(p));
  return TensorOf(lit);
}

StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name) {
  return PublicCall(path, [&]() -> absl::StatusOr<Tensor> {
    ASSIGN_OR_RETURN(std::string bytes, ReadAll(path));
    if (absl::EndsWith(path, ".npy")) return ReadNpy(path, bytes);
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes)) return InvalidArgument("%s: not an ONNX TensorProto file", path);
    auto t = TensorFromProto(proto);
    if (!t.ok()) return Annotate(t.status(), path);
    if (name) *name = proto.name();
    return t;
  });
}

onnx::TensorProto TensorToProto(const Tensor& t, const std::string& name) {
  if (t.dtype() != DataType::kString) return onnx_import::TensorProtoFromLiteral(LiteralOf(t), name);
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(onnx::TensorProto::STRING);
  for (int64_t d : t.dims()) p.add_dims(d);
  for (const auto& v : t.strings()) p.add_string_data(v);
  return p;
}

absl::Status WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return absl::PermissionDeniedError(absl::StrFormat("%s: cannot write the output file", path));
  f.write(bytes.data(), bytes.size());
  if (!f) return absl::DataLossError(absl::StrFormat("%s: write failed", path));
  return absl::OkStatus();
}

Status WriteTensorProto(const std::string& path, const Tensor& t, const std::string& name) {
  return PublicCall(path,
                    [&]() -> absl::Status { return WriteFileBytes(path, TensorToProto(t, name).SerializeAsString()); });
}

Status WriteNpyFile(const std::string& path, const Tensor& t) {
  return PublicCall(path, [&]() -> absl::Status {
    const char* descr = nullptr;
    for (const char* d : {"<f4", "<f8", "<f2", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"}) {
      absl::StatusOr<DataType> dt = NpyType(d);
      if (dt.ok() && *dt == t.dtype()) descr = d;
    }
    if (!descr)
      return absl::UnimplementedError(absl::StrFormat(
          "%s: %s tensors have no NumPy file type (write a .pb TensorProto instead)", path, DataTypeName(t.dtype())));
    std::string shape;
    for (int64_t d : t.dims()) absl::StrAppend(&shape, d, ",");
    if (t.dims().size() > 1) shape.pop_back();  // (3,) for one dim, (2,3) for more
    std::string header = absl::StrFormat("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    // Version 1.0: magic, version, a 2-byte header length; the header is
    // padded with spaces and ends in a newline so the data is 64-aligned.
    size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header.push_back('\n');
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes.push_back(static_cast<char>(header.size() & 0xff));
    bytes.push_back(static_cast<char>(header.size() >> 8));
    bytes += header;
    bytes.append(static_cast<const char*>(t.data()), t.byte_size());
    return WriteFileBytes(path, bytes);
  });
}

}  // namespace xonnx
