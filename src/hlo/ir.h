// The HLO IR: instructions, computations and modules. It mirrors XLA's
// HloInstructionProto closely so the proto codec is a field-by-field copy.
#ifndef XONNX_HLO_IR_H_
#define XONNX_HLO_IR_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "hlo/literal.h"
#include "hlo/opcode.h"
#include "hlo/shape.h"

namespace xonnx::hlo {

class Computation;
class Module;

struct WindowDimension {
  int64_t size = 1, stride = 1, padding_low = 0, padding_high = 0;
  int64_t window_dilation = 1, base_dilation = 1;
  bool window_reversal = false;
  bool operator==(const WindowDimension&) const = default;
};
struct Window {
  std::vector<WindowDimension> dimensions;
  bool operator==(const Window&) const = default;
};

struct ConvolutionDimensionNumbers {
  int64_t input_batch_dimension = 0, input_feature_dimension = 1;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 1, kernel_output_feature_dimension = 0;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0, output_feature_dimension = 1;
  std::vector<int64_t> output_spatial_dimensions;
  bool operator==(const ConvolutionDimensionNumbers&) const = default;
};

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_contracting_dimensions, rhs_contracting_dimensions;
  std::vector<int64_t> lhs_batch_dimensions, rhs_batch_dimensions;
  bool operator==(const DotDimensionNumbers&) const = default;
};

struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  int64_t index_vector_dim = 0;
  bool operator==(const GatherDimensionNumbers&) const = default;
};

struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};

// How a dot or convolution may round its operands (HLO's PrecisionConfig,
// one value for both operands): kDefault lets the backend choose, which on
// NVIDIA GPUs means TF32 inputs for f32 products; kHighest keeps them exact.
enum class Precision { kDefault = 0, kHigh = 1, kHighest = 2 };
absl::string_view PrecisionName(Precision p);

struct PaddingDimension {
  int64_t edge_padding_low = 0, edge_padding_high = 0, interior_padding = 0;
  bool operator==(const PaddingDimension&) const = default;
};

// Where an instruction came from: the ONNX node's op type and name.
struct OpMetadata {
  std::string op_type, op_name, source_file;
  int64_t source_line = 0;
  bool empty() const { return op_type.empty() && op_name.empty(); }
  bool operator==(const OpMetadata&) const = default;
};

// One HLO instruction. Attribute fields are meaningful only for the opcodes
// that use them (as in HloInstructionProto).
// OpMetadata::op_type of an entry parameter that holds a model weight: the
// runtime passes the same device buffer on every call, which a backend may
// exploit (the CPU plugin compiles such values in as constants).
inline constexpr char kWeightParameterOpType[] = "xonnx.weight";

// A frontend attribute of a dot (value "true"): the product may round its
// activation (operand 0) to 8-bit integers, a scale per block of the
// weights' quantization, as ONNX Runtime's MatMulNBits does at
// accuracy_level 4. Its absence, or a pass that drops it, means an exact
// f32 product.
inline constexpr char kInt8ActivationsAttribute[] = "xonnx.int8_activations";

class Instruction {
 public:
  Instruction(Opcode opcode, Shape shape) : opcode_(opcode), shape_(std::move(shape)) {}
  // A copy reads the same operands (and becomes one of their users); it has
  // no users of its own.
  Instruction(const Instruction& other);
  Instruction& operator=(const Instruction&) = delete;
  // A copy of `other` reading `operands` instead of other's (as many), which
  // never touches other's operands: a clone of a module that other threads
  // may read at the same time leaves it as it was.
  static std::unique_ptr<Instruction> CopyReading(const Instruction& other, const std::vector<Instruction*>& operands);
  // Stops being a user of its operands.
  ~Instruction();

  Opcode opcode() const { return opcode_; }
  const Shape& shape() const { return shape_; }
  void set_shape(Shape s) { shape_ = std::move(s); }
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  int64_t id() const { return id_; }
  void set_id(int64_t id) { id_ = id; }

  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(int64_t i) const { return operands_[i]; }
  int64_t operand_count() const { return operands_.size(); }
  void AppendOperand(Instruction* op);
  void ReplaceOperand(int64_t i, Instruction* op);
  // The instructions reading this one, once per operand slot that reads it
  // (kept up to date by the operand setters: Computation::ReplaceAllUsesWith
  // takes time in the number of users, not of instructions).
  const std::vector<Instruction*>& users() const { return users_; }

  const std::vector<Computation*>& called_computations() const { return called_; }
  void AppendCalledComputation(Computation* c) { called_.push_back(c); }
  void ReplaceCalledComputation(int64_t i, Computation* c) { called_[i] = c; }
  // to_apply / condition+body / branches, by opcode convention.
  Computation* to_apply() const { return called_.empty() ? nullptr : called_[0]; }

  // Attributes, public as in a proto message.
  std::optional<Literal> literal;   // constant
  int64_t parameter_number = -1;    // parameter
  int64_t tuple_index = -1;         // get-tuple-element
  std::vector<int64_t> dimensions;  // broadcast/transpose/reduce/reverse/concat/iota/sort
  std::vector<int64_t> slice_starts, slice_limits, slice_strides;  // slice
  std::vector<int64_t> dynamic_slice_sizes;                        // dynamic-slice
  std::vector<PaddingDimension> padding_config;                    // pad
  Window window;                                                   // reduce-window, convolution
  ConvolutionDimensionNumbers conv_dnums;                          // convolution
  int64_t feature_group_count = 1, batch_group_count = 1;
  Precision precision = Precision::kDefault;  // dot, convolution: of both operands
  DotDimensionNumbers dot_dnums;              // dot
  GatherDimensionNumbers gather_dnums;        // gather
  std::vector<int64_t> gather_slice_sizes;
  ScatterDimensionNumbers scatter_dnums;  // scatter
  bool indices_are_sorted = false, unique_indices = false;
  ComparisonDirection comparison_direction = ComparisonDirection::kEq;  // compare
  bool is_stable = false;                                               // sort
  int64_t rng_algorithm = 0;                                            // rng-bit-generator
  OpMetadata metadata;
  // XLA's frontend attributes: hints from the program's writer that a
  // backend may act on and others ignore (kInt8ActivationsAttribute).
  std::map<std::string, std::string> frontend_attributes;

  // True when every attribute (not operands, name or id) is equal.
  bool SameAttributes(const Instruction& o) const;

 private:
  Opcode opcode_;
  Shape shape_;
  std::string name_;
  int64_t id_ = -1;
  friend class Computation;
  struct NoOperands {};
  // Copies everything but operands (none) and users (none).
  Instruction(const Instruction& other, NoOperands);
  // Drops one entry of `user` from users_ (searched from the back: a copy
  // that is rewired at once was added last).
  void RemoveUser(const Instruction* user);

  std::vector<Instruction*> operands_;
  std::vector<Instruction*> users_;
  std::vector<Computation*> called_;
};

// A computation: instructions in an order where operands come first.
class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}
  Computation(const Computation&) = delete;
  Computation& operator=(const Computation&) = delete;
  // Unlinks its instructions before destroying them, in any order.
  ~Computation();

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  int64_t id() const { return id_; }
  void set_id(int64_t id) { id_ = id; }
  Instruction* root() const { return root_; }
  void set_root(Instruction* r) { root_ = r; }
  Module* parent() const { return parent_; }
  void set_parent(Module* m) { parent_ = m; }

  // Instructions in their current order (operands first after Canonicalize).
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }
  int64_t instruction_count() const { return instructions_.size(); }
  // Parameters ordered by parameter_number.
  std::vector<Instruction*> parameters() const;
  Instruction* parameter(int64_t i) const;
  int64_t num_parameters() const { return parameters().size(); }

  // Adds an instruction, giving it a unique name and id from the module.
  Instruction* AddInstruction(std::unique_ptr<Instruction> instr);
  // Removes an instruction nothing uses (parameters included).
  void RemoveInstruction(Instruction* instr);
  // Replaces every use of `old_instr` (including the root) by `new_instr`.
  void ReplaceAllUsesWith(Instruction* old_instr, Instruction* new_instr);
  // The users of each instruction, in instruction order.
  std::vector<std::vector<Instruction*>> ComputeUsers() const;
  // Whether i is not the root and exactly one instruction reads it (in
  // one or more operands): a value a pass may fold into its one user.
  // Asked as the computation is now, so a rewrite that gave i more readers
  // counts them; a reader a rewrite left dead (read by nothing, not the
  // root) does not count.
  bool SingleUse(const Instruction* i) const;
  // Drops instructions the root does not reach (parameters are kept) and
  // reorders the rest so every operand precedes its users. Returns how many
  // instructions were removed.
  int64_t Canonicalize();
  // A deep copy of this computation into module `m` (called computations are
  // shared, not copied).
  std::unique_ptr<Computation> Clone(Module* m, std::string name) const;

 private:
  // Removes `gone` (instructions of this computation about to be
  // destroyed) from their operands' user lists and clears their links.
  static void DropLinks(const std::vector<Instruction*>& gone);

  std::string name_;
  int64_t id_ = -1;
  Instruction* root_ = nullptr;
  Module* parent_ = nullptr;
  std::vector<std::unique_ptr<Instruction>> instructions_;
};

// A module: computations with callees before their callers, and one entry.
class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  Computation* entry() const { return entry_; }
  void set_entry(Computation* c) { entry_ = c; }
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }

  // Adds a computation (after every computation it may call) and names it
  // uniquely.
  Computation* AddComputation(std::unique_ptr<Computation> c);
  // Moves `c`, which must call no computation, in front of all others, so
  // that it is defined before any caller (for computations a pass adds).
  void MoveLeafToFront(Computation* c);
  // Removes computations that the entry does not reach.
  void RemoveUnreachableComputations();
  // A fresh unique instruction/computation name built from `base`.
  std::string UniqueName(absl::string_view base);
  int64_t NextId() { return next_id_++; }
  // Makes names unique and non-numeric and ids dense (for modules read from protos).
  void NoteNameUsed(const std::string& name) { used_names_.insert(name); }
  std::unique_ptr<Module> Clone() const;
  // Replaces entry parameters by constants holding `values` (by parameter
  // number; each literal of its parameter's shape) and numbers the other
  // parameters 0, 1, ... in their old order. A constant keeps its
  // parameter's metadata and is named after it.
  // Aliases follow their parameters; those of bound ones are dropped.
  absl::Status BindParameters(std::vector<std::pair<int64_t, Literal>> values);

  // Results that may take the buffer of an entry parameter of their shape
  // when the caller donates it (XLA's input_output_alias, "may alias"):
  // `output` indexes the root tuple's elements (or is 0 for a root that is
  // no tuple). A plugin that ignores them still computes the same values.
  struct Alias {
    int64_t output = 0, parameter = 0;
    bool operator==(const Alias&) const = default;
  };
  const std::vector<Alias>& aliases() const { return aliases_; }
  void set_aliases(std::vector<Alias> aliases) { aliases_ = std::move(aliases); }

 private:
  std::string name_;
  std::vector<Alias> aliases_;
  Computation* entry_ = nullptr;
  std::vector<std::unique_ptr<Computation>> computations_;
  absl::flat_hash_set<std::string> used_names_;
  absl::flat_hash_map<std::string, int64_t> next_suffix_;  // per base: the last suffix UniqueName gave
  int64_t next_id_ = 1;
};

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_IR_H_
