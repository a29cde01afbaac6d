#include "hlo/builder.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_join.h"
#include "base/status.h"

namespace xonnx::hlo {

Builder::Builder(Module* module, std::string name)
    : module_(module), computation_(std::make_unique<Computation>(std::move(name))) {
  computation_->set_parent(module);
}

Builder::~Builder() = default;

Instruction* Builder::ReportError(absl::Status st) {
  if (status_.ok()) status_ = std::move(st);
  return nullptr;
}

Instruction* Builder::Fail(Opcode op, std::string message) {
  return ReportError(absl::InvalidArgumentError(absl::StrCat(OpcodeName(op), ": ", message)));
}

namespace {
// Whether every array in `s` has a byte size that int64 holds: a shape whose
// dims' product wraps around would describe a huge value as a tiny one.
bool SizeFits(const Shape& s) {
  if (s.IsTuple()) return std::all_of(s.tuple_shapes.begin(), s.tuple_shapes.end(), SizeFits);
  return s.CheckedByteSize().has_value();
}
}  // namespace

Instruction* Builder::Add(std::unique_ptr<Instruction> instr) {
  if (!status_.ok()) return nullptr;
  for (Instruction* o : instr->operands())
    if (!o) return ReportError(Internal("%s: null operand without a recorded error", OpcodeName(instr->opcode())));
  auto shape = InferShape(*instr);
  if (!shape.ok()) return ReportError(Annotate(shape.status(), metadata_.op_name.empty() ? "hlo" : metadata_.op_name));
  if (!SizeFits(*shape))
    return ReportError(InvalidArgument("%s: %s %s has more elements than memory can hold",
                                       metadata_.op_name.empty() ? "hlo" : metadata_.op_name,
                                       OpcodeName(instr->opcode()), shape->ToString(false)));
  instr->set_shape(*std::move(shape));
  instr->metadata = metadata_;
  if (folder_ && (instr->operand_count() > 0 || instr->opcode() == Opcode::kIota)) {
    bool all_const = std::all_of(instr->operands().begin(), instr->operands().end(),
                                 [](Instruction* o) { return o->opcode() == Opcode::kConstant; });
    if (all_const) {
      if (std::optional<Literal> folded = folder_(*instr)) return Constant(*std::move(folded));
    }
  }
  return computation_->AddInstruction(std::move(instr));
}

namespace {
std::unique_ptr<Instruction> Make(Opcode op, std::vector<Instruction*> operands, Shape shape = {}) {
  auto i = std::make_unique<Instruction>(op, std::move(shape));
  for (Instruction* o : operands) i->AppendOperand(o);
  return i;
}
}  // namespace

Instruction* Builder::Parameter(int64_t number, const Shape& shape, const std::string& name) {
  auto i = Make(Opcode::kParameter, {}, shape);
  i->parameter_number = number;
  i->set_name(name);
  return Add(std::move(i));
}

Instruction* Builder::Constant(Literal literal) {
  auto i = Make(Opcode::kConstant, {});
  i->literal = std::move(literal);
  return Add(std::move(i));
}

Instruction* Builder::ScalarConstant(PrimitiveType type, double value) {
  return Constant(Literal::ScalarOf(type, value));
}

Instruction* Builder::Iota(const Shape& shape, int64_t dimension) {
  if (dimension < 0 || dimension >= shape.rank()) return Fail(Opcode::kIota, "dimension out of range");
  auto i = Make(Opcode::kIota, {}, shape);
  i->dimensions = {dimension};
  return Add(std::move(i));
}

Instruction* Builder::Unary(Opcode op, Instruction* x) {
  if (OpcodeArity(op) != 1 || !IsElementwise(op)) return Fail(op, "not a unary elementwise opcode");
  return Add(Make(op, {x}));
}

Instruction* Builder::Binary(Opcode op, Instruction* a, Instruction* b) {
  if (!IsElementwiseBinary(op)) return Fail(op, "not a binary elementwise opcode");
  return Add(Make(op, {a, b}));
}

Instruction* Builder::Compare(Instruction* a, Instruction* b, ComparisonDirection dir) {
  auto i = Make(Opcode::kCompare, {a, b});
  i->comparison_direction = dir;
  return Add(std::move(i));
}

Instruction* Builder::Select(Instruction* p, Instruction* t, Instruction* f) {
  return Add(Make(Opcode::kSelect, {p, t, f}));
}
Instruction* Builder::Clamp(Instruction* lo, Instruction* x, Instruction* hi) {
  return Add(Make(Opcode::kClamp, {lo, x, hi}));
}

Instruction* Builder::Convert(Instruction* x, PrimitiveType type) {
  if (x && x->shape().element_type == type) return x;
  return Add(Make(Opcode::kConvert, {x}, Shape(type, {})));
}

Instruction* Builder::BitcastConvert(Instruction* x, PrimitiveType type) {
  return Add(Make(Opcode::kBitcastConvert, {x}, Shape(type, {})));
}

Instruction* Builder::Broadcast(Instruction* x, std::vector<int64_t> out_dims, std::vector<int64_t> dims) {
  if (x && x->shape().dims == out_dims && dims.size() == out_dims.size()) {
    bool identity = true;
    for (size_t k = 0; k < dims.size(); ++k) identity &= dims[k] == static_cast<int64_t>(k);
    if (identity) return x;
  }
  auto i = Make(Opcode::kBroadcast, {x}, Shape(PRIMITIVE_TYPE_INVALID, std::move(out_dims)));
  i->dimensions = std::move(dims);
  return Add(std::move(i));
}

Instruction* Builder::Reshape(Instruction* x, std::vector<int64_t> dims) {
  if (x && x->shape().dims == dims) return x;
  return Add(Make(Opcode::kReshape, {x}, Shape(PRIMITIVE_TYPE_INVALID, std::move(dims))));
}

Instruction* Builder::Transpose(Instruction* x, std::vector<int64_t> perm) {
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k) identity &= perm[k] == static_cast<int64_t>(k);
  if (x && identity && static_cast<int64_t>(perm.size()) == x->shape().rank()) return x;
  auto i = Make(Opcode::kTranspose, {x});
  i->dimensions = std::move(perm);
  return Add(std::move(i));
}

Instruction* Builder::Slice(Instruction* x, std::vector<int64_t> starts, std::vector<int64_t> limits,
                            std::vector<int64_t> strides) {
  auto i = Make(Opcode::kSlice, {x});
  i->slice_starts = std::move(starts);
  i->slice_limits = std::move(limits);
  i->slice_strides = std::move(strides);
  return Add(std::move(i));
}

Instruction* Builder::DynamicSlice(Instruction* x, const std::vector<Instruction*>& starts,
                                   std::vector<int64_t> sizes) {
  std::vector<Instruction*> ops = {x};
  ops.insert(ops.end(), starts.begin(), starts.end());
  auto i = Make(Opcode::kDynamicSlice, ops);
  i->dynamic_slice_sizes = std::move(sizes);
  return Add(std::move(i));
}

Instruction* Builder::DynamicUpdateSlice(Instruction* x, Instruction* update, const std::vector<Instruction*>& starts) {
  std::vector<Instruction*> ops = {x, update};
  ops.insert(ops.end(), starts.begin(), starts.end());
  return Add(Make(Opcode::kDynamicUpdateSlice, ops));
}

Instruction* Builder::Concatenate(const std::vector<Instruction*>& xs, int64_t dim) {
  if (xs.size() == 1) return xs[0];
  auto i = Make(Opcode::kConcatenate, xs);
  i->dimensions = {dim};
  return Add(std::move(i));
}

Instruction* Builder::Pad(Instruction* x, Instruction* value, std::vector<PaddingDimension> config) {
  auto i = Make(Opcode::kPad, {x, value});
  i->padding_config = std::move(config);
  return Add(std::move(i));
}

Instruction* Builder::Reverse(Instruction* x, std::vector<int64_t> dims) {
  if (dims.empty()) return x;
  auto i = Make(Opcode::kReverse, {x});
  i->dimensions = std::move(dims);
  return Add(std::move(i));
}

Instruction* Builder::Gather(Instruction* x, Instruction* indices, GatherDimensionNumbers dnums,
                             std::vector<int64_t> slice_sizes) {
  auto i = Make(Opcode::kGather, {x, indices});
  i->gather_dnums = std::move(dnums);
  i->gather_slice_sizes = std::move(slice_sizes);
  return Add(std::move(i));
}

Instruction* Builder::Scatter(Instruction* x, Instruction* indices, Instruction* updates, ScatterDimensionNumbers dnums,
                              Computation* update_computation) {
  auto i = Make(Opcode::kScatter, {x, indices, updates});
  i->scatter_dnums = std::move(dnums);
  i->AppendCalledComputation(update_computation);
  return Add(std::move(i));
}

DotDimensionNumbers BatchedDotDims(int64_t lhs_contracting, int64_t rhs_contracting, int64_t batch) {
  DotDimensionNumbers d;
  for (int64_t i = 0; i < batch; ++i) {
    d.lhs_batch_dimensions.push_back(i);
    d.rhs_batch_dimensions.push_back(i);
  }
  d.lhs_contracting_dimensions = {lhs_contracting};
  d.rhs_contracting_dimensions = {rhs_contracting};
  return d;
}

Instruction* Builder::Dot(Instruction* lhs, Instruction* rhs, DotDimensionNumbers dnums) {
  auto i = Make(Opcode::kDot, {lhs, rhs});
  i->dot_dnums = std::move(dnums);
  return Add(std::move(i));
}

Instruction* Builder::Convolution(Instruction* x, Instruction* w, Window window, ConvolutionDimensionNumbers dnums,
                                  int64_t feature_group_count, int64_t batch_group_count) {
  auto i = Make(Opcode::kConvolution, {x, w});
  i->window = std::move(window);
  i->conv_dnums = std::move(dnums);
  i->feature_group_count = feature_group_count;
  i->batch_group_count = batch_group_count;
  return Add(std::move(i));
}

Instruction* Builder::Reduce(const std::vector<Instruction*>& inputs, const std::vector<Instruction*>& inits,
                             std::vector<int64_t> dims, Computation* reducer) {
  std::vector<Instruction*> ops = inputs;
  ops.insert(ops.end(), inits.begin(), inits.end());
  auto i = Make(Opcode::kReduce, ops);
  std::sort(dims.begin(), dims.end());
  i->dimensions = std::move(dims);
  i->AppendCalledComputation(reducer);
  return Add(std::move(i));
}

Instruction* Builder::ReduceWindow(Instruction* x, Instruction* init, Window window, Computation* reducer) {
  auto i = Make(Opcode::kReduceWindow, {x, init});
  i->window = std::move(window);
  i->AppendCalledComputation(reducer);
  return Add(std::move(i));
}

Instruction* Builder::Sort(const std::vector<Instruction*>& xs, int64_t dim, Computation* comparator, bool stable) {
  auto i = Make(Opcode::kSort, xs);
  i->dimensions = {dim};
  i->is_stable = stable;
  i->AppendCalledComputation(comparator);
  return Add(std::move(i));
}

Instruction* Builder::Tuple(const std::vector<Instruction*>& xs) { return Add(Make(Opcode::kTuple, xs)); }

Instruction* Builder::GetTupleElement(Instruction* t, int64_t index) {
  if (t && t->opcode() == Opcode::kTuple && index >= 0 && index < t->operand_count()) return t->operand(index);
  auto i = Make(Opcode::kGetTupleElement, {t});
  i->tuple_index = index;
  return Add(std::move(i));
}

Instruction* Builder::Call(Computation* c, const std::vector<Instruction*>& args) {
  auto i = Make(Opcode::kCall, args);
  i->AppendCalledComputation(c);
  return Add(std::move(i));
}

Instruction* Builder::While(Computation* condition, Computation* body, Instruction* init) {
  // XLA's order: body first, then condition.
  auto i = Make(Opcode::kWhile, {init});
  i->AppendCalledComputation(body);
  i->AppendCalledComputation(condition);
  return Add(std::move(i));
}

Instruction* Builder::Conditional(Instruction* branch_index, const std::vector<Computation*>& branches,
                                  const std::vector<Instruction*>& operands) {
  std::vector<Instruction*> ops = {branch_index};
  ops.insert(ops.end(), operands.begin(), operands.end());
  auto i = Make(Opcode::kConditional, ops);
  for (Computation* c : branches) i->AppendCalledComputation(c);
  return Add(std::move(i));
}

Computation* Builder::ScalarReducer(Opcode op, PrimitiveType type) {
  std::string name = absl::StrCat(OpcodeName(op), "_", PrimitiveTypeName(type));
  for (const auto& c : module_->computations())
    if (c->name() == name) return c.get();
  Builder b(module_, name);
  Instruction* x = b.Parameter(0, Shape::Scalar(type), "x");
  Instruction* y = b.Parameter(1, Shape::Scalar(type), "y");
  auto c = b.Build(b.Binary(op, x, y));
  if (!c.ok()) {
    ReportError(c.status());
    return nullptr;
  }
  return *c;
}

absl::StatusOr<Computation*> Builder::Build(Instruction* root) {
  RETURN_IF_ERROR(status_);
  if (!root) return Internal("Build() without a root");
  computation_->set_root(root);
  computation_->Canonicalize();
  return module_->AddComputation(std::move(computation_));
}

}  // namespace xonnx::hlo
