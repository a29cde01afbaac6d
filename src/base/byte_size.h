// Sizes as people write them: "500M", "2G", "1.5GiB", "0". K, M, G and T
// are powers of 1024, as ccache's and du's sizes are.
#ifndef XONNX_BASE_BYTE_SIZE_H_
#define XONNX_BASE_BYTE_SIZE_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace xonnx {

// The size `text` names, in bytes; nullopt when it names none (or a
// negative or non-finite number).
std::optional<uint64_t> ParseByteSize(absl::string_view text);

}  // namespace xonnx

#endif  // XONNX_BASE_BYTE_SIZE_H_
