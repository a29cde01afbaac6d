// Gradient (ai.onnx.preview.training): the gradient of a graph value y with
// respect to graph values xs, built by reverse-mode differentiation of the
// HLO that computes y (autodiff::Backward), in the same program. With the
// training optimizers (Adagrad, Momentum, Adam in misc.cc) a training step
// is one ONNX graph.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "autodiff/vjp.h"
#include "onnx/context.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {

namespace {

std::vector<std::string> Strings(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return {a.strings().begin(), a.strings().end()};
  return {};
}

// The node's inputs must be the tensors xs and zs name: the gradient is
// taken of the graph as it computed y, not recomputed from other values.
// y of any shape is differentiated as the sum of its elements.
absl::Status Gradient(NodeContext& ctx) {
  const onnx::NodeProto& n = ctx.node();
  std::vector<std::string> xs = Strings(n, "xs"), zs = Strings(n, "zs");
  std::string y_name = ctx.attr_s("y", "");
  if (xs.empty() || y_name.empty()) return ctx.Error("needs the attributes xs and y");
  if (ctx.output_count() != static_cast<int>(xs.size()))
    return ctx.Error(absl::StrCat("has ", ctx.output_count(), " outputs for ", xs.size(), " tensors in xs"));
  std::vector<std::string> named = xs;
  named.insert(named.end(), zs.begin(), zs.end());
  if (ctx.input_count() != static_cast<int>(named.size()))
    return ctx.Error(absl::StrCat("has ", ctx.input_count(), " inputs; xs and zs name ", named.size()));
  for (int k = 0; k < ctx.input_count(); ++k)
    if (n.input(k) != named[k])
      return ctx.Unsupported(absl::StrCat("input ", k, " is '", n.input(k), "', not '", named[k],
                                          "': xonnx differentiates the graph at the values of xs and zs themselves"));
  auto y = ctx.values().values.find(y_name);
  if (y == ctx.values().values.end()) return ctx.Error(absl::StrCat("y '", y_name, "' is not a tensor of the graph"));
  std::vector<hlo::Instruction*> wrt;
  for (size_t k = 0; k < xs.size(); ++k) {
    hlo::Instruction* x = ctx.input(k);
    if (!x) return ctx.Error(absl::StrCat("xs '", xs[k], "' is not a tensor of the graph"));
    // A constant was folded into what it feeds: y no longer depends on it.
    if (x->opcode() == hlo::Opcode::kConstant)
      return ctx.Unsupported(absl::StrCat("xs '", xs[k],
                                          "' is a constant, folded into the values computed from it; feed it as a "
                                          "graph input to differentiate with respect to it"));
    wrt.push_back(x);
  }
  hlo::Builder& b = ctx.b();
  hlo::Instruction* seed =
      b.Broadcast(b.ScalarConstant(y->second->shape().element_type, 1), y->second->shape().dims, {});
  if (!b.status().ok()) return b.status();
  absl::StatusOr<std::vector<hlo::Instruction*>> grads =
      autodiff::Backward(b.module(), b.computation(), {y->second}, {seed}, wrt);
  if (!grads.ok()) return ctx.Error(std::string(grads.status().message()));
  for (size_t k = 0; k < grads->size(); ++k) ctx.set_output(k, (*grads)[k]);
  return absl::OkStatus();
}

}  // namespace

void RegisterGradientOps(Registry& r) {
  r.Add({.domain = "ai.onnx.preview.training", .op_type = "Gradient", .min_opset = 1, .max_opset = 1, .fn = Gradient});
}

}  // namespace xonnx::onnx_import
