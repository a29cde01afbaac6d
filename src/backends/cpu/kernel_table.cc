#include "backends/cpu/kernel_table.h"

#include <array>
#include <vector>

#include "base/status.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

using MakerResult = absl::StatusOr<std::optional<Thunk>>;

// The constant literal of operand k, or null: oneDNN packs constant
// weights once, at compile time.
const hlo::Literal* ConstantOperand(const Instruction& i, int k) {
  const Instruction* w = i.operand(k);
  return w->opcode() == Opcode::kConstant ? &*w->literal : nullptr;
}

// Interpolation matrices: only when the planner reads the activation as
// it is (a view is oneDNN's to take). The in-place form's weights are
// read at compile time, so their broadcast is a view never made.
MakerResult SparseDot(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  if (auto v = ctx.plan.dot_views.of.find(&i); v != ctx.plan.dot_views.of.end())
    if (v->second[1] || (v->second[0] && !SparseDotInPlace(i))) return std::nullopt;
  return MakeSparseDotThunk(i, io);
}

MakerResult DnnlMatmul(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  if (!ctx.options.use_dnnl) return std::nullopt;
  if (auto t = MakeDnnlDotThunk(i, io, ConstantOperand(i, 1), Epilogue{}, ctx.plan.ViewsOf(&i), ctx.keep_alive))
    return t;
  if (ctx.plan.dot_views.of.contains(&i))
    return Unimplemented("%s: oneDNN rejected a dot planned to read views", i.name());
  return std::nullopt;
}

// A product of a few rows by constant weights. The gemv kernel reads its
// operand's buffer row-major, so where the planner chose to read the
// operand through a view, only a view that is that layout qualifies (a
// reshape of the pooled features before a classifier).
MakerResult Gemv(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  if (auto v = ctx.plan.dot_views.of.find(&i); v != ctx.plan.dot_views.of.end()) {
    const std::optional<PlannedView>& lhs = v->second[0];
    if (v->second[1]) return std::nullopt;
    if (lhs && (lhs->view.offset != 0 || lhs->view.strides != StridedView::RowMajor(lhs->view.dims).strides))
      return std::nullopt;
  }
  return MakeGemvThunk(i, io);
}

// A few rows per batch by a matrix known only at run time (a decoder
// step's attention), read in place through the views planned for it.
MakerResult SmallDot(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  return MakeSmallDotThunk(i, io, ctx.plan.ViewsOf(&i));
}

// An integer product the planner put on oneDNN's 8-bit primitives: its
// widened operands were never computed, so no other kernel can run it.
MakerResult DnnlInteger(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  auto n = ctx.plan.integer_products.of.find(&i);
  if (n == ctx.plan.integer_products.of.end()) return std::nullopt;
  std::optional<Thunk> t = i.opcode() == Opcode::kConvolution
                               ? MakeDnnlIntegerConvThunk(i, io, n->second, ctx.keep_alive)
                               : MakeDnnlIntegerDotThunk(i, io, n->second, ctx.keep_alive);
  if (!t) return Unimplemented("%s: oneDNN rejected an integer product planned for its 8-bit primitives", i.name());
  return t;
}

// A product by block-quantized weights the planner gave their packed bytes
// to read: the unpacked weights were never computed.
MakerResult PackedMatmul(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  auto p = ctx.plan.packed_products.of.find(&i);
  if (p == ctx.plan.packed_products.of.end()) return std::nullopt;
  if (std::optional<Thunk> t = MakePackedDotThunk(i, io, p->second)) return t;
  return Unimplemented("%s: a product planned on packed weights has operands the kernel does not take", i.name());
}

MakerResult DnnlConv(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  if (!ctx.options.use_dnnl) return std::nullopt;
  ConvLayouts layouts = ctx.plan.LayoutsOf(&i);
  if (auto t =
          MakeDnnlConvThunk(i, io, ConstantOperand(i, 1), Epilogue{}, ctx.options.winograd, layouts, ctx.keep_alive))
    return t;
  if (layouts.src_block || layouts.dst_block || layouts.src_channels_first)
    return Unimplemented("%s: oneDNN rejected a convolution planned on blocked activations", i.name());
  return std::nullopt;
}

MakerResult DnnlDeconv(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  if (!ctx.options.use_dnnl) return std::nullopt;
  return MakeDnnlDeconvThunk(i, io, ConstantOperand(i, 1), ctx.keep_alive);
}

MakerResult DnnlPool(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  if (!ctx.options.use_dnnl) return std::nullopt;
  int block = ctx.plan.BlockOf(&i);
  if (auto t = MakeDnnlPoolThunk(i, io, block)) return t;
  if (block) return Unimplemented("%s: oneDNN rejected a max pool planned on blocked activations", i.name());
  return std::nullopt;
}

// A concatenation of blocked channels (blocked-layout planning).
MakerResult BlockedConcat(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  int block = ctx.plan.BlockOf(&i);
  if (!block) return std::nullopt;
  if (auto t = MakeBlockedConcatThunk(i, io, block)) return t;
  return Unimplemented("%s: a concatenation planned on blocked activations has parts of partial blocks", i.name());
}

MakerResult FastReduce(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  int block = ctx.plan.BlockOf(i.operand(0));
  if (auto t = MakeFastReduceThunk(i, io, block)) return t;
  if (block) return Unimplemented("%s: a reduce planned on blocked activations is not a pool over them", i.name());
  return std::nullopt;
}
MakerResult FastReduceWindow(const EmitContext&, const Instruction& i, const ThunkIo& io) {
  return MakeFastReduceWindowThunk(i, io);
}
MakerResult FastMove(const EmitContext&, const Instruction& i, const ThunkIo& io) { return MakeFastMoveThunk(i, io); }
MakerResult DataMove(const EmitContext&, const Instruction& i, const ThunkIo& io) { return MakeDataMoveThunk(i, io); }
MakerResult Compute(const EmitContext&, const Instruction& i, const ThunkIo& io) { return MakeComputeThunk(i, io); }
// An elementwise instruction no fusion took (fusion planning off): a fused
// loop of one.
MakerResult SingleElementwise(const EmitContext&, const Instruction& i, const ThunkIo& io) {
  if (!i.shape().IsArray()) return std::nullopt;
  FusionSpec spec;
  spec.members = {&i};
  for (const Instruction* op : i.operands()) spec.inputs.push_back(op);
  spec.strided.assign(spec.inputs.size(), false);
  ASSIGN_OR_RETURN(Thunk t, MakeFusionThunk(spec, io));
  return t;
}
// The leading positions along a sort's dim that the program reads: all of
// them, unless every result is read only by slices (TopK imports as a sort
// of values and positions, sliced to the first k), whose largest limit along
// the dim it is.
int64_t SortedPrefixRead(const Plan& plan, const Instruction& sort) {
  const int64_t dim = sort.dimensions[0], len = sort.operand(0)->shape().dims[dim];
  if (&sort == plan.root()) return len;
  int64_t prefix = 0;
  for (const Instruction* gte : plan.users(&sort)) {
    if (gte->opcode() != Opcode::kGetTupleElement || gte == plan.root()) return len;
    for (const Instruction* slice : plan.users(gte)) {
      if (slice->opcode() != Opcode::kSlice) return len;
      prefix = std::max(prefix, slice->slice_limits[dim]);
    }
  }
  return prefix;
}
MakerResult Sort(const EmitContext& ctx, const Instruction& i, const ThunkIo& io) {
  return MakeSortThunk(i, io, SortedPrefixRead(ctx.plan, i));
}
MakerResult GatherScatter(const EmitContext&, const Instruction& i, const ThunkIo& io) {
  return MakeGatherScatterThunk(i, io);
}

constexpr KernelMaker kReference{"kernel", MakeReferenceKernelThunk};
constexpr KernelMaker kEvaluator{"control-flow", MakeEvaluatorThunk};

struct KernelRow {
  Opcode opcode;
  std::vector<KernelMaker> makers;
};

// One row per opcode with kernels of its own; an elementwise opcode
// without a row runs as a fused loop of one, every other on the reference
// kernel alone.
const std::vector<KernelRow>& Rows() {
  static const auto* rows = new std::vector<KernelRow>{
      {Opcode::kDot,
       {{"packed-matmul", PackedMatmul},
        {"dnnl-int8-matmul", DnnlInteger},
        {"sparse-dot", SparseDot},
        {"gemv", Gemv},
        {"small-dot", SmallDot},
        {"dnnl-matmul", DnnlMatmul},
        {"dot", Compute},
        kReference}},
      {Opcode::kConvolution,
       {{"dnnl-int8-conv", DnnlInteger},
        {"dnnl-conv", DnnlConv},
        {"dnnl-deconv", DnnlDeconv},
        {"convolution", Compute},
        kReference}},
      {Opcode::kReduce, {{"reduce", FastReduce}, {"reduce", Compute}, kReference}},
      {Opcode::kSort, {{"sort", Sort}, kReference}},
      {Opcode::kReduceWindow, {{"dnnl-pool", DnnlPool}, {"reduce-window", FastReduceWindow}, kReference}},
      {Opcode::kTranspose, {{"transpose", FastMove}, kReference}},
      {Opcode::kSlice, {{"slice", FastMove}, kReference}},
      {Opcode::kBroadcast, {{"broadcast", FastMove}, kReference}},
      {Opcode::kConcatenate, {{"concatenate-blocked", BlockedConcat}, {"concatenate", DataMove}, kReference}},
      {Opcode::kPad, {{"pad", DataMove}, kReference}},
      {Opcode::kReverse, {{"reverse", DataMove}, kReference}},
      {Opcode::kDynamicSlice, {{"dynamic-slice", DataMove}, kReference}},
      {Opcode::kDynamicUpdateSlice, {{"dynamic-update-slice", DataMove}, kReference}},
      {Opcode::kIota, {{"iota", DataMove}, kReference}},
      {Opcode::kReshape, {{"copy", DataMove}, kReference}},
      {Opcode::kBitcastConvert, {{"copy", DataMove}, kReference}},
      {Opcode::kGather, {{"gather", GatherScatter}, kReference}},
      {Opcode::kScatter, {{"scatter", GatherScatter}, kReference}},
      {Opcode::kWhile, {{"while", MakeNativeWhileThunk}, kEvaluator}},
      {Opcode::kConditional, {{"conditional", MakeNativeConditionalThunk}, kEvaluator}},
      {Opcode::kCall, {kEvaluator}},
  };
  return *rows;
}

}  // namespace

absl::Span<const KernelMaker> KernelMakersFor(Opcode op) {
  static const auto* table = [] {
    auto* t = new std::array<std::vector<KernelMaker>, hlo::kOpcodeCount>;
    for (int op = 0; op < hlo::kOpcodeCount; ++op)
      (*t)[op] = hlo::IsElementwise(static_cast<Opcode>(op))
                     ? std::vector<KernelMaker>{{"fusion", SingleElementwise}, kReference}
                     : std::vector<KernelMaker>{kReference};
    for (const KernelRow& row : Rows()) (*t)[static_cast<int>(row.opcode)] = row.makers;
    return t;
  }();
  return (*table)[static_cast<int>(op)];
}

}  // namespace xonnx::cpu
