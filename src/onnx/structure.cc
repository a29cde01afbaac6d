#include "onnx/structure.h"

#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "onnx/graph_split.h"

namespace xonnx::onnx_import {

namespace {

// What defined each name of one graph: "graph input", "initializer" or a
// node's label.
using Definitions = std::map<std::string, std::string>;

class StructureChecker {
 public:
  explicit StructureChecker(const std::string& path) : path_(path) {}

  absl::Status Check(const onnx::GraphProto& g, const std::string& where) {
    std::string graph = absl::StrCat(where, "graph '", g.name(), "'");
    Definitions defined;
    auto define = [&](const std::string& name, const std::string& by) -> absl::Status {
      if (name.empty()) return absl::OkStatus();  // an optional output left out
      auto [it, fresh] = defined.emplace(name, by);
      if (fresh) return absl::OkStatus();
      return Error(graph, absl::StrCat(by, " defines '", name, "', already defined by ", it->second,
                                       " (a value is defined once in its graph)"));
    };
    for (const auto& in : g.input()) RETURN_IF_ERROR(define(in.name(), "a graph input"));
    std::set<std::string> initializers;
    for (const auto& t : g.initializer()) {
      if (!initializers.insert(t.name()).second)
        return Error(graph, absl::StrCat("initializer '", t.name(), "' is given twice"));
      if (!defined.count(t.name())) defined.emplace(t.name(), "an initializer");  // else: an input's default
    }
    for (const auto& t : g.sparse_initializer()) RETURN_IF_ERROR(define(t.values().name(), "a sparse initializer"));
    scopes_.push_back(&defined);
    for (const auto& node : g.node()) {
      std::string label = absl::StrCat("node ", NodeLabel(node));
      for (const auto& in : node.input())
        if (!in.empty() && !Visible(in))
          return Error(graph, absl::StrCat(label, " reads '", in, "', which nothing in scope defines"));
      for (const auto& a : node.attribute()) {
        std::string sub = absl::StrCat(graph, ", ", label, ", attribute '", a.name(), "': ");
        if (a.has_g()) RETURN_IF_ERROR(Check(a.g(), sub));
        for (const auto& s : a.graphs()) RETURN_IF_ERROR(Check(s, sub));
      }
      for (const auto& out : node.output()) RETURN_IF_ERROR(define(out, label));
    }
    for (const auto& out : g.output())
      if (!Visible(out.name())) return Error(graph, absl::StrCat("graph output '", out.name(), "' is not defined"));
    scopes_.pop_back();
    return absl::OkStatus();
  }

 private:
  bool Visible(const std::string& name) const {
    for (const Definitions* d : scopes_)
      if (d->count(name)) return true;
    return false;
  }
  absl::Status Error(const std::string& graph, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", graph, ": ", what));
  }

  const std::string& path_;
  std::vector<const Definitions*> scopes_;  // the enclosing graphs' names, outermost first
};

}  // namespace

absl::Status CheckStructure(const onnx::GraphProto& g, const std::string& path) {
  return StructureChecker(path).Check(g, "");
}

}  // namespace xonnx::onnx_import
