#include "base/byte_size.h"

#include <cctype>
#include <cmath>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace xonnx {

std::optional<uint64_t> ParseByteSize(absl::string_view t) {
  uint64_t scale = 1;
  for (absl::string_view suffix : {"iB", "B"})
    if (absl::EndsWith(t, suffix) && t.size() > suffix.size()) {
      t.remove_suffix(suffix.size());
      break;
    }
  if (!t.empty()) {
    size_t unit = std::string("KMGT").find(static_cast<char>(std::toupper(t.back())));
    if (unit != std::string::npos) {
      scale = uint64_t{1} << (10 * (unit + 1));
      t.remove_suffix(1);
    }
  }
  double v;
  // 2^63 bytes and more do not fit the count.
  if (!absl::SimpleAtod(t, &v) || v < 0 || !std::isfinite(v) || v * static_cast<double>(scale) >= 0x1p63)
    return std::nullopt;
  return static_cast<uint64_t>(v * static_cast<double>(scale));
}

}  // namespace xonnx
