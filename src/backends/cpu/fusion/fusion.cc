#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "backends/cpu/fusion/fusion_program.h"
#include "backends/cpu/fusion/table_lookup.h"
#include "backends/cpu/kernels/half_convert.h"
#include "backends/cpu/kernels/vector_math.h"
#include "backends/cpu/runtime/thunks.h"
#include "base/status.h"
#include "evaluator/scalar_ops.h"

namespace xonnx::cpu {

namespace {

using fused::kBlock;
using fused::Node;
using fused::Program;
using fused::Table;
using hlo::Opcode;

// dst[0..n) = *src for elements of width w.
void Fill(uint8_t* dst, const void* src, int w, int64_t n) {
  auto fill = [&](auto tag) {
    using U = typename decltype(tag)::type;
    U v;
    std::memcpy(&v, src, sizeof(U));
    U* d = reinterpret_cast<U*>(dst);
    for (int64_t k = 0; k < n; ++k) d[k] = v;
  };
  switch (w) {
    case 1:
      fill(hlo::TypeTag<uint8_t>{});
      break;
    case 2:
      fill(hlo::TypeTag<uint16_t>{});
      break;
    case 4:
      fill(hlo::TypeTag<uint32_t>{});
      break;
    default:
      fill(hlo::TypeTag<uint64_t>{});
      break;
  }
}

// Writes elements [start, start + len) of broadcast node `node` to `dst`,
// walking them in runs along the innermost dim: each run is a fill (stride
// 0), a memcpy (stride 1) or a strided gather.
void Gather(const Program& p, const Node& node, const void* input, int64_t start, int64_t len, uint8_t* dst) {
  int w = hlo::ByteWidth(node.type);
  int64_t r = p.out_dims.size();
  int64_t idx[16];
  int64_t rem = start, src = node.src_base;
  for (int64_t d = r - 1; d >= 0; --d) {
    idx[d] = rem % p.out_dims[d];
    rem /= p.out_dims[d];
    src += idx[d] * node.src_strides[d];
  }
  const uint8_t* base = static_cast<const uint8_t*>(input);
  int64_t inner = p.out_dims[r - 1], s_in = node.src_strides[r - 1];
  for (int64_t i = 0; i < len;) {
    int64_t run = std::min(len - i, inner - idx[r - 1]);
    uint8_t* out = dst + i * w;
    const uint8_t* in = base + src * w;
    if (s_in == 1) {
      std::memcpy(out, in, run * w);
    } else if (s_in == 0) {
      Fill(out, in, w, run);
    } else {
      for (int64_t k = 0; k < run; ++k) std::memcpy(out + k * w, in + k * s_in * w, w);
    }
    i += run;
    src += run * s_in;
    idx[r - 1] += run;
    for (int64_t d = r - 1; d > 0 && idx[d] == p.out_dims[d]; --d) {
      src -= idx[d] * node.src_strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      src += node.src_strides[d - 1];
    }
  }
}

// Gather for a broadcast node with repeats_over: the runs of its innermost
// dim repeat along the `repeats_over` dims outside it, so each stretch of
// equal runs (a "tile") is one run copied and then doubled in place.
void GatherRepeated(const Program& p, const Node& node, const void* input, int64_t start, int64_t len, uint8_t* dst) {
  const int w = hlo::ByteWidth(node.type);
  const int64_t r = p.out_dims.size(), outer_rank = r - 1 - node.repeats_over;
  const int64_t inner = p.out_dims[r - 1];
  int64_t tile = inner;
  for (int64_t d = outer_rank; d < r - 1; ++d) tile *= p.out_dims[d];
  const uint8_t* base = static_cast<const uint8_t*>(input);
  for (int64_t i = 0; i < len;) {
    int64_t e = start + i, q = e / tile, o = e % tile;
    int64_t src = node.src_base;
    for (int64_t d = outer_rank - 1; d >= 0; --d) {
      src += q % p.out_dims[d] * node.src_strides[d];
      q /= p.out_dims[d];
    }
    const uint8_t* run = base + src * w;
    uint8_t* out = dst + i * w;
    const int64_t n = std::min(len - i, tile - o);
    // Up to the start of a run, then one whole run, then doublings of
    // the whole runs written so far.
    int64_t head = std::min(n, inner - o % inner);
    std::memcpy(out, run + (o % inner) * w, head * w);
    if (head < n) {
      uint8_t* aligned = out + head * w;
      int64_t have = std::min(n - head, inner);
      std::memcpy(aligned, run, have * w);
      while (head + have < n) {
        int64_t more = std::min(have, n - head - have);
        std::memcpy(aligned + have * w, aligned, more * w);
        have += more;
      }
    }
    i += n;
  }
}

// Elements [start, start + len) of concatenation node `node`: a pointer
// into its part's buffer when they lie in one run of one part (a
// concatenation of outer dims, mostly), else copied to `dst` run by run.
const void* GatherConcat(const Node& node, absl::Span<void* const> in_ptrs, int64_t start, int64_t len, uint8_t* dst) {
  const int w = hlo::ByteWidth(node.type);
  const auto& ends = node.part_ends;
  int64_t row = start / node.row, at = start % node.row;  // the result's row, and where in it
  size_t k = std::upper_bound(ends.begin(), ends.end(), at) - ends.begin();
  auto source = [&]() {
    int64_t begin = k ? ends[k - 1] : 0;
    return static_cast<const uint8_t*>(in_ptrs[node.input + k]) + (row * (ends[k] - begin) + at - begin) * w;
  };
  if (at + len <= ends[k]) return source();
  for (int64_t i = 0; i < len;) {
    int64_t run = std::min(len - i, ends[k] - at);
    std::memcpy(dst + i * w, source(), run * w);
    i += run;
    at += run;
    while (i < len && at == ends[k]) {  // the next part with elements, on this row or the next
      if (++k == ends.size()) {
        k = 0;
        at = 0;
        ++row;
      }
    }
  }
  return dst;
}

// Lays out each scalar input's value over its block buffer in `scratch`,
// once per call and thread: every block reads the same values (a quantizer
// reads four scalars, and filling them per block took longer than its
// arithmetic).
void FillScalars(const Program& p, uint8_t* scratch, absl::Span<void* const> in_ptrs) {
  const int64_t len = std::min(kBlock, p.count);  // a block's length at most
  for (size_t n = 0; n + 1 < p.nodes.size(); ++n) {
    const Node& node = p.nodes[n];
    if (node.kind == Node::kInputScalar && node.needed)
      Fill(scratch + p.slot[n] * p.slot_bytes, in_ptrs[node.input], hlo::ByteWidth(node.type), len);
  }
}

void EvalOp(const Program& p, const Node& node, const std::vector<const void*>& vals, uint8_t* dst, int64_t len,
            absl::Status& st);

// Computes a block of node `n` into `dst` (or returns a pointer to data it
// can read directly). `tables` holds each table node's values.
const void* Eval(const Program& p, int n, int64_t start, int64_t len, std::vector<const void*>& vals, uint8_t* scratch,
                 absl::Span<void* const> in_ptrs, const std::vector<std::vector<uint8_t>>& patterns,
                 const std::vector<const uint8_t*>& tables, void* final_out, absl::Status& st) {
  const Node& node = p.nodes[n];
  int w = hlo::ByteWidth(node.type);
  uint8_t* dst = n == static_cast<int>(p.nodes.size()) - 1 ? static_cast<uint8_t*>(final_out) + start * w
                 : p.slot[n] >= 0                          ? scratch + p.slot[n] * p.slot_bytes
                                                           : nullptr;  // read in place, never written
  switch (node.kind) {
    case Node::kInputFull:
      return static_cast<const uint8_t*>(in_ptrs[node.input]) + start * w;
    case Node::kInputScalar:
      return dst;  // filled once per call and thread (FillScalars)
    case Node::kInputBroadcast:
      if (node.period) return patterns[n].data() + (start % node.period) * w;
      if (node.repeats_over)
        GatherRepeated(p, node, in_ptrs[node.input], start, len, dst);
      else
        Gather(p, node, in_ptrs[node.input], start, len, dst);
      return dst;
    case Node::kInputConcat:
      return GatherConcat(node, in_ptrs, start, len, dst);
    case Node::kOp:
      break;
  }
  if (node.table_source >= 0) {
    const uint8_t* index = static_cast<const uint8_t*>(vals[node.table_source]);
    if (node.table_period)
      LookupPeriodic(tables[n], w, node.table_period, start % node.table_period, index, dst, len);
    else
      LookupTable(tables[n], w, index, dst, len);
    return dst;
  }
  if (!node.quantize.empty()) {
    auto arg = [&](int k) {
      return node.quantize[k] < 0 ? nullptr : static_cast<const float*>(vals[node.quantize[k]]);
    };
    QuantizeArgs a{arg(0), arg(1), arg(2), arg(3), arg(4)};
    if (node.quantize_acc) {
      a.acc = static_cast<const int32_t*>(vals[node.quantize[0]]);
      a.x = nullptr;
      a.mul = arg(5);
      a.add = arg(6);
    }
    a.scalar = node.quantize_scalar;
    if (node.type == hlo::U8)
      QuantizeF32(a, dst, len);
    else
      QuantizeF32(a, reinterpret_cast<int8_t*>(dst), len);
    return dst;
  }
  if (!node.gelu.empty()) {
    GeluErfForm form;
    form.c = *static_cast<const float*>(vals[node.gelu[1]]);
    form.h = *static_cast<const float*>(vals[node.gelu[2]]);
    form.divide = node.gelu_divide;
    form.half_first = node.gelu_half_first;
    GeluErfF32(form, static_cast<const float*>(vals[node.gelu[0]]), reinterpret_cast<float*>(dst), len);
    return dst;
  }
  EvalOp(p, node, vals, dst, len, st);
  return dst;
}

// Computes the values of table `t` into `table` (see fused::Table): its
// chain's nodes over the source's 256 bit patterns, in each of the
// period's rows for a periodic table, each row's broadcast values the
// ones at that position.
void ComputeTable(const Program& p, const Table& t, absl::Span<void* const> in_ptrs, std::vector<uint8_t>& table,
                  absl::Status& st) {
  const int64_t rows = std::max<int64_t>(t.period, 1), len = 256 * rows;
  std::vector<const void*> vals(p.nodes.size());
  std::vector<std::vector<uint8_t>> bufs(p.nodes.size());
  std::vector<uint8_t> patterns(len);
  for (int64_t i = 0; i < len; ++i) patterns[i] = i & 255;
  vals[t.source] = patterns.data();
  for (int j : t.members) {
    const Node& node = p.nodes[j];
    const int w = hlo::ByteWidth(node.type);
    std::vector<uint8_t>& buf = j == t.root ? table : bufs[j];
    buf.resize(len * w);
    if (node.kind == Node::kInputScalar) {
      Fill(buf.data(), in_ptrs[node.input], w, len);
    } else if (node.kind == Node::kInputBroadcast) {  // periodic: one value per row
      std::vector<uint8_t> row_values(rows * w);
      Gather(p, node, in_ptrs[node.input], 0, rows, row_values.data());
      for (int64_t r = 0; r < rows; ++r) Fill(buf.data() + r * 256 * w, row_values.data() + r * w, w, 256);
    } else {
      EvalOp(p, node, vals, buf.data(), len, st);
    }
    vals[j] = buf.data();
  }
}

// The tables whose inputs are all constants, computed from the constants'
// literals when the thunk is built instead of on every call, and each
// table node's values by node (null for the rest, and for tables made per
// call until the call fills them in a copy).
struct ConstantTables {
  std::vector<std::vector<uint8_t>> values;
  std::vector<const uint8_t*> by_node;
  bool all = true;  // every table is here: a call uses by_node as it is
};

ConstantTables MakeConstantTables(const Program& p, size_t input_buffers, absl::Status& st) {
  ConstantTables ct;
  std::vector<void*> in_ptrs(input_buffers, nullptr);
  for (const Node& node : p.nodes)
    if (node.constant) in_ptrs[node.input] = const_cast<void*>(node.constant->literal->untyped_data());
  ct.values.resize(p.tables.size());
  ct.by_node.assign(p.tables.empty() ? 0 : p.nodes.size(), nullptr);
  for (size_t k = 0; k < p.tables.size(); ++k) {
    const Table& t = p.tables[k];
    ct.all = ct.all && t.constant;
    if (!t.constant) continue;
    ComputeTable(p, t, in_ptrs, ct.values[k], st);
    ct.by_node[t.root] = ct.values[k].data();
  }
  return ct;
}

// Converts between f32 and a 16-bit float with the vector kernels; false
// for any other pair of types.
bool ConvertHalf(hlo::PrimitiveType from, hlo::PrimitiveType to, const void* x, uint8_t* dst, int64_t len) {
  auto* half_out = reinterpret_cast<uint16_t*>(dst);
  auto* half_in = static_cast<const uint16_t*>(x);
  if (from == hlo::F32 && to == hlo::F16)
    ConvertF32ToF16(static_cast<const float*>(x), half_out, len);
  else if (from == hlo::F32 && to == hlo::BF16)
    ConvertF32ToBF16(static_cast<const float*>(x), half_out, len);
  else if (from == hlo::F16 && to == hlo::F32)
    ConvertF16ToF32(half_in, reinterpret_cast<float*>(dst), len);
  else if (from == hlo::BF16 && to == hlo::F32)
    ConvertBF16ToF32(half_in, reinterpret_cast<float*>(dst), len);
  else
    return false;
  return true;
}

// Computes `len` elements of op node `node` into `dst` from its operands'
// values in `vals`.
void EvalOp(const Program& p, const Node& node, const std::vector<const void*>& vals, uint8_t* dst, int64_t len,
            absl::Status& st) {
  const hlo::Instruction& in = *node.instr;
  auto arg = [&](int k) { return vals[node.operands[k]]; };
  hlo::PrimitiveType t0 = p.nodes[node.operands[0]].type;
  switch (in.opcode()) {
    case Opcode::kConvert:
      if (t0 == hlo::F32 && node.type == hlo::U8) {
        ConvertF32ToU8(static_cast<const float*>(arg(0)), dst, len);
        return;
      }
      if (t0 == hlo::F32 && node.type == hlo::S8) {
        ConvertF32ToS8(static_cast<const float*>(arg(0)), reinterpret_cast<int8_t*>(dst), len);
        return;
      }
      if (ConvertHalf(t0, node.type, arg(0), dst, len)) return;
      hlo::TypeSwitch(t0, [&](auto ft) {
        using From = typename decltype(ft)::type;
        hlo::TypeSwitch(node.type, [&](auto tt) {
          using To = typename decltype(tt)::type;
          eval::ConvertKernel<To, From>(static_cast<const From*>(arg(0)), reinterpret_cast<To*>(dst), len);
        });
      });
      return;
    case Opcode::kCompare:
      hlo::TypeSwitch(t0, [&](auto tag) {
        using T = typename decltype(tag)::type;
        eval::CompareKernel<T>(in.comparison_direction, static_cast<const T*>(arg(0)), static_cast<const T*>(arg(1)),
                               reinterpret_cast<bool*>(dst), len);
      });
      return;
    case Opcode::kIsFinite:
      hlo::TypeSwitch(t0, [&](auto tag) {
        using T = typename decltype(tag)::type;
        eval::IsFiniteKernel<T>(static_cast<const T*>(arg(0)), reinterpret_cast<bool*>(dst), len);
      });
      return;
    case Opcode::kSelect:
      hlo::TypeSwitch(node.type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        eval::SelectKernel<T>(static_cast<const bool*>(arg(0)), 1, static_cast<const T*>(arg(1)),
                              static_cast<const T*>(arg(2)), reinterpret_cast<T*>(dst), len);
      });
      return;
    case Opcode::kClamp:
      if (node.type == hlo::F32) {  // min(max(x, lo), hi), NaN as the scalar kernel passes it on
        float* y = reinterpret_cast<float*>(dst);
        ArithF32(Arith::kMaximum, static_cast<const float*>(arg(1)), static_cast<const float*>(arg(0)), y, len);
        ArithF32(Arith::kMinimum, y, static_cast<const float*>(arg(2)), y, len);
        return;
      }
      hlo::TypeSwitch(node.type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        eval::ClampKernel<T>(static_cast<const T*>(arg(0)), 1, static_cast<const T*>(arg(1)),
                             static_cast<const T*>(arg(2)), 1, reinterpret_cast<T*>(dst), len);
      });
      return;
    default:
      break;
  }
  if (t0 == hlo::F32 && node.type == hlo::F32 && node.operands.size() <= 2) {
    if (!ElementwiseF32(in, static_cast<const float*>(arg(0)),
                        node.operands.size() == 2 ? static_cast<const float*>(arg(1)) : nullptr,
                        reinterpret_cast<float*>(dst), len))
      st = Unimplemented("%s is not defined for f32", hlo::OpcodeName(in.opcode()));
    return;
  }
  bool ok = hlo::TypeSwitch(t0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (node.operands.size() == 1)
      return eval::UnaryKernel<T>(in.opcode(), static_cast<const T*>(arg(0)), reinterpret_cast<T*>(dst), len);
    return eval::BinaryKernel<T>(in.opcode(), static_cast<const T*>(arg(0)), static_cast<const T*>(arg(1)),
                                 reinterpret_cast<T*>(dst), len);
  });
  if (!ok) st = Unimplemented("%s is not defined for %s", hlo::OpcodeName(in.opcode()), hlo::PrimitiveTypeName(t0));
}

}  // namespace

std::optional<Arith> ArithOf(hlo::Opcode op) {
  switch (op) {
    case Opcode::kAdd:
      return Arith::kAdd;
    case Opcode::kSubtract:
      return Arith::kSubtract;
    case Opcode::kMultiply:
      return Arith::kMultiply;
    case Opcode::kDivide:
      return Arith::kDivide;
    case Opcode::kMaximum:
      return Arith::kMaximum;
    case Opcode::kMinimum:
      return Arith::kMinimum;
    default:
      return std::nullopt;
  }
}

bool ElementwiseF32(const hlo::Instruction& in, const float* a, const float* b, float* y, int64_t n) {
  // Softmax's exp, sigmoid, tanh (GELU's tanh form, recurrent cells), erf
  // (GELU's exact form) and the arithmetic: vectorized instead of a call per element.
  switch (in.opcode()) {
    case Opcode::kExp:
      ExpF32(a, y, n);
      return true;
    case Opcode::kLogistic:
      LogisticF32(a, y, n);
      return true;
    case Opcode::kTanh:
      TanhF32(a, y, n);
      return true;
    case Opcode::kErf:
      ErfF32(a, y, n);
      return true;
    case Opcode::kRoundNearestEven:
      RoundEvenF32(a, y, n);
      return true;
    default:
      break;
  }
  if (b) {
    if (std::optional<Arith> op = ArithOf(in.opcode())) {
      ArithF32(*op, a, b, y, n);
      return true;
    }
    return eval::BinaryKernel<float>(in.opcode(), a, b, y, n);
  }
  return eval::UnaryKernel<float>(in.opcode(), a, y, n);
}

absl::StatusOr<Thunk> MakeFusionThunk(const FusionSpec& spec, const ThunkIo& io) {
  ASSIGN_OR_RETURN(std::shared_ptr<Program> p, fused::BuildProgram(spec));
  const hlo::Instruction* root = spec.members.back();
  std::vector<BufferRef> ins = io.inputs;
  BufferRef out = io.outputs.at(0);
  Thunk t;
  t.name = root->name();
  if (spec.block) t.kind = "fusion-blocked";
  absl::Status built;
  auto fixed = std::make_shared<const ConstantTables>(MakeConstantTables(*p, ins.size(), built));
  RETURN_IF_ERROR(built);
  t.run = [p, ins, out, fixed](Frame& f) -> absl::Status {
    absl::InlinedVector<void*, 16> in_ptrs;
    for (const BufferRef& r : ins) in_ptrs.push_back(f.Ptr(r));
    void* final_out = f.Ptr(out);
    // One per node, sized only for periodic broadcasts (Eval reads no other).
    std::vector<std::vector<uint8_t>> patterns;
    for (size_t n = 0; n < p->nodes.size(); ++n) {
      const Node& node = p->nodes[n];
      if (node.kind != Node::kInputBroadcast || !node.period) continue;
      patterns.resize(p->nodes.size());
      patterns[n].resize((node.period + kBlock) * hlo::ByteWidth(node.type));
      Gather(*p, node, in_ptrs[node.input], 0, node.period + kBlock, patterns[n].data());
    }
    absl::Status status;
    // Each table node's values: built with the thunk, or for this call.
    std::vector<std::vector<uint8_t>> computed;
    std::optional<std::vector<const uint8_t*>> with_computed;
    if (!fixed->all) {
      with_computed = fixed->by_node;
      computed.resize(p->tables.size());
      for (size_t k = 0; k < p->tables.size(); ++k) {
        const Table& tab = p->tables[k];
        if (tab.constant) continue;
        ComputeTable(*p, tab, in_ptrs, computed[k], status);
        (*with_computed)[tab.root] = computed[k].data();
      }
    }
    const std::vector<const uint8_t*>& tables = with_computed ? *with_computed : fixed->by_node;
    if (!status.ok()) return status;
    int64_t blocks = (p->count + kBlock - 1) / kBlock;
    // The blocks of the calling thread, or of each thread of a team. A
    // fusion of a few blocks (a recurrent cell's 128 elements) runs without
    // a parallel region, whose start took longer than its work, and then
    // without an `omp for` too: an orphaned one would bind to a team the
    // caller runs it in (a concurrent run's two parts, a caller's own
    // parallel region) and share the blocks with threads running other
    // work.
    auto run_blocks = [&](bool team) {
      // Each thread's block buffers, kept from call to call: most fusions
      // are small (a squeeze-and-excitation gate is 32 to 1152 elements),
      // and allocating these was a good part of their time.
      thread_local std::vector<uint8_t> scratch;
      thread_local std::vector<const void*> vals;
      if (scratch.size() < p->slots * p->slot_bytes) scratch.resize(p->slots * p->slot_bytes);
      if (vals.size() < p->nodes.size()) vals.resize(p->nodes.size());
      absl::Status local;
      FillScalars(*p, scratch.data(), in_ptrs);
      auto block = [&](int64_t bi) {
        int64_t start = bi * kBlock;
        int64_t len = std::min(kBlock, p->count - start);
        for (size_t n = 0; n < p->nodes.size(); ++n)
          if (p->nodes[n].needed)
            vals[n] = Eval(*p, n, start, len, vals, scratch.data(), in_ptrs, patterns, tables, final_out, local);
      };
      if (team) {
#pragma omp for schedule(static)
        for (int64_t bi = 0; bi < blocks; ++bi) block(bi);
      } else {
        for (int64_t bi = 0; bi < blocks; ++bi) block(bi);
      }
      if (!local.ok()) {
#pragma omp critical
        status = local;
      }
    };
    if (blocks > 4) {
#pragma omp parallel
      run_blocks(true);
    } else {
      run_blocks(false);
    }
    return status;
  };
  return t;
}

}  // namespace xonnx::cpu
