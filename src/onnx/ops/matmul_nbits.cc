// ONNX Runtime's MatMulNBits (com.microsoft): Y = A W^T (+ bias) with W
// (N, K) stored as 4- or 8-bit integers in blocks of block_size along K,
// each block with its own scale and zero point, as weight-only quantizers
// write decoder weights. The weights are unpacked and dequantized in the
// program, in one canonical form (documented at DequantizedWeights) that
// XLA fuses into its product and that xonnx's CPU backend recognizes and
// runs on the packed bytes themselves (PlanPackedProducts): decode reads
// 4 bits per weight, not a float.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/registry.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// Unpacks u8 `bytes` (..., C) of `bits`-bit values, low bits first, into
// u8 (..., C * 8 / bits): the low nibbles and the high ones, interleaved.
Instruction* Unpack(hlo::Builder& b, Instruction* bytes, int64_t bits) {
  if (bits == 8) return bytes;
  std::vector<int64_t> d = bytes->shape().dims, one = d;
  one.push_back(1);
  auto scalar = [&](int v) { return b.Broadcast(b.ScalarConstant(hlo::U8, v), d, {}); };
  Instruction* lo = b.Reshape(b.Binary(Opcode::kAnd, bytes, scalar(15)), one);
  Instruction* hi = b.Reshape(b.Binary(Opcode::kShiftRightLogical, bytes, scalar(4)), one);
  std::vector<int64_t> out = d;
  out.back() *= 2;
  return b.Reshape(b.Concatenate({lo, hi}, static_cast<int64_t>(d.size())), out);
}

absl::Status MatMulNBits(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  int64_t k = ctx.attr_i("K", 0), n = ctx.attr_i("N", 0), bits = ctx.attr_i("bits", 4);
  int64_t block = ctx.attr_i("block_size", 0);
  if (bits != 4 && bits != 8) return ctx.Unsupported(absl::StrCat("bits=", bits, " (4 and 8 are supported)"));
  if (k <= 0 || n <= 0 || block < 16 || (block & (block - 1)))
    return ctx.Error(absl::StrCat("K (", k, ") and N (", n, ") must be positive and block_size (", block,
                                  ") a power of two of at least 16"));
  if (ctx.has_input(4)) return ctx.Unsupported("g_idx (act-order group indices)");
  Instruction* a = ctx.input(0);
  hlo::PrimitiveType t = a->shape().element_type;
  if (!hlo::IsFloatingPoint(t)) return ctx.Unsupported("non-float A");
  if (a->shape().rank() < 1 || a->shape().dims.back() != k)
    return ctx.Error(
        absl::StrCat("A's last dimension must be K = ", k, "; A is [", absl::StrJoin(a->shape().dims, ","), "]"));
  int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  Instruction* packed = ctx.input(1);
  if (packed->shape().element_type != hlo::U8 || packed->shape().ElementCount() != n * blocks * blob)
    return ctx.Error(absl::StrCat("B must be uint8 (N, blocks, block_size * bits / 8) = [", n, ",", blocks, ",", blob,
                                  "]; it is [", absl::StrJoin(packed->shape().dims, ","), "]"));
  // The canonical form (the CPU backend's PlanPackedProducts matches it):
  //   q = unpack(reshape(B, [N, blocks, blob]))         u8 [N, blocks, block]
  //   w = (convert<f32>(q) - broadcast(zp)) * broadcast(scales [N, blocks])
  //   W = slice(reshape(w, [N, blocks * block]), K)     the slice when K < that
  // with zp a scalar (no zero points) or an f32 [N, blocks] value.
  Instruction* q = Unpack(b, b.Reshape(packed, {n, blocks, blob}), bits);
  Instruction* scales = ctx.input(2);
  if (scales->shape().ElementCount() != n * blocks)
    return ctx.Error(absl::StrCat("scales must have N x blocks = ", n * blocks, " values; they have ",
                                  scales->shape().ElementCount()));
  std::vector<int64_t> wd = {n, blocks, block};
  auto per_block = [&](Instruction* v) { return b.Broadcast(b.Reshape(v, {n, blocks}), wd, {0, 1}); };
  Instruction* zp;
  if (!ctx.has_input(3)) {
    zp = b.Broadcast(b.ScalarConstant(hlo::F32, 1 << (bits - 1)), wd, {});
  } else {
    Instruction* z = ctx.input(3);
    if (z->shape().element_type != hlo::U8) return ctx.Unsupported("zero points of a float type");
    int64_t per_row = (blocks * bits + 7) / 8;
    if (z->shape().ElementCount() != n * per_row)
      return ctx.Error(absl::StrCat("packed zero points must have N x ceil(blocks x bits / 8) = ", n * per_row,
                                    " bytes; they have ", z->shape().ElementCount()));
    Instruction* zs = Unpack(b, b.Reshape(z, {n, per_row}), bits);
    if (zs->shape().dims[1] != blocks) zs = b.Slice(zs, {0, 0}, {n, blocks}, {1, 1});
    zp = per_block(b.Convert(zs, hlo::F32));
  }
  Instruction* w = b.Binary(Opcode::kMultiply, b.Binary(Opcode::kSubtract, b.Convert(q, hlo::F32), zp),
                            per_block(b.Convert(scales, hlo::F32)));
  w = b.Reshape(w, {n, blocks * block});
  if (blocks * block != k) w = b.Slice(w, {0, 0}, {n, k}, {1, 1});  // (N, K)
  hlo::DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {a->shape().rank() - 1};
  dn.rhs_contracting_dimensions = {1};
  Instruction* y = b.Dot(a, b.Convert(w, t), dn);
  // accuracy_level 4 lets ONNX Runtime round A to int8 in blocks of
  // block_size; the product says so, and a backend may do the same.
  const int64_t accuracy = ctx.attr_i("accuracy_level", 0);
  if (accuracy < 0 || accuracy > 4) return ctx.Error(absl::StrCat("accuracy_level must be 0 to 4; it is ", accuracy));
  if (accuracy == 4) y->frontend_attributes[hlo::kInt8ActivationsAttribute] = "true";
  if (ctx.has_input(5)) {
    Instruction* bias = ctx.input(5);
    if (bias->shape().ElementCount() != n)
      return ctx.Error(absl::StrCat("bias must have N = ", n, " values; it has ", bias->shape().ElementCount()));
    y = b.Binary(Opcode::kAdd, y,
                 b.Broadcast(b.Convert(b.Reshape(bias, {n}), t), y->shape().dims, {y->shape().rank() - 1}));
  }
  ctx.set_output(0, y);
  return absl::OkStatus();
}

}  // namespace

void RegisterMatMulNBitsOps(Registry& r) {
  r.Add({.domain = "com.microsoft", .op_type = "MatMulNBits", .min_opset = 1, .max_opset = 1, .fn = MatMulNBits});
}

}  // namespace xonnx::onnx_import
