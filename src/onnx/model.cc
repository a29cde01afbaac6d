#include "onnx/model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "base/fingerprint.h"
#include "base/logging.h"
#include "base/status.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/structure.h"
#include "onnx/topo_sort.h"

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
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t v;
      if (!absl::SimpleAtoi(kv.value(), &v) || v < 0)
        return InvalidArgument("%s: tensor '%s': external data %s '%s' is not a byte count", model, t.name(), kv.key(),
                               kv.value());
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty()) return InvalidArgument("%s: tensor '%s' has external data without a location", model, t.name());
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
  // Only a regular file: a folder, a FIFO or a device would fail to read,
  // hang, or claim any size.
  if (!fs::exists(full, ec))
    return absl::NotFoundError(
        absl::StrFormat("%s: tensor '%s': cannot open external data file '%s'", model, t.name(), full.string()));
  if (!fs::is_regular_file(full, ec))
    return InvalidArgument("%s: tensor '%s': external data '%s' is not a regular file", model, t.name(), location);
  int64_t size = static_cast<int64_t>(fs::file_size(full, ec));
  if (ec)
    return absl::DataLossError(absl::StrFormat("%s: tensor '%s': cannot read the size of '%s': %s", model, t.name(),
                                               full.string(), ec.message()));
  if (length < 0) length = size - offset;
  // Compared so that nothing overflows: offset and length may be huge.
  if (offset > size || length > size - offset)
    return InvalidArgument("%s: tensor '%s': external data of %d bytes at offset %d exceeds file '%s' of %d bytes",
                           model, t.name(), length, offset, location, size);
  std::ifstream f(full, std::ios::binary);
  if (!f)
    return absl::NotFoundError(
        absl::StrFormat("%s: tensor '%s': cannot open external data file '%s'", model, t.name(), full.string()));
  std::string data(length, '\0');
  f.seekg(offset);
  f.read(data.data(), length);
  if (!f)
    return absl::DataLossError(
        absl::StrFormat("%s: tensor '%s': cannot read external data file '%s'", model, t.name(), full.string()));
  content->UpdateField(t.name());
  content->UpdateField(data);
  t.set_raw_data(std::move(data));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return absl::OkStatus();
}

absl::Status ResolveGraph(onnx::GraphProto& g, const fs::path& base_dir, const std::string& model,
                          Fingerprinter* content) {
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

// The opset version per domain the proto imports ("ai.onnx" is "").
void ReadOpsets(LoadedModel& m) {
  m.opsets.clear();
  for (const auto& op : m.proto.opset_import()) m.opsets[op.domain() == "ai.onnx" ? "" : op.domain()] = op.version();
}

// What every way of loading does once the proto is parsed: basic checks,
// opsets, external data. `content` has seen the model's bytes.
absl::Status FinishLoad(LoadedModel& m, const std::string& base_dir, Fingerprinter& content) {
  if (!m.proto.has_graph() || m.proto.ir_version() <= 0)
    return InvalidArgument("%s: not a valid ONNX model (no graph or IR version)", m.path);
  ReadOpsets(m);
  RETURN_IF_ERROR(ResolveGraph(*m.proto.mutable_graph(), base_dir, m.path, &content));
  // Nodes out of topological order are sorted, as ONNX Runtime does (the
  // ONNX checker would reject them), and the model still loads; it says so.
  int moved = 0;
  RETURN_IF_ERROR(SortNodes(m.proto.mutable_graph(), m.path, &moved));
  if (moved)
    LOG(WARNING) << m.path << ": the nodes of " << moved << " graph" << (moved == 1 ? " were" : "s were")
                 << " stored out of topological order; sorted them";
  m.content_fingerprint = content.Finish().Hex();
  return absl::OkStatus();
}

absl::Status CheckSize(const std::string& name, uint64_t size) {
  if (size == 0) return InvalidArgument("%s: the file is empty, not an ONNX model", name);
  if (size > static_cast<uint64_t>(std::numeric_limits<int>::max()))
    return InvalidArgument(
        "%s: %d bytes; an ONNX model file holds at most 2 GB (larger weights go in external data files)", name, size);
  return absl::OkStatus();
}

// The model file as protobuf reads it: in chunks through one reused buffer,
// so that the bytes are copied once, from the page cache straight into the
// parsed tensors. Reading the whole file into memory first and parsing that
// copies every weight twice, and the first copy's fresh pages cost as much
// as the parse. Each byte is fingerprinted as it is read.
class HashingFileStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  HashingFileStream(int fd, Fingerprinter* content) : fd_(fd), content_(content), buffer_(new char[kChunk]) {}

  bool Next(const void** data, int* size) override {
    if (backed_up_ > 0) {
      // Bytes given back by BackUp() are handed out again, not read or
      // fingerprinted again.
      *data = buffer_.get() + available_ - backed_up_;
      *size = backed_up_;
    } else {
      ssize_t n;
      do n = ::read(fd_, buffer_.get(), kChunk);
      while (n < 0 && errno == EINTR);
      if (n < 0) errno_ = errno;
      if (n <= 0) return false;
      available_ = static_cast<int>(n);
      content_->Update(absl::string_view(buffer_.get(), available_));
      *data = buffer_.get();
      *size = available_;
    }
    position_ += *size;
    backed_up_ = 0;
    return true;
  }
  void BackUp(int count) override {
    backed_up_ = count;
    position_ -= count;
  }
  bool Skip(int count) override {
    const void* data;
    int size;
    while (count > 0) {
      if (!Next(&data, &size)) return false;
      if (size > count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return true;
  }
  int64_t ByteCount() const override { return position_; }
  // The error of a failed read, or 0.
  int read_errno() const { return errno_; }

 private:
  static constexpr int kChunk = 1 << 20;
  int fd_;
  Fingerprinter* content_;
  std::unique_ptr<char[]> buffer_;
  int available_ = 0, backed_up_ = 0, errno_ = 0;
  int64_t position_ = 0;
};

// Messages nested deeper than this are refused by the parser. Protobuf's
// default (100) stops at about 33 nested If/Loop bodies (a node, its
// attribute and its graph are three levels); this allows about 330.
constexpr int kMaxProtoDepth = 1000;

bool ParseModel(google::protobuf::io::CodedInputStream& in, onnx::ModelProto& proto) {
  in.SetRecursionLimit(kMaxProtoDepth);
  return proto.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

std::string NotAModel(const std::string& name) {
  return absl::StrFormat(
      "%s: not a valid ONNX model (the protobuf does not parse: the file is truncated or damaged, or nests "
      "messages deeper than %d levels, about %d nested subgraphs)",
      name, kMaxProtoDepth, kMaxProtoDepth / 3);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModelFromBytes(absl::string_view bytes, const std::string& name,
                                                                const std::string& base_dir) {
  auto m = std::make_unique<LoadedModel>();
  m->path = name;
  RETURN_IF_ERROR(CheckSize(name, bytes.size()));
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  if (!ParseModel(in, m->proto)) return absl::InvalidArgumentError(NotAModel(name));
  Fingerprinter content;
  content.UpdateField(bytes);
  RETURN_IF_ERROR(FinishLoad(*m, base_dir, content));
  return m;
}

namespace {

// Op types of the ONNX domain in `g` and its subgraphs that libonnx has no
// schema for at `version`.
void CollectUnknownOnnxOps(const onnx::GraphProto& g, int64_t version, std::set<std::string>* out) {
  for (const auto& node : g.node()) {
    if ((node.domain().empty() || node.domain() == "ai.onnx") &&
        !onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(version), ""))
      out->insert(node.op_type());
    for (const auto& a : node.attribute()) {
      if (a.has_g()) CollectUnknownOnnxOps(a.g(), version, out);
      for (const auto& sub : a.graphs()) CollectUnknownOnnxOps(sub, version, out);
    }
  }
}

}  // namespace

absl::Status CheckModel(const LoadedModel& model) {
  // libonnx's checker validates nodes against the newest schemas it knows;
  // a model declaring a newer opset of a domain (opset 18+ with ONNX 1.12)
  // would be rejected for valid nodes, so such models skip it for our own
  // structural checks. The importer still checks every node it converts.
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& [domain, version] : model.opsets) {
    auto it = known.find(domain.empty() ? std::string("") : domain);
    if (it != known.end() && version > it->second.second) return CheckStructure(model.proto.graph(), model.path);
  }
  // ONNX Runtime adds ops of its own to the ONNX domain (its optimizer
  // writes SimplifiedLayerNormalization there), which the checker rejects.
  // The caller has already made sure that the importer knows every op.
  std::set<std::string> foreign;
  auto onnx_version = model.opsets.find("");
  if (onnx_version != model.opsets.end()) CollectUnknownOnnxOps(model.proto.graph(), onnx_version->second, &foreign);
  if (!foreign.empty()) {
    LOG(WARNING) << model.path << ": not checked with the ONNX checker: it uses " << absl::StrJoin(foreign, ", ")
                 << " in the ONNX domain, which ONNX does not define (ONNX Runtime's own ops)";
    return CheckStructure(model.proto.graph(), model.path);
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

void NoteRewrite(LoadedModel& m, absl::string_view what) {
  ReadOpsets(m);
  Fingerprinter f;
  f.UpdateField(m.content_fingerprint);
  f.UpdateField(what);
  m.content_fingerprint = f.Finish().Hex();
}

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return InvalidArgument("%s: is a directory, not an ONNX model file", path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    std::string msg = absl::StrFormat("%s: cannot open the model file: %s", path, std::strerror(e));
    if (e == ENOENT || e == ENOTDIR) return absl::NotFoundError(msg);
    if (e == EACCES || e == EPERM) return absl::PermissionDeniedError(msg);
    return absl::InvalidArgumentError(msg);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return absl::DataLossError(absl::StrFormat("%s: cannot read the model file: %s", path, std::strerror(errno)));
  uint64_t size = static_cast<uint64_t>(st.st_size);
  RETURN_IF_ERROR(CheckSize(path, size));

  auto m = std::make_unique<LoadedModel>();
  m->path = path;
  Fingerprinter content;
  content.BeginField(size);
  HashingFileStream in(fd, &content);
  bool parsed;
  {
    google::protobuf::io::CodedInputStream coded(&in);
    parsed = ParseModel(coded, m->proto);
  }  // gives back what it read ahead, so ByteCount() below is exact
  if (in.read_errno() != 0)
    return absl::DataLossError(
        absl::StrFormat("%s: cannot read the model file: %s", path, std::strerror(in.read_errno())));
  if (!parsed) return absl::InvalidArgumentError(NotAModel(path));
  // The fingerprint promises to name these bytes: a file that changed size
  // while it was read is not the file that was fingerprinted.
  if (static_cast<uint64_t>(in.ByteCount()) != size)
    return absl::DataLossError(
        absl::StrFormat("%s: the file changed while it was read (%d bytes when opened, %d read); load it again", path,
                        size, in.ByteCount()));
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  RETURN_IF_ERROR(FinishLoad(*m, dir.string(), content));
  return m;
}

}  // namespace xonnx::onnx_import
