#include "passes/dump.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "hlo/printer.h"
#include "hlo/proto_codec.h"
#include "hlo/stablehlo.h"

namespace xonnx::passes {

namespace {

// A name that is safe as part of a file name.
std::string FileSafe(absl::string_view s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out.empty() ? "module" : out;
}

std::string DotEscape(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
}

}  // namespace

std::string ToDot(const hlo::Module& module) {
  std::string out = absl::StrCat("digraph \"", DotEscape(module.name()), "\" {\n  node [shape=box fontsize=10];\n");
  std::map<const hlo::Instruction*, int> ids;  // node names, stable across computations
  auto id = [&](const hlo::Instruction* i) { return ids.emplace(i, ids.size()).first->second; };
  int cluster = 0;
  for (const auto& c : module.computations()) {
    absl::StrAppend(&out, "  subgraph cluster_", cluster++, " {\n    label=\"", DotEscape(c->name()), "\";\n");
    for (const auto& i : c->instructions()) {
      std::string label = absl::StrCat(i->name(), "\n", hlo::OpcodeName(i->opcode()), " ", i->shape().ToString(false));
      if (!i->metadata.op_type.empty()) absl::StrAppend(&label, "\n", i->metadata.op_type, " ", i->metadata.op_name);
      absl::StrAppendFormat(&out, "    i%d [label=\"%s\"%s];\n", id(i.get()), DotEscape(label),
                            i.get() == c->root() ? " style=bold" : "");
      for (const hlo::Instruction* o : i->operands())
        absl::StrAppendFormat(&out, "    i%d -> i%d;\n", id(o), id(i.get()));
    }
    absl::StrAppend(&out, "  }\n");
  }
  absl::StrAppend(&out, "}\n");
  return out;
}

Dumper::Dumper(DumpSettings settings, absl::string_view module_name) : settings_(std::move(settings)) {
  static std::atomic<int> imports{0};
  label_ = absl::StrFormat("%s.%04d", FileSafe(module_name), imports++);
  if (!settings_.pass_re.empty()) {
    try {
      pass_re_ = std::make_unique<std::regex>(settings_.pass_re);
    } catch (const std::regex_error& e) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("dump_pass_re '", settings_.pass_re, "' is not a regular expression: ", e.what()));
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(settings_.dir, ec);
  if (ec && status_.ok())
    status_ =
        absl::PermissionDeniedError(absl::StrCat(settings_.dir, ": cannot create the dump folder: ", ec.message()));
}

void Dumper::Dump(const hlo::Module& module, absl::string_view step, bool always) {
  if (!always && !(pass_re_ && std::regex_search(std::string(step), *pass_re_))) return;
  std::string base =
      (std::filesystem::path(settings_.dir) / absl::StrFormat("%s.%02d.%s", label_, seq_++, FileSafe(step))).string();
  auto write = [&](const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << bytes;
    f.close();
    if (!f && status_.ok()) status_ = absl::DataLossError(absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
  };
  if (settings_.as_text) write(base + ".txt", hlo::ToText(module));
  if (settings_.as_proto) write(base + ".pb", hlo::SerializeModule(module));
  if (settings_.as_dot) write(base + ".dot", ToDot(module));
  if (settings_.as_html) write(base + ".html", ToHtml(module));
  if (settings_.as_stablehlo) {
    absl::StatusOr<std::string> mlir = hlo::ToStableHlo(module);
    if (mlir.ok()) {
      write(base + ".mlir", *mlir);
    } else if (status_.ok()) {
      status_ = mlir.status();
    }
  }
}

}  // namespace xonnx::passes
