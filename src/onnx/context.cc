#include "onnx/context.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/importer.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {

const StringTensor* NodeContext::string_input(int i) const {
  if (!has_input(i)) return nullptr;
  auto it = values_.strings.find(node_.input(i));
  return it == values_.strings.end() ? nullptr : &it->second;
}

const SequenceValue* NodeContext::sequence_input(int i) const {
  if (!has_input(i)) return nullptr;
  auto it = values_.sequences.find(node_.input(i));
  return it == values_.sequences.end() ? nullptr : &it->second;
}

bool NodeContext::is_none(int i) const { return !has_input(i) || values_.nones.count(node_.input(i)); }

void NodeContext::set_sequence_output(int i, SequenceValue v) {
  if (wants_output(i)) values_.sequences[node_.output(i)] = std::move(v);
}

void NodeContext::set_none_output(int i) {
  if (wants_output(i)) values_.nones.insert(node_.output(i));
}

bool GraphValues::Copy(const std::string& from, GraphValues& to, const std::string& name) const {
  if (auto v = values.find(from); v != values.end()) {
    to.values[name] = v->second;
  } else if (auto s = sequences.find(from); s != sequences.end()) {
    to.sequences[name] = s->second;
  } else if (auto t = strings.find(from); t != strings.end()) {
    to.strings[name] = t->second;
  } else if (nones.count(from)) {
    to.nones.insert(name);
  } else {
    return false;
  }
  return true;
}

absl::Status NodeContext::ForwardInput(int i, int o) {
  if (!wants_output(o)) return absl::OkStatus();
  if (!has_input(i)) {
    set_none_output(o);
  } else if (!values_.Copy(node_.input(i), values_, node_.output(o))) {
    return Error(absl::StrCat("input ", i, " is not defined"));
  }
  return absl::OkStatus();
}

absl::Status NodeContext::SetOutputFrom(int o, const GraphValues& scope, const std::string& name) {
  if (!wants_output(o)) return absl::OkStatus();
  if (!scope.Copy(name, values_, node_.output(o)))
    return Error(absl::StrCat("subgraph output '", name, "' is never produced"));
  return absl::OkStatus();
}

void NodeContext::set_string_output(int i, StringTensor v) {
  if (wants_output(i)) values_.strings[node_.output(i)] = std::move(v);
}

hlo::Instruction* NodeContext::input(int i) {
  if (!has_input(i)) return nullptr;
  if (values_.strings.count(node_.input(i))) {
    b_.ReportError(
        Unsupported(absl::StrCat("input '", node_.input(i), "' is a string tensor, which this op cannot take")));
    return nullptr;
  }
  auto it = values_.values.find(node_.input(i));
  if (it == values_.values.end()) {
    if (values_.sequences.count(node_.input(i)) || values_.nones.count(node_.input(i))) {
      b_.ReportError(Error(absl::StrCat("input '", node_.input(i), "' is a ",
                                        values_.nones.count(node_.input(i)) ? "empty optional" : "sequence",
                                        ", where this op takes a tensor")));
      return nullptr;
    }
    b_.ReportError(Error(absl::StrCat("input '", node_.input(i), "' is not defined before the node")));
    return nullptr;
  }
  return it->second;
}

absl::StatusOr<hlo::Literal> NodeContext::ConstInput(int i) {
  hlo::Instruction* x = input(i);
  if (!x) return Error(absl::StrCat("input ", i, " is required"));
  return RequireConstant(x, absl::StrCat("input ", i, " ('", node_.input(i), "')"));
}

absl::StatusOr<hlo::Literal> NodeContext::RequireConstant(const hlo::Instruction* x, const std::string& what) {
  if (x->opcode() == hlo::Opcode::kConstant) return *x->literal;
  // Which model inputs does the value depend on? Binding them to their
  // values at compile time makes it a constant.
  // Only the entry's parameters of graph inputs (metadata "Input") can be
  // bound; a branch's or loop body's parameters hold values computed at run
  // time, which no binding makes known.
  std::vector<std::string> params;
  bool computed = false;
  std::vector<const hlo::Instruction*> work = {x};
  absl::flat_hash_set<const hlo::Instruction*> seen;
  while (!work.empty()) {
    const hlo::Instruction* w = work.back();
    work.pop_back();
    if (!seen.insert(w).second) continue;
    if (w->opcode() == hlo::Opcode::kParameter) {
      if (w->metadata.op_type == "Input")
        params.push_back(w->metadata.op_name);
      else
        computed = true;
    }
    for (const hlo::Instruction* op : w->operands()) work.push_back(op);
  }
  if (computed) params.clear();
  absl::Status st = Unsupported(
      absl::StrCat(what, " must be known at compile time",
                   computed         ? "; it is computed at run time inside control flow"
                   : params.empty() ? ""
                                    : absl::StrCat("; it depends on model input(s) ", absl::StrJoin(params, ", "))));
  if (!params.empty()) st.SetPayload(kNeedsInputValuesPayload, absl::Cord(absl::StrJoin(params, ",")));
  return st;
}

absl::StatusOr<std::vector<int64_t>> NodeContext::ConstInts(int i) {
  ASSIGN_OR_RETURN(hlo::Literal l, ConstInput(i));
  if (!hlo::IsInteger(l.shape().element_type)) return Error(absl::StrCat("input ", i, " must be an integer tensor"));
  return l.ToInt64Vector();
}

void NodeContext::set_output(int i, hlo::Instruction* v) {
  if (wants_output(i) && v) values_.values[node_.output(i)] = v;
}

const onnx::AttributeProto* NodeContext::Attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeContext::attr_i(const std::string& name, int64_t def) const {
  const auto* a = Attr(name);
  return a ? a->i() : def;
}
float NodeContext::attr_f(const std::string& name, float def) const {
  const auto* a = Attr(name);
  return a ? a->f() : def;
}
std::string NodeContext::attr_s(const std::string& name, const std::string& def) const {
  const auto* a = Attr(name);
  return a ? a->s() : def;
}
std::vector<int64_t> NodeContext::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const auto* a = Attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}
std::vector<float> NodeContext::attr_floats(const std::string& name) const {
  const auto* a = Attr(name);
  return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : std::vector<float>{};
}
const onnx::TensorProto* NodeContext::attr_t(const std::string& name) const {
  const auto* a = Attr(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

const onnx::GraphProto* NodeContext::attr_g(const std::string& name) const {
  const auto* a = Attr(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

absl::Status NodeContext::ConvertSubgraph(const onnx::GraphProto& g, GraphValues& scope) {
  const size_t before = scope.checks.size();
  RETURN_IF_ERROR(ConvertSubgraphInto(b_, g, scope));
  // Converted into this node's computation: its checks are this scope's.
  for (size_t k = before; k < scope.checks.size(); ++k) values_.checks.push_back(scope.checks[k]);
  scope.checks.resize(before);
  return absl::OkStatus();
}

absl::Status NodeContext::ConvertSubgraphInto(hlo::Builder& b, const onnx::GraphProto& g, GraphValues& scope) {
  if (!opsets_) return Error("subgraphs cannot be converted here");
  absl::Status st = ConvertNodes(g, *opsets_, b, scope);
  if (!st.ok())
    return Annotate(st, absl::StrCat("node '", node_.name(), "' (", node_.op_type(), ") subgraph '", g.name(), "'"));
  return absl::OkStatus();
}

absl::Status NodeContext::CheckIndexRange(hlo::Instruction* indices, int64_t lo, int64_t hi, const std::string& what) {
  if (!indices) return b_.status();
  if (indices->shape().ElementCount() == 0) return absl::OkStatus();
  if (indices->opcode() == hlo::Opcode::kConstant) {
    const hlo::Literal& l = *indices->literal;
    bool inside = true;
    for (int64_t i = 0; i < l.element_count() && inside; ++i)
      if (int64_t v = l.GetAsInt64(i); v < lo || v > hi) {
        if (!values_.maybe_skipped) return Error(absl::StrCat(what, ": ", v, " is outside [", lo, ", ", hi, "]"));
        inside = false;
      }
    if (inside) return absl::OkStatus();
  }
  if (!values_.check_indices) return absl::OkStatus();
  hlo::Builder& b = b_;
  hlo::Instruction* x = b.Convert(indices, hlo::S64);
  std::vector<int64_t> all(indices->shape().rank());
  for (size_t d = 0; d < all.size(); ++d) all[d] = d;
  auto reduce = [&](hlo::Opcode op, int64_t init) {
    hlo::Instruction* r =
        b.Reduce({x}, {b.Constant(hlo::Literal::Scalar<int64_t>(init))}, all, b.ScalarReducer(op, hlo::S64));
    return b.Reshape(r, {1});
  };
  hlo::Instruction* range = b.Concatenate({reduce(hlo::Opcode::kMinimum, std::numeric_limits<int64_t>::max()),
                                           reduce(hlo::Opcode::kMaximum, std::numeric_limits<int64_t>::min())},
                                          0);
  RETURN_IF_ERROR(b.status());
  values_.checks.push_back(
      {range, lo, hi, absl::StrCat("node '", node_.name(), "' (", node_.op_type(), ", opset ", opset_, "): ", what)});
  return absl::OkStatus();
}

hlo::Instruction* EmptyIndexRange(hlo::Builder& b) {
  return b.Constant(
      hlo::Literal::Vector<int64_t>({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}));
}

hlo::Instruction* MergeIndexRanges(hlo::Builder& b, hlo::Instruction* a, hlo::Instruction* c) {
  hlo::Instruction* lo = b.Binary(hlo::Opcode::kMinimum, b.Slice(a, {0}, {1}, {1}), b.Slice(c, {0}, {1}, {1}));
  hlo::Instruction* hi = b.Binary(hlo::Opcode::kMaximum, b.Slice(a, {1}, {2}, {1}), b.Slice(c, {1}, {2}, {1}));
  return b.Concatenate({lo, hi}, 0);
}

absl::Status NodeContext::Error(const std::string& msg) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node_.name(), "' (", node_.op_type(), ", opset ", opset_, "): ", msg));
}
absl::Status NodeContext::Unsupported(const std::string& msg) const {
  return absl::UnimplementedError(
      absl::StrCat("node '", node_.name(), "' (", node_.op_type(), ", opset ", opset_, "): ", msg));
}

void FreeNames(const onnx::GraphProto& g, const std::set<std::string>& defined, std::set<std::string>& free) {
  std::set<std::string> local = defined;
  for (const auto& i : g.input()) local.insert(i.name());
  for (const auto& t : g.initializer()) local.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& in : n.input())
      if (!in.empty() && !local.count(in)) free.insert(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) FreeNames(a.g(), local, free);
      for (const auto& sub : a.graphs()) FreeNames(sub, local, free);
    }
    for (const auto& out : n.output()) local.insert(out);
  }
  for (const auto& o : g.output())
    if (!local.count(o.name())) free.insert(o.name());
}

absl::StatusOr<std::vector<hlo::Instruction*>> BroadcastAll(NodeContext& ctx, std::vector<hlo::Instruction*> xs) {
  std::vector<int64_t> dims;
  for (hlo::Instruction* x : xs) {
    if (!x) return ctx.Error("missing input");
    auto d = BroadcastDims(dims, x->shape().dims);
    if (!d.ok()) return ctx.Error(std::string(d.status().message()));
    dims = *d;
  }
  for (auto& x : xs) x = BroadcastTo(ctx.b(), x, dims);
  return xs;
}

hlo::Instruction* Splat(hlo::Builder& b, hlo::PrimitiveType type, double value, const std::vector<int64_t>& dims) {
  return b.Broadcast(b.ScalarConstant(type, value), dims, {});
}

hlo::Instruction* SplatLike(hlo::Builder& b, hlo::Instruction* like, double value) {
  if (!like) return nullptr;
  return Splat(b, like->shape().element_type, value, like->shape().dims);
}

absl::StatusOr<int64_t> NormalizeAxis(const NodeContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

hlo::Instruction* ReduceOver(hlo::Builder& b, hlo::Instruction* x, hlo::Opcode op, double init,
                             std::vector<int64_t> axes, bool keepdims) {
  if (!x) return nullptr;
  hlo::PrimitiveType t = x->shape().element_type;
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  hlo::Instruction* r = b.Reduce({x}, {b.ScalarConstant(t, init)}, axes, b.ScalarReducer(op, t));
  if (!keepdims) return r;
  std::vector<int64_t> kd = x->shape().dims;
  for (int64_t a : axes) kd[a] = 1;
  return b.Reshape(r, kd);
}

hlo::Instruction* TakeAlongAxis(hlo::Builder& b, hlo::Instruction* x, hlo::Instruction* indices, int64_t axis) {
  if (!x || !indices) return nullptr;
  int64_t r = x->shape().rank(), q = indices->shape().rank();
  hlo::GatherDimensionNumbers d;
  for (int64_t i = 0; i < axis; ++i) d.offset_dims.push_back(i);
  for (int64_t i = axis + 1; i < r; ++i) d.offset_dims.push_back(i + q - 1);
  d.collapsed_slice_dims = {axis};
  d.start_index_map = {axis};
  d.index_vector_dim = q;
  std::vector<int64_t> sizes = x->shape().dims;
  if (sizes[axis] == 0) {
    // Nothing to take (no detection survived, say): an HLO gather cannot
    // slice an empty axis. Its indices can only be empty too, which the
    // index checks see to; the result has no element to read.
    std::vector<int64_t> dims(x->shape().dims.begin(), x->shape().dims.begin() + axis);
    dims.insert(dims.end(), indices->shape().dims.begin(), indices->shape().dims.end());
    dims.insert(dims.end(), x->shape().dims.begin() + axis + 1, x->shape().dims.end());
    return b.Broadcast(b.Constant(hlo::Literal::ScalarOf(x->shape().element_type, 0)), dims, {});
  }
  sizes[axis] = 1;
  return b.Gather(x, indices, d, sizes);
}

hlo::Instruction* ElementIndices(hlo::Builder& b, hlo::Instruction* indices, int64_t axis,
                                 const std::vector<int64_t>& data_dims) {
  if (!indices) return nullptr;
  const int64_t rank = indices->shape().rank();
  const std::vector<int64_t>& dims = indices->shape().dims;
  const std::vector<int64_t> strides = hlo::Shape(hlo::S64, data_dims).Strides();
  hlo::Instruction* flat = b.Convert(indices, hlo::S64);
  if (strides[axis] != 1) flat = b.Binary(hlo::Opcode::kMultiply, flat, SplatLike(b, flat, strides[axis]));
  // The other coordinates' parts as broadcasts of small constants (j times
  // the stride, along each dim), which fuse into the loop computing the
  // sum, where an iota is a pass of its own.
  for (int64_t k = 0; k < rank; ++k) {
    if (k == axis || dims[k] <= 1) continue;
    std::vector<int64_t> steps(dims[k]);
    for (int64_t j = 0; j < dims[k]; ++j) steps[j] = j * strides[k];
    flat = b.Binary(hlo::Opcode::kAdd, flat, b.Broadcast(b.Constant(hlo::Literal::Vector<int64_t>(steps)), dims, {k}));
  }
  std::vector<int64_t> d1 = dims;
  d1.push_back(1);
  return b.Reshape(flat, d1);
}

hlo::Instruction* GatherElementsAlongAxis(hlo::Builder& b, hlo::Instruction* x, hlo::Instruction* indices,
                                          int64_t axis) {
  if (!x || !indices) return nullptr;
  const std::vector<int64_t>& xd = x->shape().dims;
  // An empty axis (see TakeAlongAxis): the result is shaped as the indices.
  if (xd[axis] == 0)
    return b.Broadcast(b.Constant(hlo::Literal::ScalarOf(x->shape().element_type, 0)), indices->shape().dims, {});
  hlo::GatherDimensionNumbers d;
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = indices->shape().rank();
  return b.Gather(b.Reshape(x, {x->shape().ElementCount()}), ElementIndices(b, indices, axis, xd), d, {1});
}

double LowestValue(hlo::PrimitiveType t) {
  return hlo::TypeSwitch(t, [](auto tag) -> double {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      return static_cast<double>(std::numeric_limits<T>::lowest());
    else
      return -std::numeric_limits<double>::infinity();
  });
}

double HighestValue(hlo::PrimitiveType t) {
  return hlo::TypeSwitch(t, [](auto tag) -> double {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      return static_cast<double>(std::numeric_limits<T>::max());
    else
      return std::numeric_limits<double>::infinity();
  });
}

std::vector<int64_t> SpatialAxes(const hlo::Instruction* x) {
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < x->shape().rank(); ++i) axes.push_back(i);
  return axes;
}

}  // namespace xonnx::onnx_import
