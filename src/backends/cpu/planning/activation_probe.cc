// Activations recognized by what they compute: a region of elementwise f32
// ops that reads one value and scalar constants computes a function of one
// variable, which is evaluated at probe points and compared with the
// activations oneDNN computes as post-ops. Exporters write GELU, say, as
// Div/Erf/Add/Mul/Mul, as Mul by 1/sqrt(2) first, with the 0.5 on either
// side, or (its tanh form) with Pow(x, 3) or x * x * x; one comparison
// covers every arrangement where a pattern per form would miss the next.
#include "backends/cpu/planning/activation_probe.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "backends/cpu/planning/planners.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// The most ops a region may hold: GELU's tanh form with x * x * x is 9.
constexpr size_t kMaxRegion = 16;

bool ProbeableOp(Opcode op) {
  switch (op) {
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kMultiply:
    case Opcode::kDivide:
    case Opcode::kNegate:
    case Opcode::kPower:
    case Opcode::kSqrt:
    case Opcode::kExp:
    case Opcode::kLogistic:
    case Opcode::kTanh:
    case Opcode::kErf:
      return true;
    default:
      return false;
  }
}

struct KnownActivation {
  Epilogue::Activation activation;
  double (*f)(double);
};

double TanhOf(double x) { return std::tanh(x); }
double GeluErf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double GeluTanh(double x) {
  const double k = std::sqrt(2 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// Probe points: a dense grid over where the activations bend and their
// tails; the two GELU forms differ by up to 5e-4 near |x| = 2, hundreds
// of times the tolerance below.
std::vector<float> ProbePoints() {
  std::vector<float> p;
  for (int k = -400; k <= 400; ++k) p.push_back(k * 0.025f);  // [-10, 10]
  for (float v : {-60.f, -30.f, -15.f, 15.f, 30.f, 60.f, 1e-3f, -1e-3f, 1e-6f}) p.push_back(v);
  return p;
}

// Evaluates `region` (in program order) with x at the probe points; false
// where an op has no f32 kernel or gives a non-finite value.
bool EvaluateRegion(const std::vector<Instruction*>& region, const Instruction* x, const std::vector<float>& probes,
                    std::vector<float>* out) {
  const int64_t n = probes.size();
  absl::flat_hash_map<const Instruction*, std::vector<float>> values;
  values[x] = probes;
  for (Instruction* i : region) {
    std::vector<std::vector<float>> filled;
    std::vector<const float*> args;
    for (const Instruction* op : i->operands()) {
      if (auto v = values.find(op); v != values.end()) {
        args.push_back(v->second.data());
      } else {
        filled.emplace_back(n, static_cast<float>(*ScalarValue(op)));
        args.push_back(filled.back().data());
      }
    }
    std::vector<float> y(n);
    if (!ElementwiseF32(*i, args[0], args.size() > 1 ? args[1] : nullptr, y.data(), n)) return false;
    for (float v : y)
      if (!std::isfinite(v)) return false;
    values[i] = std::move(y);
  }
  *out = values[region.back()];
  return true;
}

}  // namespace

std::optional<ProbedActivation> ProbeActivation(const Plan& plan, Instruction* x,
                                                const std::function<bool(const Instruction*)>& taken) {
  if (x == plan.root() || x->shape().element_type != hlo::F32) return std::nullopt;
  // Candidates: elementwise ops reached from x whose operands are x, other
  // candidates or scalar constants, in program order.
  absl::flat_hash_set<const Instruction*> in;
  std::vector<Instruction*> frontier = plan.users(x);
  while (!frontier.empty() && in.size() < kMaxRegion) {
    Instruction* u = frontier.back();
    frontier.pop_back();
    if (in.contains(u) || !ProbeableOp(u->opcode()) || taken(u) || u->shape().dims != x->shape().dims ||
        u->shape().element_type != hlo::F32)
      continue;
    in.insert(u);
    for (Instruction* w : plan.users(u)) frontier.push_back(w);
  }
  // Drop candidates that read anything else, until none does.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = in.begin(); it != in.end();) {
      bool closed = true;
      for (const Instruction* op : (*it)->operands())
        closed &= op == x || in.contains(op) || ScalarValue(op).has_value();
      if (closed) {
        ++it;
      } else {
        in.erase(it++);
        changed = true;
      }
    }
  }
  std::vector<Instruction*> ordered;
  for (Instruction* i : plan.order())
    if (in.contains(i)) ordered.push_back(i);
  for (Instruction* u : plan.users(x))
    if (!in.contains(u)) return std::nullopt;  // x itself is needed elsewhere
  static const std::vector<float> probes = ProbePoints();
  static const KnownActivation candidates[] = {
      {Epilogue::kTanh, TanhOf}, {Epilogue::kGeluErf, GeluErf}, {Epilogue::kGeluTanh, GeluTanh}};
  // The largest region ending at one op that nothing outside it reads
  // from the middle of: try each end, latest first.
  for (size_t end = ordered.size(); end-- > 0;) {
    Instruction* sink = ordered[end];
    absl::flat_hash_set<const Instruction*> ancestors = {sink};
    for (size_t k = end + 1; k-- > 0;) {
      if (!ancestors.contains(ordered[k])) continue;
      for (const Instruction* op : ordered[k]->operands())
        if (in.contains(op)) ancestors.insert(op);
    }
    std::vector<Instruction*> region;
    bool closed = true;
    for (size_t k = 0; k <= end && closed; ++k) {
      Instruction* i = ordered[k];
      if (!ancestors.contains(i)) continue;
      region.push_back(i);
      if (i == sink) continue;
      closed = i != plan.root();
      for (const Instruction* u : plan.users(i)) closed &= ancestors.contains(u);
    }
    for (const Instruction* u : plan.users(x)) closed &= ancestors.contains(u);
    std::vector<float> y;
    if (!closed || !EvaluateRegion(region, x, probes, &y)) continue;
    for (const KnownActivation& c : candidates) {
      bool same = true;
      for (size_t k = 0; k < probes.size() && same; ++k) {
        double want = c.f(probes[k]);
        same = std::abs(y[k] - want) <= 1e-5 * (1 + std::abs(want));
      }
      if (same) return ProbedActivation{c.activation, std::move(region)};
    }
  }
  return std::nullopt;
}

}  // namespace xonnx::cpu
