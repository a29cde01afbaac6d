// Native kernels for the instructions that move data between buffers:
// concatenate, pad, reverse, dynamic-slice, dynamic-update-slice, iota, and
// the byte copy of a reshape or bitcast-convert that needs its own buffer.
// Each is one or more box copies (strided_loops.h): rows in parallel on the
// backend's threads, the innermost contiguous run as one memcpy.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/strided_loops.h"
#include "backends/cpu/runtime/thunks.h"
#include "evaluator/kernels.h"

namespace xonnx::cpu {

using hlo::Instruction;
using hlo::Opcode;

void FillElements(void* dst, const void* value, int width, int64_t n) {
  DispatchWidth(width, [&](auto tag) {
    using W = typename decltype(tag)::type;
    W v;
    std::memcpy(&v, value, sizeof(W));
    W* d = static_cast<W*>(dst);
#pragma omp parallel for if (n > 4 * kParallelElements) schedule(static)
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  });
}

namespace {

// A thunk running one box copy per entry from input `input` at `src_base`
// into the output at `dst_base` (elements).
struct BoxCopy {
  size_t input;
  int64_t src_base, dst_base;
  Box box;
};

std::optional<Thunk> CopiesThunk(const Instruction& in, const ThunkIo& io, std::vector<BoxCopy> copies) {
  for (BoxCopy& c : copies) c.box.Simplify();
  Thunk t;
  t.name = in.name();
  BufferRef out = io.outputs[0];
  std::vector<BufferRef> inputs = io.inputs;
  bool ok = DispatchWidth(hlo::ByteWidth(in.shape().element_type), [&](auto tag) {
    using W = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      W* dst = static_cast<W*>(f.Ptr(out));
      for (const BoxCopy& c : copies)
        CopyBox<W>(static_cast<const W*>(f.Ptr(inputs[c.input])) + c.src_base, dst + c.dst_base, c.box);
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
  return t;
}

// The output as [outer, row]: operand k fills columns [at_k, at_k + n_k)
// of every row from its own [outer, n_k] (all row-major). One pass over the
// rows writes each output row whole, in one parallel region: a dense
// block's concatenation of up to 24 channels-last feature maps was one box
// copy per operand, each a parallel region of memcpy calls of a few
// hundred bytes (19% of DenseNet-121's time).
std::optional<Thunk> Concatenate(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  const int64_t dim = in.dimensions[0];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= os.dims[d];
  for (int64_t d = dim + 1; d < os.rank(); ++d) inner *= os.dims[d];
  const int64_t row = os.dims[dim] * inner;
  std::vector<int64_t> width, at;  // per operand, in elements
  for (int64_t k = 0, offset = 0; k < in.operand_count(); ++k) {
    width.push_back(in.operand(k)->shape().dims[dim] * inner);
    at.push_back(offset);
    offset += width.back();
  }
  Thunk t;
  t.name = in.name();
  BufferRef out = io.outputs[0];
  std::vector<BufferRef> inputs = io.inputs;
  bool ok = DispatchWidth(hlo::ByteWidth(os.element_type), [&](auto tag) {
    using W = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      W* dst = static_cast<W*>(f.Ptr(out));
      std::vector<const W*> src;
      for (const BufferRef& r : inputs) src.push_back(static_cast<const W*>(f.Ptr(r)));
      ForRanges(outer, row, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o)
          for (size_t k = 0; k < src.size(); ++k) {
            const W* s = src[k] + o * width[k];
            W* d = dst + o * row + at[k];
            if (width[k] * sizeof(W) >= 512) {
              std::memcpy(d, s, width[k] * sizeof(W));
            } else {
              for (int64_t i = 0; i < width[k]; ++i) d[i] = s[i];
            }
          }
      });
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
  return t;
}

}  // namespace

std::optional<Thunk> MakeBlockedConcatThunk(const Instruction& in, const ThunkIo& io, int block) {
  const hlo::Shape& os = in.shape();
  if (in.opcode() != Opcode::kConcatenate || os.rank() != 4 || in.dimensions != std::vector<int64_t>{3} ||
      os.element_type != hlo::F32 || block <= 0)
    return std::nullopt;
  // [N][C/block][H][W][block]: per image, a part of C_k channels is C_k * H
  // * W contiguous elements at its channel offset times H * W. The copies
  // are cut into pieces of at most kPiece elements, split between the
  // threads.
  constexpr int64_t kPiece = 1 << 14;
  const int64_t images = os.dims[0], plane = os.dims[1] * os.dims[2], channels = os.dims[3];
  struct Piece {
    int64_t dst, src, count;
    size_t part;
  };
  std::vector<Piece> pieces;
  for (int64_t n = 0; n < images; ++n) {
    for (int64_t k = 0, offset = 0; k < in.operand_count(); ++k) {
      int64_t c = in.operand(k)->shape().dims[3];
      if (c % block != 0) return std::nullopt;
      const int64_t run = c * plane;
      for (int64_t at = 0; at < run; at += kPiece)
        pieces.push_back(
            {(n * channels + offset) * plane + at, n * run + at, std::min(kPiece, run - at), static_cast<size_t>(k)});
      offset += c;
    }
  }
  Thunk t;
  t.name = in.name();
  t.kind = "concatenate-blocked";
  BufferRef out = io.outputs[0];
  std::vector<BufferRef> inputs = io.inputs;
  t.run = [pieces, out, inputs](Frame& f) -> absl::Status {
    float* dst = static_cast<float*>(f.Ptr(out));
    std::vector<const float*> src;
    for (const BufferRef& r : inputs) src.push_back(static_cast<const float*>(f.Ptr(r)));
    ForRanges(pieces.size(), kPiece, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const Piece& q = pieces[p];
        std::memcpy(dst + q.dst, src[q.part] + q.src, q.count * sizeof(float));
      }
    });
    return absl::OkStatus();
  };
  return t;
}

namespace {

std::optional<Thunk> Reverse(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  std::vector<int64_t> st = os.Strides(), src = st;
  int64_t base = 0;
  for (int64_t d : in.dimensions) {
    base += (os.dims[d] - 1) * st[d];
    src[d] = -st[d];
  }
  return CopiesThunk(in, io, {{0, base, 0, {os.dims, src, st}}});
}

// The output is filled with the padding value, then the operand's elements
// that land inside it (negative padding drops edges) are copied in.
std::optional<Thunk> Pad(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  const hlo::Shape& xs = in.operand(0)->shape();
  std::vector<int64_t> ost = os.Strides(), xst = xs.Strides();
  Box box;
  int64_t src_base = 0, dst_base = 0;
  bool empty = xs.ElementCount() == 0;
  for (int64_t d = 0; d < xs.rank(); ++d) {
    const auto& p = in.padding_config[d];
    int64_t step = p.interior_padding + 1, lo = p.edge_padding_low;
    // Operand positions i whose output position lo + i * step is in [0, out).
    int64_t first = lo >= 0 ? 0 : (-lo + step - 1) / step;
    int64_t last = os.dims[d] - 1 - lo < 0 ? -1 : std::min(xs.dims[d] - 1, (os.dims[d] - 1 - lo) / step);
    if (last < first) empty = true;
    box.dims.push_back(std::max<int64_t>(0, last - first + 1));
    box.src.push_back(xst[d]);
    box.dst.push_back(ost[d] * step);
    src_base += first * xst[d];
    dst_base += (lo + first * step) * ost[d];
  }
  box.Simplify();
  int width = hlo::ByteWidth(os.element_type);
  int64_t n = os.ElementCount();
  BufferRef x = io.inputs[0], value = io.inputs[1], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  bool ok = DispatchWidth(width, [&](auto tag) {
    using W = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      FillElements(f.Ptr(out), f.Ptr(value), width, n);
      if (!empty) CopyBox<W>(static_cast<const W*>(f.Ptr(x)) + src_base, static_cast<W*>(f.Ptr(out)) + dst_base, box);
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
  return t;
}

// Where a dynamic slice's window starts: one scalar index per dim, read
// from inputs first.., clamped as XLA clamps them so that the window stays
// inside the operand.
struct DynamicStart {
  size_t first;
  std::vector<hlo::PrimitiveType> types;
  std::vector<int64_t> limits, strides;  // operand dim - window dim; operand strides

  DynamicStart(const Instruction& in, size_t first, const hlo::Shape& operand, const hlo::Shape& window)
      : first(first), strides(operand.Strides()) {
    for (int64_t d = 0; d < operand.rank(); ++d) {
      types.push_back(in.operand(first + d)->shape().element_type);
      limits.push_back(operand.dims[d] - window.dims[d]);
    }
  }
  // The window's offset in the operand, in elements.
  int64_t Offset(const Frame& f, const ThunkIo& io) const {
    int64_t off = 0;
    for (size_t d = 0; d < types.size(); ++d)
      off += std::clamp<int64_t>(eval::ReadIndex(f.Ptr(io.inputs[first + d]), types[d], 0), 0, limits[d]) * strides[d];
    return off;
  }
};

std::optional<Thunk> DynamicSlice(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  const hlo::Shape& xs = in.operand(0)->shape();
  Box box{os.dims, xs.Strides(), os.Strides()};
  box.Simplify();
  Thunk t;
  t.name = in.name();
  bool ok = DispatchWidth(hlo::ByteWidth(os.element_type), [&](auto tag) {
    using W = typename decltype(tag)::type;
    t.run = [=, start = DynamicStart(in, 1, xs, os)](Frame& f) -> absl::Status {
      int64_t base = start.Offset(f, io);
      CopyBox<W>(static_cast<const W*>(f.Ptr(io.inputs[0])) + base, static_cast<W*>(f.Ptr(io.outputs[0])), box);
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
  return t;
}

// The operand is copied unless the output shares its buffer, then the
// update is written over its window.
std::optional<Thunk> DynamicUpdateSlice(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  const hlo::Shape& us = in.operand(1)->shape();
  Box box{us.dims, us.Strides(), os.Strides()};
  box.Simplify();
  int64_t bytes = os.ByteSize();
  bool empty = us.ElementCount() == 0;
  Thunk t;
  t.name = in.name();
  bool ok = DispatchWidth(hlo::ByteWidth(os.element_type), [&](auto tag) {
    using W = typename decltype(tag)::type;
    t.run = [=, start = DynamicStart(in, 2, os, us)](Frame& f) -> absl::Status {
      void* out = f.Ptr(io.outputs[0]);
      const void* x = f.Ptr(io.inputs[0]);
      if (out != x) std::memcpy(out, x, bytes);
      if (empty) return absl::OkStatus();
      int64_t base = start.Offset(f, io);
      CopyBox<W>(static_cast<const W*>(f.Ptr(io.inputs[1])), static_cast<W*>(out) + base, box);
      return absl::OkStatus();
    };
  });
  if (!ok) return std::nullopt;
  return t;
}

std::optional<Thunk> Iota(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  int64_t dim = in.dimensions[0], n = os.ElementCount(), inner = 1, count = os.dims[dim];
  for (int64_t d = dim + 1; d < os.rank(); ++d) inner *= os.dims[d];
  Thunk t;
  t.name = in.name();
  BufferRef out = io.outputs[0];
  hlo::TypeSwitch(os.element_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.run = [=](Frame& f) -> absl::Status {
      T* o = static_cast<T*>(f.Ptr(out));
      // Runs of `inner` equal values, `count` runs per block: no division
      // per element (two of them made a 400k-element iota take 5 ms).
      const int64_t blocks = count == 0 || inner == 0 ? 0 : n / (count * inner);
#pragma omp parallel for if (n > kParallelElements) schedule(static) collapse(2)
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t c = 0; c < count; ++c) {
          T* run = o + (b * count + c) * inner;
          const T v = hlo::ConvertValue<T, int64_t>(c);
          for (int64_t j = 0; j < inner; ++j) run[j] = v;
        }
      return absl::OkStatus();
    };
  });
  return t;
}

// A reshape or bitcast-convert whose operand's buffer it cannot alias: the
// bytes, unchanged.
std::optional<Thunk> ByteCopy(const Instruction& in, const ThunkIo& io) {
  int64_t bytes = in.shape().ByteSize();
  BufferRef x = io.inputs[0], out = io.outputs[0];
  Thunk t;
  t.name = in.name();
  t.run = [=](Frame& f) -> absl::Status {
    if (f.Ptr(out) != f.Ptr(x)) std::memcpy(f.Ptr(out), f.Ptr(x), bytes);
    return absl::OkStatus();
  };
  return t;
}

}  // namespace

std::optional<Thunk> MakeDataMoveThunk(const Instruction& in, const ThunkIo& io) {
  const hlo::Shape& os = in.shape();
  if (!os.IsArray() || io.outputs.size() != 1) return std::nullopt;
  switch (in.opcode()) {
    case Opcode::kConcatenate:
      return Concatenate(in, io);
    case Opcode::kReverse:
      return Reverse(in, io);
    case Opcode::kPad:
      return Pad(in, io);
    case Opcode::kDynamicSlice:
      return DynamicSlice(in, io);
    case Opcode::kDynamicUpdateSlice:
      return DynamicUpdateSlice(in, io);
    case Opcode::kIota:
      return Iota(in, io);
    case Opcode::kReshape:
    case Opcode::kBitcastConvert:
      if (in.operand(0)->shape().ByteSize() != os.ByteSize()) return std::nullopt;
      return ByteCopy(in, io);
    default:
      return std::nullopt;
  }
}

}  // namespace xonnx::cpu
