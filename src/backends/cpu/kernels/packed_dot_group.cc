// Products by packed weights that read one activation, run as one step: a
// decoder layer's query, key and value projections, or its gate and up
// projections. Run one by one, each small product pays for its own
// preparation of the activation (a scan for the interleaved f32 kernel, a
// rounding to int8 for the 8-bit one) and its own start and join of the
// threads, which at a step's few rows cost as much as a third of a 512 x
// 512 product's time. Grouped, the activation is prepared once and one
// team computes the members' weight rows, split between the threads as if
// they were one product's.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/kernels/packed_dot.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/status.h"

namespace xonnx::cpu {
namespace packed_dot {
namespace {

// Runs unit(m, u) for every member m's units u in [0, units[m]) (groups
// of 16 weight rows), split between the threads of one team from `work`
// multiply-adds in all, as one product's would be.
template <typename Unit>
void ForEachUnit(absl::Span<const int64_t> units, int64_t work, const Unit& unit) {
  int64_t total = 0;
  for (int64_t u : units) total += u;
  auto run = [&](int64_t g) {
    size_t m = 0;
    while (g >= units[m]) g -= units[m++];
    unit(m, g);
  };
  if (work < kParallel) {
    for (int64_t g = 0; g < total; ++g) run(g);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < total; ++g) run(g);
}

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__)
bool InterleavedProducts(absl::Span<const InterleavedMember> members, const float* x) {
  if (members.empty()) return true;
  // The members share K, its blocks and the rows: one padded activation
  // and one scan serve them all.
  const Dims& d = members[0].d;
  const int64_t width = d.blocks * d.block;
  std::unique_ptr<float[]> padded, sums;
  if (width != d.k) {
    padded.reset(new float[d.rows * width]());
    for (int64_t r = 0; r < d.rows; ++r) std::memcpy(padded.get() + r * width, x + r * d.k, d.k * sizeof(float));
    x = padded.get();
  }
  const float bound = std::numeric_limits<float>::max() / static_cast<float>(16 * d.block);
  absl::InlinedVector<int64_t, 4> groups;
  int64_t work = 0;
  bool zeros = false;
  for (const InterleavedMember& m : members) {
    groups.push_back(m.w->groups);
    work += m.d.rows * m.d.n * m.d.k;
    zeros |= m.w->zeros != nullptr;
  }
  if (zeros) sums.reset(new float[d.rows * d.blocks]);
  if (!ScanActivation(d, x, bound, sums.get())) return false;
  ForEachUnit(groups, work, [&](size_t m, int64_t g) {
    InterleavedRows(members[m].d, *members[m].w, x, width, sums.get(), members[m].y, g, g + 1);
  });
  return true;
}
#else
bool InterleavedProducts(absl::Span<const InterleavedMember>, const float*) { return false; }
#endif

bool Int8Products(absl::Span<const Int8Member> members, const float* x) {
  if (members.empty()) return true;
  const Dims& d = members[0].d;
  std::unique_ptr<uint8_t[]> quantized(new uint8_t[Int8PreparedSize(d)]);  // Int8Prepare writes every byte
  if (!Int8Prepare(d, x, quantized.get())) return false;
  absl::InlinedVector<int64_t, 4> runs;
  int64_t work = 0;
  for (const Int8Member& m : members) {
    runs.push_back((m.d.n + 15) / 16);
    work += m.d.rows * m.d.n * m.d.k;
  }
  ForEachUnit(runs, work, [&](size_t m, int64_t g) {
    const Int8Member& p = members[m];
    Int8Rows(p.d, quantized.get(), p.packed, p.scales, p.zeros, p.y, g * 16, std::min(p.d.n, (g + 1) * 16));
  });
  return true;
}

}  // namespace packed_dot

std::optional<Thunk> MakePackedGroupThunk(const std::vector<const hlo::Instruction*>& dots,
                                          const std::vector<ThunkIo>& io, const std::vector<const PackedWeights*>& w) {
  if (dots.empty() || io.size() != dots.size() || w.size() != dots.size()) return std::nullopt;
  std::vector<packed_dot::Product> products;
  std::vector<std::string> names;
  for (size_t m = 0; m < dots.size(); ++m) {
    std::optional<packed_dot::Product> p = packed_dot::PlanProduct(*dots[m], io[m], *w[m]);
    if (!p) return std::nullopt;
    const packed_dot::Dims& d = p->d;
    const packed_dot::Dims& first = products.empty() ? d : products[0].d;
    const BufferRef& x = products.empty() ? p->x : products[0].x;
    if (p->x.kind != x.kind || p->x.index != x.index || !packed_dot::SamePreparation(d, first)) return std::nullopt;
    products.push_back(*std::move(p));
    names.push_back(dots[m]->name());
  }
  Thunk t;
  t.name = absl::StrJoin(names, "+");
  t.run = [products = std::move(products)](Frame& f) -> absl::Status {
    const float* x = static_cast<const float*>(f.Ptr(products[0].x));
    // The members that share the preparation together (Interleave leaves
    // a member without its layout for scales that are not finite); the
    // others, and all of them where the shared preparation refuses the
    // activation, alone.
    absl::InlinedVector<packed_dot::InterleavedMember, 4> interleaved;
    absl::InlinedVector<packed_dot::Int8Member, 4> int8;
    absl::InlinedVector<const packed_dot::Product*, 4> alone;
    for (const packed_dot::Product& p : products) {
      const packed_dot::Operands o = packed_dot::OperandsOf(p, f);
      if (p.d.n == 0 || p.d.k == 0)
        alone.push_back(&p);
      else if (p.shared == packed_dot::Shared::kInterleaved && p.interleaved)
        interleaved.push_back({p.d, p.interleaved.get(), o.y});
      else if (p.shared == packed_dot::Shared::kInt8)
        int8.push_back({p.d, o.packed, o.scales, o.zeros, o.y});
      else
        alone.push_back(&p);
    }
    const bool together = (interleaved.empty() || packed_dot::InterleavedProducts(interleaved, x)) &&
                          (int8.empty() || packed_dot::Int8Products(int8, x));
    if (!together) {
      alone.clear();
      for (const packed_dot::Product& p : products) alone.push_back(&p);
    }
    for (const packed_dot::Product* p : alone) RETURN_IF_ERROR(packed_dot::RunProduct(*p, f));
    return absl::OkStatus();
  };
  return t;
}

}  // namespace xonnx::cpu
