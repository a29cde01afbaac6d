// Every value of a model's main graph as a model output: what `xonnx run
// --compare` uses to find the first node whose result differs (as ONNX
// Runtime's debugging tools add every node output as a graph output).
#ifndef XONNX_ONNX_INTERMEDIATES_H_
#define XONNX_ONNX_INTERMEDIATES_H_

#include "absl/status/statusor.h"
#include "onnx/model.h"

namespace xonnx::onnx_import {

// Appends each output of the main graph's nodes, in node order, to the
// graph's outputs (those that are not outputs already and whose type ONNX
// shape inference knows: tensors, not sequences or optionals). Changes the
// model's fingerprint, so no cached program of the plain model is taken
// for it. Returns how many were added.
absl::StatusOr<int> ExposeIntermediates(LoadedModel& model);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_INTERMEDIATES_H_
