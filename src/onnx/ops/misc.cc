// Smaller ops: window functions, Shrink, ReverseSequence, Einsum and the
// training optimizers of ai.onnx.preview.training (pure elementwise updates).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>

#include "base/status.h"
#include "onnx/registry.h"
#include "onnx/tensor_proto.h"

namespace xonnx::onnx_import {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

// Hann / Hamming / Blackman windows as generalized cosine sums.
template <int kKind>
absl::Status Window(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Literal size_l, ctx.ConstInput(0));
  int64_t n = size_l.GetAsInt64(0);
  if (n < 0) return ctx.Error("size must be non-negative");
  bool periodic = ctx.attr_i("periodic", 1) != 0;
  ASSIGN_OR_RETURN(hlo::PrimitiveType t, HloType(static_cast<int32_t>(ctx.attr_i("output_datatype", 1))));
  double denom = periodic ? n : n - 1;
  Literal w(hlo::Shape(hlo::F64, {n}));
  for (int64_t i = 0; i < n; ++i) {
    double x = denom > 0 ? 2 * M_PI * i / denom : 0;
    double v;
    if (kKind == 0)
      v = 0.5 - 0.5 * std::cos(x);
    else if (kKind == 1)
      v = 25.0 / 46 - (21.0 / 46) * std::cos(x);
    else
      v = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
    w.data<double>()[i] = v;
  }
  ctx.set_output(0, ctx.b().Constant(w.Convert(t)));
  return absl::OkStatus();
}

absl::Status Shrink(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  double lambd = ctx.attr_f("lambd", 0.5f), bias = ctx.attr_f("bias", 0.0f);
  Instruction* lo = b.Compare(x, SplatLike(b, x, -lambd), hlo::ComparisonDirection::kLt);
  Instruction* hi = b.Compare(x, SplatLike(b, x, lambd), hlo::ComparisonDirection::kGt);
  Instruction* y = b.Select(hi, b.Binary(Opcode::kSubtract, x, SplatLike(b, x, bias)), SplatLike(b, x, 0));
  ctx.set_output(0, b.Select(lo, b.Binary(Opcode::kAdd, x, SplatLike(b, x, bias)), y));
  return absl::OkStatus();
}

absl::Status ReverseSequence(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  Instruction* lens = ctx.input(1);
  hlo::Builder& b = ctx.b();
  int64_t r = x->shape().rank();
  ASSIGN_OR_RETURN(int64_t batch_axis, NormalizeAxis(ctx, ctx.attr_i("batch_axis", 1), r));
  ASSIGN_OR_RETURN(int64_t time_axis, NormalizeAxis(ctx, ctx.attr_i("time_axis", 0), r));
  const auto& dims = x->shape().dims;
  // A length past the time axis would read clamped rows; ONNX Runtime
  // refuses lengths outside [0, T].
  RETURN_IF_ERROR(ctx.CheckIndexRange(lens, 0, dims[time_axis], "sequence_lens"));
  // src_t = t < len[b] ? len[b] - 1 - t : t, then gather along the time axis.
  hlo::Shape s64(hlo::S64, dims);
  Instruction* t = b.Iota(s64, time_axis);
  Instruction* len = b.Broadcast(b.Convert(lens, hlo::S64), dims, {batch_axis});
  Instruction* rev = b.Binary(Opcode::kSubtract, b.Binary(Opcode::kSubtract, len, SplatLike(b, len, 1)), t);
  Instruction* src = b.Select(b.Compare(t, len, hlo::ComparisonDirection::kLt), rev, t);
  ctx.set_output(0, GatherElementsAlongAxis(b, x, src, time_axis));
  return absl::OkStatus();
}

// A label repeated within one operand takes the diagonal: keep the first
// occurrence, mask the second by equality and sum it away. `labels` loses
// the repeats.
absl::StatusOr<Instruction*> TakeDiagonals(NodeContext& ctx, Instruction* x, std::string* labels) {
  hlo::Builder& b = ctx.b();
  std::string& term = *labels;
  for (size_t i = 0; i < term.size(); ++i) {
    size_t j = term.find(term[i], i + 1);
    while (j != std::string::npos) {
      const auto& dims = x->shape().dims;
      if (dims[i] != dims[j]) return ctx.Error("a repeated label has different sizes");
      hlo::Shape s64(hlo::S64, dims);
      Instruction* eqm = b.Compare(b.Iota(s64, i), b.Iota(s64, j), hlo::ComparisonDirection::kEq);
      x = b.Select(eqm, x, SplatLike(b, x, 0));
      x = ReduceOver(b, x, Opcode::kAdd, 0, {static_cast<int64_t>(j)}, false);
      term.erase(j, 1);
      j = term.find(term[i], i + 1);
    }
  }
  return x;
}

// Einsum over one or two operands without repeated labels in one operand:
// labels only in one operand are summed first, then one dot contracts the
// shared labels that are not in the output and batches the shared ones that
// are; a final transpose orders the result.
absl::Status Einsum(NodeContext& ctx) {
  std::string eq = ctx.attr_s("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t p = 0, q; p <= lhs.size(); p = q + 1) {
    q = lhs.find(',', p);
    if (q == std::string::npos) q = lhs.size();
    terms.push_back(lhs.substr(p, q - p));
  }
  if (terms.size() != static_cast<size_t>(ctx.input_count()) || terms.size() > 2)
    return ctx.Unsupported("only one or two operands");
  hlo::Builder& b = ctx.b();
  // An ellipsis stands for the leading dims an operand has beyond its
  // letters; give them letters the equation does not use, right-aligned
  // across operands as numpy does (their sizes must then agree).
  int64_t ell_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    size_t e = terms[k].find("...");
    if (e != std::string::npos)
      ell_rank =
          std::max<int64_t>(ell_rank, ctx.input(k)->shape().rank() - (static_cast<int64_t>(terms[k].size()) - 3));
  }
  std::string ell_letters;
  for (char c = 'A'; static_cast<int64_t>(ell_letters.size()) < ell_rank && c <= 'z'; ++c)
    if (std::isalpha(static_cast<unsigned char>(c)) && eq.find(c) == std::string::npos) ell_letters += c;
  for (size_t k = 0; k < terms.size(); ++k) {
    size_t e = terms[k].find("...");
    if (e == std::string::npos) continue;
    int64_t n = ctx.input(k)->shape().rank() - (static_cast<int64_t>(terms[k].size()) - 3);
    if (n < 0) return ctx.Error("the equation has more labels than the input has dims");
    terms[k].replace(e, 3, ell_letters.substr(ell_rank - n));
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    size_t e = out.find("...");
    if (e != std::string::npos) out.replace(e, 3, ell_letters);
  } else {
    std::map<char, int> count;
    for (const auto& t : terms)
      for (char c : t) ++count[c];
    out = ell_letters;
    for (auto [c, n] : count)
      if (n == 1 && ell_letters.find(c) == std::string::npos) out += c;
  }
  std::vector<Instruction*> xs;
  for (size_t k = 0; k < terms.size(); ++k) {
    Instruction* x = ctx.input(k);
    if (static_cast<int64_t>(terms[k].size()) != x->shape().rank())
      return ctx.Error("equation rank differs from the input");
    ASSIGN_OR_RETURN(x, TakeDiagonals(ctx, x, &terms[k]));
    // Sum labels that appear nowhere else.
    std::vector<int64_t> sum_dims;
    std::string kept;
    for (size_t i = 0; i < terms[k].size(); ++i) {
      char c = terms[k][i];
      bool elsewhere =
          out.find(c) != std::string::npos || (terms.size() == 2 && terms[1 - k].find(c) != std::string::npos);
      if (elsewhere)
        kept += c;
      else
        sum_dims.push_back(i);
    }
    if (!sum_dims.empty()) x = ReduceOver(b, x, Opcode::kAdd, 0, sum_dims, false);
    terms[k] = kept;
    xs.push_back(x);
  }
  Instruction* y;
  std::string labels;
  if (xs.size() == 1) {
    y = xs[0];
    labels = terms[0];
  } else {
    hlo::DotDimensionNumbers d;
    std::string batch, a_free, b_free;
    for (size_t i = 0; i < terms[0].size(); ++i) {
      char c = terms[0][i];
      size_t j = terms[1].find(c);
      if (j == std::string::npos) {
        a_free += c;
        continue;
      }
      if (out.find(c) != std::string::npos) {
        d.lhs_batch_dimensions.push_back(i);
        d.rhs_batch_dimensions.push_back(j);
        batch += c;
      } else {
        d.lhs_contracting_dimensions.push_back(i);
        d.rhs_contracting_dimensions.push_back(j);
      }
    }
    for (char c : terms[1])
      if (terms[0].find(c) == std::string::npos) b_free += c;
    y = b.Dot(xs[0], xs[1], d);
    labels = batch + a_free + b_free;
  }
  std::vector<int64_t> perm;
  for (char c : out) {
    size_t p = labels.find(c);
    if (p == std::string::npos)
      return ctx.Error(absl::StrCat("output label '", std::string(1, c), "' is not in the inputs"));
    perm.push_back(p);
  }
  ctx.set_output(0, b.Transpose(y, perm));
  return absl::OkStatus();
}

// Det of [..., n, n] by cofactor expansion along the first row, which is
// exact in structure and fine for the small matrices it is used on; larger
// matrices would need a pivoted LU and are refused.
absl::Status Det(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  int64_t r = x->shape().rank();
  if (r < 2 || x->shape().dims[r - 1] != x->shape().dims[r - 2]) return ctx.Error("input must be [..., n, n]");
  int64_t n = x->shape().dims[r - 1];
  if (n > 4) return ctx.Unsupported(absl::StrCat("matrices larger than 4x4 (got ", n, "x", n, ")"));
  std::vector<int64_t> batch(x->shape().dims.begin(), x->shape().dims.end() - 2);
  auto elem = [&](int64_t i, int64_t j) {
    std::vector<int64_t> s(r, 0), l = x->shape().dims, st(r, 1);
    s[r - 2] = i;
    s[r - 1] = j;
    l[r - 2] = i + 1;
    l[r - 1] = j + 1;
    return b.Reshape(b.Slice(x, s, l, st), batch);
  };
  // det over the rows [row, n) and the given columns.
  std::function<Instruction*(int64_t, std::vector<int64_t>)> det = [&](int64_t row,
                                                                       std::vector<int64_t> cols) -> Instruction* {
    if (cols.size() == 1) return elem(row, cols[0]);
    Instruction* acc = nullptr;
    for (size_t k = 0; k < cols.size(); ++k) {
      std::vector<int64_t> rest = cols;
      rest.erase(rest.begin() + k);
      Instruction* term = b.Binary(Opcode::kMultiply, elem(row, cols[k]), det(row + 1, rest));
      if (!acc)
        acc = term;
      else
        acc = b.Binary(k % 2 ? Opcode::kSubtract : Opcode::kAdd, acc, term);
    }
    return acc;
  };
  std::vector<int64_t> all(n);
  for (int64_t k = 0; k < n; ++k) all[k] = k;
  ctx.set_output(0, n == 0 ? Splat(b, x->shape().element_type, 1, batch) : det(0, all));
  return absl::OkStatus();
}

// TfIdfVectorizer over integer tokens: for every pooled n-gram and every
// allowed skip, the token-wise matches of shifted slices are ANDed and
// summed, so the counts come from plain compares and reductions.
absl::Status TfIdfVectorizer(NodeContext& ctx) {
  Instruction* x = ctx.input(0);
  hlo::Builder& b = ctx.b();
  if (ctx.has_attr("pool_strings")) return ctx.Unsupported("string pools (string tensors)");
  if (!hlo::IsInteger(x->shape().element_type) || x->shape().rank() < 1 || x->shape().rank() > 2)
    return ctx.Error("input must be a 1-D or 2-D integer tensor");
  bool batched = x->shape().rank() == 2;
  int64_t rows = batched ? x->shape().dims[0] : 1, len = x->shape().dims.back();
  Instruction* x2 = b.Reshape(b.Convert(x, hlo::S64), {rows, len});
  int64_t min_n = ctx.attr_i("min_gram_length", 1), max_n = ctx.attr_i("max_gram_length", 1);
  int64_t max_skip = ctx.attr_i("max_skip_count", 0);
  std::string mode = ctx.attr_s("mode", "TF");
  std::vector<int64_t> counts = ctx.attr_ints("ngram_counts"), indexes = ctx.attr_ints("ngram_indexes");
  std::vector<int64_t> pool = ctx.attr_ints("pool_int64s");
  std::vector<float> weights = ctx.attr_floats("weights");
  int64_t width = 0;
  for (int64_t i : indexes) width = std::max(width, i + 1);
  std::vector<Instruction*> cols(width, nullptr);
  int64_t gram = 0;  // position in pool order, across lengths
  for (size_t level = 0; level < counts.size(); ++level) {
    int64_t n = level + 1;
    int64_t begin = counts[level], end = level + 1 < counts.size() ? counts[level + 1] : pool.size();
    for (int64_t at = begin; at + n <= end; at += n, ++gram) {
      if (n < min_n || n > max_n || gram >= static_cast<int64_t>(indexes.size())) continue;
      Instruction* total = nullptr;
      for (int64_t d = 1; d <= (n == 1 ? 1 : max_skip + 1); ++d) {
        int64_t span = (n - 1) * d;
        if (span >= len) continue;
        Instruction* match = nullptr;
        for (int64_t k = 0; k < n; ++k) {
          Instruction* sl = b.Slice(x2, {0, k * d}, {rows, len - span + k * d}, {1, 1});
          Instruction* eq = b.Compare(sl, SplatLike(b, sl, pool[at + k]), hlo::ComparisonDirection::kEq);
          match = match ? b.Binary(Opcode::kAnd, match, eq) : eq;
        }
        Instruction* c = ReduceOver(b, b.Convert(match, hlo::F32), Opcode::kAdd, 0, {1}, false);
        total = total ? b.Binary(Opcode::kAdd, total, c) : c;
      }
      if (!total) total = Splat(b, hlo::F32, 0, {rows});
      double w = gram < static_cast<int64_t>(weights.size()) ? weights[gram] : 1.0;
      if (mode == "IDF")
        total = b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMinimum, total, SplatLike(b, total, 1)),
                         SplatLike(b, total, w));
      else if (mode == "TFIDF")
        total = b.Binary(Opcode::kMultiply, total, SplatLike(b, total, w));
      else if (mode != "TF")
        return ctx.Error(absl::StrCat("unknown mode '", mode, "'"));
      cols[indexes[gram]] = b.Reshape(total, {rows, 1});
    }
  }
  for (auto& c : cols)
    if (!c) c = Splat(b, hlo::F32, 0, {rows, 1});
  Instruction* y = width ? b.Concatenate(cols, 1) : Splat(b, hlo::F32, 0, {rows, 0});
  ctx.set_output(0, batched ? y : b.Reshape(y, {width}));
  return absl::OkStatus();
}

// StringNormalizer: drops stopwords (case-sensitively or not) and changes
// case, on a string tensor known at compile time (ASCII case mapping).
absl::Status StringNormalizer(NodeContext& ctx) {
  const StringTensor* in = ctx.string_input(0);
  if (!in) return ctx.Error("needs a string input");
  std::string action = ctx.attr_s("case_change_action", "NONE");
  bool sensitive = ctx.attr_i("is_case_sensitive", 0) != 0;
  std::vector<std::string> stop;
  for (const auto& a : ctx.node().attribute())
    if (a.name() == "stopwords") stop.assign(a.strings().begin(), a.strings().end());
  auto lower = [](std::string v) {
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v;
  };
  auto upper = [](std::string v) {
    for (char& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return v;
  };
  if (!sensitive)
    for (auto& w : stop) w = lower(w);
  if (in->dims.size() > 2 || (in->dims.size() == 2 && in->dims[0] != 1))
    return ctx.Error("input must be [C] or [1, C]");
  StringTensor out;
  for (const auto& v : in->values) {
    std::string key = sensitive ? v : lower(v);
    if (std::find(stop.begin(), stop.end(), key) != stop.end()) continue;
    out.values.push_back(action == "LOWER" ? lower(v) : action == "UPPER" ? upper(v) : v);
  }
  // An empty result is a single empty string, as specified.
  if (out.values.empty()) out.values.push_back("");
  int64_t n = out.values.size();
  out.dims = in->dims.size() == 2 ? std::vector<int64_t>{1, n} : std::vector<int64_t>{n};
  ctx.set_string_output(0, std::move(out));
  return absl::OkStatus();
}

// g + norm * x: the L2-regularized gradient every optimizer starts from.
Instruction* Regularized(hlo::Builder& b, Instruction* x, Instruction* g, double norm) {
  return b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, x, SplatLike(b, x, norm)), g);
}

// Adagrad: r, t, inputs X..., G..., H...: h' = h + g^2, x' = x - r' g / (sqrt(h') + eps)
absl::Status Adagrad(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* r = ctx.input(0);
  Instruction* t = ctx.input(1);
  int n = (ctx.input_count() - 2) / 3;
  double decay = ctx.attr_f("decay_factor", 0), eps = ctx.attr_f("epsilon", 0),
         norm = ctx.attr_f("norm_coefficient", 0);
  for (int k = 0; k < n; ++k) {
    Instruction* x = ctx.input(2 + k);
    Instruction* g = ctx.input(2 + n + k);
    Instruction* h = ctx.input(2 + 2 * n + k);
    hlo::PrimitiveType ty = x->shape().element_type;
    Instruction* rr = b.Binary(Opcode::kDivide, b.Convert(r, ty),
                               b.Binary(Opcode::kAdd, b.ScalarConstant(ty, 1),
                                        b.Binary(Opcode::kMultiply, b.Convert(t, ty), b.ScalarConstant(ty, decay))));
    Instruction* gr = Regularized(b, x, g, norm);
    Instruction* h2 = b.Binary(Opcode::kAdd, h, b.Binary(Opcode::kMultiply, gr, gr));
    Instruction* den = b.Binary(Opcode::kAdd, b.Unary(Opcode::kSqrt, h2), SplatLike(b, h2, eps));
    Instruction* step =
        b.Binary(Opcode::kMultiply, BroadcastTo(b, rr, x->shape().dims), b.Binary(Opcode::kDivide, gr, den));
    ctx.set_output(k, b.Binary(Opcode::kSubtract, x, step));
    ctx.set_output(n + k, h2);
  }
  return absl::OkStatus();
}

absl::Status Momentum(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* r = ctx.input(0);
  Instruction* t = ctx.input(1);
  int n = (ctx.input_count() - 2) / 3;
  double alpha = ctx.attr_f("alpha", 0), beta = ctx.attr_f("beta", 0), norm = ctx.attr_f("norm_coefficient", 0);
  bool nesterov = ctx.attr_s("mode", "standard") == "nesterov";
  for (int k = 0; k < n; ++k) {
    Instruction* x = ctx.input(2 + k);
    Instruction* g = ctx.input(2 + n + k);
    Instruction* v = ctx.input(2 + 2 * n + k);
    hlo::PrimitiveType ty = x->shape().element_type;
    const auto& dims = x->shape().dims;
    Instruction* gr = Regularized(b, x, g, norm);
    // beta applies from the second step on (t > 0).
    Instruction* first =
        b.Compare(b.Convert(t, hlo::S64), b.ScalarConstant(hlo::S64, 0), hlo::ComparisonDirection::kEq);
    Instruction* bb = b.Select(first, b.ScalarConstant(ty, 1), b.ScalarConstant(ty, beta));
    Instruction* v2 = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, v, SplatLike(b, v, alpha)),
                               b.Binary(Opcode::kMultiply, gr, BroadcastTo(b, bb, dims)));
    Instruction* rr = BroadcastTo(b, b.Convert(r, ty), dims);
    Instruction* dir =
        nesterov ? b.Binary(Opcode::kAdd, gr, b.Binary(Opcode::kMultiply, v2, SplatLike(b, v2, alpha))) : v2;
    ctx.set_output(k, b.Binary(Opcode::kSubtract, x, b.Binary(Opcode::kMultiply, rr, dir)));
    ctx.set_output(n + k, v2);
  }
  return absl::OkStatus();
}

absl::Status Adam(NodeContext& ctx) {
  hlo::Builder& b = ctx.b();
  Instruction* r = ctx.input(0);
  Instruction* t = ctx.input(1);
  int n = (ctx.input_count() - 2) / 4;
  double alpha = ctx.attr_f("alpha", 0.9f), beta = ctx.attr_f("beta", 0.999f), eps = ctx.attr_f("epsilon", 0);
  double norm = ctx.attr_f("norm_coefficient", 0), norm_post = ctx.attr_f("norm_coefficient_post", 0);
  for (int k = 0; k < n; ++k) {
    Instruction* x = ctx.input(2 + k);
    Instruction* g = ctx.input(2 + n + k);
    Instruction* v = ctx.input(2 + 2 * n + k);
    Instruction* h = ctx.input(2 + 3 * n + k);
    hlo::PrimitiveType ty = x->shape().element_type;
    const auto& dims = x->shape().dims;
    Instruction* gr = Regularized(b, x, g, norm);
    Instruction* v2 = b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, v, SplatLike(b, v, alpha)),
                               b.Binary(Opcode::kMultiply, gr, SplatLike(b, gr, 1 - alpha)));
    Instruction* h2 =
        b.Binary(Opcode::kAdd, b.Binary(Opcode::kMultiply, h, SplatLike(b, h, beta)),
                 b.Binary(Opcode::kMultiply, b.Binary(Opcode::kMultiply, gr, gr), SplatLike(b, gr, 1 - beta)));
    // Bias correction when t > 0: r' = r * sqrt(1 - beta^t) / (1 - alpha^t).
    Instruction* tf = b.Convert(t, ty);
    Instruction* pa = b.Binary(Opcode::kPower, b.ScalarConstant(ty, alpha), tf);
    Instruction* pb = b.Binary(Opcode::kPower, b.ScalarConstant(ty, beta), tf);
    Instruction* corrected =
        b.Binary(Opcode::kDivide,
                 b.Binary(Opcode::kMultiply, b.Convert(r, ty),
                          b.Unary(Opcode::kSqrt, b.Binary(Opcode::kSubtract, b.ScalarConstant(ty, 1), pb))),
                 b.Binary(Opcode::kSubtract, b.ScalarConstant(ty, 1), pa));
    Instruction* pos = b.Compare(b.Convert(t, hlo::S64), b.ScalarConstant(hlo::S64, 0), hlo::ComparisonDirection::kGt);
    Instruction* rr = BroadcastTo(b, b.Select(pos, corrected, b.Convert(r, ty)), dims);
    Instruction* den = b.Binary(Opcode::kAdd, b.Unary(Opcode::kSqrt, h2), SplatLike(b, h2, eps));
    Instruction* x2 =
        b.Binary(Opcode::kSubtract, x, b.Binary(Opcode::kMultiply, rr, b.Binary(Opcode::kDivide, v2, den)));
    x2 = b.Binary(Opcode::kMultiply, x2, SplatLike(b, x2, 1 - norm_post));
    ctx.set_output(k, x2);
    ctx.set_output(n + k, v2);
    ctx.set_output(2 * n + k, h2);
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterMiscOps(Registry& r) {
  r.Add("HannWindow", Window<0>, 17).value_inputs = {0};
  r.Add("HammingWindow", Window<1>, 17).value_inputs = {0};
  r.Add("BlackmanWindow", Window<2>, 17).value_inputs = {0};
  r.Add("Shrink", Shrink, 9);
  r.Add("ReverseSequence", ReverseSequence, 10);
  r.Add("Einsum", Einsum, 12);
  r.Add("Det", Det, 11);
  r.Add("TfIdfVectorizer", TfIdfVectorizer, 9);
  r.Add("StringNormalizer", StringNormalizer, 10);
  r.Add({.domain = "ai.onnx.preview.training", .op_type = "Adagrad", .min_opset = 1, .max_opset = 1, .fn = Adagrad});
  r.Add({.domain = "ai.onnx.preview.training", .op_type = "Momentum", .min_opset = 1, .max_opset = 1, .fn = Momentum});
  r.Add({.domain = "ai.onnx.preview.training", .op_type = "Adam", .min_opset = 1, .max_opset = 1, .fn = Adam});
}

}  // namespace xonnx::onnx_import
