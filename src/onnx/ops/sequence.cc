// Sequences and optionals. A sequence's length is known at compile time
// (its positions must be too), so it converts to a list of values; an empty
// optional is a name in GraphValues::nones and a full one is its value.
#include <algorithm>

#include "base/status.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;

absl::StatusOr<SequenceValue> SequenceInput(NodeContext& ctx, int i) {
  const SequenceValue* s = ctx.sequence_input(i);
  if (!s) return ctx.Error(absl::StrCat("input ", i, " must be a sequence"));
  return *s;
}

// A position input (scalar int), normalized to [0, len] (`len` allowed only
// when `end_ok`), or `def` when absent.
absl::StatusOr<int64_t> Position(NodeContext& ctx, int i, int64_t len, int64_t def, bool end_ok) {
  if (!ctx.has_input(i)) return def;
  ASSIGN_OR_RETURN(std::vector<int64_t> p, ctx.ConstInts(i));
  if (p.size() != 1) return ctx.Error("the position must be a scalar");
  int64_t pos = p[0] < 0 ? p[0] + len : p[0];
  if (pos < 0 || pos > len || (pos == len && !end_ok))
    return ctx.Error(absl::StrCat("position ", p[0], " is out of range for a sequence of length ", len));
  return pos;
}

absl::Status SequenceEmpty(NodeContext& ctx) {
  SequenceValue s;
  ASSIGN_OR_RETURN(s.type, HloType(ctx.attr_i("dtype", onnx::TensorProto::FLOAT)));
  ctx.set_sequence_output(0, std::move(s));
  return absl::OkStatus();
}

absl::Status SequenceConstruct(NodeContext& ctx) {
  SequenceValue s;
  for (int i = 0; i < ctx.input_count(); ++i) {
    Instruction* x = ctx.input(i);
    if (!x) return ctx.b().status();
    if (i > 0 && x->shape().element_type != s.type) return ctx.Error("sequence elements must have one element type");
    s.type = x->shape().element_type;
    s.elements.push_back(x);
  }
  ctx.set_sequence_output(0, std::move(s));
  return absl::OkStatus();
}

absl::Status SequenceInsert(NodeContext& ctx) {
  ASSIGN_OR_RETURN(SequenceValue s, SequenceInput(ctx, 0));
  Instruction* x = ctx.input(1);
  if (!x) return ctx.b().status();
  if (x->shape().element_type != s.type) return ctx.Error("the tensor's element type differs from the sequence's");
  int64_t len = s.elements.size();
  ASSIGN_OR_RETURN(int64_t pos, Position(ctx, 2, len, len, true));
  s.elements.insert(s.elements.begin() + pos, x);
  ctx.set_sequence_output(0, std::move(s));
  return absl::OkStatus();
}

absl::Status SequenceAt(NodeContext& ctx) {
  ASSIGN_OR_RETURN(SequenceValue s, SequenceInput(ctx, 0));
  ASSIGN_OR_RETURN(int64_t pos, Position(ctx, 1, s.elements.size(), 0, false));
  ctx.set_output(0, s.elements[pos]);
  return absl::OkStatus();
}

absl::Status SequenceErase(NodeContext& ctx) {
  ASSIGN_OR_RETURN(SequenceValue s, SequenceInput(ctx, 0));
  int64_t len = s.elements.size();
  if (len == 0) return ctx.Error("erasing from an empty sequence");
  ASSIGN_OR_RETURN(int64_t pos, Position(ctx, 1, len, len - 1, false));
  s.elements.erase(s.elements.begin() + pos);
  ctx.set_sequence_output(0, std::move(s));
  return absl::OkStatus();
}

absl::Status SequenceLength(NodeContext& ctx) {
  ASSIGN_OR_RETURN(SequenceValue s, SequenceInput(ctx, 0));
  ctx.set_output(0, ctx.b().Constant(hlo::Literal::Scalar<int64_t>(s.elements.size())));
  return absl::OkStatus();
}

absl::Status ConcatFromSequence(NodeContext& ctx) {
  ASSIGN_OR_RETURN(SequenceValue s, SequenceInput(ctx, 0));
  if (s.elements.empty()) return ctx.Error("concatenating an empty sequence");
  if (!ctx.has_attr("axis")) return ctx.Error("needs the axis attribute");
  bool new_axis = ctx.attr_i("new_axis", 0) != 0;
  int64_t rank = s.elements[0]->shape().rank();
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), rank + (new_axis ? 1 : 0)));
  hlo::Builder& b = ctx.b();
  std::vector<Instruction*> parts;
  for (Instruction* e : s.elements) {
    if (new_axis) {
      std::vector<int64_t> d = e->shape().dims;
      d.insert(d.begin() + axis, 1);
      e = b.Reshape(e, d);
    }
    parts.push_back(e);
  }
  ctx.set_output(0, parts.size() == 1 ? parts[0] : b.Concatenate(parts, axis));
  return absl::OkStatus();
}

absl::Status SplitToSequence(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* x = ctx.input(0);
  if (!x) return b.status();
  const auto& dims = x->shape().dims;
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.attr_i("axis", 0), dims.size()));
  int64_t n = dims[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.has_input(1)) {
    sizes.assign(n, 1);
    squeeze = ctx.attr_i("keepdims", 1) == 0;
  } else {
    ASSIGN_OR_RETURN(hlo::Literal split, ctx.ConstInput(1));
    std::vector<int64_t> v = split.ToInt64Vector();
    if (split.shape().rank() == 0) {
      if (v[0] <= 0) return ctx.Error("the split size must be positive");
      for (int64_t at = 0; at < n; at += v[0]) sizes.push_back(std::min(v[0], n - at));
    } else {
      int64_t total = 0;
      for (int64_t s : v) {
        if (s < 0) return ctx.Error("split sizes must not be negative");
        total += s;
      }
      if (total != n) return ctx.Error(absl::StrCat("split sizes add up to ", total, ", the axis has ", n));
      sizes = v;
    }
  }
  SequenceValue seq;
  seq.type = x->shape().element_type;
  int64_t at = 0;
  for (int64_t s : sizes) {
    std::vector<int64_t> start(dims.size(), 0), limit = dims, strides(dims.size(), 1);
    start[axis] = at;
    limit[axis] = at + s;
    Instruction* part = b.Slice(x, start, limit, strides);
    if (squeeze) {
      std::vector<int64_t> d = dims;
      d.erase(d.begin() + axis);
      part = b.Reshape(part, d);
    }
    seq.elements.push_back(part);
    at += s;
  }
  ctx.set_sequence_output(0, std::move(seq));
  return absl::OkStatus();
}

// The body runs once per element: sequence inputs give their element i,
// other inputs are passed whole; each body output becomes a sequence.
absl::Status SequenceMap(NodeContext& ctx) {
  const onnx::GraphProto* body = ctx.attr_g("body");
  if (!body) return ctx.Error("needs a body");
  if (body->input_size() != ctx.input_count()) return ctx.Error("the body's inputs do not match the node's");
  ASSIGN_OR_RETURN(SequenceValue first, SequenceInput(ctx, 0));
  size_t len = first.elements.size();
  for (int i = 1; i < ctx.input_count(); ++i)
    if (const SequenceValue* s = ctx.sequence_input(i); s && s->elements.size() != len)
      return ctx.Error("the input sequences differ in length");
  std::vector<SequenceValue> outs(body->output_size());
  for (size_t k = 0; k < len; ++k) {
    GraphValues scope = ctx.values();
    for (int i = 0; i < ctx.input_count(); ++i) {
      const std::string& name = body->input(i).name();
      if (const SequenceValue* s = ctx.sequence_input(i)) {
        scope.values[name] = s->elements[k];
      } else {
        Instruction* x = ctx.input(i);
        if (!x) return ctx.b().status();
        scope.values[name] = x;
      }
    }
    RETURN_IF_ERROR(ctx.ConvertSubgraph(*body, scope));
    for (int o = 0; o < body->output_size(); ++o) {
      auto it = scope.values.find(body->output(o).name());
      if (it == scope.values.end())
        return ctx.Error(absl::StrCat("body output '", body->output(o).name(), "' is not a tensor"));
      outs[o].type = it->second->shape().element_type;
      outs[o].elements.push_back(it->second);
    }
  }
  // An empty map keeps the declared element types.
  for (int o = 0; o < body->output_size(); ++o) {
    if (len == 0 && body->output(o).type().has_tensor_type()) {
      ASSIGN_OR_RETURN(outs[o].type, HloType(body->output(o).type().tensor_type().elem_type()));
    }
    ctx.set_sequence_output(o, std::move(outs[o]));
  }
  return absl::OkStatus();
}

absl::Status Optional(NodeContext& ctx) {
  if (!ctx.has_input(0)) {
    ctx.set_none_output(0);
    return absl::OkStatus();
  }
  return ctx.ForwardInput(0, 0);
}

absl::Status OptionalHasElement(NodeContext& ctx) {
  ctx.set_output(0, ctx.b().Constant(hlo::Literal::Scalar<bool>(!ctx.is_none(0))));
  return absl::OkStatus();
}

absl::Status OptionalGetElement(NodeContext& ctx) {
  if (ctx.is_none(0)) return ctx.Error("the optional input is empty");
  return ctx.ForwardInput(0, 0);
}

}  // namespace

void RegisterSequenceOps(Registry& r) {
  r.Add("SequenceEmpty", SequenceEmpty, 11);
  r.Add("SequenceConstruct", SequenceConstruct, 11);
  r.Add("SequenceInsert", SequenceInsert, 11);
  r.Add("SequenceAt", SequenceAt, 11);
  r.Add("SequenceErase", SequenceErase, 11);
  r.Add("SequenceLength", SequenceLength, 11);
  r.Add("ConcatFromSequence", ConcatFromSequence, 11);
  r.Add("SplitToSequence", SplitToSequence, 11);
  r.Add("SequenceMap", SequenceMap, 17);
  r.Add("Optional", Optional, 15);
  r.Add("OptionalHasElement", OptionalHasElement, 15);
  r.Add("OptionalGetElement", OptionalGetElement, 15);
}

}  // namespace xonnx::onnx_import
