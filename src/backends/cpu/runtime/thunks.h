// Thunk factories shared by the CPU compiler's files (internal header).
#ifndef XONNX_BACKENDS_CPU_RUNTIME_THUNKS_H_
#define XONNX_BACKENDS_CPU_RUNTIME_THUNKS_H_

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/kernels/strided_view.h"
#include "backends/cpu/kernels/vector_math.h"
#include "backends/cpu/runtime/executable.h"

namespace xonnx::cpu {

// Buffers an instruction reads (one per operand leaf) and writes.
struct ThunkIo {
  std::vector<BufferRef> inputs;
  std::vector<BufferRef> outputs;
};

// A fused elementwise loop: `members` in operand-first order, the last one
// being the fusion's result; `inputs` the values it reads from outside.
// `strided[k]`: input k is a broadcast or slice the fusion reads through
// strides from its operand's buffer, or a concatenation it reads from its
// operands' buffers part by part. io.inputs holds each input's buffers in
// input order: one per input, an operand's for a strided broadcast or
// slice, and one per operand for a strided concatenation.
//
// `block` (8 or 16; 0: none): the result and every input of the result's
// shape are rank-4 channels-last values kept in oneDNN's blocked layout
// with that channel block (blocked-layout planning), and the loop runs
// over the elements in that order; broadcast inputs are read through
// strides of their own (plain) buffers, a scalar as always.
struct FusionSpec {
  std::vector<const hlo::Instruction*> members;
  std::vector<const hlo::Instruction*> inputs;
  std::vector<bool> strided;
  int block = 0;
};

// Builds the fused loop thunk; input i of the spec reads buffer io.inputs[i].
absl::StatusOr<Thunk> MakeFusionThunk(const FusionSpec& spec, const ThunkIo& io);

// How the fused loop computes a fusion: chains of one 8-bit input looked up
// in 256-entry tables, quantizers run in one pass, and the op nodes the
// block loop still computes (a table's lookup counts as one).
struct FusionSummary {
  int tables = 0;
  int quantizers = 0;
  int gelus = 0;
  int computed_ops = 0;
};
absl::StatusOr<FusionSummary> SummarizeFusion(const FusionSpec& spec);

// A row fusion (a layer norm, a softmax): values of one shape [..., cols]
// ("full"; `rows` is the product of the other dims) and values with one
// element per row, made by reductions along the last dim and elementwise
// work on them, read back along the rows through broadcasts. Computed a
// block of rows at a time (one row, or as many short rows as make about 512
// elements), every node over the block before the next, so that a row's
// intermediate values stay in cache; the compiler resolves the reshapes and
// broadcasts into how each operand is read.
struct RowFusionSpec {
  enum class Read {
    kFull,     // a full value's row
    kRow,      // a row value, spread along the row when a full node reads it
    kColumns,  // a vector of `cols` values, the same for every row (input only)
    kScalar,   // one value (input only)
  };
  struct Operand {
    bool member = false;  // a node of this fusion, else input `index`
    int index = 0;
    Read read = Read::kFull;
  };
  struct Node {
    const hlo::Instruction* instr = nullptr;  // elementwise, or a reduce along the last dim
    bool full = false;                        // a full value, else a row value
    bool reduce = false;                      // operands: the full value, then the scalar init input
    hlo::Opcode reduce_op = hlo::Opcode::kAdd;
    std::vector<Operand> operands;
  };
  int64_t rows = 0, cols = 0;
  std::vector<Node> nodes;   // operand first
  size_t inputs = 0;         // io.inputs, in Operand::index order
  std::vector<int> outputs;  // the nodes io.outputs receive, in order
};

// Builds the row fusion thunk.
absl::StatusOr<Thunk> MakeRowFusionThunk(const RowFusionSpec& spec, const ThunkIo& io);

// The reduction of x[0..n) into init by add, multiply, maximum or minimum,
// as the reduce thunk computes a row (16 lanes that meet at the end; max
// and min pass a NaN on).
float ReduceContiguousF32(hlo::Opcode op, float init, const float* x, int64_t n);

// y = op(a[, b]) over n floats for an f32 elementwise instruction of one or
// two operands, the fused loops' kernels (vectorized exp, logistic and
// arithmetic); false where the op is not defined on floats. y may be a or b.
bool ElementwiseF32(const hlo::Instruction& in, const float* a, const float* b, float* y, int64_t n);

// The arithmetic kernel op of an f32 binary opcode (add, subtract,
// multiply, divide, maximum, minimum), if it is one.
std::optional<Arith> ArithOf(hlo::Opcode op);

// Work folded into a convolution or a matrix product as oneDNN bias and
// post-ops: y = act(op + bias + residual), or act(op + bias) + residual
// where the residual connection joins after the activation (a block that
// ends in its own ReLU before the skip add).
struct Epilogue {
  const hlo::Instruction* bias = nullptr;      // the output features' (conv) or columns' (dot) values in order, or null
  const hlo::Instruction* residual = nullptr;  // a tensor of the output's shape added after the bias, or null
  bool residual_after_activation = false;      // the residual is added last, to the activation's result
  enum Activation {
    kNone,
    kRelu,
    kClip,
    kSwish,
    kSigmoid,
    kHardSigmoid,
    kHardSwish,
    kTanh,
    kGeluErf,   // x/2 (1 + erf(x / sqrt 2))
    kGeluTanh,  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  } activation = kNone;
  // kClip: the bounds; kHardSigmoid: clamp(a x + b, 0, 1) with a = lo, b = hi.
  float lo = 0, hi = 0;
};

// oneDNN thunks: return nullopt when the instruction's form is not one oneDNN
// handles (the caller then uses the reference kernel). `keep_alive` receives
// the primitives and any reordered constant weights. Constant weights
// (`constant_weights`, `constant_rhs`: the operand's literal, or null) are
// packed into oneDNN's preferred layout once per process: every executable
// packing the same bytes into the same layout shares one copy (see
// PackedWeightCount).
// Whether a convolution has a form the oneDNN thunk handles (f32, 1-3
// spatial dims, NCHW or NHWC activations with OIHW kernels, no lhs dilation).
bool DnnlConvEligible(const hlo::Instruction& instr);
// The same forms of an s32 convolution (an integer product).
bool DnnlIntegerConvEligible(const hlo::Instruction& instr);

// A dot in matrix terms (oneDNN's, and the small-dot kernel's):
// C[batch, m, n] = A[batch, m, k] . B[batch, k, n], each operand
// [batch..., rows, cols] with its batch dims leading, A stored [k, m] when
// `ta`, B stored [n, k] when `tb`.
struct DotForm {
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool ta = false, tb = false;
};
// The form of a dot whose result has element type `type` (one contracting
// dim, batch dims leading in order, no empty result or contraction), or
// nullopt (kernels/dot_form.cc).
std::optional<DotForm> DotFormOf(const hlo::Instruction& dot, hlo::PrimitiveType type);

// Whether a dot has a form the oneDNN thunk handles (f32, one contracting
// dim, leading batch dims, each operand [batch..., rows, cols] in either
// order), and its output's column count when it does.
std::optional<int64_t> DnnlDotColumns(const hlo::Instruction& instr);

// Where a 2-D channels-last convolution keeps its activations: plain
// (NHWC, block 0) or oneDNN's blocked layout with `block` (8 or 16)
// channels innermost ([N][C/block][H][W][block]), which has the same size
// when C is a multiple of the block.
struct ConvLayouts {
  int src_block = 0;
  int dst_block = 0;  // the result, and the residual it adds
  // The source is read channels-first (NCHW), from the value the layout
  // pass transposed for it (see DnnlConvReadsChannelsFirst).
  bool src_channels_first = false;
};

// The channel block a value of `channels` channels takes when kept
// blocked: 16 (AVX-512's width) where it divides them, else 8, else 0 (the
// value stays plain).
int DnnlChannelBlock(int64_t channels);

// Whether a convolution runs faster on blocked activations than on
// channels-last ones, so that the values between such convolutions are
// best kept blocked: a 2-D convolution with channel counts that are
// multiples of 8, either ungrouped 1x1, depthwise (one filter per channel),
// or one that runs Winograd's algorithm (whose kernels take only blocked
// activations); those with counts not multiples of 16, and depthwise ones,
// only where their activations outgrow the caches (4 MB). oneDNN 2.6 on
// AVX-512, batch 16 at 112x112 (MNASNet's first layers): 1x1 and
// depthwise convolutions 1.3-2x faster blocked.
bool DnnlConvRunsBlocked(const hlo::Instruction& instr, bool constant_weights, bool allow_winograd);

// Whether a convolution is a network's first (a stem: at most 4 input
// channels, a count of output channels a block takes, 2-D, ungrouped)
// whose source is the layout pass's channels-last transpose of an NCHW
// value, on activations of 4 MB or more. oneDNN reads such a source
// channels-first and writes a blocked result directly (its first-layer
// kernels; with a channels-last result it has only its reference kernel),
// so when the result stays blocked the transpose is never made. MNASNet's
// stem at batch 16: 1.0-1.7 instead of 1.5-2.0 ms standalone, plus the
// transpose (0.8 ms) and the following depthwise convolution's copy of
// its source into blocks (25 MB).
bool DnnlConvReadsChannelsFirst(const hlo::Instruction& instr);

// Whether MakeDnnlConvThunk will try Winograd's algorithm for it (it falls
// back to the direct one where oneDNN has no Winograd kernel for the form).
bool DnnlConvRunsWinograd(const hlo::Instruction& instr, bool constant_weights, bool allow_winograd);

// A dot's operands read in place through views of other values' buffers
// (the buffers io.inputs gives for them); empty: the operand's own buffer.
struct DotViews {
  std::optional<StridedView> lhs, rhs;
};

// An s32 operand of a convolution or dot that oneDNN reads as 8-bit
// integers (PlanIntegerProducts): a u8 or s8 value converted to s32, less
// a zero point, perhaps transposed or reshaped on the way; or a constant
// whose values all fit in s8.
struct NarrowOperand {
  const hlo::Instruction* source = nullptr;      // the 8-bit value, or null for a constant
  const hlo::Instruction* zero_point = nullptr;  // the s32 scalar (or uniform constant) subtracted, or null
  StridedView view;                              // the operand's elements in source's buffer
  std::shared_ptr<const hlo::Literal> constant;  // a constant operand's values, as s8
};

// The weights of a dot that reads them packed (PlanPackedProducts): the
// importer's MatMulNBits form, W[n, k] = (q[n, k] - zero[n, b]) *
// scale[n, b] for k in block b, with q unsigned `bits`-bit integers stored
// [N, blocks, block * bits / 8] (4 bits: two per byte, low nibble first).
struct PackedWeights {
  const hlo::Instruction* packed = nullptr;           // u8 bytes, row-major, or null: packed_values
  std::shared_ptr<const hlo::Literal> packed_values;  // 8-bit weights known at compile time, as u8
  const hlo::Instruction* scales = nullptr;           // f32 [N, blocks], row-major
  const hlo::Instruction* zeros = nullptr;            // f32 [N, blocks], or null: zero_values, or `zero` for all
  std::shared_ptr<const hlo::Literal> zero_values;    // f32 [N, blocks] known at compile time
  float zero = 0;
  int bits = 4;
  int64_t block = 32, blocks = 0, n = 0, k = 0;
  // The packed bytes and the scales when they are constants of their
  // type and size (a model's initializers), which a kernel may lay out
  // again when the program is made; null otherwise. The module's own.
  const hlo::Literal* packed_constant = nullptr;
  const hlo::Literal* scales_constant = nullptr;
  // Rows of fewer than 32 (a decoder's step) round the activation to int8
  // per block (hlo::kInt8ActivationsAttribute; needs AVX-512 VNNI).
  bool int8_activations = false;
};

// Whether the oneDNN matmul reads this view of a dot operand directly: at
// most one batch dim, and unit stride along rows or columns.
bool DnnlDotViewable(const hlo::Instruction& dot, const StridedView& view);

// io.inputs may carry more buffers after the two operands: the epilogue's
// bias, then its residual. io.outputs[0] is the epilogue's last value, which
// has the operation's bytes in row-major order (a dot's result may have been
// reshaped on the way).
// `allow_winograd`: a 3x3 convolution with constant weights may run
// Winograd's algorithm where it pays (kind "dnnl-conv-wino").
// `layouts`: which activations the arena holds in oneDNN's blocked layout
// (see DnnlConvRunsBlocked); the residual is in the result's layout.
std::optional<Thunk> MakeDnnlConvThunk(const hlo::Instruction& instr, const ThunkIo& io,
                                       const hlo::Literal* constant_weights, const Epilogue& epilogue,
                                       bool allow_winograd, ConvLayouts layouts,
                                       std::vector<std::shared_ptr<void>>* keep_alive);
std::optional<Thunk> MakeDnnlDotThunk(const hlo::Instruction& instr, const ThunkIo& io,
                                      const hlo::Literal* constant_rhs, const Epilogue& epilogue, const DotViews& views,
                                      std::vector<std::shared_ptr<void>>* keep_alive);

// Integer products on oneDNN's 8-bit primitives (see PlanIntegerProducts).
// Whether the CPU multiplies 8-bit integers with VNNI instructions, which
// accumulate u8 x s8 products in s32 exactly; without them oneDNN sums
// pairs of products in s16 with saturation.
bool DnnlHasVnni();
// Whether an s32 convolution or dot has a form the 8-bit primitives take
// (the forms of the f32 ones) once its operands are narrowed.
bool DnnlIntegerProductEligible(const hlo::Instruction& instr);
// The thunks: `operands` are the product's operands as the planner found
// them, the source 8-bit (u8 or s8) with its zero point, the weights an s8
// constant. io.inputs holds the source's buffer, then the zero point's if
// it has one; io.outputs[0] the s32 result. The convolution reorders a
// source or result whose layout its kernels do not take, through the
// call's scratch region. Nullopt when oneDNN refuses the form.
std::optional<Thunk> MakeDnnlIntegerConvThunk(const hlo::Instruction& instr, const ThunkIo& io,
                                              const std::array<NarrowOperand, 2>& operands,
                                              std::vector<std::shared_ptr<void>>* keep_alive);
std::optional<Thunk> MakeDnnlIntegerDotThunk(const hlo::Instruction& instr, const ThunkIo& io,
                                             const std::array<NarrowOperand, 2>& operands,
                                             std::vector<std::shared_ptr<void>>* keep_alive);

// A transposed convolution (a convolution with base dilation, as the
// importer writes ConvTranspose) with constant weights, on oneDNN's
// deconvolution primitive (dnnl_deconv.cc); kind "dnnl-deconv".
std::optional<Thunk> MakeDnnlDeconvThunk(const hlo::Instruction& instr, const ThunkIo& io,
                                         const hlo::Literal* constant_weights,
                                         std::vector<std::shared_ptr<void>>* keep_alive);

// A max pooling (reduce-window by maximum from -inf over the spatial dims
// of f32 activations) on oneDNN's pooling primitive (dnnl_pool.cc); kind
// "dnnl-pool".
// `block`: the activations are in oneDNN's blocked layout with that many
// channels innermost (rank 4, channels-last logical dims), 0: as the
// window says.
std::optional<Thunk> MakeDnnlPoolThunk(const hlo::Instruction& instr, const ThunkIo& io, int block = 0);
// Whether a reduce-window is a max pool of channels-last f32 activations
// that MakeDnnlPoolThunk takes, and so may take blocked.
bool DnnlChannelsLastMaxPool(const hlo::Instruction& instr);
// A concatenation of channels (dim 3 of rank-4 values) whose parts and
// result are in oneDNN's blocked layout with `block` channels innermost,
// every part a whole number of blocks: per image, each part's blocks are
// one contiguous run of the result.
std::optional<Thunk> MakeBlockedConcatThunk(const hlo::Instruction& instr, const ThunkIo& io, int block);

// Packed constant weights alive in the process, and packings done so far
// (a reused packing does not count): for tests and profiles.
struct PackedWeightStats {
  int64_t alive = 0, alive_bytes = 0, packed = 0;
};
PackedWeightStats PackedWeightCount();

// The reducer's opcode when `reducer` is a scalar add, multiply, maximum or
// minimum: the reductions the native kernels (reduce, scatter, row fusions)
// compute.
std::optional<hlo::Opcode> ArithmeticReducer(const hlo::Computation& reducer);

// Native kernels: reduce over a contiguous block of dims and reduce-window
// with an identity init (reduce_kernels.cc), transpose/slice/broadcast
// (move_kernels.cc).
// `block` (0: plain): the reduce's operand is a rank-4 channels-last value
// in oneDNN's blocked layout with that channel block; only a reduce over
// its two spatial dims takes one (a global pool: FastReduceTakesBlocked),
// whose result, [N, C], is plain as always.
bool FastReduceTakesBlocked(const hlo::Instruction& instr);
std::optional<Thunk> MakeFastReduceThunk(const hlo::Instruction& instr, const ThunkIo& io, int block = 0);
std::optional<Thunk> MakeFastReduceWindowThunk(const hlo::Instruction& instr, const ThunkIo& io);
std::optional<Thunk> MakeFastMoveThunk(const hlo::Instruction& instr, const ThunkIo& io);

// Native data movement (data_kernels.cc): concatenate, pad, reverse,
// dynamic-slice, dynamic-update-slice, iota, and the byte copy of a reshape
// or bitcast-convert that cannot alias its operand.
std::optional<Thunk> MakeDataMoveThunk(const hlo::Instruction& instr, const ThunkIo& io);

// A matrix-vector product (gemv.cc): an f32 dot of at most 4 rows by
// constant [K, N] or [N, K] weights, packed at compile time; kind "gemv".
// GemvTakes: whether MakeGemvThunk takes the dot's form (at most
// kGemvMaxRows rows; larger products go to oneDNN).
constexpr int64_t kGemvMaxRows = 4;
bool GemvTakes(const hlo::Instruction& dot);
std::optional<Thunk> MakeGemvThunk(const hlo::Instruction& instr, const ThunkIo& io);

// A product of at most kSmallDotMaxRows rows per batch by a matrix known
// only at run time (small_dot.cc; kind "small-dot"): a decoder step's
// attention, Q . K^T and P . V of one new token per head, where oneDNN's
// fixed cost per call exceeded the product's own time. f32 in DotFormOf's
// form; either operand may be read through a view of any strides. The
// planner gives such a dot no oneDNN epilogue (SmallDotTakes).
constexpr int64_t kSmallDotMaxRows = 4;
bool SmallDotTakes(const hlo::Instruction& dot);
std::optional<Thunk> MakeSmallDotThunk(const hlo::Instruction& dot, const ThunkIo& io, const DotViews& views);

// A product of f32 rows by 4- or 8-bit block-quantized weights read as
// they are stored (packed_dot.cc; kind "packed-matmul"): dot(x [..., K],
// W [N, K]) with W as `w` describes it. io.inputs: x, the packed bytes
// (unless known at compile time), the scales, then the zero points (if
// read at run time); io.outputs[0]: y [..., N].
std::optional<Thunk> MakePackedDotThunk(const hlo::Instruction& dot, const ThunkIo& io, const PackedWeights& w);
// How that product prepares its activation where products of one
// activation may do it once for all: 0 where it cannot (weights computed
// at run time, a prompt's rows), else a kind that only products of the
// same kind share (packed_dot::Shared).
int PackedDotSharedPreparation(const hlo::Instruction& dot, const PackedWeights& w);
// Whether two such products of the same kind, reading one activation, may
// share its preparation (the rule MakePackedGroupThunk checks again).
bool PackedDotsSharePreparation(const hlo::Instruction& a, const PackedWeights& wa, const hlo::Instruction& b,
                                const PackedWeights& wb);
// Products by packed weights that read one activation, as one step
// (packed_dot_group.cc; kind "packed-matmul"; Plan::packed_products.groups):
// io[m] and w[m] as MakePackedDotThunk takes them for dots[m], all with the
// same activation. The activation is prepared once and one team of threads
// computes every product; where that pass refuses a value (not finite),
// each product runs alone, as MakePackedDotThunk's would.
std::optional<Thunk> MakePackedGroupThunk(const std::vector<const hlo::Instruction*>& dots,
                                          const std::vector<ThunkIo>& io, const std::vector<const PackedWeights*>& w);

// A product of one axis of an f32 activation by constant weights with at
// most four nonzeros per output (sparse_dot.cc): Resize's interpolation
// matrices; kind "sparse-dot". The operand is read row-major, so the
// planner gives such a dot no oneDNN epilogue or operand views
// (SparseDotTakes). Two forms: dot(x, W) with the weights' output axis
// last, and the in-place form dot(broadcast(W [out, in]) to [A..., out, in],
// x [A..., in, B...]) -> [A..., out, B...], batched over the dims before
// the axis, which keeps the axis where it was (SparseDotInPlace: the
// canonicalization's AxisMaps writes it, and transposes sink through it).
// SparseDotTakesInPlace: whether a dot of the first form has weights the
// kernel takes in the in-place form (any number of inputs; in the first
// form, fewer than 8 go to the dense product).
bool SparseDotTakes(const hlo::Instruction& dot);
bool SparseDotInPlace(const hlo::Instruction& dot);
bool SparseDotTakesInPlace(const hlo::Instruction& dot);
// The in-place form's [out, in] matrix (the broadcast's operand, or the
// first operand without batch dims), or null when `dot` is not of that
// form with one matrix for every batch.
const hlo::Instruction* SparseDotInPlaceMatrix(const hlo::Instruction& dot);
// The f32 constant under reshapes and leading-dim broadcasts of `w`, which
// keep its values in order, or null.
const hlo::Instruction* SparseWeightsConstant(const hlo::Instruction* w);
std::optional<Thunk> MakeSparseDotThunk(const hlo::Instruction& dot, const ThunkIo& io);

// Native arithmetic in the forms the tuned paths do not take
// (compute_kernels.cc): dot and convolution of any dimension numbers and
// numeric type, reduce over any dims.
std::optional<Thunk> MakeComputeThunk(const hlo::Instruction& instr, const ThunkIo& io);

// A sort by one key (sort_kernels.cc), of which the program reads only the
// first `prefix` positions along the sorted dim (the dim's length when it
// reads all): positions past the prefix are left unwritten. Kind "sort", or
// "top-k" when it selects.
std::optional<Thunk> MakeSortThunk(const hlo::Instruction& instr, const ThunkIo& io, int64_t prefix);

// Native gather and scatter (gather_kernels.cc); scatter with a replacing
// combiner or one of add, multiply, maximum and minimum.
std::optional<Thunk> MakeGatherScatterThunk(const hlo::Instruction& instr, const ThunkIo& io);
// Native scatter (scatter_kernels.cc), with a replacing combiner or one of
// add, multiply, maximum and minimum; MakeGatherScatterThunk calls it.
std::optional<Thunk> MakeScatterThunk(const hlo::Instruction& instr, const ThunkIo& io);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_RUNTIME_THUNKS_H_
