#include "passes/dequantized_products.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "hlo/rewrite.h"

namespace xonnx::passes {

using hlo::Instruction;
using hlo::Opcode;

namespace {

bool IsByte(hlo::PrimitiveType t) { return t == hlo::U8 || t == hlo::S8; }

// Whether `i` is an f32 constant of 8-bit integers: the weights' convert
// once the importer folded it.
bool ByteValuedConstant(const Instruction* i) {
  if (i->opcode() != Opcode::kConstant || i->shape().element_type != hlo::F32) return false;
  const float* v = i->literal->data<float>();
  for (int64_t k = 0; k < i->literal->element_count(); ++k)
    if (v[k] != std::nearbyint(v[k]) || v[k] < -128 || v[k] > 255) return false;
  return true;
}

// (convert<f32>(value) - broadcast(zero_point)) * broadcast(scale), as the
// importer writes DequantizeLinear; the subtraction is gone when the zero
// point was 0, and the convert folded when the value is a constant.
struct Dequantized {
  Instruction* value = nullptr;       // 8-bit, or an f32 constant of 8-bit values
  Instruction* zero_point = nullptr;  // f32, or null
  std::vector<int64_t> zero_point_dims;
  Instruction* scale = nullptr;  // f32, a scalar or a vector
  std::vector<int64_t> scale_dims;
  // Splat constants standing for a scalar zero point or scale (which is
  // then null until Rewriter::Scalars makes it).
  const Instruction* zero_point_splat = nullptr;
  const Instruction* scale_splat = nullptr;
};

// A constant whose elements are all equal: a broadcast scalar that
// constant folding stored whole.
bool IsSplat(const Instruction* i) {
  return i->opcode() == Opcode::kConstant && i->shape().IsArray() && i->literal->element_count() > 0 &&
         i->literal->IsUniform();
}

// The operand of a broadcast `b` of a scalar or vector, with its dims: the
// broadcast's own, or a splat constant's scalar (`splat` set).
bool Broadcasted(Instruction* b, Instruction** value, std::vector<int64_t>* dims, const Instruction** splat) {
  if (b->opcode() == Opcode::kBroadcast && b->operand(0)->shape().rank() <= 1) {
    *value = b->operand(0);
    *dims = b->dimensions;
    return true;
  }
  if (!IsSplat(b)) return false;
  *value = nullptr;
  dims->clear();
  *splat = b;
  return true;
}

std::optional<Dequantized> MatchDequantized(Instruction* v) {
  if (v->opcode() != Opcode::kMultiply || v->shape().element_type != hlo::F32) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    Instruction* a = v->operand(k);
    Instruction* s = v->operand(1 - k);
    Dequantized d;
    if (!Broadcasted(s, &d.scale, &d.scale_dims, &d.scale_splat)) continue;
    if (a->opcode() == Opcode::kSubtract) {
      if (!Broadcasted(a->operand(1), &d.zero_point, &d.zero_point_dims, &d.zero_point_splat)) continue;
      a = a->operand(0);
    }
    if (ByteValuedConstant(a)) {
      d.value = a;
      return d;
    }
    if (a->opcode() != Opcode::kConvert || !IsByte(a->operand(0)->shape().element_type)) continue;
    d.value = a->operand(0);
    return d;
  }
  return std::nullopt;
}

class Rewriter {
 public:
  explicit Rewriter(hlo::Computation* c) : c_(c) {}

  // The replacement of product p, or null when its operands are not both
  // dequantized in a form with an exact integer equivalent.
  Instruction* Rewrite(Instruction* p) {
    if (p->shape().element_type != hlo::F32) return nullptr;
    // The activation may be reshaped or transposed after dequantization
    // (a squeeze-and-excitation block's [N, C, 1, 1] -> [N, 1, 1, C]).
    std::vector<Instruction*> views;
    Instruction* xv = p->operand(0);
    while (xv->opcode() == Opcode::kReshape || xv->opcode() == Opcode::kTranspose) {
      views.push_back(xv);
      xv = xv->operand(0);
    }
    std::optional<Dequantized> x = MatchDequantized(xv);
    if (!x) return nullptr;
    std::optional<int64_t> w_axis, out_axis;  // the weights' and the result's output feature dim
    if (!OutputFeatureDims(p, &w_axis, &out_axis)) return nullptr;
    std::optional<Dequantized> w = MatchDequantized(p->operand(1));
    if (!w) w = FactorConstant(p->operand(1), *w_axis);
    if (!w) return nullptr;
    // The activation: one scale and zero point (the 8-bit kernels take one).
    auto rank = [](const Instruction* v, const Instruction* splat) { return splat ? 0 : v->shape().rank(); };
    if (rank(x->scale, x->scale_splat) != 0 || (x->zero_point && rank(x->zero_point, x->zero_point_splat) != 0))
      return nullptr;
    // The weights: one, or one per output feature.
    auto per_feature = [&](const Instruction* v, const Instruction* splat, const std::vector<int64_t>& dims) {
      return rank(v, splat) == 0 || (dims.size() == 1 && dims[0] == *w_axis);
    };
    if (!per_feature(w->scale, w->scale_splat, w->scale_dims) ||
        ((w->zero_point || w->zero_point_splat) &&
         !per_feature(w->zero_point, w->zero_point_splat, w->zero_point_dims)))
      return nullptr;
    if (!IntegralZeroPoint(*x) || !IntegralZeroPoint(*w)) return nullptr;
    Scalars(&*x);
    Scalars(&*w);
    Instruction* xi = Centered(*x, xv->shape().dims);
    for (auto it = views.rbegin(); it != views.rend(); ++it) {
      xi = hlo::AddCopyOf(c_, **it, {xi}, hlo::Shape(hlo::S32, (*it)->shape().dims));
    }
    Instruction* wi = Centered(*w, p->operand(1)->shape().dims);
    Instruction* sums = hlo::AddCopyOf(c_, *p, {xi, wi}, hlo::Shape(hlo::S32, p->shape().dims));
    // One scale per output feature: sx * sw.
    Instruction* scale = w->scale;
    if (scale->shape().rank() == 0) {
      scale = hlo::AddBinary(c_, Opcode::kMultiply, x->scale, scale, p);
    } else {
      scale =
          hlo::AddBinary(c_, Opcode::kMultiply, hlo::AddBroadcast(c_, x->scale, scale->shape().dims, {}, p), scale, p);
    }
    std::vector<int64_t> dims;
    if (scale->shape().rank() == 1) dims = {*out_axis};
    Instruction* f = hlo::AddConvert(c_, sums, hlo::F32, p);
    return hlo::AddBinary(c_, Opcode::kMultiply, f, hlo::AddBroadcast(c_, scale, p->shape().dims, dims, p), p);
  }

 private:
  // Where the weights keep their output features, and where the result
  // does: a convolution's kernel output feature dim; a dot's single free
  // rhs dim, last in the result.
  static bool OutputFeatureDims(const Instruction* p, std::optional<int64_t>* w_axis,
                                std::optional<int64_t>* out_axis) {
    if (p->opcode() == Opcode::kConvolution) {
      if (p->batch_group_count != 1) return false;
      *w_axis = p->conv_dnums.kernel_output_feature_dimension;
      *out_axis = p->conv_dnums.output_feature_dimension;
      return true;
    }
    const auto& d = p->dot_dnums;
    int64_t rank = p->operand(1)->shape().rank();
    std::vector<int64_t> free;
    for (int64_t k = 0; k < rank; ++k) {
      bool bound = false;
      for (int64_t c : d.rhs_contracting_dimensions) bound |= c == k;
      for (int64_t b : d.rhs_batch_dimensions) bound |= b == k;
      if (!bound) free.push_back(k);
    }
    if (free.size() != 1) return false;
    *w_axis = free[0];
    *out_axis = p->shape().rank() - 1;
    return true;
  }

  // Constant f32 weights as int8 values times one scale per output
  // feature, when they are exactly that: the importer folds a small
  // weight's DequantizeLinear into its values. A symmetric quantizer's
  // scale is the feature's largest magnitude / 127; the factoring is taken
  // only if every value is then an integer that, times the scale, gives the
  // weight back bit for bit.
  std::optional<Dequantized> FactorConstant(Instruction* w, int64_t axis) {
    if (w->opcode() != Opcode::kConstant || w->shape().element_type != hlo::F32 || w->shape().rank() == 0)
      return std::nullopt;
    const std::vector<int64_t>& dims = w->shape().dims;
    int64_t features = dims[axis], inner = 1;
    for (size_t k = axis + 1; k < dims.size(); ++k) inner *= dims[k];
    const float* v = w->literal->data<float>();
    const int64_t n = w->literal->element_count();
    auto feature_of = [&](int64_t i) { return (i / inner) % features; };
    std::vector<float> scale(features, 0.0f);
    for (int64_t i = 0; i < n; ++i) scale[feature_of(i)] = std::max(scale[feature_of(i)], std::fabs(v[i]));
    for (float& sc : scale) sc /= 127.0f;
    hlo::Literal q(hlo::Shape(hlo::F32, dims));
    for (int64_t i = 0; i < n; ++i) {
      float sc = scale[feature_of(i)];
      float r = sc > 0 ? std::nearbyint(v[i] / sc) : 0.0f;
      if (r * sc != v[i] || std::fabs(r) > 127) return std::nullopt;
      q.data<float>()[i] = r;
    }
    Dequantized d;
    d.value = hlo::AddConstant(c_, std::move(q));
    d.scale = hlo::AddConstant(c_, hlo::Literal::Vector(scale));
    d.scale_dims = {axis};
    return d;
  }

  // Makes the scalar constants that splats stand for.
  void Scalars(Dequantized* d) {
    auto scalar = [&](const Instruction* splat) {
      hlo::Shape shape(splat->shape().element_type, {});
      hlo::Literal l(shape);
      std::memcpy(l.untyped_data(), splat->literal->untyped_data(), hlo::ByteWidth(shape.element_type));
      return hlo::AddConstant(c_, std::move(l));
    };
    if (d->scale_splat) d->scale = scalar(d->scale_splat);
    if (d->zero_point_splat) d->zero_point = scalar(d->zero_point_splat);
  }

  // Whether the zero point, if any, is an 8-bit value widened to f32 or a
  // constant of 8-bit integers: then it has an exact s32 form.
  static bool IntegralZeroPoint(const Dequantized& d) {
    const Instruction* z = d.zero_point_splat ? d.zero_point_splat : d.zero_point;
    if (!z) return true;
    if (z->opcode() == Opcode::kConvert) return IsByte(z->operand(0)->shape().element_type);
    if (z->opcode() != Opcode::kConstant) return false;
    for (int64_t k = 0; k < z->literal->element_count(); ++k) {
      double e = z->literal->GetAsDouble(k);
      if (e != std::nearbyint(e) || std::fabs(e) > 255) return false;
    }
    return true;
  }

  // convert<s32>(value) - broadcast(zero point as s32).
  Instruction* Centered(const Dequantized& d, const std::vector<int64_t>& dims) {
    Instruction* v;
    if (d.value->opcode() == Opcode::kConstant && d.value->shape().element_type == hlo::F32) {
      v = hlo::AddConstant(c_, d.value->literal->Convert(hlo::S32));
    } else {
      v = hlo::AddConvert(c_, d.value, hlo::S32, d.value);
    }
    if (!d.zero_point) return v;
    Instruction* z;
    if (d.zero_point->opcode() == Opcode::kConvert) {
      z = hlo::AddConvert(c_, d.zero_point->operand(0), hlo::S32, d.zero_point);
    } else {
      z = hlo::AddConstant(c_, d.zero_point->literal->Convert(hlo::S32));
    }
    return hlo::AddBinary(c_, Opcode::kSubtract, v, hlo::AddBroadcast(c_, z, dims, d.zero_point_dims, d.zero_point),
                          d.zero_point);
  }

  hlo::Computation* c_;
};

}  // namespace

absl::StatusOr<bool> DequantizedProducts::Run(hlo::Module* module) {
  bool changed = false;
  for (const auto& c : module->computations()) {
    Rewriter rewriter(c.get());
    changed |= hlo::ReplaceEach(c.get(), {Opcode::kConvolution, Opcode::kDot},
                                [&](Instruction* p) { return rewriter.Rewrite(p); });
  }
  return changed;
}

}  // namespace xonnx::passes
