#include "hlo/broadcast.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "base/status.h"

namespace xonnx::hlo {

absl::StatusOr<std::vector<int64_t>> BroadcastDims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return InvalidArgument("shapes [%s] and [%s] do not broadcast", absl::StrJoin(a, ","), absl::StrJoin(b, ","));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Instruction* BroadcastTo(Builder& b, Instruction* x, const std::vector<int64_t>& dims) {
  if (!x) return nullptr;
  const auto& xd = x->shape().dims;
  if (xd == dims) return x;
  int64_t off = static_cast<int64_t>(dims.size()) - static_cast<int64_t>(xd.size());
  if (off < 0) return b.ReportError(InvalidArgument("cannot broadcast rank %d to rank %d", xd.size(), dims.size()));
  // Drop the size-1 dims that expand: HLO broadcast maps dims exactly.
  std::vector<int64_t> kept_dims, kept_sizes;
  for (size_t i = 0; i < xd.size(); ++i) {
    if (xd[i] == dims[off + i]) {
      kept_dims.push_back(off + i);
      kept_sizes.push_back(xd[i]);
    } else if (xd[i] != 1) {
      return b.ReportError(
          InvalidArgument("cannot broadcast [%s] to [%s]", absl::StrJoin(xd, ","), absl::StrJoin(dims, ",")));
    }
  }
  return b.Broadcast(b.Reshape(x, kept_sizes), dims, kept_dims);
}

}  // namespace xonnx::hlo
