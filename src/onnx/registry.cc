#include "onnx/registry.h"

namespace xonnx::onnx_import {

const Registry& Registry::Get() {
  static const Registry* r = [] {
    auto* reg = new Registry;
    RegisterElementwiseOps(*reg);
    RegisterShapeOps(*reg);
    RegisterGeneratorOps(*reg);
    RegisterGatherScatterOps(*reg);
    RegisterReduceOps(*reg);
    RegisterNnOps(*reg);
    RegisterNormalizationOps(*reg);
    RegisterResizeOps(*reg);
    RegisterLossOps(*reg);
    RegisterMiscOps(*reg);
    RegisterGradientOps(*reg);
    RegisterQuantOps(*reg);
    RegisterRnnOps(*reg);
    RegisterDataDependentOps(*reg);
    RegisterScanOps(*reg);
    RegisterControlFlowOps(*reg);
    RegisterSpectralOps(*reg);
    RegisterGridSampleOps(*reg);
    RegisterRoiAlignOps(*reg);
    RegisterRandomOps(*reg);
    RegisterSequenceOps(*reg);
    RegisterMicrosoftOps(*reg);
    RegisterMicrosoftAttentionOps(*reg);
    RegisterRotaryOps(*reg);
    RegisterAttentionOps(*reg);
    RegisterMatMulNBitsOps(*reg);
    RegisterFusedOps(*reg);
    RegisterMicrosoftQuantOps(*reg);
    return reg;
  }();
  return *r;
}

NodeOpset OpsetOf(const onnx::NodeProto& node, const std::map<std::string, int64_t>& opsets) {
  NodeOpset o;
  o.domain = node.domain() == "ai.onnx" ? "" : node.domain();
  auto it = opsets.find(o.domain);
  if (it != opsets.end()) o.version = it->second;
  return o;
}

const ConverterEntry* Registry::FindEntry(const std::string& domain, const std::string& op_type, int64_t opset) const {
  for (const auto& e : entries_)
    if (e.domain == domain && e.op_type == op_type && opset >= e.min_opset && opset <= e.max_opset) return &e;
  return nullptr;
}

Converter Registry::Find(const std::string& domain, const std::string& op_type, int64_t opset) const {
  const ConverterEntry* e = FindEntry(domain, op_type, opset);
  return e ? e->fn : nullptr;
}

bool Registry::Knows(const std::string& domain, const std::string& op_type) const {
  for (const auto& e : entries_)
    if (e.domain == domain && e.op_type == op_type) return true;
  return false;
}

}  // namespace xonnx::onnx_import
