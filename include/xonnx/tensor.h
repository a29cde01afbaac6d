// Host tensors: the values passed to and returned by Session::Run.
#ifndef XONNX_TENSOR_H_
#define XONNX_TENSOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xonnx/export.h"
#include "xonnx/host_memory.h"
#include "xonnx/status.h"

namespace xonnx {

// Element types of tensors (the ONNX tensor types xonnx supports).
enum class DataType {
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kBool,
  kString
};

// "float32", "int64", ... as printed by the CLI.
XONNX_API std::string DataTypeName(DataType t);
// Bytes per element (0 for strings, which Tensor keeps as std::string).
XONNX_API int DataTypeSize(DataType t);

// A dense row-major tensor that owns its bytes.
class XONNX_API Tensor {
 public:
  Tensor() = default;
  // A zero-filled tensor.
  Tensor(DataType dtype, std::vector<int64_t> dims);
  // A tensor whose bytes are not initialized, to be overwritten whole (the
  // outputs a run copies into: zero-filling megabytes first would cost as
  // much as the copy). Numeric types; strings are empty as in the
  // constructor.
  static Tensor ForOverwrite(DataType dtype, std::vector<int64_t> dims);
  // A tensor holding a copy of `data` (element_count * size bytes).
  static Tensor FromData(DataType dtype, std::vector<int64_t> dims, const void* data);
  // A tensor over the caller's memory, read in place: nothing is copied when
  // it goes into Session::Run, whose inputs the plugin then reads directly.
  // The memory must stay valid and unchanged while this tensor or a copy of
  // it is in use (for Run, until it returns; RunAsync copies it first).
  // Writing through data() or data_as() first copies it into memory of its
  // own, so the caller's memory is never written. Numeric types only (as
  // with FromData, a string tensor's values are not taken from `data`).
  static Tensor View(DataType dtype, std::vector<int64_t> dims, const void* data);
  // A string tensor (row-major values).
  static Tensor FromStrings(std::vector<int64_t> dims, std::vector<std::string> values);
  // A 1-element tensor or a vector of values, for tests and tools.
  template <typename T>
  static Tensor FromVector(DataType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
    return FromData(dtype, std::move(dims), values.data());
  }

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t element_count() const;
  size_t byte_size() const { return view_ ? view_size_ : bytes_.size(); }
  void* data() {
    Own();
    return bytes_.data();
  }
  const void* data() const { return view_ ? view_ : bytes_.data(); }
  template <typename T>
  T* data_as() {
    return reinterpret_cast<T*>(data());
  }
  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(data());
  }
  // Whether this is a View of the caller's memory (not yet written).
  bool is_view() const { return view_ != nullptr; }
  // A tensor that owns its bytes: this one, or a copy of a view.
  Tensor Owned() const {
    Tensor t = *this;
    t.Own();
    return t;
  }
  // Element i converted to double (16-bit floats decoded; strings parsed).
  double GetAsDouble(int64_t i) const;
  // The values of a string tensor (empty for other types).
  const std::vector<std::string>& strings() const { return strings_; }
  // "float32[1,3,224,224]".
  std::string ShapeString() const;

 private:
  DataType dtype_ = DataType::kFloat32;
  std::vector<int64_t> dims_;
  std::vector<uint8_t, HostAllocator<uint8_t>> bytes_;  // large ones recycled: see host_memory.h
  std::vector<std::string> strings_;
  // A View's memory (not owned) and its size; null once written.
  const void* view_ = nullptr;
  size_t view_size_ = 0;
  void Own() {
    if (!view_) return;
    const auto* p = static_cast<const uint8_t*>(view_);
    bytes_.assign(p, p + view_size_);
    view_ = nullptr;
  }
};

// Reads a tensor from an ONNX TensorProto file (.pb) or a NumPy file (.npy);
// `name` receives the TensorProto's name when it has one.
XONNX_API StatusOr<Tensor> ReadTensorFile(const std::string& path, std::string* name = nullptr);
// Writes `t` as a TensorProto named `name`.
XONNX_API Status WriteTensorProto(const std::string& path, const Tensor& t, const std::string& name);
// Writes `t` as a NumPy file (.npy, version 1.0, little-endian, C order);
// bfloat16 and string tensors have no NumPy type and are refused.
XONNX_API Status WriteNpyFile(const std::string& path, const Tensor& t);

}  // namespace xonnx

#endif  // XONNX_TENSOR_H_
