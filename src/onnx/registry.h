// The table of ONNX op converters: one function per op, registered by domain,
// op type and the opset range it handles (lc0 onnx2hlo, tinygrad nn/onnx.py).
#ifndef XONNX_ONNX_REGISTRY_H_
#define XONNX_ONNX_REGISTRY_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "onnx/context.h"

namespace xonnx::onnx_import {

using Converter = absl::Status (*)(NodeContext& ctx);

// The newest default-domain opset the converters know. Ops whose definition
// changed after their registered range are registered with the range they
// handle; later opsets only widened types for the rest (opset 22 added
// bfloat16 to many ops, 23 the 4-bit float type and the new Attention,
// RMSNormalization and RotaryEmbedding).
inline constexpr int64_t kMaxOpset = 23;

struct ConverterEntry {
  std::string domain;  // "" for the default ONNX domain
  std::string op_type;
  int64_t min_opset;  // inclusive
  int64_t max_opset;  // inclusive
  Converter fn;
  // Inputs whose values (not only shapes) the converter needs at compile
  // time: a Reshape's shape, TopK's k, a Slice's bounds. When one is
  // computed from runtime values, the graph is split so that it becomes an
  // input of a later program, compiled for its value (onnx/graph_split.h).
  std::vector<int> value_inputs;
  // The output shapes depend on the data in the value inputs (NonZero,
  // Unique): when they are runtime values, the node runs on the host
  // between programs instead.
  bool host_when_runtime = false;
};

class Registry {
 public:
  // The registry with every converter of src/onnx/ops/.
  static const Registry& Get();
  ConverterEntry& Add(ConverterEntry e) { return entries_.emplace_back(std::move(e)); }
  // A default-domain converter for opsets [from, to]. The entry is returned
  // so that a registration can declare its value inputs:
  //   r.Add("Reshape", Reshape).value_inputs = {1};
  ConverterEntry& Add(const char* op_type, Converter fn, int64_t from = 1, int64_t to = kMaxOpset) {
    return entries_.emplace_back(ConverterEntry{.op_type = op_type, .min_opset = from, .max_opset = to, .fn = fn});
  }
  // The converter for an op at the model's opset, or null.
  Converter Find(const std::string& domain, const std::string& op_type, int64_t opset) const;
  // Its whole entry, or null.
  const ConverterEntry* FindEntry(const std::string& domain, const std::string& op_type, int64_t opset) const;
  // Whether any opset of the op is known (to tell "unknown op" from "opset not supported").
  bool Knows(const std::string& domain, const std::string& op_type) const;
  const std::vector<ConverterEntry>& entries() const { return entries_; }

 private:
  std::vector<ConverterEntry> entries_;
};

// A node's domain ("" for the default one, however the model spells it) and
// the opset the model imports for that domain (0 if none): the key to the
// registry.
struct NodeOpset {
  std::string domain;
  int64_t version = 0;
};
NodeOpset OpsetOf(const onnx::NodeProto& node, const std::map<std::string, int64_t>& opsets);

// Registration functions, one per family file in ops/.
void RegisterElementwiseOps(Registry& r);
void RegisterShapeOps(Registry& r);
void RegisterGeneratorOps(Registry& r);
void RegisterGatherScatterOps(Registry& r);
void RegisterReduceOps(Registry& r);
void RegisterNnOps(Registry& r);
void RegisterNormalizationOps(Registry& r);
void RegisterResizeOps(Registry& r);
void RegisterLossOps(Registry& r);
void RegisterMiscOps(Registry& r);
void RegisterGradientOps(Registry& r);
void RegisterMicrosoftOps(Registry& r);
void RegisterMicrosoftAttentionOps(Registry& r);
void RegisterRotaryOps(Registry& r);
void RegisterAttentionOps(Registry& r);
void RegisterMatMulNBitsOps(Registry& r);
void RegisterFusedOps(Registry& r);
void RegisterMicrosoftQuantOps(Registry& r);
void RegisterQuantOps(Registry& r);
void RegisterRnnOps(Registry& r);
void RegisterDataDependentOps(Registry& r);
void RegisterScanOps(Registry& r);
void RegisterControlFlowOps(Registry& r);
void RegisterSpectralOps(Registry& r);
void RegisterGridSampleOps(Registry& r);
void RegisterRoiAlignOps(Registry& r);
void RegisterRandomOps(Registry& r);
void RegisterSequenceOps(Registry& r);

}  // namespace xonnx::onnx_import

#endif  // XONNX_ONNX_REGISTRY_H_
