#include "generate/decoder_style.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generate/new_slots.h"

namespace xonnx {
namespace {

Status StyleUnsupported(std::string message) { return Status(StatusCode::kUnimplemented, std::move(message)); }

bool IsIndexType(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32; }

}  // namespace

StatusOr<DecoderStyle> DetectDecoderStyle(const std::vector<TensorSpec>& inputs,
                                          const std::vector<TensorSpec>& outputs) {
  DecoderStyle s;
  s.name = "hf";
  std::map<std::string, const TensorSpec*> in;
  for (const auto& t : inputs) in[t.name] = &t;
  std::map<std::string, size_t> out_index;
  for (size_t i = 0; i < outputs.size(); ++i) out_index[outputs[i].name] = i;
  std::vector<std::string> names;
  for (const auto& t : inputs) names.push_back(t.name);
  const std::string known =
      "a Hugging Face / Optimum decoder's: input_ids, attention_mask, optional position_ids, "
      "past_key_values.N.key and past_key_values.N.value in; logits and present.N.key / present.N.value out";
  for (const char* need : {"input_ids", "attention_mask"})
    if (!in.count(need))
      return StyleUnsupported(absl::StrCat("not a decoder this runtime knows: no input '", need, "' (its inputs are ",
                                           absl::StrJoin(names, ", "), "; known: ", known, ")"));
  s.input_ids = "input_ids";
  s.attention_mask = "attention_mask";
  s.ids_dtype = in["input_ids"]->dtype;
  s.mask_dtype = in["attention_mask"]->dtype;
  if (in.count("position_ids")) {
    s.position_ids = "position_ids";
    s.positions_dtype = in["position_ids"]->dtype;
  }
  for (const char* name : {"input_ids", "attention_mask", "position_ids"}) {
    auto it = in.find(name);
    if (it != in.end() && (!IsIndexType(it->second->dtype) || it->second->dims.size() != 2))
      return StyleUnsupported(absl::StrCat("input '", name, "' must be int64 or int32 [batch, length]"));
  }
  size_t layers = 0;
  while (in.count(absl::StrCat("past_key_values.", layers, ".key"))) ++layers;
  if (layers == 0)
    return StyleUnsupported(absl::StrCat("no key/value cache inputs (past_key_values.0.key, ...): its inputs are ",
                                         absl::StrJoin(names, ", "), "; known: ", known));
  for (size_t i = 0; i < layers; ++i)
    for (const char* kind : {"key", "value"}) {
      std::string p = absl::StrCat("past_key_values.", i, ".", kind), q = absl::StrCat("present.", i, ".", kind);
      if (!in.count(p)) return StyleUnsupported(absl::StrCat("input '", p, "' is missing (layer ", i, " has a key)"));
      if (!out_index.count(q))
        return StyleUnsupported(absl::StrCat("output '", q, "' is missing (the cache of ", p, ")"));
      const TensorSpec& t = *in[p];
      if (t.dims.size() != 4 || t.dims[1] <= 0 || t.dims[3] <= 0)
        return StyleUnsupported(absl::StrCat("cache input '", p,
                                             "' must be [batch, heads, length, head_dim] with fixed "
                                             "heads and head_dim"));
      if (s.past.empty()) {
        s.heads = t.dims[1];
        s.head_dim = t.dims[3];
        s.cache_dtype = t.dtype;
      } else if (t.dims[1] != s.heads || t.dims[3] != s.head_dim || t.dtype != s.cache_dtype) {
        return StyleUnsupported(absl::StrCat("cache input '", p,
                                             "' differs from past_key_values.0.key in heads, head_dim "
                                             "or type: layers with caches of different shapes are not supported"));
      }
      s.past.push_back(t);
      s.present.push_back(q);
      s.present_index.push_back(out_index[q]);
    }
  for (const auto& t : inputs) {
    // xonnx.* inputs are the generator's own (RewritePresents).
    bool mine = t.name == s.input_ids || t.name == s.attention_mask || t.name == s.position_ids ||
                t.name == kWriteIndexInput || t.name == kNewSlotsInput;
    for (const auto& p : s.past) mine = mine || t.name == p.name;
    if (!mine)
      return StyleUnsupported(
          absl::StrCat("input '", t.name, "' is not one of ", known, "; this runtime cannot feed it"));
  }
  if (!out_index.count("logits")) return StyleUnsupported("no output 'logits'");
  s.logits_index = out_index["logits"];
  return s;
}

}  // namespace xonnx
