// What a converter sees of the graph: its node's inputs as HLO instructions,
// its attributes, and the builder to emit HLO with. Plus the small helpers
// every converter family shares (numpy broadcasting, axes, splats).
#ifndef XONNX_ONNX_CONTEXT_H_
#define XONNX_ONNX_CONTEXT_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/broadcast.h"
#include "hlo/builder.h"
#include "onnx/onnx_pb.h"

namespace xonnx::onnx_import {

// A string tensor. HLO has no strings, so string values live on the host
// during conversion: string inputs are known at compile time and the ops on
// them (StringNormalizer, casts) are computed while converting.
struct StringTensor {
  std::vector<int64_t> dims;
  std::vector<std::string> values;
};

// An ONNX sequence: its length is known at compile time, so it is a list of
// values (which may differ in shape); `type` is the element type, which an
// empty sequence still has.
struct SequenceValue {
  hlo::PrimitiveType type = hlo::F32;
  std::vector<hlo::Instruction*> elements;
};

// A check of index values the program makes as it runs: `range` is an
// s64[2] value holding the smallest and largest of the indices (smallest
// above largest when there were none), which must lie in [lo, hi]. `what`
// names the node and the input ("node 'g' (Gather, opset 13): indices").
struct RuntimeCheck {
  hlo::Instruction* range = nullptr;
  int64_t lo = 0, hi = 0;
  std::string what;
};

// The range of no indices (smallest above largest), and the range of two
// ranges' indices together: how checks made in a loop's iterations or an
// If's branches combine.
hlo::Instruction* EmptyIndexRange(hlo::Builder& b);
hlo::Instruction* MergeIndexRanges(hlo::Builder& b, hlo::Instruction* a, hlo::Instruction* c);

// Values of one graph being converted (name -> instruction, string tensor or
// sequence). An optional that holds a value is that value; an empty one is
// a name in `nones`.
struct GraphValues {
  std::map<std::string, hlo::Instruction*> values;
  std::map<std::string, StringTensor> strings;
  std::map<std::string, SequenceValue> sequences;
  std::set<std::string> nones;
  // The run-time checks of the nodes converted in this scope, and whether
  // indices known only at run time are checked at all
  // (ImportOptions::check_indices).
  std::vector<RuntimeCheck> checks;
  bool check_indices = true;
  // Whether the nodes of this scope may not run at all (an If's branch, a
  // Loop's body, an unrolled iteration after a run-time condition): an
  // index known to be out of range is then checked when they run, not
  // refused when the model converts.
  bool maybe_skipped = false;
  // Called before each node is converted (ImportOptions::stop); null: never.
  const std::function<absl::Status()>* stop = nullptr;
  // Whether `name` is defined in any of the forms above.
  bool Defines(const std::string& name) const {
    return values.count(name) || strings.count(name) || sequences.count(name) || nones.count(name);
  }
  // Defines `name` in `to` as the value `from` has here, whatever its kind;
  // false when `from` is not defined here. `to` may be *this.
  bool Copy(const std::string& from, GraphValues& to, const std::string& name) const;
};

class NodeContext {
 public:
  NodeContext(hlo::Builder& b, GraphValues& values, const onnx::NodeProto& node, int64_t opset,
              const std::map<std::string, int64_t>* opsets = nullptr)
      : b_(b), values_(values), node_(node), opset_(opset), opsets_(opsets) {}

  hlo::Builder& b() { return b_; }
  const onnx::NodeProto& node() const { return node_; }
  // Opset of the node's domain in the model.
  int64_t opset() const { return opset_; }

  int input_count() const { return node_.input_size(); }
  // True when input i is given (present and not the empty name).
  bool has_input(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  // Input i, or null when absent.
  hlo::Instruction* input(int i);
  // Input i, which must be known at import time (a constant after folding).
  absl::StatusOr<hlo::Literal> ConstInput(int i);
  absl::StatusOr<std::vector<int64_t>> ConstInts(int i);
  // The value of `x`, which must be known at compile time; when it depends on
  // model inputs, the error asks the session to bind them (see importer.h).
  absl::StatusOr<hlo::Literal> RequireConstant(const hlo::Instruction* x, const std::string& what);
  const hlo::Shape& shape(int i) { return input(i)->shape(); }

  // Input i if it is a string tensor, else null.
  const StringTensor* string_input(int i) const;
  void set_string_output(int i, StringTensor v);

  // Input i if it is a sequence, else null; whether input i is an empty
  // optional (or absent).
  const SequenceValue* sequence_input(int i) const;
  bool is_none(int i) const;
  void set_sequence_output(int i, SequenceValue v);
  void set_none_output(int i);
  // Copies whatever value input i holds (tensor, string, sequence, none) to
  // output o: Identity and the optional ops forward values of any kind.
  absl::Status ForwardInput(int i, int o);
  // Sets output o to the value `name` has in `scope` (a converted subgraph),
  // whatever its kind.
  absl::Status SetOutputFrom(int o, const GraphValues& scope, const std::string& name);

  int output_count() const { return node_.output_size(); }
  bool wants_output(int i) const { return i < node_.output_size() && !node_.output(i).empty(); }
  void set_output(int i, hlo::Instruction* v);

  bool has_attr(const std::string& name) const { return Attr(name) != nullptr; }
  int64_t attr_i(const std::string& name, int64_t def) const;
  float attr_f(const std::string& name, float def) const;
  std::string attr_s(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(const std::string& name) const;
  const onnx::TensorProto* attr_t(const std::string& name) const;

  // A graph attribute (If branches, Loop/Scan bodies), or null.
  const onnx::GraphProto* attr_g(const std::string& name) const;
  // The values visible to this node (for a subgraph's outer scope).
  const GraphValues& values() const { return values_; }
  // Converts a subgraph's nodes into this node's builder: `scope` starts as
  // the outer values plus the subgraph's bound inputs and receives its outputs.
  absl::Status ConvertSubgraph(const onnx::GraphProto& g, GraphValues& scope);
  // The same into another computation's builder (loop bodies).
  absl::Status ConvertSubgraphInto(hlo::Builder& b, const onnx::GraphProto& g, GraphValues& scope);

  // Checks that every value of `indices` (an integer tensor) lies in [lo,
  // hi]: when they are known now, an error naming the node if one does not;
  // else, unless checks are off, a check the program makes as it runs
  // (RuntimeCheck), which fails the call with the node's name. `what` names
  // the values ("indices", "component 1 of the indices").
  absl::Status CheckIndexRange(hlo::Instruction* indices, int64_t lo, int64_t hi, const std::string& what);
  // Adds a check made in a nested computation (a loop body, a branch) as
  // this node's, on `range` (its value out of that computation).
  void AddCheck(RuntimeCheck check) { values_.checks.push_back(std::move(check)); }
  // "node 'n' (Op): msg" errors; the importer adds the file name.
  absl::Status Error(const std::string& msg) const;
  absl::Status Unsupported(const std::string& msg) const;

 private:
  const onnx::AttributeProto* Attr(const std::string& name) const;

  hlo::Builder& b_;
  GraphValues& values_;
  const onnx::NodeProto& node_;
  int64_t opset_;
  const std::map<std::string, int64_t>* opsets_;
};

// Adds to `free` the names subgraph `g` (and its own subgraphs) reads
// without defining them, besides those in `defined`: its outer-scope
// captures.
void FreeNames(const onnx::GraphProto& g, const std::set<std::string>& defined, std::set<std::string>& free);

// Numpy-style broadcasting (hlo/broadcast.h).
using hlo::BroadcastDims;
using hlo::BroadcastTo;
// Broadcasts every operand to their common shape (error on mismatch).
absl::StatusOr<std::vector<hlo::Instruction*>> BroadcastAll(NodeContext& ctx, std::vector<hlo::Instruction*> xs);
// A constant of `type` filled with `value`, shaped `dims`.
hlo::Instruction* Splat(hlo::Builder& b, hlo::PrimitiveType type, double value, const std::vector<int64_t>& dims);
// Same-shaped constant as `like`.
hlo::Instruction* SplatLike(hlo::Builder& b, hlo::Instruction* like, double value);
// Normalizes a possibly negative axis; error when out of [-rank, rank).
absl::StatusOr<int64_t> NormalizeAxis(const NodeContext& ctx, int64_t axis, int64_t rank);
// Reduces x over `axes` with a scalar op, keeping reduced dims as 1 when asked.
// The spatial axes of an NC... tensor: 2 .. rank-1.
std::vector<int64_t> SpatialAxes(const hlo::Instruction* x);
hlo::Instruction* ReduceOver(hlo::Builder& b, hlo::Instruction* x, hlo::Opcode op, double init,
                             std::vector<int64_t> axes, bool keepdims);
// ONNX Gather: slices of x along `axis` picked by `indices` (any rank, in
// range); the result has x's dims with `axis` replaced by indices' dims.
hlo::Instruction* TakeAlongAxis(hlo::Builder& b, hlo::Instruction* x, hlo::Instruction* indices, int64_t axis);
// ONNX GatherElements: out[i...] = x[i... with i[axis] = indices[i...]];
// indices has x's rank and is in range.
hlo::Instruction* GatherElementsAlongAxis(hlo::Builder& b, hlo::Instruction* x, hlo::Instruction* indices,
                                          int64_t axis);
// Element-wise gather/scatter along `axis` of data of `data_dims` as one
// dimension: the row-major position of each element named, shape
// indices.dims + [1], its `axis` coordinate from indices (in range) and
// the others its own (indices may be shorter than the data in those).
// One index per element, computed in one elementwise loop, where a vector
// of all its coordinates had a gather read rank values per element.
hlo::Instruction* ElementIndices(hlo::Builder& b, hlo::Instruction* indices, int64_t axis,
                                 const std::vector<int64_t>& data_dims);

// Uniform f32 values in [0, 1) of `dims` from the node's seed attribute (or
// one derived from its name); defined with the random ops.
hlo::Instruction* RandomUniform01(NodeContext& ctx, const std::vector<int64_t>& dims);

// Numpy-semantics matrix product (MatMul); defined with the NN converters.
absl::StatusOr<hlo::Instruction*> NumpyMatMul(NodeContext& ctx, hlo::Instruction* a, hlo::Instruction* b);
// Gemm of the node's inputs A, B (and C) with its attributes (transA,
// transB, alpha, beta).
absl::StatusOr<hlo::Instruction*> GemmWithAttributes(NodeContext& ctx);
// y + a per-channel [C] bias along dim 1 (y when there is no bias).
hlo::Instruction* AddChannelBias(hlo::Builder& b, hlo::Instruction* y, hlo::Instruction* bias);
// Convolution of x by w with the node's Conv attributes (strides, pads,
// dilations, group, auto_pad); no bias.
absl::StatusOr<hlo::Instruction*> ConvWithAttributes(NodeContext& ctx, hlo::Instruction* x, hlo::Instruction* w);

// Lowest / highest finite-or-infinite value of a type (for max/min inits and padding).
double LowestValue(hlo::PrimitiveType t);
double HighestValue(hlo::PrimitiveType t);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_CONTEXT_H_
