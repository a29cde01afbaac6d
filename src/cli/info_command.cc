// The subcommands that describe without running: info (a model), devices
// (a plugin and its devices, or every plugin found by name).
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/cli.h"

namespace xonnx::cli {

namespace {

nlohmann::json Pairs(const std::vector<std::pair<std::string, std::string>>& kv) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : kv) j[k] = v;
  return j;
}

// Inputs or outputs: name, type, and shape with a dynamic dimension as its
// name (or null).
nlohmann::json SpecsJson(const std::vector<xonnx::TensorSpec>& specs) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : specs) {
    nlohmann::json shape = nlohmann::json::array();
    for (size_t i = 0; i < s.dims.size(); ++i) {
      if (s.dims[i] >= 0)
        shape.push_back(s.dims[i]);
      else if (i < s.dim_names.size() && !s.dim_names[i].empty())
        shape.push_back(s.dim_names[i]);
      else
        shape.push_back(nullptr);
    }
    list.push_back({{"name", s.name},
                    {"dtype", xonnx::DataTypeName(s.dtype)},
                    {"shape", shape},
                    {"sequence", s.sequence},
                    {"optional", s.optional}});
  }
  return list;
}

}  // namespace

int Devices(bool json) {
  xonnx::PluginInfo p = Check(xonnx::DescribePlugin(BaseOptions()));
  if (json) {
    nlohmann::json j;
    j["plugin"] = p.path;
    j["api_version"] = absl::StrCat(p.api_major, ".", p.api_minor);
    j["platform"] = p.platform_name;
    j["platform_version"] = p.platform_version;
    j["attributes"] = Pairs(p.attributes);
    j["devices"] = nlohmann::json::array();
    for (const auto& d : p.devices)
      j["devices"].push_back({{"index", d.index},
                              {"id", d.id},
                              {"local_hardware_id", d.local_hardware_id},
                              {"kind", d.kind},
                              {"description", d.description},
                              {"attributes", Pairs(d.attributes)}});
    std::cout << j.dump() << "\n";
    return kExitOk;
  }
  std::cout << "plugin:   " << p.path << "\napi:      PjRT C API " << p.api_major << "." << p.api_minor
            << "\nplatform: " << p.platform_name << " (" << p.platform_version << ")\n";
  if (!p.attributes.empty()) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : p.attributes) kv.push_back(absl::StrCat(k, "=", v));
    std::cout << "attributes: " << absl::StrJoin(kv, " ") << "\n";
  }
  std::cout << "devices:\n";
  for (const auto& d : p.devices) {
    std::cout << absl::StrFormat("  %d: %s  (kind %s, id %d, local hardware id %d)", d.index,
                                 d.description.empty() ? "-" : d.description, d.kind.empty() ? "?" : d.kind, d.id,
                                 d.local_hardware_id);
    for (const auto& [k, v] : d.attributes) std::cout << " " << k << "=" << v;
    std::cout << "\n";
  }
  return 0;
}

int AllPlugins() {
  for (const xonnx::FoundPlugin& p : xonnx::FindPlugins()) {
    std::cout << absl::StrFormat("%-6s %s\n       found in %s\n       ", p.name, p.path, p.source);
    if (p.refused.empty()) {
      std::cout << "loads: PjRT C API " << p.api_major << "." << p.api_minor << "\n";
    } else {
      std::cout << "refused: " << p.refused << "\n";
    }
  }
  return 0;
}

std::string DimsString(const xonnx::TensorSpec& s) {
  std::vector<std::string> d;
  for (size_t i = 0; i < s.dims.size(); ++i)
    d.push_back(s.dims[i] >= 0 ? absl::StrCat(s.dims[i]) : (s.dim_names[i].empty() ? "?" : s.dim_names[i]));
  std::string t = absl::StrCat(xonnx::DataTypeName(s.dtype), "[", absl::StrJoin(d, ","), "]");
  if (s.sequence) t = absl::StrCat("sequence of ", t);
  if (s.optional) t = absl::StrCat("optional ", t);
  return t;
}

int Info(const std::string& model, bool json) {
  auto s = Open(model, /*allow_unsupported=*/true, /*plugin_needed=*/false);
  xonnx::ModelInfo info = s->Info();
  if (json) {
    nlohmann::json j;
    j["model"] = model;
    j["producer"] = info.producer;
    j["domain"] = info.domain;
    j["model_version"] = info.model_version;
    j["description"] = info.doc_string;
    j["graph_name"] = info.graph_name;
    j["metadata"] = info.metadata_props;
    j["ir_version"] = info.ir_version;
    j["opsets"] = info.opsets;
    j["initializer_bytes"] = info.initializer_bytes;
    j["inputs"] = SpecsJson(s->inputs());
    j["outputs"] = SpecsJson(s->outputs());
    j["ops"] = info.op_counts;
    j["host_nodes"] = info.host_nodes;
    j["value_nodes"] = info.value_nodes;
    j["device_programs"] = info.device_programs;
    j["unsupported"] = info.unsupported;
    std::cout << j.dump() << "\n";
    return kExitOk;
  }
  std::cout << "model:    " << model << "\nproducer: " << info.producer << "\nir:       " << info.ir_version;
  if (!info.domain.empty() || info.model_version != 0)
    std::cout << "\nversion:  " << (info.domain.empty() ? "" : info.domain + " ") << info.model_version;
  if (!info.doc_string.empty()) std::cout << "\nabout:    " << info.doc_string;
  for (const auto& [k, v] : info.metadata_props) std::cout << "\nmetadata: " << k << " = " << v;
  std::cout << "\nopsets:  ";
  for (const auto& [d, v] : info.opsets) std::cout << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
  std::cout << "\nweights:  " << absl::StrFormat("%.2f MiB", info.initializer_bytes / 1048576.0) << "\ninputs:\n";
  for (const auto& i : s->inputs()) std::cout << "  " << i.name << ": " << DimsString(i) << "\n";
  std::cout << "outputs:\n";
  for (const auto& o : s->outputs()) std::cout << "  " << o.name << ": " << DimsString(o) << "\n";
  std::cout << "ops:\n";
  for (const auto& [op, n] : info.op_counts) std::cout << "  " << op << " x" << n << "\n";
  if (!info.host_nodes.empty()) {
    std::cout << "runs on the host (the graph is split into " << info.device_programs
              << " device program(s) around these nodes):\n";
    for (const auto& h : info.host_nodes) std::cout << "  " << h << "\n";
  }
  if (!info.value_nodes.empty()) {
    std::cout << "compiled for values computed at run time (the graph is split into " << info.device_programs
              << " device program(s); each of these nodes starts one, which receives its shape-like input and "
                 "compiles once per distinct value):\n";
    for (const auto& h : info.value_nodes) std::cout << "  " << h << "\n";
  }
  if (info.unsupported.empty()) {
    std::cout << "unsupported: none\n";
  } else {
    std::cout << "unsupported:\n";
    for (const auto& u : info.unsupported) std::cout << "  " << u << "\n";
  }
  return 0;
}

}  // namespace xonnx::cli
