// A model's serving configuration: Triton's config.pbtxt (the subset in
// proto/model_config.proto) read, checked against the model's own inputs
// and outputs, and completed from them where it is silent.
#ifndef XONNX_SERVE_MODEL_CONFIG_H_
#define XONNX_SERVE_MODEL_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "xonnx/session.h"
#include "xonnx/status.h"

namespace xonnx::serve {

// Bounds on what a configuration may ask for.
inline constexpr int kMaxBatchSize = 1 << 16;
inline constexpr int kMaxInstances = 64;
inline constexpr uint64_t kMaxMicroseconds = uint64_t{3600} * 1000 * 1000;

// An input or output as the protocol shows it: dims without the batch
// dimension when the model batches, -1 for a variable dimension.
struct TensorConfig {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> dims;
};

// Which versions of a model are served (ModelVersionPolicy).
struct VersionPolicy {
  enum class Kind { kLatest, kAll, kSpecific };
  Kind kind = Kind::kLatest;
  int num_versions = 1;           // kLatest
  std::vector<int64_t> versions;  // kSpecific
};

struct ModelConfig {
  std::string name;
  std::string platform = "onnx_onnxv1";  // the protocol's name for ONNX, unless the config names one
  std::string model_filename = "model.onnx";
  VersionPolicy version_policy;
  // 0: the model does not batch (shapes are the model's own); n > 0: dim 0
  // of every input and output is the batch, at most n rows per call.
  int max_batch_size = 0;
  bool dynamic_batching = false;
  std::vector<int64_t> preferred_batch_sizes;
  int64_t max_queue_delay_us = 0;
  int64_t max_queue_size = 0;      // 0: the server's default
  int64_t default_timeout_us = 0;  // 0: none
  bool allow_timeout_override = true;
  int instance_count = 1;  // batches in flight at once per device
  std::vector<TensorConfig> inputs, outputs;
  // xonnx's own session options, from parameters named "xonnx.<option>":
  // batch_buckets ("1,4,16"), data_type (f32, f16, bf16), check_indices,
  // allow_tf32.
  std::map<std::string, std::string> xonnx_options;
  // Fields of the file this version of xonnx ignores, for the load log.
  std::vector<std::string> ignored;
  bool from_file = false;  // config.pbtxt was present
};

// Reads DIR/config.pbtxt (an absent file gives an empty config named after
// the folder). Unknown fields are listed in `ignored`, or refused when
// `strict`; features xonnx does not implement (sequence batching,
// ensembles, reshapes, shape tensors, ragged batches) are refused, named.
StatusOr<ModelConfig> ReadModelConfig(const std::string& model_dir, const std::string& name, bool strict);
// Parses a config given as text: config.pbtxt's syntax, or JSON (the load
// API's "config" parameter, as Triton takes it). `where` names it in errors.
StatusOr<ModelConfig> ParseModelConfig(const std::string& text, const std::string& name, const std::string& where,
                                       bool strict);

// Checks `config` against the model's declared inputs and outputs and
// fills what it leaves out: names, types and dims from the model; without
// a config file, a model whose every input and output has a variable first
// dimension batches up to `default_max_batch` with dynamic batching on, as
// Triton's auto-completed ONNX configurations do.
Status CompleteModelConfig(ModelConfig& config, const std::vector<TensorSpec>& inputs,
                           const std::vector<TensorSpec>& outputs, int default_max_batch);

// The batch sizes a model is compiled for: powers of two up to
// max_batch_size, the preferred sizes and max_batch_size itself, unless the
// xonnx.batch_buckets parameter lists them.
StatusOr<std::vector<int64_t>> BatchBucketsOf(const ModelConfig& config);

// Applies xonnx_options to session options.
Status ApplyXonnxOptions(const ModelConfig& config, SessionOptions& options);

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_MODEL_CONFIG_H_
