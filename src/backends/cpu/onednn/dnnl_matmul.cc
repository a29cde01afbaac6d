// oneDNN matrix products: which dots they take (and through which views),
// and the thunk that runs one with its epilogue.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "backends/cpu/kernels/vector_math.h"
#include "backends/cpu/onednn/dnnl_primitives.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/fingerprint.h"
#include "base/status.h"

namespace xonnx::cpu {

using namespace dnnl_support;  // the primitives' vocabulary

namespace {

struct DotState {
  memory::desc a, b, c, bias;
  bool has_bias = false;
  std::shared_ptr<memory> packed;  // the constant rhs in oneDNN's layout
  memory::desc scratchpad;
  std::optional<PrimitiveRunner> matmul;  // ProductArgs
};

}  // namespace

std::optional<int64_t> DnnlDotColumns(const hlo::Instruction& in) {
  auto f = DotFormOf(in, hlo::F32);
  if (!f) return std::nullopt;
  return f->n;
}

namespace {

// An operand as oneDNN's [batch, rows, cols] with the strides of `view`
// (row-major when absent); nullopt when its batch dims do not nest.
std::optional<memory::desc> OperandDesc(const hlo::Shape& shape, const std::optional<StridedView>& view, int64_t nb,
                                        int64_t row_dim, int64_t col_dim,
                                        memory::data_type type = memory::data_type::f32) {
  StridedView v = view ? *view : StridedView::RowMajor(shape.dims);
  int64_t batch = 1, rows = shape.dims[row_dim], cols = shape.dims[col_dim];
  for (int64_t i = 0; i < nb; ++i) batch *= shape.dims[i];
  for (int64_t i = 0; i + 1 < nb; ++i)
    if (v.strides[i] != v.strides[i + 1] * shape.dims[i + 1]) return std::nullopt;
  int64_t batch_stride = nb > 0 ? v.strides[nb - 1] : rows * cols;
  if (batch == 1) return memory::desc({rows, cols}, type, {v.strides[row_dim], v.strides[col_dim]});
  return memory::desc({batch, rows, cols}, type, {batch_stride, v.strides[row_dim], v.strides[col_dim]});
}

// The dims of a product's operand: [batch, rows, cols], or [rows, cols] for
// one matrix. oneDNN 2.6 packs a constant weight matrix given as [k, n] into
// its blocked layout (BA16a64b), where for [1, k, n] it keeps it plain and
// repacks it into scratch on every call: a 64-row product with 384x1536
// weights ran 2.3 times slower.
memory::dims ProductDims(int64_t batch, int64_t rows, int64_t cols) {
  return batch == 1 ? memory::dims{rows, cols} : memory::dims{batch, rows, cols};
}

// A plain row-major [batch,] rows x cols value of `type` (a product's result).
memory::desc PlainProductDesc(int64_t batch, int64_t rows, int64_t cols, memory::data_type type) {
  return memory::desc(ProductDims(batch, rows, cols), type, batch == 1 ? Tag::ab : Tag::abc);
}

}  // namespace

bool DnnlDotViewable(const hlo::Instruction& dot, const StridedView& view) {
  if (dot.dot_dnums.lhs_batch_dimensions.size() > 1) return false;
  size_t r = view.dims.size();
  if (r < 2 || view.strides.size() != r) return false;
  for (int64_t d : view.dims)
    if (d <= 0) return false;
  for (int64_t s : view.strides)
    if (s <= 0) return false;
  return view.strides[r - 1] == 1 || view.strides[r - 2] == 1;
}

std::optional<Thunk> MakeDnnlDotThunk(const hlo::Instruction& in, const ThunkIo& io, const hlo::Literal* constant_rhs,
                                      const Epilogue& epilogue, const DotViews& views,
                                      std::vector<std::shared_ptr<void>>* keep_alive) {
  auto form = DotFormOf(in, hlo::F32);
  if (!form) return std::nullopt;
  auto [batch, m, k, n, ta, tb] = *form;
  int64_t nb = in.dot_dnums.lhs_batch_dimensions.size();
  auto a_desc = OperandDesc(in.operand(0)->shape(), views.lhs, nb, ta ? nb + 1 : nb, ta ? nb : nb + 1);
  auto b_desc = OperandDesc(in.operand(1)->shape(), views.rhs, nb, tb ? nb + 1 : nb, tb ? nb : nb + 1);
  if (!a_desc || !b_desc) return std::nullopt;
  if (views.rhs) constant_rhs = nullptr;  // packing reads the constant row-major
  // Element offsets of the views into their buffers, in bytes.
  size_t a_off = views.lhs ? views.lhs->offset * sizeof(float) : 0;
  size_t b_off = views.rhs ? views.rhs->offset * sizeof(float) : 0;
  try {
    auto st = std::make_shared<DotState>();
    st->a = *a_desc;
    st->b = *b_desc;
    st->c = PlainProductDesc(batch, m, n, memory::data_type::f32);
    // Constant weights are packed once into oneDNN's preferred layout.
    memory::desc b_any(ProductDims(batch, k, n), memory::data_type::f32, Tag::any);
    const memory::desc& b_md = constant_rhs ? b_any : st->b;
    st->has_bias = epilogue.bias != nullptr;
    st->bias = batch == 1 ? memory::desc({1, n}, memory::data_type::f32, Tag::ab)
                          : memory::desc({1, 1, n}, memory::data_type::f32, Tag::abc);
    auto desc =
        st->has_bias ? dnnl::matmul::desc(st->a, b_md, st->bias, st->c) : dnnl::matmul::desc(st->a, b_md, st->c);
    dnnl::matmul::primitive_desc pd(desc, EpilogueAttr(epilogue), Engine());
    st->scratchpad = pd.scratchpad_desc();
    if (constant_rhs) st->packed = PackWeights(st->b, pd.weights_desc(), *constant_rhs);
    st->matmul.emplace(dnnl::matmul(pd), ProductArgs(st->a, st->b, st->packed, st->has_bias ? &st->bias : nullptr,
                                                     st->c, st->scratchpad));
    keep_alive->push_back(st);
    BufferRef a = io.inputs[0], b = io.inputs[1], c = io.outputs[0];
    BufferRef bias = st->has_bias ? io.inputs.at(2) : BufferRef{};
    bool has_residual = epilogue.residual != nullptr;
    BufferRef residual = has_residual ? io.inputs.at(st->has_bias ? 3 : 2) : BufferRef{};
    Thunk t;
    t.name = in.name();
    t.scratch_bytes = st->scratchpad.get_size();
    bool swish_after = SwishAfter(epilogue);
    t.run = [st, a, b, c, bias, residual, has_residual, a_off, b_off, swish_after](Frame& f) -> absl::Status {
      if (has_residual) PrefillResidual(f, residual, c, st->c.get_size());
      RETURN_IF_ERROR(RunProduct(*st->matmul, f, static_cast<char*>(f.Ptr(a)) + a_off,
                                 static_cast<char*>(f.Ptr(b)) + b_off, st->has_bias ? f.Ptr(bias) : nullptr, f.Ptr(c)));
      if (swish_after) SwishInPlace(f.Ptr(c), st->c.get_size());
      return absl::OkStatus();
    };
    return t;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

bool DnnlIntegerProductEligible(const hlo::Instruction& in) {
  if (in.opcode() == hlo::Opcode::kConvolution) return DnnlIntegerConvEligible(in);
  return DotFormOf(in, hlo::S32).has_value() && in.dot_dnums.lhs_batch_dimensions.size() <= 1;
}

std::optional<Thunk> MakeDnnlIntegerDotThunk(const hlo::Instruction& in, const ThunkIo& io,
                                             const std::array<NarrowOperand, 2>& operands,
                                             std::vector<std::shared_ptr<void>>* keep_alive) {
  auto form = DotFormOf(in, hlo::S32);
  const NarrowOperand &a = operands[0], &b = operands[1];
  if (!form || !a.source || !b.constant) return std::nullopt;
  auto [batch, m, k, n, ta, tb] = *form;
  int64_t nb = in.dot_dnums.lhs_batch_dimensions.size();
  auto a_type = a.source->shape().element_type == hlo::U8 ? memory::data_type::u8 : memory::data_type::s8;
  auto a_desc = OperandDesc(in.operand(0)->shape(), a.view, nb, ta ? nb + 1 : nb, ta ? nb : nb + 1, a_type);
  auto b_desc =
      OperandDesc(in.operand(1)->shape(), std::nullopt, nb, tb ? nb + 1 : nb, tb ? nb : nb + 1, memory::data_type::s8);
  if (!a_desc || !b_desc) return std::nullopt;
  try {
    memory::desc c = PlainProductDesc(batch, m, n, memory::data_type::s32);
    dnnl::primitive_attr attr = UserScratchpad();
    if (a.zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(*a_desc, memory::desc(ProductDims(batch, k, n), memory::data_type::s8, Tag::any), c), attr,
        Engine());
    auto runner = std::make_shared<PrimitiveRunner>(
        dnnl::matmul(pd), IntegerProductArgs(*a_desc, PackWeights(*b_desc, pd.weights_desc(), *b.constant), c,
                                             pd.scratchpad_desc(), a.zero_point != nullptr));
    keep_alive->push_back(runner);
    BufferRef src = io.inputs.at(0), dst = io.outputs.at(0);
    std::optional<BufferRef> zp;
    if (a.zero_point) zp = io.inputs.at(1);
    size_t a_off = a.view.offset;  // one byte per element
    Thunk t;
    t.name = in.name();
    t.scratch_bytes = pd.scratchpad_desc().get_size();
    t.run = [runner, src, dst, zp, a_off](Frame& f) -> absl::Status {
      return RunIntegerProduct(*runner, f, static_cast<char*>(f.Ptr(src)) + a_off, f.Ptr(dst),
                               zp ? f.Ptr(*zp) : nullptr);
    };
    return t;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

}  // namespace xonnx::cpu
