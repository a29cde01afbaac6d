// A session's buckets: the batch sizes and named dimension sizes it
// compiles for, checked against the model's inputs, and how a call maps
// onto them (pad the named dimensions up, cut the outputs back).
#ifndef XONNX_RUNTIME_BUCKETS_H_
#define XONNX_RUNTIME_BUCKETS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "xonnx/options.h"
#include "xonnx/session.h"
#include "xonnx/tensor.h"

namespace xonnx {

class Buckets {
 public:
  Buckets() = default;
  // The options' buckets for a model with these inputs and outputs; errors
  // name `model_path` and the option that does not fit the model.
  static absl::StatusOr<Buckets> Make(const SessionOptions& options, const std::vector<TensorSpec>& inputs,
                                      const std::vector<TensorSpec>& outputs, const std::string& model_path);

  bool empty() const { return batch_.empty() && dims_.empty(); }
  // Batch sizes, ascending (empty: every batch compiles as it comes).
  const std::vector<int64_t>& batch() const { return batch_; }
  bool has_dim_buckets() const { return !dims_.empty(); }
  // The batch bucket `rows` runs in (rows itself without batch buckets).
  int64_t PaddedRows(int64_t rows) const;

  // Whether an input's dimension 0 is the batch (declared dynamic).
  static bool IsBatched(const TensorSpec& s) { return !s.dims.empty() && s.dims[0] < 0; }
  // Whether output k carries the batch in dimension 0 (declared dynamic, or
  // undeclared, and as long as the batch that produced it).
  bool BatchedOutput(size_t k, const Tensor& t, int64_t rows) const;

  // Pads the dimensions named in the dimension buckets up to their bucket;
  // returns the actual size of each name (to cut the outputs back).
  absl::StatusOr<std::map<std::string, int64_t>> PadDims(std::map<std::string, Tensor>& values) const;
  // Cuts the outputs' named dimensions back from their bucket to the sizes
  // of the call.
  absl::Status CutDims(std::vector<Tensor>& outs, const std::map<std::string, int64_t>& actual) const;

  // The input shapes of every combination of bucket sizes, to compile at
  // Open; nullopt when a program must wait for a call (a dynamic dimension
  // without buckets, or a string input whose values it needs).
  std::optional<std::vector<ShapeMap>> AllShapes() const;

 private:
  std::vector<TensorSpec> inputs_, outputs_;
  std::string model_path_;
  std::vector<int64_t> batch_;
  std::map<std::string, std::vector<int64_t>> dims_;
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_BUCKETS_H_
