#include "serve/model_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "serve/proto/model_config.pb.h"
#include "serve/wire.h"

namespace xonnx::serve {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;

// Collects the text parser's errors and, with unknown fields allowed, its
// warnings (one per field skipped).
class Collector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    errors.push_back(absl::StrCat("line ", line + 1, ": ", message));
  }
  void AddWarning(int line, int column, const std::string& message) override {
    warnings.push_back(absl::StrCat("line ", line + 1, ": ", message));
  }
  std::vector<std::string> errors, warnings;
};

// The config's data types as xonnx's (TYPE_STRING is BYTES on the wire).
StatusOr<DataType> FromConfigType(int t, const std::string& what) {
  static const std::pair<inference::DataType, DataType> kTypes[] = {
      {inference::TYPE_BOOL, DataType::kBool},     {inference::TYPE_UINT8, DataType::kUInt8},
      {inference::TYPE_UINT16, DataType::kUInt16}, {inference::TYPE_UINT32, DataType::kUInt32},
      {inference::TYPE_UINT64, DataType::kUInt64}, {inference::TYPE_INT8, DataType::kInt8},
      {inference::TYPE_INT16, DataType::kInt16},   {inference::TYPE_INT32, DataType::kInt32},
      {inference::TYPE_INT64, DataType::kInt64},   {inference::TYPE_FP16, DataType::kFloat16},
      {inference::TYPE_FP32, DataType::kFloat32},  {inference::TYPE_FP64, DataType::kFloat64},
      {inference::TYPE_STRING, DataType::kString}, {inference::TYPE_BF16, DataType::kBFloat16},
  };
  for (auto [c, d] : kTypes)
    if (c == t) return d;
  return Invalid(absl::StrCat(what, ": data_type is missing or invalid"));
}

template <typename T>
Status ReadTensors(const pb::RepeatedPtrField<T>& in, const std::string& kind, const std::string& where,
                   std::vector<TensorConfig>& out) {
  for (const T& t : in) {
    std::string what = absl::StrCat(where, ": ", kind, " '", t.name(), "'");
    if (t.name().empty()) return Invalid(absl::StrCat(where, ": an ", kind, " has no name"));
    if (t.has_reshape()) return Invalid(absl::StrCat(what, ": reshape is not supported by xonnx"));
    if (t.is_shape_tensor()) return Invalid(absl::StrCat(what, ": shape tensors are not supported by xonnx"));
    TensorConfig c;
    c.name = t.name();
    StatusOr<DataType> d = FromConfigType(t.data_type(), what);
    if (!d.ok()) return d.status();
    c.dtype = *d;
    c.dims.assign(t.dims().begin(), t.dims().end());
    for (int64_t dim : c.dims)
      if (dim < -1) return Invalid(absl::StrCat(what, ": dims may be -1 (variable) or >= 0, got ", dim));
    out.push_back(std::move(c));
  }
  return OkStatus();
}

Status ReadBatching(const inference::ModelConfig& p, const std::string& where, ModelConfig& c) {
  const auto& db = p.dynamic_batching();
  c.dynamic_batching = true;
  if (c.max_batch_size <= 0)
    return Invalid(absl::StrCat(where, ": dynamic_batching needs max_batch_size > 0 (the model's batch dimension)"));
  for (int s : db.preferred_batch_size()) {
    if (s < 1 || s > c.max_batch_size)
      return Invalid(
          absl::StrCat(where, ": preferred_batch_size ", s, " is outside [1, max_batch_size ", c.max_batch_size, "]"));
    c.preferred_batch_sizes.push_back(s);
  }
  if (db.max_queue_delay_microseconds() > kMaxMicroseconds ||
      db.default_queue_policy().default_timeout_microseconds() > kMaxMicroseconds)
    return Invalid(absl::StrCat(where, ": queue delays and timeouts must be at most an hour (", kMaxMicroseconds,
                                " microseconds)"));
  c.max_queue_delay_us = static_cast<int64_t>(db.max_queue_delay_microseconds());
  if (db.priority_levels() > 0) c.ignored.push_back("dynamic_batching.priority_levels (one queue per model)");
  if (db.has_default_queue_policy()) {
    const auto& q = db.default_queue_policy();
    if (q.timeout_action() == inference::ModelQueuePolicy::DELAY)
      return Invalid(absl::StrCat(where,
                                  ": default_queue_policy.timeout_action DELAY is not supported by xonnx "
                                  "(a request past its timeout is rejected)"));
    c.max_queue_size = q.max_queue_size();
    c.default_timeout_us = static_cast<int64_t>(q.default_timeout_microseconds());
    c.allow_timeout_override = q.allow_timeout_override();
  }
  return OkStatus();
}

Status FromProto(const inference::ModelConfig& p, const std::string& name, const std::string& where, ModelConfig& c) {
  if (!p.name().empty() && p.name() != name)
    return Invalid(absl::StrCat(where, ": name '", p.name(), "' differs from the model's folder name '", name, "'"));
  bool onnx_platform = p.platform().empty() || p.platform() == "onnxruntime_onnx" || p.platform() == "onnx_onnxv1";
  bool onnx_backend = p.backend().empty() || p.backend() == "onnxruntime" || p.backend() == "xonnx";
  if (!onnx_platform || !onnx_backend)
    return Invalid(absl::StrCat(where, ": platform '", p.platform(), "' / backend '", p.backend(),
                                "' is not ONNX; xonnx serves ONNX models only"));
  if (p.has_sequence_batching()) return Invalid(absl::StrCat(where, ": sequence_batching is not supported by xonnx"));
  if (p.has_ensemble_scheduling())
    return Invalid(absl::StrCat(where, ": ensemble_scheduling is not supported by xonnx"));
  if (!p.platform().empty()) c.platform = p.platform();
  if (!p.default_model_filename().empty()) c.model_filename = p.default_model_filename();
  if (p.max_batch_size() < 0 || p.max_batch_size() > kMaxBatchSize)
    return Invalid(absl::StrCat(where, ": max_batch_size must be in [0, ", kMaxBatchSize, "]"));
  c.max_batch_size = p.max_batch_size();
  if (p.has_version_policy()) {
    const auto& v = p.version_policy();
    if (v.has_all()) c.version_policy.kind = VersionPolicy::Kind::kAll;
    if (v.has_latest()) c.version_policy.num_versions = std::max<int>(1, v.latest().num_versions());
    if (v.has_specific()) {
      c.version_policy.kind = VersionPolicy::Kind::kSpecific;
      c.version_policy.versions.assign(v.specific().versions().begin(), v.specific().versions().end());
    }
  }
  Status s = ReadTensors(p.input(), "input", where, c.inputs);
  if (!s.ok()) return s;
  s = ReadTensors(p.output(), "output", where, c.outputs);
  if (!s.ok()) return s;
  for (const auto& in : p.input())
    if (in.allow_ragged_batch() || in.optional())
      return Invalid(absl::StrCat(where, ": input '", in.name(), "': ragged and optional inputs are not supported"));
  int instances = 0;
  for (const auto& g : p.instance_group()) {
    if (g.kind() == inference::ModelInstanceGroup::KIND_MODEL)
      return Invalid(absl::StrCat(where, ": instance_group kind KIND_MODEL is not supported by xonnx"));
    if (g.count() < 0 || g.count() > kMaxInstances)
      return Invalid(absl::StrCat(where, ": instance_group count must be in [1, ", kMaxInstances, "]"));
    instances += g.count() == 0 ? 1 : g.count();
    if (instances > kMaxInstances)
      return Invalid(absl::StrCat(where, ": the instance groups ask for more than ", kMaxInstances, " instances"));
    if (!g.gpus().empty()) c.ignored.push_back("instance_group.gpus (the devices are xonnx serve's --device)");
  }
  if (instances > 0) c.instance_count = instances;
  if (p.has_dynamic_batching()) {
    s = ReadBatching(p, where, c);
    if (!s.ok()) return s;
  }
  for (const auto& [key, value] : p.parameters()) {
    if (key.rfind("xonnx.", 0) == 0)
      c.xonnx_options[key.substr(6)] = value.string_value();
    else
      c.ignored.push_back(absl::StrCat("parameters '", key, "'"));
  }
  return OkStatus();
}

std::string SpecText(const TensorSpec& s) {
  std::vector<std::string> d;
  for (int64_t v : s.dims) d.push_back(v < 0 ? "-1" : absl::StrCat(v));
  return absl::StrCat(WireName(s.dtype), " [", absl::StrJoin(d, ","), "]");
}

bool Batchable(const std::vector<TensorSpec>& specs) {
  for (const auto& s : specs)
    if (s.dims.empty() || s.dims[0] >= 0) return false;
  return true;
}

// Checks the config's tensors against the model's (by name, type, rank and
// every fixed dimension) or takes the model's when the config lists none.
Status MatchTensors(std::vector<TensorConfig>& config, const std::vector<TensorSpec>& model, const char* kind,
                    bool batched, bool all_required, const std::string& where) {
  std::vector<std::string> names;
  for (const auto& m : model) names.push_back(m.name);
  if (config.empty()) {
    for (const auto& m : model) {
      std::vector<int64_t> dims(m.dims.begin() + (batched ? 1 : 0), m.dims.end());
      config.push_back({m.name, m.dtype, dims});
    }
    return OkStatus();
  }
  for (auto& c : config) {
    auto it = std::find_if(model.begin(), model.end(), [&](const TensorSpec& m) { return m.name == c.name; });
    if (it == model.end())
      return Invalid(absl::StrCat(where, ": ", kind, " '", c.name, "' is not one of the model's (",
                                  absl::StrJoin(names, ", "), ")"));
    size_t skip = batched ? 1 : 0;
    bool rank_ok = it->dims.size() == c.dims.size() + skip;
    bool dims_ok = rank_ok;
    for (size_t i = 0; rank_ok && i < c.dims.size(); ++i) {
      int64_t m = it->dims[i + skip];
      if (m >= 0 && c.dims[i] != m) dims_ok = false;  // the config may fix a variable dim, not change a fixed one
    }
    if (it->dtype != c.dtype || !dims_ok)
      return Invalid(absl::StrCat(where, ": ", kind, " '", c.name, "' is ", WireName(c.dtype), " [",
                                  absl::StrJoin(c.dims, ","), "]", batched ? " after the batch dimension" : "",
                                  " in the config but ", SpecText(*it), " in the model"));
  }
  if (all_required)
    for (const auto& m : model)
      if (std::none_of(config.begin(), config.end(), [&](const TensorConfig& c) { return c.name == m.name; }))
        return Invalid(absl::StrCat(where, ": the model's ", kind, " '", m.name, "' is missing from the config"));
  return OkStatus();
}

}  // namespace

StatusOr<ModelConfig> ParseModelConfig(const std::string& text, const std::string& name, const std::string& where,
                                       bool strict) {
  inference::ModelConfig proto;
  ModelConfig c;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {  // JSON, as the load API's "config" gives it
    pb::util::JsonParseOptions json;
    json.ignore_unknown_fields = !strict;
    auto parsed = pb::util::JsonStringToMessage(text, &proto, json);
    if (!parsed.ok()) return Invalid(absl::StrCat(where, ": ", parsed.message().as_string()));
    c.name = name;
    c.from_file = true;
    Status s = FromProto(proto, name, where, c);
    if (!s.ok()) return s;
    return c;
  }
  pb::TextFormat::Parser parser;
  Collector collector;
  parser.RecordErrorsTo(&collector);
  parser.AllowUnknownField(!strict);
  if (!parser.ParseFromString(text, &proto))
    return Invalid(absl::StrCat(where, ": ", collector.errors.empty() ? "unreadable" : collector.errors[0],
                                strict ? " (--strict-model-config refuses fields xonnx does not read)" : ""));
  c.name = name;
  c.from_file = true;
  for (const auto& w : collector.warnings) c.ignored.push_back(w);
  Status s = FromProto(proto, name, where, c);
  if (!s.ok()) return s;
  return c;
}

StatusOr<ModelConfig> ReadModelConfig(const std::string& model_dir, const std::string& name, bool strict) {
  fs::path path = fs::path(model_dir) / "config.pbtxt";
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    ModelConfig c;
    c.name = name;
    return c;
  }
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) return Invalid(absl::StrCat(path.string(), ": cannot be read"));
  return ParseModelConfig(text.str(), name, path.string(), strict);
}

Status CompleteModelConfig(ModelConfig& config, const std::vector<TensorSpec>& inputs,
                           const std::vector<TensorSpec>& outputs, int default_max_batch) {
  std::string where = absl::StrCat("model '", config.name, "'");
  for (const auto* list : {&inputs, &outputs})
    for (const auto& s : *list)
      if (s.sequence || s.optional)
        return Invalid(absl::StrCat(where, ": '", s.name,
                                    "' is a sequence or optional value; the inference protocol serves tensors"));
  bool batchable = Batchable(inputs) && Batchable(outputs);
  if (!config.from_file && batchable && default_max_batch > 0) {
    config.max_batch_size = default_max_batch;
    config.dynamic_batching = true;
  }
  if (config.max_batch_size > 0 && !batchable) {
    for (const auto* list : {&inputs, &outputs})
      for (const auto& s : *list)
        if (s.dims.empty() || s.dims[0] >= 0)
          return Invalid(absl::StrCat(where, ": max_batch_size ", config.max_batch_size,
                                      " needs a variable first dimension in every input and output; '", s.name, "' is ",
                                      SpecText(s)));
  }
  bool batched = config.max_batch_size > 0;
  Status s = MatchTensors(config.inputs, inputs, "input", batched, /*all_required=*/true, where);
  if (!s.ok()) return s;
  return MatchTensors(config.outputs, outputs, "output", batched, /*all_required=*/false, where);
}

StatusOr<std::vector<int64_t>> BatchBucketsOf(const ModelConfig& config) {
  std::vector<int64_t> out;
  if (config.max_batch_size <= 0) return out;
  auto listed = config.xonnx_options.find("batch_buckets");
  if (listed != config.xonnx_options.end()) {
    for (absl::string_view part : absl::StrSplit(listed->second, ',', absl::SkipWhitespace())) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(part, &v) || v < 1 || v > config.max_batch_size)
        return Invalid(absl::StrCat("model '", config.name, "': xonnx.batch_buckets '", listed->second,
                                    "' must list sizes in [1, max_batch_size ", config.max_batch_size, "]"));
      out.push_back(v);
    }
  } else {
    for (int64_t b = 1; b < config.max_batch_size; b *= 2) out.push_back(b);
    out.insert(out.end(), config.preferred_batch_sizes.begin(), config.preferred_batch_sizes.end());
  }
  out.push_back(config.max_batch_size);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status ApplyXonnxOptions(const ModelConfig& config, SessionOptions& options) {
  for (const auto& [key, value] : config.xonnx_options) {
    std::string what = absl::StrCat("model '", config.name, "': parameter xonnx.", key, " '", value, "'");
    if (key == "batch_buckets") continue;  // BatchBucketsOf
    if (key == "data_type") {
      DataType t = value == "f32"    ? DataType::kFloat32
                   : value == "f16"  ? DataType::kFloat16
                   : value == "bf16" ? DataType::kBFloat16
                                     : DataType::kString;
      if (t == DataType::kString) return Invalid(absl::StrCat(what, ": must be f32, f16 or bf16"));
      options.data_type = t;
    } else if (key == "check_indices" || key == "allow_tf32") {
      if (value != "true" && value != "false") return Invalid(absl::StrCat(what, ": must be true or false"));
      (key == "check_indices" ? options.check_indices : options.allow_tf32) = value == "true";
    } else {
      return Invalid(absl::StrCat(what,
                                  ": unknown (known: xonnx.batch_buckets, xonnx.data_type, "
                                  "xonnx.check_indices, xonnx.allow_tf32)"));
    }
  }
  return OkStatus();
}

}  // namespace xonnx::serve
