#include "runtime/batching.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_join.h"
#include "base/status.h"

namespace xonnx {

namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// Copies `count` blocks of `in_block` entries of `in` (stride in_block) into
// `out` (stride out_block); the rest of each output block stays as created
// (zeros or empty strings).
void CopyBlocks(const Tensor& in, Tensor& out, int64_t count, int64_t in_block, int64_t out_block, int64_t in_offset,
                int64_t out_offset) {
  int64_t take = std::min(in_block, out_block);
  if (in.dtype() == DataType::kString) {
    std::vector<std::string> values = out.strings();
    for (int64_t b = 0; b < count; ++b)
      for (int64_t i = 0; i < take; ++i)
        values[out_offset + b * out_block + i] = in.strings()[in_offset + b * in_block + i];
    out = Tensor::FromStrings(out.dims(), std::move(values));
    return;
  }
  int64_t w = DataTypeSize(in.dtype());
  if (take <= 0 || count <= 0) return;  // empty tensors may have null data
  const auto* src = static_cast<const char*>(in.data());
  auto* dst = static_cast<char*>(out.data());
  for (int64_t b = 0; b < count; ++b)
    std::memcpy(dst + (out_offset + b * out_block) * w, src + (in_offset + b * in_block) * w, take * w);
}

Tensor Blank(DataType t, const std::vector<int64_t>& dims) {
  if (t != DataType::kString) return Tensor(t, dims);
  return Tensor::FromStrings(dims, std::vector<std::string>(Product(dims, 0, dims.size())));
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> SortedBuckets(const std::vector<int64_t>& sizes, const std::string& what) {
  std::vector<int64_t> out = sizes;
  for (int64_t s : out)
    if (s < 1) return InvalidArgument("%s: sizes must be >= 1, got %d", what, s);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

absl::StatusOr<std::vector<int64_t>> BatchBuckets(int64_t max_batch, int64_t steps,
                                                  const std::vector<int64_t>& explicit_list) {
  if (!explicit_list.empty()) {
    if (max_batch > 0 && *std::max_element(explicit_list.begin(), explicit_list.end()) != max_batch)
      return InvalidArgument(
          "batch_buckets [%s] and max_batch %d disagree: give one of them, or make max_batch the largest bucket",
          absl::StrJoin(explicit_list, ","), max_batch);
    return SortedBuckets(explicit_list, "batch_buckets");
  }
  if (max_batch < 0) return InvalidArgument("max_batch must be >= 1, got %d", max_batch);
  if (max_batch == 0) return std::vector<int64_t>{};
  if (steps < 1 || steps > max_batch)
    return InvalidArgument("steps must be between 1 and max_batch (%d), got %d", max_batch, steps);
  std::vector<int64_t> out;
  for (int64_t i = 1; i <= steps; ++i) out.push_back((max_batch * i + steps - 1) / steps);
  return SortedBuckets(out, "max_batch/steps");
}

int64_t PickBucket(const std::vector<int64_t>& buckets, int64_t n) {
  auto it = std::lower_bound(buckets.begin(), buckets.end(), n);
  return it == buckets.end() ? -1 : *it;
}

absl::StatusOr<Tensor> ResizeAxis(const Tensor& t, int axis, int64_t size) {
  const auto& dims = t.dims();
  if (axis < 0 || axis >= static_cast<int>(dims.size()))
    return InvalidArgument("cannot resize axis %d of a tensor of rank %d", axis, dims.size());
  if (dims[axis] == size) return t;
  std::vector<int64_t> out_dims = dims;
  out_dims[axis] = size;
  Tensor out = Blank(t.dtype(), out_dims);
  int64_t outer = Product(dims, 0, axis), inner = Product(dims, axis + 1, dims.size());
  CopyBlocks(t, out, outer, dims[axis] * inner, size * inner, 0, 0);
  return out;
}

absl::StatusOr<Tensor> SliceRows(const Tensor& t, int64_t begin, int64_t count) {
  const auto& dims = t.dims();
  if (dims.empty() || begin < 0 || count < 0 || begin + count > dims[0])
    return InvalidArgument("rows [%d, %d) are outside a tensor of shape [%s]", begin, begin + count,
                           absl::StrJoin(dims, ","));
  std::vector<int64_t> out_dims = dims;
  out_dims[0] = count;
  Tensor out = Blank(t.dtype(), out_dims);
  int64_t row = Product(dims, 1, dims.size());
  CopyBlocks(t, out, 1, count * row, count * row, begin * row, 0);
  return out;
}

absl::StatusOr<Tensor> ConcatRows(const std::vector<Tensor>& parts) {
  if (parts.empty()) return InvalidArgument("nothing to concatenate");
  if (parts.size() == 1) return parts[0];
  std::vector<int64_t> dims = parts[0].dims();
  if (dims.empty()) return InvalidArgument("cannot concatenate scalars along axis 0");
  int64_t rows = 0;
  for (const auto& p : parts) {
    if (p.dtype() != parts[0].dtype() || p.dims().size() != dims.size() ||
        !std::equal(dims.begin() + 1, dims.end(), p.dims().begin() + 1))
      return InvalidArgument("cannot concatenate %s and %s along axis 0", parts[0].ShapeString(), p.ShapeString());
    rows += p.dims()[0];
  }
  dims[0] = rows;
  Tensor out = Blank(parts[0].dtype(), dims);
  int64_t row = Product(dims, 1, dims.size()), at = 0;
  for (const auto& p : parts) {
    CopyBlocks(p, out, 1, p.dims()[0] * row, p.dims()[0] * row, 0, at * row);
    at += p.dims()[0];
  }
  return out;
}

}  // namespace xonnx
