// If and Loop, and the HLO while that Loop and Scan (scan.cc) lower to. An
// If with a known condition converts its branch inline; with a runtime
// condition it becomes an HLO conditional whose two branch computations take
// the values they capture as one tuple. Loop and Scan become HLO while loops
// (scan inputs read and scan outputs written with dynamic slices). A body
// that cannot be converted once for every iteration (it needs the iteration
// number as a constant, or its carried values change shape) is unrolled
// instead when the iteration count is known and at most
// kMaxUnrolledIterations.
#include "onnx/ops/control_flow.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {

void Bind(hlo::Builder& b, GraphValues& scope, const onnx::ValueInfoProto& decl, hlo::Instruction* v) {
  if (decl.type().tensor_type().has_shape()) {
    const auto& shape = decl.type().tensor_type().shape();
    if (shape.dim_size() != v->shape().rank() && shape.dim_size() <= 1 && v->shape().ElementCount() == 1)
      v = b.Reshape(v, std::vector<int64_t>(shape.dim_size(), 1));
  }
  scope.values[decl.name()] = v;
}

absl::StatusOr<std::vector<hlo::Instruction*>> Outputs(NodeContext& ctx, const onnx::GraphProto& g,
                                                       const GraphValues& scope) {
  std::vector<hlo::Instruction*> outs;
  for (const auto& o : g.output()) {
    auto it = scope.values.find(o.name());
    if (it == scope.values.end()) return ctx.Error(absl::StrCat("subgraph output '", o.name(), "' is never produced"));
    outs.push_back(it->second);
  }
  return outs;
}

namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

// A scalar pred from a bool tensor of one element.
// A condition as a scalar predicate; `what` names it in the error when it
// is missing or has more than one element.
absl::StatusOr<Instruction*> ScalarPred(NodeContext& ctx, hlo::Builder& b, Instruction* v, const char* what) {
  if (!v) return ctx.Error(absl::StrCat(what, " is missing"));
  if (v->shape().IsTuple() || v->shape().ElementCount() != 1)
    return ctx.Error(absl::StrCat(what, " must have one element, not shape ", v->shape().ToString(false)));
  Instruction* p = b.Convert(b.Reshape(v, {}), hlo::PRED);
  if (!p) return b.status();
  return p;
}

bool IsConst(const Instruction* i, bool value) {
  return i->opcode() == Opcode::kConstant && (i->literal->GetAsDouble(0) != 0) == value;
}

// The outer values that nested computations (branches, a loop body) read:
// constants, copied into each computation so that shape-like values stay
// known there, and the rest, passed in through its tuple parameter. Strings
// are host values, visible as they are.
struct Captures {
  std::vector<std::string> constants, names;
  std::vector<Instruction*> values;  // of `names`

  // Sorts the `free` names of `ctx`'s scope; a sequence or optional read
  // returns `on_value_read(name)`.
  static absl::StatusOr<Captures> Of(NodeContext& ctx, const std::set<std::string>& free,
                                     const std::function<absl::Status(const std::string&)>& on_value_read) {
    Captures c;
    for (const std::string& name : free) {
      auto it = ctx.values().values.find(name);
      if (it == ctx.values().values.end()) {
        if (ctx.values().strings.count(name)) continue;
        if (ctx.values().sequences.count(name) || ctx.values().nones.count(name)) return on_value_read(name);
        return ctx.Error(absl::StrCat("a subgraph reads '", name, "', which is not defined"));
      }
      if (it->second->opcode() == Opcode::kConstant) {
        c.constants.push_back(name);
      } else {
        c.names.push_back(name);
        c.values.push_back(it->second);
      }
    }
    return c;
  }

  // The scope of a nested computation built by `bb`, whose captured values
  // are the tuple elements of `param` from `first` on.
  GraphValues Scope(const NodeContext& ctx, hlo::Builder& bb, Instruction* param, int64_t first) const {
    GraphValues scope;
    scope.strings = ctx.values().strings;
    scope.check_indices = ctx.values().check_indices;
    scope.maybe_skipped = true;  // a branch not taken, a body run zero times
    scope.stop = ctx.values().stop;
    for (const std::string& name : constants) scope.values[name] = bb.Constant(*ctx.values().values.at(name)->literal);
    for (size_t j = 0; j < names.size(); ++j) scope.values[names[j]] = bb.GetTupleElement(param, first + j);
    return scope;
  }
};

// Whether `x` is computed from parameters of at most 16 elements only (a
// sample rate, a count passed between programs): binding those to their
// values, to pick an If's branch when compiling, compiles a few programs,
// not one per input image.
bool OfSmallInputs(const Instruction* x) {
  std::vector<const Instruction*> work = {x};
  absl::flat_hash_set<const Instruction*> seen;
  while (!work.empty()) {
    const Instruction* w = work.back();
    work.pop_back();
    if (!seen.insert(w).second) continue;
    if (w->opcode() == Opcode::kParameter && w->shape().ElementCount() > 16) return false;
    for (const Instruction* op : w->operands()) work.push_back(op);
  }
  return true;
}

// An If on a runtime condition: one computation per branch, both taking the
// tuple of the non-constant values the branches capture (constants are
// copied in, so that shape-like values stay known inside the branches).
absl::Status IfAsConditional(NodeContext& ctx, Instruction* cond, const onnx::GraphProto& then_g,
                             const onnx::GraphProto& else_g) {
  hlo::Builder& b = ctx.b();
  std::set<std::string> none, free;
  FreeNames(then_g, none, free);
  FreeNames(else_g, none, free);
  ASSIGN_OR_RETURN(
      Captures captured, Captures::Of(ctx, free, [&](const std::string&) {
        return ctx.RequireConstant(cond, "the condition of an If whose branches read sequences or optionals").status();
      }));
  Instruction* operand = b.Tuple(captured.values);
  if (!operand) return b.status();
  // Each branch returns its outputs, then the index ranges of every check
  // of either branch (the other branch's as empty ranges).
  struct Branch {
    std::unique_ptr<hlo::Builder> bb;
    std::vector<Instruction*> outs;
    std::vector<RuntimeCheck> checks;
  };
  std::vector<Branch> branches;
  for (const onnx::GraphProto* g : {&then_g, &else_g}) {
    Branch br;
    br.bb = std::make_unique<hlo::Builder>(b.module(), g == &then_g ? "if_then" : "if_else");
    hlo::Builder& bb = *br.bb;
    bb.set_folder(b.folder());
    bb.set_metadata(b.metadata());
    Instruction* p = bb.Parameter(0, operand->shape(), "captured");
    GraphValues scope = captured.Scope(ctx, bb, p, 0);
    if (absl::Status st = ctx.ConvertSubgraphInto(bb, *g, scope); !st.ok()) {
      // A deadline, a cancellation or an internal error is the call's end,
      // not a branch this import cannot convert.
      if (st.GetPayload(kNeedsInputValuesPayload) || absl::IsDeadlineExceeded(st) || absl::IsCancelled(st) ||
          absl::IsResourceExhausted(st) || absl::IsInternal(st))
        return st;
      // A branch that cannot be converted for these shapes may be one the
      // condition never takes (Silero VAD's 8 kHz path, given 16 kHz
      // audio): ask for the condition, so that the session binds the
      // inputs it depends on and only the branch taken is converted.
      if (!OfSmallInputs(cond)) return st;
      return ctx
          .RequireConstant(cond, absl::StrCat("the condition of an If whose ", g == &then_g ? "then" : "else",
                                              "_branch cannot be converted (", st.message(), ")"))
          .status();
    }
    for (const auto& out : g->output())
      if (scope.sequences.count(out.name()) || scope.nones.count(out.name()))
        return ctx.RequireConstant(cond, "the condition of an If whose branches return sequences or optionals")
            .status();
    ASSIGN_OR_RETURN(br.outs, Outputs(ctx, *g, scope));
    br.checks = std::move(scope.checks);
    branches.push_back(std::move(br));
  }
  const auto& t = branches[0].outs;
  const auto& e = branches[1].outs;
  if (t.size() != e.size()) return ctx.Error("branches have different output counts");
  for (size_t k = 0; k < t.size(); ++k)
    if (!t[k]->shape().Compatible(e[k]->shape()))
      // One program cannot hold both: the condition must be known when
      // compiling, which asks the session to bind the inputs it depends on
      // (a graph segment's, after a data-dependent node) and convert again
      // with the branch it picks. Branches that declare different shapes
      // on a data condition run on the host (nested_graph.h); a condition
      // computed from data keeps the error, rather than a program compiled
      // for each value of a large input.
      return !OfSmallInputs(cond)
                 ? ctx.Unsupported(absl::StrCat("branches produce different shapes for output ", k, " (",
                                                t[k]->shape().ToString(false), " and ", e[k]->shape().ToString(false),
                                                ") and the condition is computed from data at run time"))
                 : ctx.RequireConstant(
                          cond, absl::StrCat("the condition of an If whose branches produce different shapes for "
                                             "output ",
                                             k, " (", t[k]->shape().ToString(false), " and ",
                                             e[k]->shape().ToString(false), ")"))
                       .status();
  std::vector<hlo::Computation*> computations;
  for (size_t i = 0; i < branches.size(); ++i) {
    hlo::Builder& bb = *branches[i].bb;
    std::vector<Instruction*> results = branches[i].outs;
    for (size_t j = 0; j < branches.size(); ++j)
      for (const RuntimeCheck& check : branches[j].checks)
        results.push_back(i == j ? check.range : EmptyIndexRange(bb));
    ASSIGN_OR_RETURN(hlo::Computation * c, bb.Build(bb.Tuple(results)));
    computations.push_back(c);
  }
  Instruction* c = b.Conditional(cond, computations, {operand, operand});
  for (size_t k = 0; k < t.size(); ++k) ctx.set_output(k, b.GetTupleElement(c, k));
  int64_t next = t.size();
  for (const Branch& br : branches)
    for (RuntimeCheck check : br.checks) {
      check.range = b.GetTupleElement(c, next++);
      ctx.AddCheck(std::move(check));
    }
  return b.status();
}

absl::Status If(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  const onnx::GraphProto* then_g = ctx.attr_g("then_branch");
  const onnx::GraphProto* else_g = ctx.attr_g("else_branch");
  if (!then_g || !else_g) return ctx.Error("needs then_branch and else_branch");
  ASSIGN_OR_RETURN(Instruction * cond, ScalarPred(ctx, b, ctx.input(0), "the condition"));
  if (cond->opcode() == Opcode::kConstant) {
    const onnx::GraphProto* g = IsConst(cond, true) ? then_g : else_g;
    GraphValues scope = ctx.values();
    RETURN_IF_ERROR(ctx.ConvertSubgraph(*g, scope));
    for (int k = 0; k < g->output_size(); ++k) RETURN_IF_ERROR(ctx.SetOutputFrom(k, scope, g->output(k).name()));
    return absl::OkStatus();
  }
  return IfAsConditional(ctx, cond, *then_g, *else_g);
}

// Binds the body's inputs inside a while body whose state parameter is
// `state` (the loop head, then the captured values) and converts the body.
absl::StatusOr<Step> ConvertStep(NodeContext& ctx, const WhileLoop& w, hlo::Builder& bb, Instruction* state,
                                 const Captures& captured) {
  const onnx::GraphProto& body = *w.body;
  int n = w.carried.size(), nx = w.xs.size();
  GraphValues scope = captured.Scope(ctx, bb, state, 3 + n + nx);
  Instruction* i = bb.GetTupleElement(state, 0);
  if (w.is_scan) {
    for (int k = 0; k < n; ++k) Bind(bb, scope, body.input(k), bb.GetTupleElement(state, 3 + k));
    for (int k = 0; k < nx; ++k) {
      Instruction* x = bb.GetTupleElement(state, 3 + n + k);
      if (!x) return bb.status();
      const std::vector<int64_t>& dims = x->shape().dims;
      int64_t axis = w.x_axes[k];
      Instruction* pos =
          w.x_reverse[k] ? bb.Binary(Opcode::kSubtract, bb.ScalarConstant(hlo::S64, dims[axis] - 1), i) : i;
      std::vector<Instruction*> starts(dims.size(), bb.ScalarConstant(hlo::S64, 0));
      starts[axis] = pos;
      std::vector<int64_t> sizes = dims, squeezed = dims;
      sizes[axis] = 1;
      squeezed.erase(squeezed.begin() + axis);
      Bind(bb, scope, body.input(n + k), bb.Reshape(bb.DynamicSlice(x, starts, sizes), squeezed));
    }
  } else {
    Bind(bb, scope, body.input(0), i);
    // The body only runs while the condition holds, so inside it the
    // condition input is true (which lets `cond_out = Identity(cond_in)` fold).
    Bind(bb, scope, body.input(1), bb.Constant(Literal::Scalar<bool>(true)));
    for (int k = 0; k < n; ++k) Bind(bb, scope, body.input(2 + k), bb.GetTupleElement(state, 3 + k));
  }
  RETURN_IF_ERROR(bb.status());
  RETURN_IF_ERROR(ctx.ConvertSubgraphInto(bb, body, scope));
  ASSIGN_OR_RETURN(std::vector<Instruction*> outs, Outputs(ctx, body, scope));
  Step step;
  size_t first = 0;
  if (!w.is_scan) {
    ASSIGN_OR_RETURN(step.cond, ScalarPred(ctx, bb, outs[first++], "the body's condition output"));
  }
  for (int k = 0; k < n; ++k) {
    Instruction* v = outs[first++];
    if (!v->shape().Compatible(w.carried[k]->shape()))
      return ctx.Unsupported(absl::StrCat("loop-carried value ", k, " changes shape across iterations (",
                                          w.carried[k]->shape().ToString(false), " -> ", v->shape().ToString(false),
                                          ")"));
    step.carried.push_back(v);
  }
  step.ys.assign(outs.begin() + first, outs.end());
  step.checks = std::move(scope.checks);
  RETURN_IF_ERROR(bb.status());
  return step;
}

}  // namespace

// The loop state is one tuple: the iteration number, the condition and the
// trip count, the carried values, the scanned inputs, the captured values,
// and last what the iterations accumulate: the ranges of the indices the
// body checks, and the scan outputs. The body is converted once, with a
// state parameter that does not have those yet: they are known only after
// converting it (converting it first to find them doubled the work at each
// level of nested loops).
absl::StatusOr<Step> EmitWhile(NodeContext& ctx, const WhileLoop& w) {
  hlo::Builder& b = ctx.b();
  const onnx::GraphProto& body = *w.body;
  int n = w.carried.size(), nx = w.xs.size();
  int n_y = body.output_size() - n - (w.is_scan ? 0 : 1);
  if (n_y < 0 || body.input_size() != n + (w.is_scan ? nx : 2))
    return ctx.Error("the body's inputs and outputs do not match the loop state");
  if (n_y > 0 && w.length < 0)
    return ctx.Unsupported("scan outputs of a loop whose iteration count is not known at compile time");
  std::set<std::string> none, free;
  FreeNames(body, none, free);
  ASSIGN_OR_RETURN(Captures captured, Captures::Of(ctx, free, [&](const std::string& name) {
                     return ctx.Unsupported(
                         absl::StrCat("a loop body reading the sequence or optional '", name, "' as an HLO while"));
                   }));
  Instruction* trips = w.trips ? b.Convert(b.Reshape(w.trips, {}), hlo::S64) : b.ScalarConstant(hlo::S64, INT64_MAX);
  Instruction* cond = w.cond ? w.cond : b.Constant(Literal::Scalar<bool>(true));
  std::vector<Instruction*> init = {b.ScalarConstant(hlo::S64, 0), cond, trips};
  init.insert(init.end(), w.carried.begin(), w.carried.end());
  init.insert(init.end(), w.xs.begin(), w.xs.end());
  init.insert(init.end(), captured.values.begin(), captured.values.end());
  RETURN_IF_ERROR(b.status());
  std::vector<hlo::Shape> parts;
  for (Instruction* v : init) parts.push_back(v->shape());

  hlo::Builder bb(b.module(), w.is_scan ? "scan_body" : "loop_body");
  bb.set_folder(b.folder());
  bb.set_metadata(b.metadata());
  Instruction* bp = bb.Parameter(0, hlo::Shape::Tuple(parts), "state");
  ASSIGN_OR_RETURN(Step step, ConvertStep(ctx, w, bb, bp, captured));
  if (static_cast<int>(step.ys.size()) != n_y) return ctx.Error("the body's scan outputs do not match");
  if (n_y > 0 && !w.is_scan && !IsConst(step.cond, true))
    return ctx.Unsupported(
        "scan outputs of a Loop whose condition is computed at run time (their length would depend on data)");
  std::vector<int64_t> y_axes;
  std::vector<Instruction*> accumulators;
  for (int k = 0; k < n_y; ++k) {
    const hlo::Shape& ys = step.ys[k]->shape();
    ASSIGN_OR_RETURN(int64_t axis,
                     NormalizeAxis(ctx, k < static_cast<int>(w.y_axes.size()) ? w.y_axes[k] : 0, ys.rank() + 1));
    y_axes.push_back(axis);
    std::vector<int64_t> dims = ys.dims;
    dims.insert(dims.begin() + axis, w.length);
    accumulators.push_back(b.Broadcast(b.ScalarConstant(ys.element_type, 0), dims, {}));
  }
  RETURN_IF_ERROR(b.status());
  Step result;
  if (w.length == 0) {
    // No iteration runs: the carried values are unchanged and the scan
    // outputs empty.
    result.carried = w.carried;
    result.ys = accumulators;
    return result;
  }
  const int64_t checks0 = init.size();
  for (size_t j = 0; j < step.checks.size(); ++j) init.push_back(EmptyIndexRange(b));
  const int64_t acc0 = init.size();
  init.insert(init.end(), accumulators.begin(), accumulators.end());
  Instruction* tuple = b.Tuple(init);
  if (!tuple) return b.status();
  const hlo::Shape& ts = tuple->shape();
  // The accumulators join the state now that their shapes are known; the
  // body read only the elements before them.
  bp->set_shape(ts);

  hlo::Builder cb(b.module(), w.is_scan ? "scan_condition" : "loop_condition");
  Instruction* cp = cb.Parameter(0, ts, "state");
  Instruction* go =
      cb.Binary(Opcode::kAnd, cb.GetTupleElement(cp, 1),
                cb.Compare(cb.GetTupleElement(cp, 0), cb.GetTupleElement(cp, 2), hlo::ComparisonDirection::kLt));
  ASSIGN_OR_RETURN(hlo::Computation * condition, cb.Build(go));

  Instruction* i = bb.GetTupleElement(bp, 0);
  std::vector<Instruction*> next = {bb.Binary(Opcode::kAdd, i, bb.ScalarConstant(hlo::S64, 1)),
                                    step.cond ? step.cond : bb.Constant(Literal::Scalar<bool>(true)),
                                    bb.GetTupleElement(bp, 2)};
  next.insert(next.end(), step.carried.begin(), step.carried.end());
  for (int64_t k = 3 + n; k < checks0; ++k) next.push_back(bb.GetTupleElement(bp, k));  // scanned and captured
  for (size_t j = 0; j < step.checks.size(); ++j)
    next.push_back(MergeIndexRanges(bb, bb.GetTupleElement(bp, checks0 + j), step.checks[j].range));
  for (int k = 0; k < n_y; ++k) {
    Instruction* y = step.ys[k];
    int64_t axis = y_axes[k];
    Instruction* pos = k < static_cast<int>(w.y_reverse.size()) && w.y_reverse[k]
                           ? bb.Binary(Opcode::kSubtract, bb.ScalarConstant(hlo::S64, w.length - 1), i)
                           : i;
    std::vector<int64_t> dims = y->shape().dims;
    dims.insert(dims.begin() + axis, 1);
    std::vector<Instruction*> starts(dims.size(), bb.ScalarConstant(hlo::S64, 0));
    starts[axis] = pos;
    next.push_back(bb.DynamicUpdateSlice(bb.GetTupleElement(bp, acc0 + k), bb.Reshape(y, dims), starts));
  }
  ASSIGN_OR_RETURN(hlo::Computation * loop_body, bb.Build(bb.Tuple(next)));
  Instruction* loop = b.While(condition, loop_body, tuple);
  for (int k = 0; k < n; ++k) result.carried.push_back(b.GetTupleElement(loop, 3 + k));
  for (int k = 0; k < n_y; ++k) result.ys.push_back(b.GetTupleElement(loop, acc0 + k));
  for (size_t j = 0; j < step.checks.size(); ++j) {
    RuntimeCheck c = step.checks[j];
    c.range = b.GetTupleElement(loop, checks0 + j);
    ctx.AddCheck(std::move(c));
  }
  RETURN_IF_ERROR(b.status());
  return result;
}

namespace {

// A Loop carrying sequences or optionals: their lengths and presence must be
// known at compile time, so the loop is unrolled with its trip count and
// condition known then.
absl::Status LoopOverValues(NodeContext& ctx, const onnx::GraphProto& body) {
  hlo::Builder& b = ctx.b();
  int n_state = ctx.input_count() - 2;
  if (body.input_size() != 2 + n_state || body.output_size() != 1 + n_state)
    return ctx.Unsupported("scan outputs of a Loop that carries sequences or optionals");
  int64_t trips = kMaxUnrolledIterations + 1;
  if (ctx.has_input(0)) {
    ASSIGN_OR_RETURN(Literal m, ctx.ConstInput(0));
    trips = m.GetAsInt64(0);
  }
  auto known_pred = [&](Instruction* v, const char* what) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(Instruction * p, ScalarPred(ctx, b, v, what));
    ASSIGN_OR_RETURN(Literal l, ctx.RequireConstant(p, what));
    return l.GetAsDouble(0) != 0;
  };
  bool go = true;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(go, known_pred(ctx.input(1), "the condition of a Loop that carries sequences or optionals"));
  }
  // The carried values live in `carried` under the body's input names.
  GraphValues carried;
  for (int k = 0; k < n_state; ++k)
    if (!ctx.values().Copy(ctx.node().input(2 + k), carried, body.input(2 + k).name()))
      return ctx.Error(absl::StrCat("loop-carried input '", ctx.node().input(2 + k), "' is not defined"));
  int64_t i = 0;
  for (; i < trips && go; ++i) {
    if (i == kMaxUnrolledIterations)
      return ctx.Unsupported(absl::StrCat("a Loop carrying sequences over more than ", kMaxUnrolledIterations,
                                          " iterations (it is unrolled)"));
    GraphValues scope = ctx.values();
    for (int k = 0; k < n_state; ++k) carried.Copy(body.input(2 + k).name(), scope, body.input(2 + k).name());
    Bind(b, scope, body.input(0), b.Constant(Literal::Scalar<int64_t>(i)));
    Bind(b, scope, body.input(1), b.Constant(Literal::Scalar<bool>(true)));
    RETURN_IF_ERROR(ctx.ConvertSubgraph(body, scope));
    GraphValues next;
    for (int k = 0; k < n_state; ++k) {
      const std::string& out = body.output(1 + k).name();
      if (!scope.Copy(out, next, body.input(2 + k).name()))
        return ctx.Error(absl::StrCat("body output '", out, "' is never produced"));
    }
    carried = std::move(next);
    auto c = scope.values.find(body.output(0).name());
    if (c == scope.values.end()) return ctx.Error("the body's condition output is not a tensor");
    ASSIGN_OR_RETURN(go, known_pred(c->second, "the condition of a Loop that carries sequences or optionals"));
  }
  for (int k = 0; k < n_state; ++k) RETURN_IF_ERROR(ctx.SetOutputFrom(k, carried, body.input(2 + k).name()));
  return absl::OkStatus();
}

// The unrolled form of a Loop whose trip count is known: the fallback for
// bodies that need the iteration number at compile time (as a slice bound,
// say) or whose carried values change shape. A runtime condition is applied
// as a mask on the carried state.
absl::Status LoopUnrolled(NodeContext& ctx, const onnx::GraphProto& body, int64_t trips) {
  hlo::Builder& b = ctx.b();
  Instruction* active = b.Constant(Literal::Scalar<bool>(true));
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(active, ScalarPred(ctx, b, ctx.input(1), "the condition"));
  }
  int n_state = ctx.input_count() - 2;
  std::vector<Instruction*> state;
  for (int k = 0; k < n_state; ++k) state.push_back(ctx.input(2 + k));
  int n_scan = body.output_size() - 1 - n_state;
  if (body.input_size() != 2 + n_state || n_scan < 0)
    return ctx.Error("body inputs/outputs do not match the loop state");
  std::vector<std::vector<Instruction*>> scans(n_scan);
  for (int64_t i = 0; i < trips && !IsConst(active, false); ++i) {
    GraphValues scope = ctx.values();
    Bind(b, scope, body.input(0), b.Constant(Literal::Scalar<int64_t>(i)));
    Bind(b, scope, body.input(1), active);
    for (int k = 0; k < n_state; ++k) Bind(b, scope, body.input(2 + k), state[k]);
    // An iteration the condition may have stopped checks its indices only
    // when it runs: its ranges count as empty otherwise.
    const bool may_stop = !IsConst(active, true);
    scope.maybe_skipped = scope.maybe_skipped || may_stop;
    const size_t checks_before = scope.checks.size();
    RETURN_IF_ERROR(ctx.ConvertSubgraphInto(b, body, scope));
    for (size_t k = checks_before; k < scope.checks.size(); ++k) {
      RuntimeCheck c = scope.checks[k];
      if (may_stop) c.range = b.Select(b.Broadcast(active, {2}, {}), c.range, EmptyIndexRange(b));
      ctx.AddCheck(std::move(c));
    }
    ASSIGN_OR_RETURN(auto outs, Outputs(ctx, body, scope));
    if (n_scan > 0 && active->opcode() != Opcode::kConstant) {
      // Scan outputs take one row per iteration run: the count must be known.
      ASSIGN_OR_RETURN(Literal known, ctx.RequireConstant(active, "the condition of a Loop with scan outputs"));
      active = b.Constant(std::move(known));
    }
    bool always = IsConst(active, true);
    for (int k = 0; k < n_state; ++k) {
      Instruction* next = outs[1 + k];
      if (!next->shape().Compatible(state[k]->shape()))
        return ctx.Unsupported(absl::StrCat("loop-carried value ", k, " changes shape across iterations"));
      state[k] = always ? next : b.Select(b.Broadcast(active, next->shape().dims, {}), next, state[k]);
    }
    for (int k = 0; k < n_scan; ++k) {
      std::vector<int64_t> d = outs[1 + n_state + k]->shape().dims;
      d.insert(d.begin(), 1);
      scans[k].push_back(b.Reshape(outs[1 + n_state + k], d));
    }
    ASSIGN_OR_RETURN(Instruction * go_on, ScalarPred(ctx, b, outs[0], "the body's condition output"));
    active = b.Binary(Opcode::kAnd, active, go_on);
  }
  for (int k = 0; k < n_state; ++k) ctx.set_output(k, state[k]);
  for (int k = 0; k < n_scan; ++k) {
    if (scans[k].empty()) return ctx.Unsupported("a Loop with scan outputs that runs zero iterations");
    ctx.set_output(n_state + k, b.Concatenate(scans[k], 0));
  }
  return absl::OkStatus();
}

absl::Status Loop(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  const onnx::GraphProto* body = ctx.attr_g("body");
  if (!body) return ctx.Error("needs a body");
  for (int k = 2; k < ctx.input_count(); ++k)
    if (ctx.sequence_input(k) || ctx.is_none(k)) return LoopOverValues(ctx, *body);
  int n_state = ctx.input_count() - 2;
  WhileLoop w;
  w.body = body;
  w.trips = ctx.has_input(0) ? ctx.input(0) : nullptr;
  w.cond = nullptr;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(w.cond, ScalarPred(ctx, b, ctx.input(1), "the condition"));
  }
  for (int k = 0; k < n_state; ++k) w.carried.push_back(ctx.input(2 + k));
  int n_scan = std::max(0, body->output_size() - 1 - n_state);
  w.y_axes.assign(n_scan, 0);
  w.y_reverse.assign(n_scan, 0);
  if (n_scan > 0) {
    // Scan outputs take one row per iteration: the count must be known at
    // compile time (the session binds the inputs it depends on, if any).
    if (!w.trips) return ctx.Unsupported("scan outputs of a Loop without a trip count");
    RETURN_IF_ERROR(ctx.ConstInput(0).status());
    if (w.cond) {
      ASSIGN_OR_RETURN(Literal c, ctx.RequireConstant(w.cond, "the condition of a Loop with scan outputs"));
      w.cond = b.Constant(std::move(c));
    }
  }
  int64_t trips = -1;
  if (w.trips && w.trips->opcode() == Opcode::kConstant) trips = std::max<int64_t>(0, w.trips->literal->GetAsInt64(0));
  // The iteration count is known when the trip count is and the condition
  // starts true (the body's condition output is checked while lowering).
  if (trips >= 0 && (!w.cond || IsConst(w.cond, true))) w.length = trips;
  if (w.cond && IsConst(w.cond, false)) w.length = 0;
  absl::StatusOr<Step> lowered = EmitWhile(ctx, w);
  if (!lowered.ok()) {
    if (trips < 0 || trips > kMaxUnrolledIterations) return lowered.status();
    return LoopUnrolled(ctx, *body, trips);
  }
  for (int k = 0; k < n_state; ++k) ctx.set_output(k, lowered->carried[k]);
  for (int k = 0; k < n_scan; ++k) ctx.set_output(n_state + k, lowered->ys[k]);
  return absl::OkStatus();
}

}  // namespace

void RegisterControlFlowOps(Registry& r) {
  r.Add("If", If, 1);
  r.Add("Loop", Loop, 1);
}

}  // namespace xonnx::onnx_import
