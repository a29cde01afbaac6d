// Concurrent branches: runs of the program made of two parts that read
// nothing of each other, each run on a thread of its own (Plan::concurrent).
//
// A bidirectional recurrent layer is two chains of small steps, the forward
// direction's and then the backward one's: a step is a matrix-vector
// product of a few hundred thousand multiply-adds and a fused loop over a
// few hundred gate values, too small to share between threads without the
// team's start costing as much as the work. Run side by side, one chain per
// thread, each step runs alone on its core with its weights in that core's
// cache. Importers write such independent parts one after the other, so a
// run [first, last] of the program is split at one position: nothing in
// [split, last] reads a value of [first, split).
#include <omp.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

#include "backends/cpu/planning/planners.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Rough single-core costs of a step, in microseconds: a thunk's fixed cost,
// multiply-adds of a small product, elements of other kernels.
constexpr double kStepUs = 2;
constexpr double kMacsPerUs = 25000;
constexpr double kElementsPerUs = 1000;
// Steps up to this run on one thread even when more are free (a product of
// up to 2^18 multiply-adds, a fused loop of a few blocks, stay on one); a
// larger step run in turn shares its work between the threads (as many as
// the compiling thread's OpenMP team has) and takes its share plus
// kSyncUs.
constexpr double kSmallStepUs = 12;
constexpr double kSyncUs = 2;
// Each part may hold at most this many large steps (a direction's input
// projection before its recurrence): runs of large steps side by side,
// each on one core, ran slower than in turn, each on both (a GRU's and an
// LSTM's steps at batch 4 and up: 2-34% slower), though the estimate gave
// them a gain.
constexpr int kMaxLargeSteps = 2;
// A smaller estimated gain is not worth the team's start (a decoder step's
// key and value paths, 27 us estimated, saved about that much).
constexpr double kMinGainUs = 15;
// How far past a split the search looks for the second part's end.
constexpr int64_t kMaxScan = 4096;

double Elements(const hlo::Shape& s) {
  if (!s.IsArray()) {
    double n = 0;
    for (const hlo::Shape& t : s.tuple_shapes) n += Elements(t);
    return n;
  }
  return static_cast<double>(s.ElementCount());
}

// The work of the op i's step computes, in microseconds.
double OpUs(const Plan& plan, const Instruction* i) {
  const Instruction* op = plan.AbsorbedInto(i) ? plan.AbsorbedInto(i) : i;
  const double out = Elements(op->shape());
  if (op->opcode() == Opcode::kDot) {
    double k = 1;
    for (int64_t d : op->dot_dnums.lhs_contracting_dimensions) k *= op->operand(0)->shape().dims[d];
    return kStepUs + out * k / kMacsPerUs;
  }
  if (op->opcode() == Opcode::kConvolution) {
    const hlo::Shape& w = op->operand(1)->shape();
    double k = w.dims[op->conv_dnums.kernel_input_feature_dimension];
    for (int64_t d : op->conv_dnums.kernel_spatial_dimensions) k *= w.dims[d];
    return kStepUs + out * k / kMacsPerUs;
  }
  return kStepUs + out / kElementsPerUs;
}

// The work of the step that runs at i (Plan::RunsStep), in microseconds: a
// group of packed products runs all its members at its first.
double StepUs(const Plan& plan, const Instruction* i) {
  const int g = plan.PackedGroupOf(i);
  if (g < 0) return OpUs(plan, i);
  double us = kStepUs;
  for (const Instruction* m : plan.packed_products.groups[g]) us += OpUs(plan, m) - kStepUs;
  return us;
}

// Steps whose kernels must not run beside another: control flow runs
// programs of its own, on the backend's threads.
bool RunsAlone(const Instruction* i) {
  switch (i->opcode()) {
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
      return true;
    default:
      return false;
  }
}

// A run [first, last] split at `split`, and the time running the parts at
// once saves over running them in turn: each step in turn on all threads
// (shared if large) against the longer part on one.
struct Candidate {
  int64_t first = 0, split = 0, last = 0;
  double gain = 0;
};

}  // namespace

void PlanConcurrentBranches(Plan* plan) {
  const int threads = omp_get_max_threads();
  if (threads < 2) return;  // the parts would run in turn
  const auto& order = plan->order();
  // The positions that run a step, and each position's index among them.
  std::vector<int64_t> at_pos;
  std::vector<int64_t> index(order.size(), -1);
  for (int64_t p = 0; p < static_cast<int64_t>(order.size()); ++p)
    if (plan->RunsStep(order[p])) {
      index[p] = at_pos.size();
      at_pos.push_back(p);
    }
  const int64_t n = at_pos.size();
  // Per step: its work, and the steps that write what it reads. Each read
  // is the step's where it happens (a fused member reads when its fusion
  // runs), of every step writing bytes it reads (a row fusion writes its
  // outputs at its last member; a concatenation read in place reads each
  // part's writer); constants and parameters are never written, so they
  // tie nothing together. Reads at positions without a step (an alias's)
  // are also made by the steps that read the alias.
  std::vector<double> us(n, 0);
  std::vector<bool> alone(n, false);
  std::vector<std::vector<int64_t>> reads(n);
  for (const Instruction* i : order) {
    const int64_t at = index[plan->UsePoint(i)];
    if (at < 0) continue;
    auto add = [&](const Instruction* x) {
      for (int64_t step : plan->WritingSteps(x)) reads[at].push_back(index[step]);
    };
    for (const Instruction* x : i->operands()) add(x);
    for (const Instruction* x : plan->HiddenReads(i)) add(x);
  }
  for (int64_t k = 0; k < n; ++k) {
    us[k] = StepUs(*plan, order[at_pos[k]]);
    alone[k] = RunsAlone(order[at_pos[k]]);
  }
  // Prefix sums over steps [0, k): their work on one thread, in turn on
  // two, and the count of large steps.
  std::vector<double> one(n + 1, 0), shared(n + 1, 0);
  std::vector<int64_t> large(n + 1, 0);
  for (int64_t k = 0; k < n; ++k) {
    const bool big = us[k] > kSmallStepUs;
    one[k + 1] = one[k] + us[k];
    shared[k + 1] = shared[k] + (big ? us[k] / threads + kSyncUs : us[k]);
    large[k + 1] = large[k] + big;
  }
  auto work = [&](int64_t a, int64_t b) { return one[b] - one[a]; };  // [a, b)
  std::vector<Candidate> found;
  for (int64_t m = 1; m < n; ++m) {
    // The second part [m, b] grows while it reads nothing of the first part
    // [a, m); `a` moves right past every step below m it reads.
    int64_t a = 0;
    const int64_t stop = std::min(n, m + kMaxScan);
    Candidate best;
    for (int64_t b = m; b < stop; ++b) {
      for (int64_t r : reads[b])
        if (r < m) a = std::max(a, r + 1);
      if (alone[b] || a >= m) break;
      const double gain = shared[b + 1] - shared[a] - std::max(work(a, m), work(m, b + 1));
      if (gain > best.gain) best = {a, m, b, gain};
    }
    if (best.gain < kMinGainUs) continue;
    bool ok = true;
    for (int64_t k = best.first; k < best.split && ok; ++k) ok = !alone[k];
    if (!ok || large[best.split] - large[best.first] > kMaxLargeSteps ||
        large[best.last + 1] - large[best.split] > kMaxLargeSteps)
      continue;
    // Back to program positions: the run starts at its first step and the
    // second part at its first.
    found.push_back({at_pos[best.first], at_pos[best.split], at_pos[best.last], best.gain});
  }
  // The largest gains first, each run apart from those taken.
  std::sort(found.begin(), found.end(), [](const Candidate& x, const Candidate& y) { return x.gain > y.gain; });
  std::map<int64_t, Plan::Branches> taken;  // by first position; the runs do not overlap
  for (const Candidate& c : found) {
    auto next = taken.lower_bound(c.first);
    if (next != taken.end() && next->second.first <= c.last) continue;
    if (next != taken.begin() && std::prev(next)->second.last >= c.first) continue;
    taken[c.first] = {c.first, c.split, c.last};
  }
  plan->concurrent.clear();
  for (const auto& [first, b] : taken) plan->concurrent.push_back(b);
}

}  // namespace xonnx::cpu
