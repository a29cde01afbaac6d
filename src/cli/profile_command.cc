// `xonnx profile FILE`: a profile written by --profile, summed by ONNX op
// type as onnxruntime_perf_test does (kernel time per op type, calls, share),
// with the phases of the calls and the slowest nodes.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/cli.h"

namespace xonnx::cli {

int Profile(const std::string& file, int top) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw CliError{absl::StrCat(file, ": cannot read the profile"), kExitInput};
  nlohmann::json trace = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (trace.is_discarded() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw CliError{absl::StrCat(file, ": not a trace written by --profile (no traceEvents array)"), kExitInput};
  struct Sum {
    double ms = 0;
    int64_t count = 0;
  };
  std::map<std::string, Sum> by_type, by_node, by_category;
  double kernel_ms = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("dur") || !e["dur"].is_number()) continue;
    double ms = e["dur"].get<double>() / 1e3;
    std::string category = e.value("cat", "");
    Sum& c = by_category[category == "phase" ? e.value("name", "") : category];
    c.ms += ms;
    c.count++;
    if (category != "kernel") continue;
    const nlohmann::json args = e.value("args", nlohmann::json::object());
    std::string type = args.value("op_type", "");
    if (type.empty()) type = absl::StrCat("(", args.value("kernel", "no ONNX node"), ")");
    by_type[type].ms += ms;
    by_type[type].count++;
    Sum& n = by_node[e.value("name", "")];
    n.ms += ms;
    n.count++;
    kernel_ms += ms;
  }
  std::cout << absl::StrFormat("%s\n%-14s %10s %8s\n", file, "slices", "ms", "count");
  for (const auto& [name, s] : by_category) std::cout << absl::StrFormat("%-14s %10.3f %8d\n", name, s.ms, s.count);
  if (by_type.empty()) {
    std::cout << "(no kernel slices: they are recorded on xonnx's CPU plugin)\n";
    return 0;
  }
  auto sorted = [](const std::map<std::string, Sum>& m) {
    std::vector<std::pair<std::string, Sum>> v(m.begin(), m.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    return v;
  };
  std::cout << absl::StrFormat("\n%-28s %10s %8s %10s %7s\n", "op type", "total ms", "calls", "avg us", "share");
  for (const auto& [type, s] : sorted(by_type))
    std::cout << absl::StrFormat("%-28s %10.3f %8d %10.1f %6.1f%%\n", type, s.ms, s.count, 1e3 * s.ms / s.count,
                                 100 * s.ms / kernel_ms);
  std::cout << absl::StrFormat("\n%-48s %10s %8s\n", "slowest nodes", "total ms", "calls");
  int shown = 0;
  for (const auto& [node, s] : sorted(by_node)) {
    if (shown++ == top) break;
    std::cout << absl::StrFormat("%-48s %10.3f %8d\n", node, s.ms, s.count);
  }
  return 0;
}

}  // namespace xonnx::cli
