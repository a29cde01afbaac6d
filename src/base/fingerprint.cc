#include "base/fingerprint.h"

#include <xxhash.h>

#include <new>

#include "absl/strings/str_format.h"

namespace xonnx {

std::string Fingerprint128::Hex() const { return absl::StrFormat("%016x%016x", hi, lo); }

Fingerprinter::Fingerprinter() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH3_128bits_reset(state_);
}

Fingerprinter::~Fingerprinter() { XXH3_freeState(state_); }

void Fingerprinter::Update(absl::string_view bytes) { XXH3_128bits_update(state_, bytes.data(), bytes.size()); }

void Fingerprinter::BeginField(uint64_t size) {
  Update(absl::string_view(reinterpret_cast<const char*>(&size), sizeof(size)));
}

void Fingerprinter::UpdateField(absl::string_view bytes) {
  BeginField(bytes.size());
  Update(bytes);
}

Fingerprint128 Fingerprinter::Finish() const {
  XXH128_hash_t h = XXH3_128bits_digest(state_);
  return {h.low64, h.high64};
}

Fingerprint128 FingerprintOf(absl::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.low64, h.high64};
}

}  // namespace xonnx
