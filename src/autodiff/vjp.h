// Reverse-mode automatic differentiation of HLO: the vector-Jacobian
// product of a module's entry computation, built as HLO beside the forward
// computation, the way JAX transposes its linearized programs.
//
// Vjp(f, wrt) returns a module whose entry takes f's parameters, then one
// cotangent per output of f (the root, or each element of a tuple root), and
// returns a tuple of f's outputs followed by, for each parameter number in
// `wrt`, the sum over outputs of cotangent · ∂output/∂parameter. For a
// scalar f and a cotangent of 1 that is the gradient.
//
// Every instruction on a path from a `wrt` parameter to an output needs a
// rule in the table of rules.cc (one per opcode, like the opcode table);
// one without is an error naming the instruction, its opcode and its ONNX
// node. Instructions that only feed comparisons, indices or shapes need
// none. Control flow (while, conditional, call) and reductions other than
// sums are not differentiated yet.
#ifndef XONNX_AUTODIFF_VJP_H_
#define XONNX_AUTODIFF_VJP_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/ir.h"

namespace xonnx::autodiff {

absl::StatusOr<std::unique_ptr<hlo::Module>> Vjp(const hlo::Module& f, const std::vector<int64_t>& wrt);

// For f whose output is one floating-point value of one element: a module
// taking f's parameters and returning, per `wrt` parameter, the gradient of
// that output, preceded by the output itself when `with_value` (a tuple,
// except for one gradient alone, which is the root itself so that it can be
// differentiated again).
absl::StatusOr<std::unique_ptr<hlo::Module>> Grad(const hlo::Module& f, const std::vector<int64_t>& wrt,
                                                  bool with_value);

// A copy whose metadata has this op_type passes no derivative: everything
// after it treats its value as a constant (the program API's StopGradient).
inline constexpr char kStopGradient[] = "StopGradient";

// Forward mode: a module taking f's parameters, then one tangent per `wrt`
// parameter (its shape), and returning f's outputs followed by, per output,
// its directional derivative Σ_k ∂output/∂wrt_k · tangent_k. Built from the
// same rules as the transpose of the VJP: the VJP is linear in its
// cotangents, so differentiating it with respect to them, seeded with the
// tangents, gives the JVP.
absl::StatusOr<std::unique_ptr<hlo::Module>> Jvp(const hlo::Module& f, const std::vector<int64_t>& wrt);

// The reverse pass itself, in place: adds to `c` (a computation of `module`,
// possibly one a Builder is still building) the instructions computing,
// for each of `wrt`, the sum over `outputs` of seed · ∂output/∂wrt, and
// returns them (zeros for one no output depends on). `c`'s instructions
// must be in an order where operands come first.
absl::StatusOr<std::vector<hlo::Instruction*>> Backward(hlo::Module* module, hlo::Computation* c,
                                                        const std::vector<hlo::Instruction*>& outputs,
                                                        const std::vector<hlo::Instruction*>& seeds,
                                                        const std::vector<hlo::Instruction*>& wrt);

// Adds instructions to one computation, inferring their shapes (helpers for
// the rules).
class Graph {
 public:
  Graph(hlo::Module* module, hlo::Computation* c) : module_(module), c_(c) {}

  // op(operands) with attributes set by `attrs`; `shape` is given for ops
  // whose shape cannot be inferred (broadcast, reshape).
  hlo::Instruction* Op(hlo::Opcode op, const std::vector<hlo::Instruction*>& operands,
                       const std::function<void(hlo::Instruction*)>& attrs = nullptr,
                       const hlo::Shape* shape = nullptr);
  hlo::Instruction* Unary(hlo::Opcode op, hlo::Instruction* x) { return Op(op, {x}); }
  hlo::Instruction* Binary(hlo::Opcode op, hlo::Instruction* a, hlo::Instruction* b) { return Op(op, {a, b}); }
  // A tensor of `shape`'s dims and type `like`'s holding `value`.
  hlo::Instruction* Full(double value, const hlo::Shape& shape);
  hlo::Instruction* Broadcast(hlo::Instruction* x, const std::vector<int64_t>& dims, const std::vector<int64_t>& map);
  hlo::Instruction* Reshape(hlo::Instruction* x, const std::vector<int64_t>& dims);
  hlo::Instruction* Transpose(hlo::Instruction* x, const std::vector<int64_t>& perm);
  // The sum of `x` over `dims`.
  hlo::Instruction* ReduceSum(hlo::Instruction* x, const std::vector<int64_t>& dims);
  // A computation adding two scalars of type `t` (for reduce and scatter),
  // one per type.
  hlo::Computation* Adder(hlo::PrimitiveType t);
  // select(pred, x, 0).
  hlo::Instruction* KeepWhere(hlo::Instruction* pred, hlo::Instruction* x);
  // The first error met (shape inference of a rule's instruction, or one
  // a rule reports with Fail).
  const absl::Status& status() const { return status_; }
  // Records an error (the first one wins) and returns null.
  hlo::Instruction* Fail(absl::Status st) {
    if (status_.ok()) status_ = std::move(st);
    return nullptr;
  }

 private:
  hlo::Module* module_;
  hlo::Computation* c_;
  absl::Status status_;
  std::map<hlo::PrimitiveType, hlo::Computation*> adders_;
};

// The cotangents of `y`'s operands given `ct`, the cotangent of `y`; null
// for operands that get none (indices, predicates).
using VjpRule = std::function<std::vector<hlo::Instruction*>(Graph& g, hlo::Instruction& y, hlo::Instruction* ct)>;

struct Rule {
  hlo::Opcode opcode;
  VjpRule vjp;
  // An HLO module (text) applying the op to f64 parameters, from which a
  // test checks the rule against central finite differences.
  std::string example;
};

// Dilated size: where n elements land with d - 1 holes between them.
inline int64_t Dilate(int64_t n, int64_t d) { return n == 0 ? 0 : 1 + d * (n - 1); }
// The window dimension of a windowed operation's input cotangent (a
// convolution's or a windowed sum's): over the cotangent, the forward
// strides become base dilation and the padding what the window's extent
// leaves, for an input of `in` elements and an output of `out`.
hlo::WindowDimension TransposedWindow(const hlo::WindowDimension& f, int64_t in, int64_t out);

// reduce-window's rule: windowed sums, maxima and minima (rules_windows.cc).
std::vector<hlo::Instruction*> ReduceWindowVjp(Graph& g, hlo::Instruction& y, hlo::Instruction* ct);

// The rules, one per differentiable opcode.
const std::vector<Rule>& Rules();
// The rules of data movement and products (rules_structural.cc).
std::vector<Rule> StructuralRules();
const Rule* FindRule(hlo::Opcode op);

}  // namespace xonnx::autodiff

#endif  // XONNX_AUTODIFF_VJP_H_
