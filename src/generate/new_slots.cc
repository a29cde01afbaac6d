#include "generate/new_slots.h"

#include <map>
#include <vector>

#include "onnx/onnx_pb.h"

namespace xonnx {

namespace {

// The bytes of one element of an ONNX float type, or 0 for other types.
int FloatBytes(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return 4;
    case onnx::TensorProto::DOUBLE:
      return 8;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    default:
      return 0;
  }
}

void AddInput(onnx::GraphProto* g, const char* name, int32_t elem_type, std::vector<std::string> dims) {
  onnx::ValueInfoProto* in = g->add_input();
  in->set_name(name);
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  for (const std::string& d : dims) t->mutable_shape()->add_dim()->set_dim_param(d);
}

// present = TensorScatter(past, Where(new_slots, new, 0), write_index):
// the past with the call's slots written at the write index, padding as
// zeros (whatever the model computed there, even a NaN, must never reach
// a product).
void WriteInPlace(onnx::GraphProto* g, const std::string& past, const std::string& fresh, const std::string& present,
                  const std::string& zero) {
  onnx::NodeProto* where = g->add_node();
  where->set_op_type("Where");
  where->set_name("xonnx_generate_mask_" + present);
  where->add_input(kNewSlotsInput);
  where->add_input(fresh);
  where->add_input(zero);
  where->add_output("xonnx_generate_masked_" + present);
  onnx::NodeProto* scatter = g->add_node();
  scatter->set_op_type("TensorScatter");
  scatter->set_domain("ai.xonnx");
  scatter->set_name("xonnx_generate_write_" + present);
  scatter->add_input(past);
  scatter->add_input(where->output(0));
  scatter->add_input(kWriteIndexInput);
  scatter->add_output(present);
  onnx::AttributeProto* axis = scatter->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(2);
}

}  // namespace

std::string RewriteTag(PresentForm form) {
  // The version changes with what RewritePresents writes.
  return form == PresentForm::kNewSlots ? "xonnx.generate: presents as new slots, 1"
                                        : "xonnx.generate: presents written in place, 1";
}

// Every check comes before the first change: a model that does not fit is
// left whole.
bool RewritePresents(onnx::ModelProto* model, PresentForm form) {
  onnx::GraphProto* g = model->mutable_graph();
  // A subgraph (If, Loop, Scan) could read a present from the outer scope:
  // such models are used as they are.
  for (const onnx::NodeProto& n : g->node())
    for (const onnx::AttributeProto& a : n.attribute())
      if (a.has_g() || a.graphs_size() > 0) return false;
  // The presents, each with the past input it must concatenate.
  const std::string kPresent = "present.";
  std::vector<std::string> present, past;
  for (const onnx::ValueInfoProto& o : g->output())
    if (o.name().compare(0, kPresent.size(), kPresent) == 0) {
      present.push_back(o.name());
      past.push_back("past_key_values." + o.name().substr(kPresent.size()));
    }
  if (present.empty()) return false;
  for (const std::string& name : past) {
    bool input = false;
    for (const onnx::ValueInfoProto& i : g->input()) input |= i.name() == name;
    if (!input) return false;
  }
  // Each value's producing node, by index (a map of onnx types would be
  // instantiated, and exported, in the library).
  std::map<std::string, int> producer;
  for (int i = 0; i < g->node_size(); ++i)
    for (const std::string& o : g->node(i).output()) producer[o] = i;
  // Each present must be Concat(past, new) along the sequence axis.
  std::vector<int> concats;
  for (size_t k = 0; k < present.size(); ++k) {
    auto p = producer.find(present[k]);
    if (p == producer.end()) return false;
    const onnx::NodeProto& n = g->node(p->second);
    int64_t axis = 0;
    bool has_axis = false;
    for (const onnx::AttributeProto& a : n.attribute())
      if (a.name() == "axis") {
        axis = a.i();
        has_axis = true;
      }
    if (n.op_type() != "Concat" || !n.domain().empty() || n.input_size() != 2 || n.input(0) != past[k] || !has_axis ||
        (axis != 2 && axis != -2))
      return false;
    concats.push_back(p->second);
  }
  // The cache's type, for the zeros written at padding.
  int32_t elem_type = 0;
  for (const onnx::ValueInfoProto& i : g->input())
    if (i.name() == past[0]) elem_type = i.type().tensor_type().elem_type();
  const std::string zero = "xonnx_generate_zero";
  if (form == PresentForm::kWrittenInPlace) {
    if (FloatBytes(elem_type) == 0) return false;
    onnx::TensorProto* z = g->add_initializer();
    z->set_name(zero);
    z->set_data_type(elem_type);
    z->set_raw_data(std::string(FloatBytes(elem_type), '\0'));
    AddInput(g, kWriteIndexInput, onnx::TensorProto::INT64, {"batch_size"});
    AddInput(g, kNewSlotsInput, onnx::TensorProto::BOOL, {"batch_size", "one", "sequence_length", "one"});
    onnx::OperatorSetIdProto* xonnx_ops = model->add_opset_import();
    xonnx_ops->set_domain("ai.xonnx");
    xonnx_ops->set_version(1);
  }
  // The concatenation keeps a name of its own for the attention that reads
  // it; the present's name goes to the new slots (or the past they are
  // written into).
  for (size_t k = 0; k < present.size(); ++k) {
    const std::string whole = "xonnx_generate_whole_" + present[k];
    for (onnx::NodeProto& n : *g->mutable_node())
      for (std::string& in : *n.mutable_input())
        if (in == present[k]) in = whole;
    g->mutable_node(concats[k])->set_output(0, whole);
    if (form == PresentForm::kWrittenInPlace) {
      WriteInPlace(g, past[k], g->node(concats[k]).input(1), present[k], zero);
      continue;
    }
    onnx::NodeProto* id = g->add_node();
    id->set_op_type("Identity");
    id->set_name("xonnx_generate_new_slots_" + present[k]);
    id->add_input(g->node(concats[k]).input(1));
    id->add_output(present[k]);
  }
  // The outputs' sequence length is now the call's, not the cache's.
  for (onnx::ValueInfoProto& o : *g->mutable_output()) {
    bool is_present = false;
    for (const std::string& p : present) is_present |= o.name() == p;
    if (!is_present || !o.type().has_tensor_type() || o.type().tensor_type().shape().dim_size() != 4) continue;
    onnx::TensorShapeProto_Dimension* d = o.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2);
    d->Clear();
    d->set_dim_param(form == PresentForm::kNewSlots ? "xonnx_generate_new_slots" : "xonnx_generate_capacity");
  }
  // Value infos recorded for the present names describe the whole cache.
  for (onnx::ValueInfoProto& v : *g->mutable_value_info())
    for (const std::string& p : present)
      if (v.name() == p) v.set_name("xonnx_generate_whole_" + p);
  return true;
}

}  // namespace xonnx
