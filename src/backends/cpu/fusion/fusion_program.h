// The fused loop's program: the nodes of an elementwise fusion in operand
// order, how each is read or computed (inputs in place, through strides,
// as scalars; ops by their kernels, by a table lookup, or as one-pass
// quantizers), and the block buffers they share. Built once per thunk
// (fusion_program.cc) and run by the thunk (fusion.cc).
#ifndef XONNX_BACKENDS_CPU_FUSION_FUSION_PROGRAM_H_
#define XONNX_BACKENDS_CPU_FUSION_FUSION_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/runtime/thunks.h"
#include "hlo/ir.h"

namespace xonnx::cpu::fused {

// Elements per block: each node runs over a block before the next node.
// 1024 rather than 512 halves the nodes' fixed cost per element; with the
// shared slots a chain's blocks still fit in L1 and L2 (MobileNetV3-Small
// QDQ 5-8% faster, f32 models the same or up to 4%).
constexpr int64_t kBlock = 1024;
constexpr int64_t kMaxPeriod = 1 << 16;

// One node of the fused program.
struct Node {
  enum Kind { kInputFull, kInputScalar, kInputBroadcast, kInputConcat, kOp } kind;
  const hlo::Instruction* instr = nullptr;
  hlo::PrimitiveType type;           // result element type
  std::vector<int> operands;         // node indices
  int input = -1;                    // for inputs: index into io.inputs (a concatenation's first part)
  std::vector<int64_t> src_strides;  // broadcast or slice: operand stride per output dim
  int64_t src_base = 0;              // slice: where it starts in its operand
  // Broadcast whose values repeat every `period` elements of the output (a
  // per-channel scale or bias in channels-last order, a layer norm's gamma):
  // each call lays out period + kBlock of them once, and a block reads them
  // at its offset instead of gathering its own copy. 0: not periodic.
  int64_t period = 0;
  // Broadcast, not periodic, whose innermost dim is read contiguously and
  // whose next `repeats_over` dims out have stride 0 (a per-channel or
  // per-image value over blocked activations: a block of channels repeated
  // over the pixels): those runs are equal, and a block copies one run and
  // then doubles what it has written. 0: none.
  int repeats_over = 0;
  // Concatenation: each row of the result (the elements of one index of
  // the dims before the joined one) is `row` elements, the parts' rows
  // end to end; part k's ends at part_ends[k] and is read from input
  // `input + k`.
  int64_t row = 0;
  std::vector<int64_t> part_ends;
  // An op node computed by looking up its value in a table indexed by the
  // 8-bit value of node `table_source` (see Table); -1: computed itself.
  int table_source = -1;
  // The table's period (see Table::period); 0: a table of 256.
  int64_t table_period = 0;
  // For an input whose buffer is an HLO constant's (a scalar, a
  // broadcast's operand): that constant, whose literal holds the values
  // when the thunk is built. Null otherwise.
  const hlo::Instruction* constant = nullptr;
  // A quantizer's last node, convert(clamp(lo, round(x / scale) + zero
  // point, hi)) to u8 or s8, computed in one pass (QuantizeF32) from the
  // nodes x, scale, zero point, lo, hi, mul, add; empty: computed itself.
  // With quantize_acc, x is an s32 node and the pass computes
  // f32(x) * mul + add first (mul or add -1: none), an integer product's
  // rescaling.
  std::vector<int> quantize;
  bool quantize_acc = false;
  // Bit k: quantize operand k + 1 (scale, zero point, lo, hi, mul, add)
  // is a scalar input (QuantizeArgs::scalar).
  unsigned quantize_scalar = 0;
  // GELU's exact form ending at this node, computed in one pass
  // (GeluErfF32) from the nodes x, c and h (c and h scalar inputs); empty:
  // computed itself. See PlanGelus.
  std::vector<int> gelu;
  bool gelu_divide = false, gelu_half_first = false;
  // Whether the block loop computes this node: not when only tables read it.
  bool needed = true;
};

// An elementwise chain whose only varying input is one 8-bit value (a
// dequantize, an activation and a requantize between two quantized
// products; a dequantize alone) has at most 256 distinct results: each
// call computes them once, by running the chain's own kernels over the
// 256 bit patterns, and the block loop looks them up. Exact by
// construction, and one pass instead of the chain's ten (MobileNetV3 QDQ).
//
// A chain that also reads periodic broadcasts of one period P (a product's
// bias and a layer scale per channel, channels last) has at most 256
// results per position modulo P: a table of P rows of 256, looked up by
// position and value. Its work is 256 * P elements, so it is built when
// its inputs are constants (once, with the thunk) or when the fusion has
// at least four times as many elements. That is the dequantize, bias,
// GELU and requantize between the two quantized products of a
// transformer's MLP.
struct Table {
  int root = 0;              // the node whose values the table holds
  int source = 0;            // the 8-bit node that indexes it
  std::vector<int> members;  // the nodes computed to fill it, in order (not the source)
  int64_t period = 0;        // P; 0: a table of 256 indexed by value only
  bool constant = false;     // every input it reads is an HLO constant
};

struct Program {
  std::vector<Node> nodes;
  std::vector<int64_t> out_dims;
  int64_t count = 0;
  // Each node's block buffer: slot[n] * slot_bytes into the thread's
  // scratch. Nodes whose values are dead by then share slots, so that a
  // long chain's buffers stay in the L1 cache (one 4 KiB buffer per node
  // spilled a quantizer's dozen nodes to L2, and its loops waited on
  // stores).
  std::vector<int> slot;
  int slots = 0;
  size_t slot_bytes = 0;
  std::vector<Table> tables;
};

// The nodes whose values `node` reads in the block loop: its table's
// source in place of its operands when it is looked up, a quantizer's
// five operands or a GELU's three in place of its own.
std::vector<int> BlockOperands(const Node& node);

// The fused program of `spec`: its nodes, tables, quantizers and slots.
absl::StatusOr<std::shared_ptr<Program>> BuildProgram(const FusionSpec& spec);

}  // namespace xonnx::cpu::fused

#endif  // XONNX_BACKENDS_CPU_FUSION_FUSION_PROGRAM_H_
