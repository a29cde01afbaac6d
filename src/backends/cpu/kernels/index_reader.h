// How gather and scatter kernels read their index arrays (internal header
// of the CPU kernels): the batch positions an index array holds and where
// each component of an index vector lies.
#ifndef XONNX_BACKENDS_CPU_KERNELS_INDEX_READER_H_
#define XONNX_BACKENDS_CPU_KERNELS_INDEX_READER_H_

#include <cstdint>
#include <vector>

#include "hlo/shape.h"

namespace xonnx::cpu {

// How the start indices are read: the index array's batch dims (all but
// index_vector_dim, in order) and, for each component of an index vector,
// its element offset and the operand stride it moves along.
struct IndexReader {
  hlo::PrimitiveType type;
  std::vector<int64_t> batch_dims, batch_strides, dense_strides;
  std::vector<int64_t> component_offsets, operand_strides, limits;  // per component

  IndexReader(const hlo::Shape& indices, int64_t index_vector_dim, const std::vector<int64_t>& to_operand_dims,
              const std::vector<int64_t>& operand_strides_all, const std::vector<int64_t>& limits_all)
      : type(indices.element_type) {
    std::vector<int64_t> ist = indices.Strides();
    for (int64_t d = 0; d < indices.rank(); ++d) {
      if (d == index_vector_dim) continue;
      batch_dims.push_back(indices.dims[d]);
      batch_strides.push_back(ist[d]);
    }
    dense_strides.assign(batch_dims.size(), 1);
    for (int64_t d = static_cast<int64_t>(batch_dims.size()) - 2; d >= 0; --d)
      dense_strides[d] = dense_strides[d + 1] * batch_dims[d + 1];
    for (size_t k = 0; k < to_operand_dims.size(); ++k) {
      component_offsets.push_back(index_vector_dim < indices.rank() ? k * ist[index_vector_dim] : 0);
      operand_strides.push_back(operand_strides_all[to_operand_dims[k]]);
      limits.push_back(limits_all[to_operand_dims[k]]);
    }
  }
  int64_t BatchCount() const {
    int64_t n = 1;
    for (int64_t d : batch_dims) n *= d;
    return n;
  }
};

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_KERNELS_INDEX_READER_H_
