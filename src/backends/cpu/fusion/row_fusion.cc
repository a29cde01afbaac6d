// The row fusion thunk: a layer norm or softmax (reductions along the last
// dim, the elementwise work around them and the broadcasts of their results
// back along it) computed a block of rows at a time, a row's intermediate
// values in the thread's cache, in one pass of the threads over the rows.
// The kernels are the fused loops' and the reduce thunk's.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/status.h"

namespace xonnx::cpu {

using Read = RowFusionSpec::Read;

namespace {

// A thread's view of one block's buffers (see the scratch layout below).
struct BlockBuffers {
  const float* const* in;  // the inputs, whole
  const float** full;      // full nodes' values for the block, by node
  const float** column;    // column vectors repeated over the block's rows, by input
  float* rows;             // nodes x kb row values
  float* splat;            // 2 operands spread along rows, span each
  float* small;            // 2 x kb spread scalars
  int64_t kb, cols, span;  // rows per block, columns, kb * cols
};

// Where operand `o` (the node's k-th) is read for the block of `nk` rows at
// row `i0`; row values and scalars are spread first, along the rows for a
// node that reads full operands (`wide`).
const float* ReadOperand(const BlockBuffers& b, const RowFusionSpec::Operand& o, int k, bool wide, int64_t i0,
                         int64_t nk) {
  switch (o.read) {
    case Read::kFull:
      return o.member ? b.full[o.index] : b.in[o.index] + i0 * b.cols;
    case Read::kColumns:
      return b.column[o.index];
    case Read::kRow: {
      const float* v = o.member ? b.rows + o.index * b.kb : b.in[o.index] + i0;
      if (!wide) return v;
      float* s = b.splat + k * b.span;
      for (int64_t r = 0; r < nk; ++r) std::fill(s + r * b.cols, s + (r + 1) * b.cols, v[r]);
      return s;
    }
    case Read::kScalar: {
      float* s = wide ? b.splat + k * b.span : b.small + k * b.kb;
      std::fill(s, s + (wide ? nk * b.cols : nk), b.in[o.index][0]);
      return s;
    }
  }
  return nullptr;
}

struct RowPlan {
  RowFusionSpec spec;
  // Rows per block: short rows (a softmax over 64 keys) go several at a
  // time, so that each node's kernel call covers about kBlock elements;
  // consecutive rows of a full value are contiguous.
  int64_t block_rows = 1;
  std::vector<int64_t> full_slot, output_of;
  int64_t full_slots = 0;
  std::vector<int> column_inputs;  // inputs read as kColumns
  // Per node: the arithmetic op of a full node whose second operand is
  // a row value or a scalar, computed a row (or block) at a time with
  // that one value instead of over a copy spread along the rows; a
  // layer norm's centering and scaling, a dequantize's zero point and
  // scale.
  std::vector<std::optional<Arith>> by_value;
};

// The thunk's plan for `spec`.
std::shared_ptr<const RowPlan> MakePlan(const RowFusionSpec& spec) {
  constexpr int64_t kBlock = 512;
  auto plan = std::make_shared<RowPlan>();
  plan->spec = spec;
  const int64_t rows = spec.rows, cols = spec.cols;
  plan->block_rows = std::clamp<int64_t>(kBlock / cols, 1, rows);
  plan->full_slot.assign(spec.nodes.size(), -1);
  plan->output_of.assign(spec.nodes.size(), -1);
  for (size_t n = 0; n < spec.nodes.size(); ++n)
    if (spec.nodes[n].full) plan->full_slot[n] = plan->full_slots++;
  for (size_t k = 0; k < spec.outputs.size(); ++k) plan->output_of[spec.outputs[k]] = k;
  plan->by_value.resize(spec.nodes.size());
  for (size_t n = 0; n < spec.nodes.size(); ++n) {
    const RowFusionSpec::Node& node = spec.nodes[n];
    if (!node.full || node.reduce || node.operands.size() != 2) continue;
    Read first = node.operands[0].read, second = node.operands[1].read;
    if ((first == Read::kFull || first == Read::kColumns) && (second == Read::kRow || second == Read::kScalar))
      plan->by_value[n] = ArithOf(node.instr->opcode());
  }
  std::vector<bool> is_column(spec.inputs, false);
  for (const auto& node : spec.nodes)
    for (const auto& o : node.operands)
      if (o.read == Read::kColumns && !o.member && !is_column[o.index]) {
        is_column[o.index] = true;
        plan->column_inputs.push_back(o.index);
      }
  return plan;
}

}  // namespace

absl::StatusOr<Thunk> MakeRowFusionThunk(const RowFusionSpec& spec, const ThunkIo& io) {
  if (io.inputs.size() != spec.inputs || io.outputs.size() != spec.outputs.size())
    return Internal("row fusion: %d inputs and %d outputs planned, %d and %d buffers", spec.inputs, spec.outputs.size(),
                    io.inputs.size(), io.outputs.size());
  std::shared_ptr<const RowPlan> plan = MakePlan(spec);
  std::vector<BufferRef> ins = io.inputs, outs = io.outputs;
  Thunk t;
  t.name = spec.nodes.back().instr->name();
  t.run = [plan, ins, outs](Frame& f) -> absl::Status {
    const RowPlan& pl = *plan;
    const RowFusionSpec& p = pl.spec;
    const int64_t rows = p.rows, cols = p.cols, kb = pl.block_rows, span = kb * cols;
    const int64_t blocks = (rows + kb - 1) / kb;
    const size_t nodes = p.nodes.size();
    absl::InlinedVector<const float*, 16> in_ptr;
    for (const BufferRef& r : ins) in_ptr.push_back(static_cast<const float*>(f.Ptr(r)));
    absl::InlinedVector<float*, 4> out_ptr;
    for (const BufferRef& r : outs) out_ptr.push_back(static_cast<float*>(f.Ptr(r)));
    absl::Status status;
    // One fork and join for the whole normalization; blocks of rows are
    // independent.
#pragma omp parallel if (blocks > 1 && rows * cols * static_cast <int64_t>(nodes) >= (1 << 15))
    {
      // Per thread, kept between calls: a block for each full node, two
      // for operands spread along rows, one per column vector repeated
      // over the block's rows, and the row values.
      thread_local std::vector<float> scratch;
      thread_local std::vector<const float*> full_ptr;
      const size_t columns = pl.column_inputs.size();
      const size_t want = (pl.full_slots + 2 + columns) * span + (nodes + 2) * kb;
      if (scratch.size() < want) scratch.resize(want);
      if (full_ptr.size() < nodes + in_ptr.size()) full_ptr.resize(nodes + in_ptr.size());
      // Plain pointers: each use of a thread_local in a shared library is a
      // call to find it.
      float* const slot_base = scratch.data();
      float* const splat_base = slot_base + pl.full_slots * span;
      float* const column_base = splat_base + 2 * span;
      float* const rv = column_base + columns * span;  // nodes x kb row values
      float* const small = rv + nodes * kb;            // 2 x kb spread scalars
      const float** const fp = full_ptr.data();
      const float** const column_ptr = fp + nodes;  // by input index
      for (size_t c = 0; c < columns; ++c) {
        int idx = pl.column_inputs[c];
        float* dst = column_base + c * span;
        for (int64_t r = 0; r < kb; ++r) std::memcpy(dst + r * cols, in_ptr[idx], cols * sizeof(float));
        column_ptr[idx] = dst;
      }
      const BlockBuffers buf{in_ptr.data(), fp, column_ptr, rv, splat_base, small, kb, cols, span};
      bool ok = true;
#pragma omp for schedule(static)
      for (int64_t b = 0; b < blocks; ++b) {
        if (!ok) continue;
        const int64_t i0 = b * kb, nk = std::min(kb, rows - i0), len = nk * cols;
        for (size_t n = 0; n < nodes && ok; ++n) {
          const RowFusionSpec::Node& node = p.nodes[n];
          if (pl.by_value[n]) {
            const RowFusionSpec::Operand& o = node.operands[1];
            const float* a = ReadOperand(buf, node.operands[0], 0, true, i0, nk);
            float* y = pl.output_of[n] >= 0 ? out_ptr[pl.output_of[n]] + i0 * cols : slot_base + pl.full_slot[n] * span;
            if (o.read == Read::kScalar) {
              ArithScalarF32(*pl.by_value[n], a, in_ptr[o.index][0], y, len);
            } else {
              const float* v = o.member ? rv + o.index * kb : in_ptr[o.index] + i0;
              for (int64_t r = 0; r < nk; ++r) ArithScalarF32(*pl.by_value[n], a + r * cols, v[r], y + r * cols, cols);
            }
            fp[n] = y;
            continue;
          }
          const bool wide = node.full || node.reduce;  // reads full operands
          const float* arg[2] = {nullptr, nullptr};
          const size_t operand_count = node.reduce ? 1 : node.operands.size();
          for (size_t k = 0; k < operand_count; ++k) arg[k] = ReadOperand(buf, node.operands[k], k, wide, i0, nk);
          if (node.reduce) {
            const float init = in_ptr[node.operands[1].index][0];
            for (int64_t r = 0; r < nk; ++r)
              rv[n * kb + r] = ReduceContiguousF32(node.reduce_op, init, arg[0] + r * cols, cols);
          } else if (node.full) {
            float* y = pl.output_of[n] >= 0 ? out_ptr[pl.output_of[n]] + i0 * cols : slot_base + pl.full_slot[n] * span;
            ok = ElementwiseF32(*node.instr, arg[0], operand_count > 1 ? arg[1] : nullptr, y, len);
            fp[n] = y;
          } else {
            ok = ElementwiseF32(*node.instr, arg[0], operand_count > 1 ? arg[1] : nullptr, rv + n * kb, nk);
          }
          if (ok && !node.full && pl.output_of[n] >= 0)
            std::memcpy(out_ptr[pl.output_of[n]] + i0, rv + n * kb, nk * sizeof(float));
        }
      }
      if (!ok) {
#pragma omp critical
        status = Unimplemented("row fusion: an op is not defined for f32");
      }
    }
    return status;
  };
  return t;
}

}  // namespace xonnx::cpu
