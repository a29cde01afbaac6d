// Programs written in C++, differentiated and compiled for any PjRT plugin.
//
// A C++ function over `Value`s is traced once per set of input shapes into
// an XLA program (HLO); transformations turn programs into programs (the
// gradient, vector-Jacobian and Jacobian-vector products), and `Jit` compiles
// a program once per input shapes and runs it on the session's plugin:
//
//   using namespace xonnx::program;
//   auto f = [](const std::vector<Value>& x) -> std::vector<Value> { return {Sum(Sin(x[0]) * -2.0 + x[0])}; };
//   auto df = Jit::Of([&](const std::vector<Spec>& specs) -> xonnx::StatusOr<Program> {
//     auto p = Program::Trace(f, specs);
//     if (!p.ok()) return p.status();
//     return Grad(*p, {0});
//   });
//   auto g = df->Run({xonnx::Tensor::FromVector<float>(xonnx::DataType::kFloat32, {3}, {0.f, 1.f, 2.f})});
//
// Operations record into the trace their operands belong to. An operation
// that cannot apply (shapes that do not broadcast, types that differ, an
// axis out of range) records an error naming the operation and its
// operands' shapes; the operation returns an invalid value, later ones
// propagate it, and Program::Trace returns that first error.
#ifndef XONNX_PROGRAM_H_
#define XONNX_PROGRAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xonnx/export.h"
#include "xonnx/options.h"
#include "xonnx/status.h"
#include "xonnx/tensor.h"

namespace xonnx::program {

namespace internal {
struct TraceState;
struct ProgramData;
struct JitState;
struct DeviceData;
struct Access;
}  // namespace internal

// The type and dimensions of a program's input or output.
struct XONNX_API Spec {
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> dims;
  // "float32[2,3]".
  std::string ToString() const;
  bool operator==(const Spec& o) const { return dtype == o.dtype && dims == o.dims; }
  bool operator!=(const Spec& o) const { return !(*this == o); }
};
// The spec of a host tensor.
XONNX_API Spec SpecOf(const Tensor& t);

// A value of a program being traced: an input, or the result of
// operations on inputs and constants. Cheap to copy.
class XONNX_API Value {
 public:
  Value() = default;  // invalid
  // False for a default-constructed value and for the result of an
  // operation that failed (the trace holds the error).
  bool valid() const;
  DataType dtype() const;
  const std::vector<int64_t>& dims() const;
  int64_t rank() const { return static_cast<int64_t>(dims().size()); }
  Spec spec() const { return {dtype(), dims()}; }

 private:
  friend struct internal::Access;
  std::shared_ptr<internal::TraceState> trace_;
  int64_t index_ = -1;
};

// Constants, recorded into the trace being made on this thread (an error
// outside Program::Trace).
XONNX_API Value Constant(const Tensor& t);
// A tensor of `dims` filled with `value`.
XONNX_API Value Full(DataType dtype, const std::vector<int64_t>& dims, double value);
// 0, 1, 2, ... along `axis` of a tensor of `dims`.
XONNX_API Value Iota(DataType dtype, const std::vector<int64_t>& dims, int64_t axis);

// Elementwise arithmetic with numpy broadcasting. Both operands must have
// the same type; a double operand takes the other's.
XONNX_API Value operator+(const Value& a, const Value& b);
XONNX_API Value operator-(const Value& a, const Value& b);
XONNX_API Value operator*(const Value& a, const Value& b);
XONNX_API Value operator/(const Value& a, const Value& b);
XONNX_API Value operator+(const Value& a, double b);
XONNX_API Value operator-(const Value& a, double b);
XONNX_API Value operator*(const Value& a, double b);
XONNX_API Value operator/(const Value& a, double b);
XONNX_API Value operator+(double a, const Value& b);
XONNX_API Value operator-(double a, const Value& b);
XONNX_API Value operator*(double a, const Value& b);
XONNX_API Value operator/(double a, const Value& b);
XONNX_API Value operator-(const Value& a);
XONNX_API Value Maximum(const Value& a, const Value& b);
XONNX_API Value Minimum(const Value& a, const Value& b);
XONNX_API Value Pow(const Value& a, const Value& b);
XONNX_API Value Pow(const Value& a, double b);

// Elementwise functions (floating-point values).
XONNX_API Value Exp(const Value& x);
XONNX_API Value Log(const Value& x);
XONNX_API Value Sin(const Value& x);
XONNX_API Value Cos(const Value& x);
XONNX_API Value Tanh(const Value& x);
XONNX_API Value Sqrt(const Value& x);
XONNX_API Value Rsqrt(const Value& x);
XONNX_API Value Abs(const Value& x);
XONNX_API Value Sigmoid(const Value& x);
XONNX_API Value Relu(const Value& x);
XONNX_API Value Square(const Value& x);

// Comparisons (boolean results, numpy broadcasting), selection and
// conversion.
XONNX_API Value Less(const Value& a, const Value& b);
XONNX_API Value LessEqual(const Value& a, const Value& b);
XONNX_API Value Greater(const Value& a, const Value& b);
XONNX_API Value GreaterEqual(const Value& a, const Value& b);
XONNX_API Value Equal(const Value& a, const Value& b);
XONNX_API Value NotEqual(const Value& a, const Value& b);
// cond ? a : b elementwise (cond boolean; all three broadcast).
XONNX_API Value Where(const Value& cond, const Value& a, const Value& b);
XONNX_API Value Cast(const Value& x, DataType dtype);
// x, through which no derivative flows: Grad, Vjp and Jvp treat it as a
// constant.
XONNX_API Value StopGradient(const Value& x);

// Reductions over `axes` (all of them when empty; negative counts from the
// end).
XONNX_API Value Sum(const Value& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
XONNX_API Value Mean(const Value& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
XONNX_API Value Max(const Value& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
XONNX_API Value Min(const Value& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
// log(softmax(x)) along `axis`, computed stably.
XONNX_API Value LogSoftmax(const Value& x, int64_t axis = -1);
XONNX_API Value Softmax(const Value& x, int64_t axis = -1);

// Products. MatMul follows numpy's matmul: a vector operand gains and loses
// a unit dimension, leading dimensions broadcast.
XONNX_API Value MatMul(const Value& a, const Value& b);
struct XONNX_API Conv2DOptions {
  std::vector<int64_t> strides = {1, 1};
  // Zeros added before and after each spatial dimension: {top, bottom,
  // left, right}.
  std::vector<int64_t> padding = {0, 0, 0, 0};
  std::vector<int64_t> dilations = {1, 1};
  int64_t groups = 1;
};
// x [N, C, H, W] convolved with w [O, C/groups, KH, KW] (ONNX's Conv).
XONNX_API Value Conv2D(const Value& x, const Value& w, const Conv2DOptions& options = {});
// The mean over k x k windows moved by `stride`, of x [N, C, H, W].
XONNX_API Value AvgPool2D(const Value& x, int64_t k, int64_t stride);
// The maximum over k x k windows moved by `stride`, with `pad` elements of
// -inf added on each side of H and W (ONNX's MaxPool). Its derivative goes
// to the first maximum of each window.
XONNX_API Value MaxPool2D(const Value& x, int64_t k, int64_t stride, int64_t pad = 0);

// Shapes and indexing.
XONNX_API Value Reshape(const Value& x, const std::vector<int64_t>& dims);  // one dim may be -1
XONNX_API Value Transpose(const Value& x, const std::vector<int64_t>& perm);
XONNX_API Value BroadcastTo(const Value& x, const std::vector<int64_t>& dims);  // numpy's rules
// x[starts:limits:strides] per dimension.
XONNX_API Value Slice(const Value& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& limits,
                      const std::vector<int64_t>& strides = {});
XONNX_API Value Concat(const std::vector<Value>& xs, int64_t axis);
// numpy.take: x's slices along `axis` at `indices` (an integer value of
// any shape, which replaces that dimension).
XONNX_API Value Take(const Value& x, const Value& indices, int64_t axis = 0);
// indices (integer) as one-hot vectors of `depth` along a new last axis.
XONNX_API Value OneHot(const Value& indices, int64_t depth, DataType dtype = DataType::kFloat32);

// Control flow. A plain C++ loop or `if` in a traced function is unrolled
// or decided at trace time; these record a loop and a branch that run on
// the device. Their bodies are traced once, into computations of their
// own, and see only their arguments and constants: a value from outside is
// an error of the trace (pass it in). Programs using them run and compile
// like others; Grad, Vjp and Jvp do not differentiate through them yet
// (an error naming the loop or branch). When one fails, its results are
// invalid values: as many as `init` for ForLoop; for Cond as many as the
// branches return, or one per operand when the branches failed.
using LoopBody = std::function<std::vector<Value>(const Value& i, const std::vector<Value>& values)>;
using Branch = std::function<std::vector<Value>(const std::vector<Value>& operands)>;
// `n` iterations of values = body(i, values), i an int32 scalar counting
// from 0; body returns values of the same specs. The final values.
XONNX_API std::vector<Value> ForLoop(int64_t n, const LoopBody& body, const std::vector<Value>& init);
// pred (a boolean scalar) ? then_branch(operands) : else_branch(operands);
// both return values of the same specs.
XONNX_API std::vector<Value> Cond(const Value& pred, const Branch& then_branch, const Branch& else_branch,
                                  const std::vector<Value>& operands);

// A traced program: its inputs and outputs, and its XLA program.
class XONNX_API Program {
 public:
  using Fn = std::function<std::vector<Value>(const std::vector<Value>& inputs)>;
  Program();
  // Calls fn once with one value per spec and records what it computes.
  // Errors: the first operation that failed, an output that is not a value
  // of this trace, or no output at all.
  static StatusOr<Program> Trace(const Fn& fn, const std::vector<Spec>& inputs, const std::string& name = "program");

  const std::string& name() const;
  const std::vector<Spec>& inputs() const;
  const std::vector<Spec>& outputs() const;
  // The program as HLO text, as a serialized HloModuleProto, and as
  // StableHLO (MLIR text).
  std::string HloText() const;
  std::string HloProto() const;
  StatusOr<std::string> StableHlo() const;
  // Inside another trace: this program applied to `args` (its
  // instructions copied in, so transformations see through it). Wrong
  // arguments are an error of that trace.
  std::vector<Value> operator()(const std::vector<Value>& args) const;

 private:
  friend struct internal::Access;
  std::shared_ptr<const internal::ProgramData> data_;
};

// Transformations. `wrt` numbers the inputs differentiated for, which must
// be floating point.
//
// The vector-Jacobian product: a program taking f's inputs then one
// cotangent per output of f, returning f's outputs then, per `wrt` input,
// the sum over outputs of cotangent · ∂output/∂input.
XONNX_API StatusOr<Program> Vjp(const Program& f, const std::vector<int64_t>& wrt);
// The Jacobian-vector product: f's inputs then one tangent per `wrt` input;
// returns f's outputs then, per output, Σ ∂output/∂input · tangent.
XONNX_API StatusOr<Program> Jvp(const Program& f, const std::vector<int64_t>& wrt);
// For f with one floating-point output of one element: the gradients of
// that output with respect to the `wrt` inputs (one output per input), and
// with its value first.
XONNX_API StatusOr<Program> Grad(const Program& f, const std::vector<int64_t>& wrt = {0});
XONNX_API StatusOr<Program> ValueAndGrad(const Program& f, const std::vector<int64_t>& wrt = {0});

// A value held on a Jit's device: an upload or a result of
// Jit::RunOnDevice, passed to later runs without a copy (a training loop's
// weights stay on the device from one step to the next). Cheap to copy;
// the device memory goes with the last copy.
class XONNX_API DeviceValue {
 public:
  DeviceValue() = default;
  const Spec& spec() const;
  // Copies the value to host memory, waiting for the run that computes it;
  // that run's error, if it failed.
  StatusOr<Tensor> ToHost() const;

 private:
  friend struct internal::Access;
  std::shared_ptr<const internal::DeviceData> data_;
};

// A program compiled once per set of input specs, for a plugin (the
// session options: plugin, device, create options, compile cache, program
// format), and run on host tensors.
class XONNX_API Jit {
 public:
  using Maker = std::function<StatusOr<Program>(const std::vector<Spec>& inputs)>;
  // `make` builds the program for input specs it has not seen; the
  // executable is kept in memory and, with a cache directory, on disk.
  static StatusOr<Jit> Of(Maker make, const SessionOptions& options = {});
  // The same for a function traced as it is.
  static StatusOr<Jit> OfFunction(Program::Fn fn, const SessionOptions& options = {},
                                  const std::string& name = "program");

  // Runs on `inputs` (compiling first for new specs); the outputs in order.
  StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) const;
  // The same with values on the device: no copies in or out, and no wait
  // (the run is started; ToHost of a result waits for it). Values from
  // another Jit must be of the same plugin, options and device.
  StatusOr<DeviceValue> Upload(const Tensor& t) const;
  StatusOr<std::vector<DeviceValue>> RunOnDevice(const std::vector<DeviceValue>& inputs) const;
  // How many programs were compiled, and how many of those the
  // persistent cache supplied.
  int64_t compiled() const;
  int64_t loaded_from_cache() const;

 private:
  std::shared_ptr<internal::JitState> state_;
};

}  // namespace xonnx::program

#endif  // XONNX_PROGRAM_H_
