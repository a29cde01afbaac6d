// Converts a loaded ONNX model to an hlo::Module for concrete input shapes.
#ifndef XONNX_ONNX_IMPORTER_H_
#define XONNX_ONNX_IMPORTER_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/ir.h"
#include "onnx/context.h"
#include "onnx/model.h"
#include "passes/dump.h"

namespace xonnx::onnx_import {

// A model input or output as declared: dims are -1 where dynamic, with the
// symbolic name (if any) in dim_names.
struct TensorInfo {
  std::string name;
  hlo::PrimitiveType type = hlo::PRIMITIVE_TYPE_INVALID;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
  bool is_string = false;  // a string tensor (type is then invalid)
  // A sequence of tensors (type and dims describe its elements), and/or an
  // optional (of a tensor or of a sequence).
  bool is_sequence = false;
  bool is_optional = false;
};

// The name of element i of sequence input or output `name`: the parameter
// or program output that carries it ("name[i]").
std::string SequenceElementName(const std::string& name, int64_t i);

struct ImportOptions {
  // Concrete shapes for inputs (required for inputs with dynamic dims
  // unless default_dynamic_dim is set).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // When >= 0, dynamic dims of inputs not in input_shapes take this value.
  int64_t default_dynamic_dim = -1;
  // On a conversion error, return the part converted so far (root = tuple of
  // the values no converted node consumes) instead of failing.
  bool allow_partial = false;
  // Inputs whose values are fixed at compile time: they become constants
  // (not parameters). Used for inputs that feed shapes, axes or counts.
  std::map<std::string, hlo::Literal> bound_inputs;
  // The values of string inputs (always needed: strings never reach HLO).
  std::map<std::string, StringTensor> string_inputs;
  // The length of each sequence input (required: its elements are separate
  // parameters, whose shapes input_shapes gives under SequenceElementName),
  // and the optional inputs that are empty.
  std::map<std::string, int64_t> sequence_lengths;
  std::set<std::string> absent_inputs;
  // Floating-point and 8- or 16-bit integer initializers of at least
  // weight_min_elements elements become entry parameters after the inputs (marked with
  // hlo::kWeightParameterOpType) instead of constants, so the runtime can
  // upload them once per device and share them between programs. Names in
  // constant_weights stay constants (their values are needed to convert).
  bool weights_as_parameters = false;
  int64_t weight_min_elements = 1024;
  std::set<std::string> constant_weights;
  // Import-time constant folding cap (elements).
  int64_t fold_max_elements = 1 << 22;
  // What happens to the module before Import returns it: the standard pass
  // pipeline (with the verifier after every pass when verify_passes), then,
  // unless both are F32, the conversion to compute in compute_type with
  // float inputs and outputs in io_type (passes::ConvertPrecision). This is
  // the one place a module is optimized and its precision decided on the
  // client's side of the PjRT ABI.
  // Last, whether or not `optimize`: with exact_f32_products, f32 dots and
  // convolutions ask for exact f32 inputs (passes::ExactProducts); with
  // xla_compatible, what XLA's own plugins reject or round differently is
  // rewritten (passes::XlaCompatibility).
  bool optimize = false;
  bool verify_passes = false;
  // Writes the module as imported, after the passes it names, and as it
  // leaves the importer (SessionOptions::dump).
  passes::DumpSettings dump;
  hlo::PrimitiveType compute_type = hlo::F32;
  hlo::PrimitiveType io_type = hlo::F32;
  bool exact_f32_products = true;
  bool xla_compatible = false;
  // Index values known only at run time (Gather's, Scatter's, ...) are
  // checked against their bounds as the program runs: ImportedModule::checks.
  bool check_indices = true;
  // Called before each node is converted and between the importer's steps;
  // a status other than OK (a call's deadline passed, a cancellation) ends
  // the import with it. Null: the import runs to its end.
  std::function<absl::Status()> stop;
};

// A check of index values the program makes as it runs (RuntimeCheck, as
// the session sees it): the indices' smallest and largest values must lie
// in [lo, hi]; `what` names the node and its input.
struct IndexCheck {
  int64_t lo = 0, hi = 0;
  std::string what;
};

struct ImportedModule {
  std::unique_ptr<hlo::Module> module;
  std::vector<TensorInfo> inputs;    // concrete, in parameter order (bound inputs excluded)
  std::vector<std::string> weights;  // initializers passed as the parameters after the inputs
  std::vector<TensorInfo> outputs;   // concrete, in tuple order (sequence elements one by one)
  // Per graph output, how many entries of `outputs` it takes: kTensorOutput
  // for a tensor, the length for a sequence, kNoneOutput for an empty optional.
  static constexpr int kTensorOutput = -1, kNoneOutput = -2;
  std::vector<int> output_counts;
  std::string partial_error;  // set when allow_partial cut the graph short
  // The program's run-time index checks. When there are any, the module's
  // result has one more element after `outputs`: an s64 vector holding, for
  // each check in turn, the smallest and the largest index it saw.
  std::vector<IndexCheck> checks;
  // String outputs, computed while converting; they are not in the HLO.
  std::map<std::string, StringTensor> string_outputs;
};

// Declared graph inputs (initializers excluded) and outputs.
absl::StatusOr<std::vector<TensorInfo>> ModelInputs(const LoadedModel& model);
absl::StatusOr<std::vector<TensorInfo>> ModelOutputs(const LoadedModel& model);

// One unsupported op of a model, with the names of the nodes that use it.
struct UnsupportedOp {
  std::string domain, op_type;
  int64_t opset;
  std::vector<std::string> nodes;
};
std::vector<UnsupportedOp> FindUnsupportedOps(const LoadedModel& model);
// "Foo (nodes 'a', 'b'); Bar (node 'c')" for an error message.
std::string DescribeUnsupported(const std::vector<UnsupportedOp>& ops);

// The payload key of an import error caused by a shape-like value that
// depends on model inputs; its value lists those inputs, comma-separated.
// Binding them (ImportOptions::bound_inputs) lets the import succeed.
inline constexpr char kNeedsInputValuesPayload[] = "xonnx.needs_input_values";

// Converts the initializers and nodes of `g` into `b`; `values` holds what is
// defined already (graph inputs, outer scopes) and receives every output.
// Subgraphs (If, Loop, Scan bodies) are converted through this too.
[[nodiscard]] absl::Status ConvertNodes(const onnx::GraphProto& g, const std::map<std::string, int64_t>& opsets,
                                        hlo::Builder& b, GraphValues& values, std::set<std::string>* consumed = nullptr,
                                        std::vector<std::string>* produced = nullptr);

[[nodiscard]] absl::StatusOr<ImportedModule> Import(const LoadedModel& model, const ImportOptions& options);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_IMPORTER_H_
