// Builds one computation with shape inference. Like XlaBuilder, the first
// error is recorded and every later call taking a null operand returns null,
// so converter code reads straight down and checks status() once.
#ifndef XONNX_HLO_BUILDER_H_
#define XONNX_HLO_BUILDER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/ir.h"
#include "hlo/shape_inference.h"

namespace xonnx::hlo {

// The dimension numbers of a product whose operands' first `batch` dims
// are its batch dims, in order, and that contracts lhs dim
// `lhs_contracting` with rhs dim `rhs_contracting`.
DotDimensionNumbers BatchedDotDims(int64_t lhs_contracting, int64_t rhs_contracting, int64_t batch = 0);

class Builder {
 public:
  // Builds a computation named `name` that will belong to `module`.
  Builder(Module* module, std::string name);
  ~Builder();

  // Metadata attached to every instruction added from now on.
  void set_metadata(OpMetadata m) { metadata_ = std::move(m); }
  const OpMetadata& metadata() const { return metadata_; }
  // Called for each new instruction whose operands are all constants; a
  // returned literal replaces the instruction by a constant. The importer
  // uses it to fold shape computations as they are built.
  using Folder = std::function<std::optional<Literal>(const Instruction&)>;
  void set_folder(Folder f) { folder_ = std::move(f); }
  // The folder, for builders of nested computations (branches, loop bodies).
  const Folder& folder() const { return folder_; }

  // The first error seen (OK if none).
  const absl::Status& status() const { return status_; }
  // Records an error (the first one wins) and returns null for chaining.
  Instruction* ReportError(absl::Status st);
  Module* module() const { return module_; }

  Instruction* Parameter(int64_t number, const Shape& shape, const std::string& name);
  Instruction* Constant(Literal literal);
  Instruction* ScalarConstant(PrimitiveType type, double value);
  Instruction* Iota(const Shape& shape, int64_t dimension);

  Instruction* Unary(Opcode op, Instruction* x);
  Instruction* Binary(Opcode op, Instruction* a, Instruction* b);
  Instruction* Compare(Instruction* a, Instruction* b, ComparisonDirection dir);
  Instruction* Select(Instruction* pred, Instruction* on_true, Instruction* on_false);
  Instruction* Clamp(Instruction* lo, Instruction* x, Instruction* hi);
  Instruction* Convert(Instruction* x, PrimitiveType type);
  Instruction* BitcastConvert(Instruction* x, PrimitiveType type);

  // HLO broadcast: operand dimension i becomes output dimension dims[i].
  Instruction* Broadcast(Instruction* x, std::vector<int64_t> out_dims, std::vector<int64_t> dims);
  Instruction* Reshape(Instruction* x, std::vector<int64_t> dims);
  Instruction* Transpose(Instruction* x, std::vector<int64_t> perm);
  Instruction* Slice(Instruction* x, std::vector<int64_t> starts, std::vector<int64_t> limits,
                     std::vector<int64_t> strides);
  Instruction* DynamicSlice(Instruction* x, const std::vector<Instruction*>& starts, std::vector<int64_t> sizes);
  Instruction* DynamicUpdateSlice(Instruction* x, Instruction* update, const std::vector<Instruction*>& starts);
  Instruction* Concatenate(const std::vector<Instruction*>& xs, int64_t dim);
  Instruction* Pad(Instruction* x, Instruction* value, std::vector<PaddingDimension> config);
  Instruction* Reverse(Instruction* x, std::vector<int64_t> dims);
  Instruction* Gather(Instruction* x, Instruction* indices, GatherDimensionNumbers dnums,
                      std::vector<int64_t> slice_sizes);
  Instruction* Scatter(Instruction* x, Instruction* indices, Instruction* updates, ScatterDimensionNumbers dnums,
                       Computation* update_computation);

  Instruction* Dot(Instruction* lhs, Instruction* rhs, DotDimensionNumbers dnums);
  Instruction* Convolution(Instruction* x, Instruction* w, Window window, ConvolutionDimensionNumbers dnums,
                           int64_t feature_group_count, int64_t batch_group_count = 1);
  // Variadic reduce: N inputs, N scalar inits; a tuple result when N > 1.
  Instruction* Reduce(const std::vector<Instruction*>& inputs, const std::vector<Instruction*>& inits,
                      std::vector<int64_t> dims, Computation* reducer);
  Instruction* ReduceWindow(Instruction* x, Instruction* init, Window window, Computation* reducer);
  Instruction* Sort(const std::vector<Instruction*>& xs, int64_t dim, Computation* comparator, bool stable);

  Instruction* Tuple(const std::vector<Instruction*>& xs);
  Instruction* GetTupleElement(Instruction* t, int64_t index);
  Instruction* Call(Computation* c, const std::vector<Instruction*>& args);
  Instruction* While(Computation* condition, Computation* body, Instruction* init);
  // branch_index is s32 (N branches) or pred (two branches: true, false).
  Instruction* Conditional(Instruction* branch_index, const std::vector<Computation*>& branches,
                           const std::vector<Instruction*>& operands);

  // A two-parameter scalar computation applying `op` (for reduce and scatter).
  Computation* ScalarReducer(Opcode op, PrimitiveType type);

  // The computation being built, for code that adds instructions to it
  // directly (automatic differentiation builds a node's gradient there).
  Computation* computation() const { return computation_.get(); }

  // Finishes the computation with `root` and adds it to the module.
  absl::StatusOr<Computation*> Build(Instruction* root);

 private:
  Instruction* Add(std::unique_ptr<Instruction> instr);
  Instruction* Fail(Opcode op, std::string message);

  Module* module_;
  std::unique_ptr<Computation> computation_;
  OpMetadata metadata_;
  Folder folder_;
  absl::Status status_;
};

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_BUILDER_H_
