// Random ops: RandomUniform(Like), RandomNormal(Like), Bernoulli,
// Multinomial. Bits come from a counter-based hash (two rounds of the
// murmur3 32-bit finalizer over element index and seed) written with plain
// integer HLO, so every backend produces the same numbers for the same seed.
// A node without a seed uses one derived from its name: runs are
// reproducible; different seeds give independent streams.
#include <cmath>
#include <cstring>

#include "base/status.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

uint32_t SeedOf(NodeContext& ctx) {
  if (ctx.has_attr("seed")) {
    float f = ctx.attr_f("seed", 0);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  uint32_t h = 2166136261u;  // FNV-1a of the node's name and first output
  for (char c : ctx.node().name() + "/" + (ctx.output_count() ? ctx.node().output(0) : ""))
    h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

// 32 random bits per element of `dims`, for one (seed, stream).
Instruction* RandomBits(hlo::Builder& b, const std::vector<int64_t>& dims, uint32_t seed, uint32_t stream) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  auto c = [&](uint32_t v) { return Splat(b, hlo::U32, v, {n}); };
  auto mul = [&](Instruction* x, uint32_t k) { return b.Binary(Opcode::kMultiply, x, c(k)); };
  auto mix = [&](Instruction* x, uint32_t shift) {
    return b.Binary(Opcode::kXor, x, b.Binary(Opcode::kShiftRightLogical, x, c(shift)));
  };
  auto fmix = [&](Instruction* h) {
    h = mix(h, 16);
    h = mul(h, 0x85ebca6bu);
    h = mix(h, 13);
    h = mul(h, 0xc2b2ae35u);
    return mix(h, 16);
  };
  Instruction* counter = b.Iota(hlo::Shape(hlo::U32, {n}), 0);
  Instruction* h = b.Binary(Opcode::kAdd, mul(counter, 0x9e3779b9u), c(seed ^ (stream * 0x632be5abu)));
  h = fmix(b.Binary(Opcode::kXor, fmix(h), c(seed * 0x27d4eb2fu + 0x165667b1u)));
  return b.Reshape(h, dims);
}

// Uniform in [0, 1) (open_low: (0, 1]) with 24 bits of resolution, as f32.
Instruction* Uniform01(hlo::Builder& b, const std::vector<int64_t>& dims, uint32_t seed, uint32_t stream,
                       bool open_low = false) {
  Instruction* bits = RandomBits(b, dims, seed, stream);
  Instruction* top = b.Binary(Opcode::kShiftRightLogical, bits, Splat(b, hlo::U32, 8, dims));
  Instruction* f = b.Convert(top, hlo::F32);
  if (open_low) f = b.Binary(Opcode::kAdd, f, Splat(b, hlo::F32, 1, dims));
  return b.Binary(Opcode::kMultiply, f, Splat(b, hlo::F32, 1.0 / (1 << 24), dims));
}

absl::StatusOr<hlo::PrimitiveType> DType(NodeContext& ctx, hlo::PrimitiveType def) {
  if (!ctx.has_attr("dtype")) return def;
  return HloType(static_cast<int32_t>(ctx.attr_i("dtype", 1)));
}

absl::StatusOr<std::vector<int64_t>> ShapeOf(NodeContext& ctx, bool like) {
  if (like) {
    if (!ctx.input(0)) return ctx.Error("needs an input");
    return ctx.input(0)->shape().dims;
  }
  return ctx.attr_ints("shape");
}

template <bool kLike>
absl::Status RandomUniform(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, ShapeOf(ctx, kLike));
  ASSIGN_OR_RETURN(hlo::PrimitiveType t, DType(ctx, kLike ? ctx.input(0)->shape().element_type : hlo::F32));
  hlo::Builder& b = ctx.b();
  double lo = ctx.attr_f("low", 0), hi = ctx.attr_f("high", 1);
  Instruction* u = Uniform01(b, dims, SeedOf(ctx), 0);
  Instruction* v = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, u, Splat(b, hlo::F32, hi - lo, dims)),
                            Splat(b, hlo::F32, lo, dims));
  ctx.set_output(0, b.Convert(v, t));
  return absl::OkStatus();
}

template <bool kLike>
absl::Status RandomNormal(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, ShapeOf(ctx, kLike));
  ASSIGN_OR_RETURN(hlo::PrimitiveType t, DType(ctx, kLike ? ctx.input(0)->shape().element_type : hlo::F32));
  hlo::Builder& b = ctx.b();
  uint32_t seed = SeedOf(ctx);
  // Box-Muller: sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1].
  Instruction* u1 = Uniform01(b, dims, seed, 0, /*open_low=*/true);
  Instruction* u2 = Uniform01(b, dims, seed, 1);
  Instruction* r =
      b.Unary(Opcode::kSqrt, b.Binary(Opcode::kMultiply, Splat(b, hlo::F32, -2, dims), b.Unary(Opcode::kLog, u1)));
  Instruction* z = b.Binary(Opcode::kMultiply, r,
                            b.Unary(Opcode::kCos, b.Binary(Opcode::kMultiply, u2, Splat(b, hlo::F32, 2 * M_PI, dims))));
  Instruction* v =
      b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, z, Splat(b, hlo::F32, ctx.attr_f("scale", 1), dims)),
               Splat(b, hlo::F32, ctx.attr_f("mean", 0), dims));
  ctx.set_output(0, b.Convert(v, t));
  return absl::OkStatus();
}

absl::Status Bernoulli(NodeContext& ctx) {
  Instruction* p = ctx.input(0);
  if (!p) return ctx.Error("needs an input");
  ASSIGN_OR_RETURN(hlo::PrimitiveType t, DType(ctx, p->shape().element_type));
  hlo::Builder& b = ctx.b();
  Instruction* u = Uniform01(b, p->shape().dims, SeedOf(ctx), 0);
  ctx.set_output(0, b.Convert(b.Compare(u, b.Convert(p, hlo::F32), hlo::ComparisonDirection::kLt), t));
  return absl::OkStatus();
}

absl::Status Multinomial(NodeContext& ctx) {
  Instruction* logits = ctx.input(0);
  if (!logits || logits->shape().rank() != 2) return ctx.Error("input must be [batch, classes]");
  hlo::Builder& b = ctx.b();
  int64_t batch = logits->shape().dims[0], classes = logits->shape().dims[1];
  int64_t samples = ctx.attr_i("sample_size", 1);
  ASSIGN_OR_RETURN(hlo::PrimitiveType t, HloType(static_cast<int32_t>(ctx.attr_i("dtype", onnx::TensorProto::INT32))));
  // Probabilities from the unnormalized log-probabilities, then their running sum.
  Instruction* x = b.Convert(logits, hlo::F32);
  std::vector<int64_t> d2 = {batch, classes};
  Instruction* m = b.Broadcast(ReduceOver(b, x, Opcode::kMaximum, LowestValue(hlo::F32), {1}, false), d2, {0});
  Instruction* e = b.Unary(Opcode::kExp, b.Binary(Opcode::kSubtract, x, m));
  Instruction* p = b.Binary(Opcode::kDivide, e, b.Broadcast(ReduceOver(b, e, Opcode::kAdd, 0, {1}, false), d2, {0}));
  hlo::Window w;
  w.dimensions.resize(2);
  w.dimensions[1].size = classes;
  w.dimensions[1].padding_low = classes - 1;
  Instruction* cdf = b.ReduceWindow(p, b.ScalarConstant(hlo::F32, 0), w, b.ScalarReducer(Opcode::kAdd, hlo::F32));
  // Sample s of row i picks the number of cdf entries <= u (capped).
  std::vector<int64_t> d3 = {batch, samples, classes};
  Instruction* u = Uniform01(b, {batch, samples}, SeedOf(ctx), 0);
  Instruction* below =
      b.Compare(b.Broadcast(cdf, d3, {0, 2}), b.Broadcast(u, d3, {0, 1}), hlo::ComparisonDirection::kLe);
  Instruction* count = ReduceOver(b, b.Convert(below, hlo::S64), Opcode::kAdd, 0, {2}, false);
  Instruction* idx = b.Binary(Opcode::kMinimum, count, Splat(b, hlo::S64, classes - 1, {batch, samples}));
  ctx.set_output(0, b.Convert(idx, t));
  return absl::OkStatus();
}

}  // namespace

Instruction* RandomUniform01(NodeContext& ctx, const std::vector<int64_t>& dims) {
  return Uniform01(ctx.b(), dims, SeedOf(ctx), 0);
}

void RegisterRandomOps(Registry& r) {
  r.Add("RandomUniform", RandomUniform<false>);
  r.Add("RandomUniformLike", RandomUniform<true>);
  r.Add("RandomNormal", RandomNormal<false>);
  r.Add("RandomNormalLike", RandomNormal<true>);
  r.Add("Bernoulli", Bernoulli, 15);
  r.Add("Multinomial", Multinomial, 7);
}

}  // namespace xonnx::onnx_import
