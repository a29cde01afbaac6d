// Native sort along one dim, by the first operand's values (the comparator
// compare(p0, p1, LT|GT), as TopK and ArgSort import), applying the order to
// every operand. When the program reads only the first k positions of each
// sorted row (TopK's slice), the row is selected, not sorted: the k first
// elements are found in linear time and only they are sorted.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/strided_loops.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/kernels.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::cpu {

namespace {

using hlo::Instruction;

// The order of a row's elements: by value (eval::internal::SortsBefore, NaN
// the largest), equal values by position. It is a strict total order on
// positions, so a selection and a full sort agree, and the equal values keep
// their order as a stable sort keeps them.
template <typename T, bool kAscending>
struct Before {
  bool operator()(const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) const {
    if (eval::internal::SortsBefore(a.first, b.first, kAscending)) return true;
    if (eval::internal::SortsBefore(b.first, a.first, kAscending)) return false;
    return a.second < b.second;
  }
};

// The first `prefix` of a row of n values (all of them when prefix >= n), in
// order, as (value, position) pairs in `keys`. A small prefix is kept in a
// heap whose top is the last of the kept pairs while the row streams by: an
// element that does not come before it costs one comparison (most of them,
// in a detector's or a sampler's TopK). A larger one is selected in linear
// time; then only the prefix is sorted.
template <typename T, bool kAscending>
void OrderRow(const T* row, int64_t step, int64_t n, int64_t prefix, std::vector<std::pair<T, int64_t>>& keys) {
  Before<T, kAscending> before;
  if (prefix < n && prefix * 16 <= n) {
    keys.clear();
    for (int64_t j = 0; j < prefix; ++j) keys.emplace_back(row[j * step], j);
    std::make_heap(keys.begin(), keys.end(), before);
    for (int64_t j = prefix; j < n; ++j) {
      // A later position never displaces an equal value: only a value that
      // sorts before the last kept one enters.
      const T v = row[j * step];
      if (!eval::internal::SortsBefore(v, keys.front().first, kAscending)) continue;
      std::pop_heap(keys.begin(), keys.end(), before);
      keys.back() = {v, j};
      std::push_heap(keys.begin(), keys.end(), before);
    }
    std::sort_heap(keys.begin(), keys.end(), before);
    return;
  }
  keys.resize(n);
  for (int64_t j = 0; j < n; ++j) keys[j] = {row[j * step], j};
  if (prefix < n) {
    std::nth_element(keys.begin(), keys.begin() + prefix, keys.end(), before);
    std::sort(keys.begin(), keys.begin() + prefix, before);
  } else {
    std::sort(keys.begin(), keys.end(), before);
  }
}

}  // namespace

std::optional<Thunk> MakeSortThunk(const Instruction& in, const ThunkIo& io, int64_t prefix) {
  std::optional<bool> ascending = eval::MatchSortDirection(*in.to_apply());
  if (!ascending || io.outputs.size() != static_cast<size_t>(in.operand_count())) return std::nullopt;
  const hlo::Shape& xs = in.operand(0)->shape();
  const int64_t dim = in.dimensions[0], len = xs.dims[dim];
  const int64_t keep = std::clamp<int64_t>(prefix, 0, len);
  std::vector<int64_t> st = xs.Strides(), outer = xs.dims, outer_strides = st;
  outer.erase(outer.begin() + dim);
  outer_strides.erase(outer_strides.begin() + dim);
  const int64_t step = st[dim];
  std::vector<int> widths;
  for (int64_t k = 0; k < in.operand_count(); ++k)
    widths.push_back(hlo::ByteWidth(in.operand(k)->shape().element_type));
  const bool asc = *ascending;
  Thunk t;
  t.name = in.name();
  if (keep < len) t.kind = "top-k";
  bool ok = hlo::TypeSwitch(xs.element_type, [&](auto tag) -> bool {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_arithmetic_v<T>) {
      return false;
    } else {
      t.run = [=](Frame& f) -> absl::Status {
        const T* X = static_cast<const T*>(f.Ptr(io.inputs[0]));
        // A selection reads the row once and sorts k of it: its cost is about
        // the row's length, a sort's about n log n.
        const int64_t work = keep < len ? len + keep * 8 : len * 8;
        ForEachRow<1>(outer, {outer_strides}, work, [&](const std::array<int64_t, 1>& off) {
          thread_local std::vector<std::pair<T, int64_t>> keys;
          if (asc)
            OrderRow<T, true>(X + off[0], step, len, keep, keys);
          else
            OrderRow<T, false>(X + off[0], step, len, keep, keys);
          for (size_t k = 0; k < widths.size(); ++k) {
            const char* src = static_cast<const char*>(f.Ptr(io.inputs[k]));
            char* dst = static_cast<char*>(f.Ptr(io.outputs[k]));
            const int w = widths[k];
            for (int64_t j = 0; j < keep; ++j)
              std::memcpy(dst + (off[0] + j * step) * w, src + (off[0] + keys[j].second * step) * w, w);
          }
        });
        return absl::OkStatus();
      };
      return true;
    }
  });
  if (!ok) return std::nullopt;
  return t;
}

}  // namespace xonnx::cpu
