#include "base/dump_flags.h"

#include <cstdlib>
#include <iostream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/logging.h"

namespace xonnx {

absl::StatusOr<DumpSettings> ParseDumpFlags(absl::string_view flags, DumpSettings base) {
  struct Flag {
    const char* name;
    std::string* text;  // a flag with a value
    bool* on;           // a boolean flag
  };
  const std::vector<Flag> known = {{"dump_to", &base.dir, nullptr},
                                   {"dump_pass_re", &base.pass_re, nullptr},
                                   {"dump_as_text", nullptr, &base.as_text},
                                   {"dump_as_proto", nullptr, &base.as_proto},
                                   {"dump_as_dot", nullptr, &base.as_dot},
                                   {"dump_as_html", nullptr, &base.as_html},
                                   {"dump_as_stablehlo", nullptr, &base.as_stablehlo},
                                   {"dump_onnx", nullptr, &base.onnx}};
  auto usage = [&] {
    std::vector<std::string> names;
    for (const Flag& f : known) names.push_back(absl::StrCat("--", f.name, f.text ? "=..." : ""));
    return absl::StrJoin(names, ", ");
  };
  // Choosing any format replaces the default (text alone).
  bool format_given = false;
  for (absl::string_view token : absl::StrSplit(flags, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&token, "--"))
      return absl::InvalidArgumentError(
          absl::StrCat("XONNX_FLAGS: '", token, "' is not a flag (flags start with --; known: ", usage(), ")"));
    std::pair<std::string, std::string> kv = absl::StrSplit(token, absl::MaxSplits('=', 1));
    bool has_value = token.find('=') != absl::string_view::npos;
    const Flag* flag = nullptr;
    for (const Flag& f : known)
      if (kv.first == f.name) flag = &f;
    if (!flag)
      return absl::InvalidArgumentError(
          absl::StrCat("XONNX_FLAGS: unknown flag --", kv.first, " (known: ", usage(), ")"));
    if (flag->text) {
      if (!has_value || kv.second.empty())
        return absl::InvalidArgumentError(
            absl::StrCat("XONNX_FLAGS: --", kv.first, " needs a value (--", kv.first, "=...)"));
      *flag->text = kv.second;
      continue;
    }
    if (has_value && kv.second != "true" && kv.second != "false")
      return absl::InvalidArgumentError(
          absl::StrCat("XONNX_FLAGS: --", kv.first, "=", kv.second, ": expected true or false"));
    bool on = !has_value || kv.second == "true";
    if (flag->on != &base.onnx && !format_given) {
      format_given = true;
      base.as_text = false;
    }
    *flag->on = on;
  }
  return base;
}

const DumpSettings& DumpSettingsFromEnv() {
  static const DumpSettings settings = [] {
    const char* flags = std::getenv("XONNX_FLAGS");
    if (!flags || !*flags) return DumpSettings{};
    absl::StatusOr<DumpSettings> parsed = ParseDumpFlags(flags);
    if (parsed.ok()) return *parsed;
    LOG(WARNING) << parsed.status().message() << "; nothing is dumped";
    return DumpSettings{};
  }();
  return settings;
}

}  // namespace xonnx
