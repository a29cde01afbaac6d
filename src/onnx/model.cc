#include "onnx/model.h"

#include <filesystem>
#include <limits>
#include <new>
#include <fstream>
#include <sstream>

#include "base/fingerprint.h"
#include "base/status.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"

namespace xonnx::onnx_import {

namespace fs = std::filesystem;

namespace {

// Reads the external data of one tensor into raw_data. The location must stay
// inside the model's folder: a model file must not be able to read arbitrary
// files of the machine.
absl::Status ResolveExternal(onnx::TensorProto& t, const fs::path& base_dir, const std::string& model,
                             Fingerprinter* content) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  if (location.empty())
    return InvalidArgument("%s: tensor '%s' has external data without a location", model, t.name());
  fs::path rel(location);
  if (rel.is_absolute())
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s: tensor '%s': external data path '%s' is absolute; it must be relative to the model's folder", model,
        t.name(), location));
  std::error_code ec;
  fs::path root = fs::weakly_canonical(base_dir, ec);
  fs::path full = fs::weakly_canonical(base_dir / rel, ec);
  auto [root_end, _] = std::mismatch(root.begin(), root.end(), full.begin(), full.end());
  if (ec || root_end != root.end())
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s: tensor '%s': external data path '%s' points outside the model's folder", model, t.name(), location));
  std::ifstream f(full, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrFormat("%s: tensor '%s': cannot open external data file '%s'", model, t.name(), full.string()));
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  if (length < 0) length = size - offset;
  if (offset < 0 || offset + length > size)
    return InvalidArgument("%s: tensor '%s': external data range [%d, %d) exceeds file '%s' of %d bytes", model,
                           t.name(), offset, offset + length, location, size);
  std::string data(length, '\0');
  f.seekg(offset);
  f.read(data.data(), length);
  if (!f) return absl::DataLossError(absl::StrFormat("%s: tensor '%s': cannot read external data file '%s'", model, t.name(), full.string()));
  content->UpdateField(t.name());
  content->UpdateField(data);
  t.set_raw_data(std::move(data));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return absl::OkStatus();
}

absl::Status ResolveGraph(onnx::GraphProto& g, const fs::path& base_dir, const std::string& model, Fingerprinter* content) {
  for (auto& t : *g.mutable_initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL) RETURN_IF_ERROR(ResolveExternal(t, base_dir, model, content));
  for (auto& n : *g.mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t() && a.t().data_location() == onnx::TensorProto::EXTERNAL)
        RETURN_IF_ERROR(ResolveExternal(*a.mutable_t(), base_dir, model, content));
      if (a.has_g()) RETURN_IF_ERROR(ResolveGraph(*a.mutable_g(), base_dir, model, content));
      for (auto& sub : *a.mutable_graphs()) RETURN_IF_ERROR(ResolveGraph(sub, base_dir, model, content));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModelFromBytes(absl::string_view bytes, const std::string& name,
                                                                const std::string& base_dir) {
  auto m = std::make_unique<LoadedModel>();
  m->path = name;
  if (bytes.empty()) return InvalidArgument("%s: the file is empty, not an ONNX model", name);
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return InvalidArgument("%s: %d bytes; an ONNX model file holds at most 2 GB (larger weights go in external data files)",
                           name, bytes.size());
  if (!m->proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return InvalidArgument("%s: not a valid ONNX model (the protobuf does not parse; is the file truncated?)", name);
  if (!m->proto.has_graph() || m->proto.ir_version() <= 0)
    return InvalidArgument("%s: not a valid ONNX model (no graph or IR version)", name);
  for (const auto& op : m->proto.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    m->opsets[domain] = op.version();
  }
  Fingerprinter content;
  content.UpdateField(bytes);
  RETURN_IF_ERROR(ResolveGraph(*m->proto.mutable_graph(), base_dir, name, &content));
  m->content_fingerprint = content.Finish().Hex();
  return m;
}

absl::Status CheckModel(const LoadedModel& model) {
  // libonnx's checker validates nodes against the newest schemas it knows;
  // a model declaring a newer opset of a domain (opset 18+ with ONNX 1.12)
  // would be rejected for valid nodes, so such models skip it. The importer
  // still checks every node it converts.
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& [domain, version] : model.opsets) {
    auto it = known.find(domain.empty() ? std::string("") : domain);
    if (it != known.end() && version > it->second.second) return absl::OkStatus();
  }
  try {
    onnx::checker::check_model(model.proto);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    return InvalidArgument("%s: the ONNX checker rejects the model: %s", model.path, msg);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return InvalidArgument("%s: is a directory, not an ONNX model file", path);
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return absl::NotFoundError(absl::StrFormat("%s: cannot open the model file", path));
  // One read into a buffer of the right size: models are often hundreds of
  // MB. The buffer is not zero-filled first (a std::string would be): that
  // pass alone costs as much as the read.
  size_t size = static_cast<size_t>(f.tellg());
  std::unique_ptr<char[]> bytes(new (std::nothrow) char[std::max<size_t>(size, 1)]);
  if (!bytes) return absl::ResourceExhaustedError(absl::StrFormat("%s: cannot allocate %d bytes to read the model", path, size));
  f.seekg(0);
  f.read(bytes.get(), size);
  if (!f) return absl::DataLossError(absl::StrFormat("%s: cannot read the model file", path));
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  return LoadModelFromBytes(absl::string_view(bytes.get(), size), path, dir.string());
}

}  // namespace xonnx::onnx_import
