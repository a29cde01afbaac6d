// Stable 128-bit fingerprints of byte strings, for cache keys that must be the
// same in every process and on every run (absl::Hash is seeded per process).
// Not cryptographic: it detects changes and corruption, not tampering.
#ifndef XONNX_BASE_FINGERPRINT_H_
#define XONNX_BASE_FINGERPRINT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

// xxhash.h's streaming state, kept out of this header.
struct XXH3_state_s;

namespace xonnx {

struct Fingerprint128 {
  uint64_t lo = 0, hi = 0;
  bool operator==(const Fingerprint128& o) const { return lo == o.lo && hi == o.hi; }
  // 32 lowercase hex digits.
  std::string Hex() const;
};

// Incremental: Update() with the pieces, in order, then Finish(). XXH3's
// 128-bit hash (Debian's libxxhash): tens of GB/s on one core, so hashing a
// model costs less than reading it from the page cache.
class Fingerprinter {
 public:
  Fingerprinter();
  ~Fingerprinter();
  Fingerprinter(const Fingerprinter&) = delete;
  Fingerprinter& operator=(const Fingerprinter&) = delete;
  void Update(absl::string_view bytes);
  // Adds a length prefix, so that ("ab","c") and ("a","bc") differ.
  void UpdateField(absl::string_view bytes);
  // The length prefix alone, for a field whose `size` bytes then come in
  // pieces through Update(): the same result as UpdateField(all of them).
  void BeginField(uint64_t size);
  Fingerprint128 Finish() const;

 private:
  XXH3_state_s* state_;
};

Fingerprint128 FingerprintOf(absl::string_view bytes);

}  // namespace xonnx

#endif  // XONNX_BASE_FINGERPRINT_H_
