// Concurrent branches (concurrency_planning.cc): independent runs of small
// steps run one part per thread, with the results of running them in turn.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/runtime/executable.h"
#include "evaluator/evaluator.h"
#include "hlo/parser.h"

namespace xonnx::cpu {
namespace {

using hlo::Literal;
using hlo::Shape;

// Two recurrences over one input, as a bidirectional recurrent layer
// imports: h_t = tanh(h_{t-1} . w + x_t) for `steps` steps in each
// direction, each with its own weights, over `rows` rows (the batch), then
// both last states side by side. With `cross`, the second chain's first
// step also reads the first chain's last state, so the two cannot run at
// once.
std::string TwoChains(int steps, bool cross, int rows = 1) {
  std::string body;
  auto chain = [&](const std::string& d, const std::string& w, const std::string& h0) {
    std::string h = h0;
    for (int t = 0; t < steps; ++t) {
      const std::string p = absl::StrCat(d, "p", t), s = absl::StrCat(d, "s", t), x = absl::StrCat(d, "x", t);
      const int row = (d == "f" ? t : steps - 1 - t) * rows;
      const std::string v = absl::StrCat("f32[", rows, ",192]{1,0}");
      absl::StrAppend(&body, "  ", x, " = ", v, " slice(xs), slice={[", row, ":", row + rows, "], [0:192]}\n");
      absl::StrAppend(&body, "  ", p, " = ", v, " dot(", h, ", ", w,
                      "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n");
      absl::StrAppend(&body, "  ", s, " = ", v, " add(", p, ", ", x, ")\n");
      h = absl::StrCat(d, "h", t);
      absl::StrAppend(&body, "  ", h, " = ", v, " tanh(", s, ")\n");
    }
    return h;
  };
  const std::string last_f = chain("f", "wf", "h0");
  const std::string last_b = chain("b", "wb", cross ? last_f : "h0");
  return absl::StrCat(R"(HloModule two_chains

ENTRY main {
  xs = f32[)",
                      steps * rows, R"(,192]{1,0} parameter(0)
  h0 = f32[)",
                      rows, R"(,192]{1,0} parameter(1)
  wf = f32[192,192]{1,0} parameter(2)
  wb = f32[192,192]{1,0} parameter(3)
)",
                      body, "  ROOT out = f32[", 2 * rows, ",192]{1,0} concatenate(", last_f, ", ", last_b,
                      "), dimensions={0}\n}\n");
}

Literal Random(const Shape& s, uint32_t seed, float scale) {
  Literal l(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < l.element_count(); ++i) l.data<float>()[i] = dist(rng);
  return l;
}

Literal RunOnce(const Executable& exe, const std::vector<Literal>& args) {
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  Literal out(exe.output_shapes()[0]);
  void* out_ptr = out.untyped_data();
  EXPECT_TRUE(exe.Execute(in, {&out_ptr, 1}).ok());
  return out;
}

// Two OpenMP threads for the test's compilations and calls, whatever the
// machine or OMP_NUM_THREADS says: the planner plans for the compiling
// thread's team, and a run needs two.
class TwoThreads {
 public:
  TwoThreads() : before_(omp_get_max_threads()) { omp_set_num_threads(2); }
  ~TwoThreads() { omp_set_num_threads(before_); }

 private:
  int before_;
};

struct Compiled {
  std::unique_ptr<Executable> exe;
  std::vector<Literal> args;
  Literal expected;
};

Compiled CompileChains(int steps, bool cross, bool concurrent, int rows = 1) {
  auto m = hlo::ParseText(TwoChains(steps, cross, rows));
  EXPECT_TRUE(m.ok()) << m.status();
  Compiled c;
  const hlo::Computation& entry = *(*m)->entry();
  c.args.push_back(Random(entry.parameter(0)->shape(), 1, 1.0f));
  c.args.push_back(Random(entry.parameter(1)->shape(), 2, 1.0f));
  c.args.push_back(Random(entry.parameter(2)->shape(), 3, 0.1f));
  c.args.push_back(Random(entry.parameter(3)->shape(), 4, 0.1f));
  auto expected = eval::EvaluateModule(**m, c.args);
  EXPECT_TRUE(expected.ok()) << expected.status();
  c.expected = std::move(*expected);
  CompileOptions options;
  options.concurrent_branches = concurrent;
  auto exe = Executable::Compile(std::move(*m), options);
  EXPECT_TRUE(exe.ok()) << exe.status();
  c.exe = std::move(*exe);
  return c;
}

double MaxError(const Literal& got, const Literal& want) {
  double err = 0;
  for (int64_t i = 0; i < got.element_count(); ++i)
    err = std::max(err, static_cast<double>(std::abs(got.data<float>()[i] - want.data<float>()[i])));
  return err;
}

// The two directions run at once, each chain's steps in one part, and
// give the evaluator's results and, bit for bit, those of running in turn.
TEST(ConcurrentBranches, TwoRecurrencesRunAtOnceWithTheSameResults) {
  TwoThreads two;
  Compiled on = CompileChains(40, /*cross=*/false, /*concurrent=*/true);
  Compiled off = CompileChains(40, /*cross=*/false, /*concurrent=*/false);
  const std::string listing = on.exe->KernelListing();
  EXPECT_TRUE(absl::StrContains(listing, "[concurrent run 0, part 0]")) << listing;
  EXPECT_TRUE(absl::StrContains(listing, "[concurrent run 0, part 1]")) << listing;
  EXPECT_FALSE(absl::StrContains(off.exe->KernelListing(), "concurrent run"));
  // Every kernel of the forward chain in part 0, of the backward one in
  // part 1 (their names start with the chain's letter).
  int forward = 0, backward = 0;
  for (absl::string_view line : absl::StrSplit(listing, '\n')) {
    const bool f = absl::StrContains(line, " fp") || absl::StrContains(line, " fh");
    const bool b = absl::StrContains(line, " bp") || absl::StrContains(line, " bh");
    if (f) {
      ++forward;
      EXPECT_TRUE(absl::StrContains(line, "part 0")) << line;
    }
    if (b) {
      ++backward;
      EXPECT_TRUE(absl::StrContains(line, "part 1")) << line;
    }
  }
  EXPECT_GE(forward, 40);
  EXPECT_GE(backward, 40);
  // Neither part may take the other's bytes: the arena holds every step
  // value of the run at once.
  EXPECT_GT(on.exe->arena_bytes(), off.exe->arena_bytes());
  const int threads = omp_get_max_threads();
  for (int call = 0; call < 20; ++call) {
    Literal a = RunOnce(*on.exe, on.args), b = RunOnce(*off.exe, off.args);
    // The parts' one-thread setting stays inside the run.
    EXPECT_EQ(omp_get_max_threads(), threads);
    EXPECT_LT(MaxError(a, on.expected), 1e-4) << "call " << call;
    ASSERT_EQ(std::memcmp(a.untyped_data(), b.untyped_data(), a.size_bytes()), 0) << "call " << call;
  }
}

// When the second chain starts from the first one's result, nothing runs
// at once.
TEST(ConcurrentBranches, DependentChainsRunInTurn) {
  TwoThreads two;
  Compiled c = CompileChains(40, /*cross=*/true, /*concurrent=*/true);
  EXPECT_FALSE(absl::StrContains(c.exe->KernelListing(), "concurrent run")) << c.exe->KernelListing();
  EXPECT_LT(MaxError(RunOnce(*c.exe, c.args), c.expected), 1e-4);
}

// Too little work to pay for a team's start: one step each runs in turn.
TEST(ConcurrentBranches, ShortChainsRunInTurn) {
  TwoThreads two;
  Compiled c = CompileChains(1, /*cross=*/false, /*concurrent=*/true);
  EXPECT_FALSE(absl::StrContains(c.exe->KernelListing(), "concurrent run")) << c.exe->KernelListing();
  EXPECT_LT(MaxError(RunOnce(*c.exe, c.args), c.expected), 1e-4);
}

// Steps large enough to share between the threads (a recurrence over a
// batch of 64) run in turn, each on both.
TEST(ConcurrentBranches, LargeStepsRunInTurn) {
  TwoThreads two;
  Compiled c = CompileChains(40, /*cross=*/false, /*concurrent=*/true, /*rows=*/64);
  EXPECT_FALSE(absl::StrContains(c.exe->KernelListing(), "concurrent run")) << c.exe->KernelListing();
  EXPECT_LT(MaxError(RunOnce(*c.exe, c.args), c.expected), 1e-4);
}

// Calls from the threads of a caller's own parallel region (each thread
// its own call) run the program as they would alone: no kernel's loop may
// share its work with the caller's team.
TEST(ConcurrentBranches, CallsFromACallersParallelRegionGetWholeResults) {
  TwoThreads two;
  for (bool concurrent : {false, true}) {
    Compiled c = CompileChains(40, /*cross=*/false, concurrent);
    double err[2] = {1, 1};
#pragma omp parallel num_threads(2)
    {
      const int t = omp_get_thread_num();
      if (t < 2) err[t] = MaxError(RunOnce(*c.exe, c.args), c.expected);
    }
    EXPECT_LT(err[0], 1e-4) << "concurrent_branches=" << concurrent;
    EXPECT_LT(err[1], 1e-4) << "concurrent_branches=" << concurrent;
  }
}

// A row fusion (a layer norm after a bias add) writes the bias add's value
// as one of its outputs when it runs, at its last member; a second chain
// reads that value. The second chain may not run beside the row fusion:
// planning by the bias add's own position ran it before the value existed.
constexpr char kRowFusionOutputReadByABranch[] = R"(HloModule m

add_f32 {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}

ENTRY main {
  x = f32[4,26,40]{2,1,0} parameter(0)
  b = f32[40]{0} parameter(1)
  bb = f32[4,26,40]{2,1,0} broadcast(b), dimensions={2}
  a = f32[4,26,40]{2,1,0} add(x, bb)
  zero = f32[] constant(0)
  sum = f32[4,26]{1,0} reduce(a, zero), dimensions={2}, to_apply=add_f32
  n = f32[] constant(40)
  nb = f32[4,26]{1,0} broadcast(n), dimensions={}
  mean = f32[4,26]{1,0} divide(sum, nb)
  mb = f32[4,26,40]{2,1,0} broadcast(mean), dimensions={0,1}
  d = f32[4,26,40]{2,1,0} subtract(a, mb)
  d2 = f32[4,26,40]{2,1,0} multiply(d, d)
  var = f32[4,26]{1,0} reduce(d2, zero), dimensions={2}, to_apply=add_f32
  vm = f32[4,26]{1,0} divide(var, nb)
  eps = f32[] constant(1e-05)
  eb = f32[4,26]{1,0} broadcast(eps), dimensions={}
  ve = f32[4,26]{1,0} add(vm, eb)
  rs = f32[4,26]{1,0} rsqrt(ve)
  rb = f32[4,26,40]{2,1,0} broadcast(rs), dimensions={0,1}
  ln = f32[4,26,40]{2,1,0} multiply(d, rb)
  pd = f32[4,28,42]{2,1,0} pad(ln, zero), padding=0_0x1_1x1_1
  l1 = f32[4,28,42]{2,1,0} logistic(pd)
  lt = f32[4,42,28]{2,1,0} transpose(l1), dimensions={0,2,1}
  l2 = f32[4,42,28]{2,1,0} tanh(lt)
  t = f32[4,40,26]{2,1,0} transpose(a), dimensions={0,2,1}
  t1 = f32[4,40,26]{2,1,0} tanh(t)
  rv = f32[4,40,26]{2,1,0} reverse(t1), dimensions={1}
  t2 = f32[4,40,26]{2,1,0} logistic(rv)
  tt = f32[4,26,40]{2,1,0} transpose(t2), dimensions={0,2,1}
  t3 = f32[4,26,40]{2,1,0} tanh(tt)
  ROOT out = (f32[4,42,28]{2,1,0}, f32[4,26,40]{2,1,0}) tuple(l2, t3)
}
)";

TEST(ConcurrentBranches, AValueARowFusionWritesIsReadOnlyAfterItRuns) {
  TwoThreads two;
  auto m = hlo::ParseText(kRowFusionOutputReadByABranch);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<Literal> args;
  for (const hlo::Instruction* p : (*m)->entry()->parameters()) args.push_back(Random(p->shape(), 3 + args.size(), 1));
  auto want = eval::EvaluateModule(**m, args);
  ASSERT_TRUE(want.ok()) << want.status();
  auto exe = Executable::Compile(std::move(*m));
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<const void*> in;
  for (const Literal& a : args) in.push_back(a.untyped_data());
  for (int call = 0; call < 20; ++call) {
    std::vector<Literal> outs;
    std::vector<void*> out_ptrs;
    for (const Shape& s : (*exe)->output_shapes()) outs.emplace_back(s);
    for (Literal& o : outs) out_ptrs.push_back(o.untyped_data());
    ASSERT_TRUE((*exe)->Execute(in, out_ptrs).ok());
    for (size_t k = 0; k < outs.size(); ++k)
      EXPECT_LT(MaxError(outs[k], want->tuple_elements()[k]), 1e-4) << "call " << call << " output " << k;
  }
}

}  // namespace
}  // namespace xonnx::cpu
