#include "runtime/buckets.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "runtime/batching.h"

namespace xonnx {

absl::StatusOr<Buckets> Buckets::Make(const SessionOptions& options, const std::vector<TensorSpec>& inputs,
                                      const std::vector<TensorSpec>& outputs, const std::string& model_path) {
  Buckets b;
  b.inputs_ = inputs;
  b.outputs_ = outputs;
  b.model_path_ = model_path;
  ASSIGN_OR_RETURN(b.batch_, BatchBuckets(options.max_batch, options.steps, options.batch_buckets));
  std::set<std::string> batch_names, dim_names;
  bool any_batched = false;
  for (const auto& s : inputs) {
    any_batched |= IsBatched(s);
    for (size_t a = 0; a < s.dims.size(); ++a)
      if (s.dims[a] < 0 && !s.dim_names[a].empty()) (a == 0 ? batch_names : dim_names).insert(s.dim_names[a]);
  }
  if (!b.batch_.empty() && !any_batched)
    return InvalidArgument("%s: batch buckets were given, but no input has a dynamic dimension 0 (a batch)",
                           model_path);
  for (const auto& [name, sizes] : options.dim_buckets) {
    if (batch_names.count(name) && any_batched)
      return InvalidArgument(
          "%s: dim_buckets '%s' names the batch dimension; give batch buckets (max_batch/steps or batch_buckets) "
          "instead",
          model_path, name);
    if (!dim_names.count(name))
      return InvalidArgument("%s: dim_buckets: no input has a dynamic dimension named '%s' (dynamic dimensions: %s)",
                             model_path, name, dim_names.empty() ? "none" : absl::StrJoin(dim_names, ", "));
    ASSIGN_OR_RETURN(b.dims_[name], SortedBuckets(sizes, absl::StrCat("dim_buckets ", name)));
  }
  return b;
}

int64_t Buckets::PaddedRows(int64_t rows) const { return batch_.empty() ? rows : PickBucket(batch_, rows); }

bool Buckets::BatchedOutput(size_t k, const Tensor& t, int64_t rows) const {
  bool declared = k < outputs_.size() && (outputs_[k].dims.empty() || outputs_[k].dims[0] < 0);
  return declared && !t.dims().empty() && t.dims()[0] == rows;
}

absl::StatusOr<std::map<std::string, int64_t>> Buckets::PadDims(std::map<std::string, Tensor>& values) const {
  std::map<std::string, int64_t> actual;
  for (const auto& s : inputs_) {
    Tensor& t = values.at(s.name);
    for (size_t a = 0; a < s.dims.size(); ++a) {
      if (s.dims[a] >= 0) continue;
      auto it = dims_.find(s.dim_names[a]);
      if (it == dims_.end()) continue;
      int64_t v = t.dims()[a];
      auto [seen, fresh] = actual.emplace(it->first, v);
      if (!fresh && seen->second != v)
        return InvalidArgument("%s: dimension '%s' is %d in input '%s' but %d in another input", model_path_, it->first,
                               v, s.name, seen->second);
      int64_t b = PickBucket(it->second, v);
      if (b < 0)
        return InvalidArgument("%s: input '%s': dimension '%s' is %d, larger than its largest bucket %d", model_path_,
                               s.name, it->first, v, it->second.back());
      if (b != v) {
        ASSIGN_OR_RETURN(t, ResizeAxis(t, a, b));
      }
    }
  }
  return actual;
}

absl::Status Buckets::CutDims(std::vector<Tensor>& outs, const std::map<std::string, int64_t>& actual) const {
  for (size_t k = 0; k < outs.size() && k < outputs_.size(); ++k) {
    const auto& s = outputs_[k];
    for (size_t a = 0; a < s.dims.size() && a < outs[k].dims().size(); ++a) {
      auto it = actual.find(s.dim_names[a]);
      if (s.dims[a] >= 0 || it == actual.end()) continue;
      if (outs[k].dims()[a] != it->second) {
        ASSIGN_OR_RETURN(outs[k], ResizeAxis(outs[k], a, it->second));
      }
    }
  }
  return absl::OkStatus();
}

std::optional<std::vector<ShapeMap>> Buckets::AllShapes() const {
  if (empty()) return std::nullopt;
  std::vector<std::map<std::string, int64_t>> combos{{}};
  auto expand = [&](const std::string& name, const std::vector<int64_t>& sizes) {
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& c : combos)
      for (int64_t v : sizes) {
        auto n = c;
        n[name] = v;
        next.push_back(std::move(n));
      }
    combos = std::move(next);
  };
  const std::string kBatch = "\n batch";  // cannot clash with a dimension name from a model
  if (!batch_.empty()) expand(kBatch, batch_);
  for (const auto& [name, sizes] : dims_) expand(name, sizes);
  std::vector<ShapeMap> shapes;
  for (const auto& c : combos) {
    ShapeMap bucket;
    for (const auto& s : inputs_) {
      if (s.dtype == DataType::kString) return std::nullopt;
      std::vector<int64_t> dims = s.dims;
      for (size_t a = 0; a < dims.size(); ++a) {
        if (dims[a] >= 0) continue;
        auto it = c.find(a == 0 && IsBatched(s) && !batch_.empty() ? kBatch : s.dim_names[a]);
        if (it == c.end()) return std::nullopt;
        dims[a] = it->second;
      }
      bucket[s.name] = std::move(dims);
    }
    shapes.push_back(std::move(bucket));
  }
  return shapes;
}

}  // namespace xonnx
