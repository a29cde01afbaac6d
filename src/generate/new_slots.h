// The decoder rewritten to return its key/value cache as the generator
// keeps it. A Hugging Face-style export returns present.N.* = Concat(past,
// new) along the sequence: the whole cache, which the generator has
// already, copied out of the program on every step (two copies of the
// cache per token, the largest cost of a decode step at batch 8 or with a
// long prompt). The rewritten model keeps the concatenation for its
// attention and returns, under the present's name, either `new` alone
// (the cache in host memory, which the generator writes) or the past with
// `new` written at a given slot (the cache on the device, which the
// program updates in place).
#ifndef XONNX_GENERATE_NEW_SLOTS_H_
#define XONNX_GENERATE_NEW_SLOTS_H_

#include <string>
#include <vector>

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace xonnx {

enum class PresentForm {
  // present.X = new: [batch, heads, s, head_dim].
  kNewSlots,
  // present.X = past_key_values.X with new written at slot
  // kWriteIndexInput of every sequence (the past's capacity kept); the
  // slots kNewSlotsInput [batch, 1, s, 1] marks false (padding) are
  // written as zeros.
  kWrittenInPlace,
};
inline constexpr char kWriteIndexInput[] = "xonnx.write_index";  // int64 [batch]
inline constexpr char kNewSlotsInput[] = "xonnx.new_slots";      // bool [batch, 1, s, 1]

// Rewrites `model` so that each output present.X, a Concat along axis 2
// of input past_key_values.X and one more value, is returned in `form`
// instead. False, leaving the model as it was, when it has no present.*
// output or any is not such a Concat (the model is then used as it is).
bool RewritePresents(onnx::ModelProto* model, PresentForm form);
// What RewritePresents(form) does to a model, as a name for the content
// fingerprint of the rewritten model (compiled programs are cached by it).
std::string RewriteTag(PresentForm form);

}  // namespace xonnx

#endif  // XONNX_GENERATE_NEW_SLOTS_H_
