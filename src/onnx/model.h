// Loading ONNX models with libonnx: parse, resolve external data (only inside
// the model's folder), check.
#ifndef XONNX_ONNX_MODEL_H_
#define XONNX_ONNX_MODEL_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"

namespace xonnx::onnx_import {

struct LoadedModel {
  std::string path;  // as given; used to prefix every message
  onnx::ModelProto proto;
  // Opset version per domain ("" is the default ONNX domain).
  std::map<std::string, int64_t> opsets;
  // Fingerprint of the file and its external data (hex): what a persistent
  // cache keys on to know that a model is unchanged.
  std::string content_fingerprint;
  int64_t default_opset() const {
    auto it = opsets.find("");
    return it == opsets.end() ? 0 : it->second;
  }
};

// Reads `path` and resolves external data. Errors name the file and say
// what is wrong. Call CheckModel() next (after listing unsupported ops, so
// that an unknown op is reported with all the others, not by the checker).
[[nodiscard]] absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& path);
// The same for a model already in memory (`name` is used in messages;
// external data is resolved relative to `base_dir`).
[[nodiscard]] absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModelFromBytes(absl::string_view bytes,
                                                                              const std::string& name,
                                                                              const std::string& base_dir);

// After `m`'s proto was changed in memory (a rewrite of the file as
// loaded): its opsets are read again, and its content fingerprint takes in
// `what` (what the change was, a function of nothing but the file), so that
// programs cached for the file are never taken for the rewritten model's.
void NoteRewrite(LoadedModel& m, absl::string_view what);

// Runs the ONNX checker, except on models it would wrongly reject: a newer
// opset than libonnx knows, or ops ONNX Runtime adds to the ONNX domain
// (then a warning says so).
[[nodiscard]] absl::Status CheckModel(const LoadedModel& model);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_MODEL_H_
