// Batch and dimension buckets: which sizes to compile for, and the tensor
// surgery that maps a call onto them (pad up, cut back, split, join).
#ifndef XONNX_RUNTIME_BATCHING_H_
#define XONNX_RUNTIME_BATCHING_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "xonnx/tensor.h"

namespace xonnx {

// The batch sizes to compile, ascending and without repeats: the explicit
// list when given, else lc0's rule ceil(max_batch * i / steps), i = 1..steps;
// empty when neither is set. Errors name the option that is wrong.
absl::StatusOr<std::vector<int64_t>> BatchBuckets(int64_t max_batch, int64_t steps,
                                                  const std::vector<int64_t>& explicit_list);
// Checks and sorts a list of dimension sizes (for dim_buckets).
absl::StatusOr<std::vector<int64_t>> SortedBuckets(const std::vector<int64_t>& sizes, const std::string& what);

// The smallest bucket >= n, or -1 when n is larger than all of them.
int64_t PickBucket(const std::vector<int64_t>& buckets, int64_t n);

// A copy of `t` with dimension `axis` set to `size`: cut back, or grown with
// zeros (empty strings) after the existing entries.
absl::StatusOr<Tensor> ResizeAxis(const Tensor& t, int axis, int64_t size);
// Entries [begin, begin + count) along axis 0.
absl::StatusOr<Tensor> SliceRows(const Tensor& t, int64_t begin, int64_t count);
// The parts joined along axis 0; their other dimensions and types must agree.
absl::StatusOr<Tensor> ConcatRows(const std::vector<Tensor>& parts);

}  // namespace xonnx

#endif  // XONNX_RUNTIME_BATCHING_H_
