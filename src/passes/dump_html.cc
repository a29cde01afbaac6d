// A module as one self-contained HTML page (--dump_as_html): each
// computation's graph drawn as inline SVG, no script and nothing fetched.
// Instructions are laid out in rows by depth (the longest operand chain
// from the computation's parameters), in program order within a row; an
// edge runs from each operand's box to its user's. Every box shows the
// instruction, its opcode and shape and the ONNX node it came from; its
// tooltip adds the metadata in full. The HLO text follows each page.
#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "hlo/printer.h"
#include "passes/dump.h"

namespace xonnx::passes {

namespace {

constexpr int kBoxW = 230, kBoxH = 58, kGapX = 24, kGapY = 46, kMargin = 16;

std::string Html(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

// At most `n` characters, with an ellipsis when cut (box lines are short).
std::string Fit(absl::string_view s, size_t n) {
  return s.size() <= n ? std::string(s) : absl::StrCat(s.substr(0, n - 1), "…");
}

// Colors by kind of opcode, so the structure reads at a glance.
const char* Fill(const hlo::Instruction& i) {
  switch (i.opcode()) {
    case hlo::Opcode::kParameter:
      return "#dbeafe";
    case hlo::Opcode::kConstant:
      return "#f1f5f9";
    case hlo::Opcode::kDot:
    case hlo::Opcode::kConvolution:
      return "#fde68a";
    case hlo::Opcode::kWhile:
    case hlo::Opcode::kConditional:
    case hlo::Opcode::kCall:
    case hlo::Opcode::kReduce:
      return "#e9d5ff";
    default:
      return "#ffffff";
  }
}

void AppendGraph(const hlo::Computation& c, std::string* out) {
  // Depth: one below the deepest operand (operands come first in a
  // computation's list; an operand found later still gets its row).
  std::map<const hlo::Instruction*, int> depth;
  std::vector<std::vector<const hlo::Instruction*>> rows;
  for (const auto& owned : c.instructions()) {
    const hlo::Instruction* i = owned.get();
    int d = 0;
    for (const hlo::Instruction* o : i->operands()) {
      auto it = depth.find(o);
      if (it != depth.end()) d = std::max(d, it->second + 1);
    }
    depth[i] = d;
    if (rows.size() <= static_cast<size_t>(d)) rows.resize(d + 1);
    rows[d].push_back(i);
  }
  std::map<const hlo::Instruction*, std::pair<int, int>> at;  // top-left corner of each box
  size_t widest = 1;
  for (size_t r = 0; r < rows.size(); ++r) {
    widest = std::max(widest, rows[r].size());
    for (size_t k = 0; k < rows[r].size(); ++k)
      at[rows[r][k]] = {kMargin + static_cast<int>(k) * (kBoxW + kGapX),
                        kMargin + static_cast<int>(r) * (kBoxH + kGapY)};
  }
  int width = 2 * kMargin + static_cast<int>(widest) * (kBoxW + kGapX);
  int height = 2 * kMargin + static_cast<int>(rows.size()) * (kBoxH + kGapY);
  absl::StrAppendFormat(out,
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                        "font-family=\"monospace\" font-size=\"11\">\n",
                        width, height);
  for (const auto& owned : c.instructions()) {  // edges first, under the boxes
    const hlo::Instruction* i = owned.get();
    auto [x, y] = at[i];
    for (const hlo::Instruction* o : i->operands()) {
      auto found = at.find(o);
      if (found == at.end()) continue;
      auto [ox, oy] = found->second;
      int x1 = ox + kBoxW / 2, y1 = oy + kBoxH, x2 = x + kBoxW / 2, y2 = y;
      absl::StrAppendFormat(out, "<path d=\"M%d %d C%d %d %d %d %d %d\" fill=\"none\" stroke=\"#64748b\"/>\n", x1, y1,
                            x1, y1 + kGapY / 2, x2, y2 - kGapY / 2, x2, y2);
    }
  }
  for (const auto& owned : c.instructions()) {
    const hlo::Instruction* i = owned.get();
    auto [x, y] = at[i];
    std::string shape = i->shape().ToString(false);
    std::string onnx = i->metadata.op_type.empty() ? "" : absl::StrCat(i->metadata.op_type, " ", i->metadata.op_name);
    std::string title = absl::StrCat(i->name(), " = ", hlo::OpcodeName(i->opcode()), " ", shape);
    if (!onnx.empty()) absl::StrAppend(&title, "\nONNX node: ", onnx);
    for (const hlo::Computation* called : i->called_computations()) absl::StrAppend(&title, "\ncalls ", called->name());
    absl::StrAppendFormat(out,
                          "<g><title>%s</title><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"%s\" "
                          "stroke=\"#334155\" stroke-width=\"%d\"/>\n",
                          Html(title), x, y, kBoxW, kBoxH, Fill(*i), i == c.root() ? 3 : 1);
    absl::StrAppendFormat(out, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", x + 6, y + 15,
                          Html(Fit(i->name(), 30)));
    absl::StrAppendFormat(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", x + 6, y + 31,
                          Html(Fit(absl::StrCat(hlo::OpcodeName(i->opcode()), " ", shape), 32)));
    if (!onnx.empty())
      absl::StrAppendFormat(out, "<text x=\"%d\" y=\"%d\" fill=\"#1d4ed8\">%s</text>\n", x + 6, y + 47,
                            Html(Fit(onnx, 32)));
    absl::StrAppend(out, "</g>\n");
  }
  absl::StrAppend(out, "</svg>\n");
}

}  // namespace

std::string ToHtml(const hlo::Module& module) {
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", Html(module.name()),
      "</title>\n<style>body{font-family:sans-serif;margin:16px}h2{font-size:15px;margin:24px 0 6px}"
      "div.graph{overflow:auto;border:1px solid #cbd5e1}pre{font-size:11px;background:#f8fafc;padding:8px}</style>"
      "</head><body>\n<h1>",
      Html(module.name()),
      "</h1>\n<p>One box per instruction: name, opcode and shape, and the ONNX node it came "
      "from (hover for all of it). The entry computation is last; the root has a thick border."
      "</p>\n");
  for (const auto& c : module.computations()) {
    absl::StrAppend(&out, "<h2>", Html(c->name()), " (", c->instructions().size(), " instructions)</h2>\n",
                    "<div class=\"graph\">\n");
    AppendGraph(*c, &out);
    absl::StrAppend(&out, "</div>\n");
  }
  absl::StrAppend(&out, "<details><summary>HLO text</summary><pre>", Html(hlo::ToText(module)),
                  "</pre></details>\n</body></html>\n");
  return out;
}

}  // namespace xonnx::passes
