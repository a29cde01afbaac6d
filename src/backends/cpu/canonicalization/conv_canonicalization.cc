#include "backends/cpu/canonicalization/conv_canonicalization.h"

#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "backends/cpu/runtime/thunks.h"
#include "hlo/rewrite.h"
#include "passes/constant_folding.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

// A named namespace: the backend builds as unity batches, where other files'
// helpers (IsIdentity, Canonical) would collide with anonymous ones.
namespace conv_canonical {

std::vector<int64_t> Permuted(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(dims[p]);
  return out;
}

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t k = 0; k < perm.size(); ++k)
    if (perm[k] != static_cast<int64_t>(k)) return false;
  return true;
}

// A move of constant weights (the transpose or reverse the rewrite puts on
// a kernel) as the constant it makes: done once here, not on every call
// (a transposed convolution's 3 MB kernel was transposed per call). Any
// size: a move does not grow the weights.
Instruction* FoldedIfConstant(hlo::Computation* c, Instruction* move) {
  if (move->operand(0)->opcode() != Opcode::kConstant) return move;
  std::optional<hlo::Literal> folded = passes::FoldInstruction(*move, std::numeric_limits<int64_t>::max());
  if (!folded) return move;
  Instruction* k = hlo::AddConstant(c, *std::move(folded));
  k->metadata = move->metadata;
  return k;
}

Instruction* TransposeUnlessIdentity(hlo::Computation* c, Instruction* x, const std::vector<int64_t>& perm,
                                     const Instruction* like) {
  return IsIdentity(perm) ? x : FoldedIfConstant(c, hlo::AddTranspose(c, x, perm, like));
}

// Whether `conv` needs the rewrite: neither the form oneDNN's convolution
// takes (dnnl_conv.cc's DnnlConvForm) nor its deconvolution's (constant
// weights of any feature order, a dilated base, stride 1, dnnl_deconv.cc).
bool Needs(const Instruction& conv) {
  if (conv.shape().element_type != hlo::F32 || conv.batch_group_count != 1) return false;
  const auto& d = conv.conv_dnums;
  const int64_t ns = d.input_spatial_dimensions.size(), r = ns + 2;
  if (ns < 1 || ns > 3 || conv.shape().ElementCount() == 0 || conv.operand(0)->shape().ElementCount() == 0 ||
      conv.operand(1)->shape().ElementCount() == 0)
    return false;
  bool activations = false;  // [N, C, spatial...] or [N, spatial..., C] on both sides
  for (bool last : {false, true}) {
    const int64_t f = last ? r - 1 : 1, s0 = last ? 1 : 2;
    bool ok = d.input_batch_dimension == 0 && d.output_batch_dimension == 0 && d.input_feature_dimension == f &&
              d.output_feature_dimension == f;
    for (int64_t i = 0; i < ns; ++i)
      ok = ok && d.input_spatial_dimensions[i] == s0 + i && d.output_spatial_dimensions[i] == s0 + i;
    activations |= ok;
  }
  bool kernel = d.kernel_output_feature_dimension == 0 && d.kernel_input_feature_dimension == 1;
  for (int64_t i = 0; i < ns; ++i) kernel = kernel && d.kernel_spatial_dimensions[i] == 2 + i;
  bool dilated = false, unit_strides = true, odd = false;
  for (const auto& w : conv.window.dimensions) {
    dilated |= w.base_dilation != 1;
    unit_strides &= w.stride == 1;
    odd |= w.window_reversal || w.padding_low < 0 || w.padding_high < 0;
  }
  const bool constant_weights = conv.operand(1)->opcode() == Opcode::kConstant;
  if (constant_weights && activations && dilated && unit_strides && !odd) return false;  // a deconvolution
  return odd || dilated || !activations || !kernel;
}

Instruction* Canonical(hlo::Computation* c, Instruction* conv) {
  const auto& d = conv->conv_dnums;
  const int64_t ns = d.input_spatial_dimensions.size();
  std::vector<int64_t> xperm = {d.input_batch_dimension, d.input_feature_dimension};
  std::vector<int64_t> wperm = {d.kernel_output_feature_dimension, d.kernel_input_feature_dimension};
  std::vector<int64_t> operm = {d.output_batch_dimension, d.output_feature_dimension};
  for (int64_t i = 0; i < ns; ++i) {
    xperm.push_back(d.input_spatial_dimensions[i]);
    wperm.push_back(d.kernel_spatial_dimensions[i]);
    operm.push_back(d.output_spatial_dimensions[i]);
  }
  Instruction* x = TransposeUnlessIdentity(c, conv->operand(0), xperm, conv);
  Instruction* w = TransposeUnlessIdentity(c, conv->operand(1), wperm, conv);
  hlo::Window window = conv->window;
  std::vector<int64_t> reversed;
  bool pad_input = false;
  for (int64_t i = 0; i < ns; ++i) {
    hlo::WindowDimension& wd = window.dimensions[i];
    if (wd.window_reversal) reversed.push_back(2 + i);
    wd.window_reversal = false;
    pad_input |= wd.base_dilation != 1 || wd.padding_low < 0 || wd.padding_high < 0;
  }
  if (!reversed.empty()) {
    auto rev = std::make_unique<Instruction>(Opcode::kReverse, w->shape());
    rev->AppendOperand(w);
    rev->dimensions = reversed;
    rev->metadata = conv->metadata;
    w = FoldedIfConstant(c, c->AddInstruction(std::move(rev)));
  }
  if (pad_input) {
    // The dilation and the padding move into a pad of the input.
    hlo::Shape padded = x->shape();
    std::vector<hlo::PaddingDimension> config(ns + 2);
    for (int64_t i = 0; i < ns; ++i) {
      hlo::WindowDimension& wd = window.dimensions[i];
      hlo::PaddingDimension& p = config[2 + i];
      p.edge_padding_low = wd.padding_low;
      p.edge_padding_high = wd.padding_high;
      p.interior_padding = wd.base_dilation - 1;
      int64_t n = padded.dims[2 + i];
      padded.dims[2 + i] = p.edge_padding_low + p.edge_padding_high + (n > 0 ? (n - 1) * wd.base_dilation + 1 : 0);
      wd.padding_low = wd.padding_high = 0;
      wd.base_dilation = 1;
    }
    auto pad = std::make_unique<Instruction>(Opcode::kPad, padded);
    pad->AppendOperand(x);
    pad->AppendOperand(hlo::AddConstant(c, hlo::Literal::Scalar<float>(0)));
    pad->padding_config = config;
    pad->metadata = conv->metadata;
    x = c->AddInstruction(std::move(pad));
  }
  hlo::ConvolutionDimensionNumbers nd;
  nd.input_spatial_dimensions.resize(ns);
  std::iota(nd.input_spatial_dimensions.begin(), nd.input_spatial_dimensions.end(), 2);
  nd.kernel_spatial_dimensions = nd.output_spatial_dimensions = nd.input_spatial_dimensions;
  auto canonical = std::make_unique<Instruction>(*conv);
  canonical->set_name("");
  canonical->ReplaceOperand(0, x);
  canonical->ReplaceOperand(1, w);
  canonical->conv_dnums = nd;
  canonical->window = window;
  canonical->set_shape(hlo::Shape(hlo::F32, Permuted(conv->shape().dims, operm)));
  Instruction* y = c->AddInstruction(std::move(canonical));
  // Back to the result's own order: its dim j is the canonical one's at the
  // position of j in operm.
  std::vector<int64_t> back(operm.size());
  for (size_t k = 0; k < operm.size(); ++k) back[operm[k]] = k;
  return TransposeUnlessIdentity(c, y, back, conv);
}

// Whether `conv` is a product in disguise that the gemv kernel takes:
// f32, ungrouped, over inputs whose spatial dims are all 1, with a window
// of 1 everywhere, the batch before the features in its input and result
// (a squeeze-excitation block's two layers, ONNX Conv over [N, C, 1, 1]),
// of at most kGemvMaxRows images. Over more, oneDNN's convolution with its
// epilogue was as fast as its matmul and the loop after it, or faster
// (MobileNetV3-Small at batch 16: 1.01-1.07 times as slow as a dot).
bool OnPoints(const Instruction& conv) {
  const auto& d = conv.conv_dnums;
  const hlo::Shape& xs = conv.operand(0)->shape();
  if (xs.dims[d.input_batch_dimension] > kGemvMaxRows) return false;
  if (conv.shape().element_type != hlo::F32 || xs.element_type != hlo::F32 ||
      conv.operand(1)->shape().element_type != hlo::F32 || conv.feature_group_count != 1 ||
      conv.batch_group_count != 1 || d.input_batch_dimension > d.input_feature_dimension ||
      d.output_batch_dimension > d.output_feature_dimension)
    return false;
  for (int64_t s : d.input_spatial_dimensions)
    if (xs.dims[s] != 1) return false;
  for (const auto& w : conv.window.dimensions)
    if (w.size != 1 || w.padding_low != 0 || w.padding_high != 0 || w.base_dilation != 1) return false;
  return true;
}

// The dot computing `conv` (OnPoints): its input as [N, C], its weights
// as [O, I] or [I, O] in their own order (a constant stays one, for the
// gemv kernel), reshaped back to the result's shape. The product then
// runs on the gemv kernel (MobileNetV3-Large's 960 -> 240 layer at batch
// 1: 0.02 ms, 0.03 as a convolution).
Instruction* AsDot(hlo::Computation* c, Instruction* conv) {
  const auto& d = conv->conv_dnums;
  Instruction* x = conv->operand(0);
  Instruction* w = conv->operand(1);
  const int64_t n = x->shape().dims[d.input_batch_dimension], ic = x->shape().dims[d.input_feature_dimension];
  const int64_t oc = w->shape().dims[d.kernel_output_feature_dimension];
  const bool out_first = d.kernel_output_feature_dimension < d.kernel_input_feature_dimension;
  std::vector<int64_t> wdims = out_first ? std::vector<int64_t>{oc, ic} : std::vector<int64_t>{ic, oc};
  Instruction* lhs = hlo::AddReshape(c, x, {n, ic}, conv);
  Instruction* rhs = w->opcode() == Opcode::kConstant ? hlo::AddConstant(c, w->literal->Reshape(wdims))
                                                      : hlo::AddReshape(c, w, wdims, conv);
  auto dot = std::make_unique<Instruction>(Opcode::kDot, hlo::Shape(hlo::F32, {n, oc}));
  dot->AppendOperand(lhs);
  dot->AppendOperand(rhs);
  dot->dot_dnums.lhs_contracting_dimensions = {1};
  dot->dot_dnums.rhs_contracting_dimensions = {out_first ? 1 : 0};
  dot->precision = conv->precision;
  dot->metadata = conv->metadata;
  return hlo::AddReshape(c, c->AddInstruction(std::move(dot)), conv->shape().dims, conv);
}

}  // namespace conv_canonical

absl::StatusOr<bool> ConvCanonicalization::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations())
    changed |= hlo::ReplaceEach(c.get(), {Opcode::kConvolution}, [&](Instruction* conv) -> Instruction* {
      if (conv_canonical::OnPoints(*conv)) return conv_canonical::AsDot(c.get(), conv);
      return conv_canonical::Needs(*conv) ? conv_canonical::Canonical(c.get(), conv) : nullptr;
    });
  return changed;
}

}  // namespace xonnx::cpu
