// The decoder rewritten to return only each call's new keys and values.
// A Hugging Face-style export returns present.N.* = Concat(past, new) along
// the sequence: the whole cache, which the generator has already, copied
// out of the program and to the host on every step (two copies of the
// cache per token, the largest cost of a decode step at batch 8 or with a
// long prompt). The rewritten model keeps the concatenation for its
// attention and returns `new` under the present's name instead.
#ifndef XONNX_GENERATE_NEW_SLOTS_H_
#define XONNX_GENERATE_NEW_SLOTS_H_

#include <optional>
#include <string>
#include <vector>

namespace xonnx {

// The serialized model at `path` with each output present.X, a Concat
// along axis 2 of input past_key_values.X and one more value, returning
// that value instead; nullopt when the model has no present.* output, any
// is not such a Concat (the model is then used as it is), or the file
// cannot be read or rewritten.
std::optional<std::string> ReturnNewSlotsOnly(const std::string& path);

}  // namespace xonnx

#endif  // XONNX_GENERATE_NEW_SLOTS_H_
