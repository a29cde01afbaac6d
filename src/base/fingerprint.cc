#include "base/fingerprint.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace xonnx {

namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t Round(uint64_t acc, uint64_t word) { return Rotl(acc + word * kP2, 31) * kP1; }
// Spreads every input bit over the whole word (a 64-bit finalizer).
inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

}  // namespace

std::string Fingerprint128::Hex() const { return absl::StrFormat("%016x%016x", hi, lo); }

Fingerprinter::Fingerprinter() : lanes_{kP1 + kP2, kP2, 0, 0 - kP1} {}

void Fingerprinter::Block(const unsigned char* p) {
  for (int k = 0; k < 4; ++k) lanes_[k] = Round(lanes_[k], Load64(p + 8 * k));
}

void Fingerprinter::Update(absl::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  total_ += n;
  if (tail_size_) {
    size_t take = std::min(n, sizeof(tail_) - tail_size_);
    std::memcpy(tail_ + tail_size_, p, take);
    tail_size_ += take;
    p += take;
    n -= take;
    if (tail_size_ < sizeof(tail_)) return;
    Block(tail_);
    tail_size_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) Block(p);
  std::memcpy(tail_, p, n);
  tail_size_ = n;
}

void Fingerprinter::BeginField(uint64_t size) {
  Update(absl::string_view(reinterpret_cast<const char*>(&size), sizeof(size)));
}

void Fingerprinter::UpdateField(absl::string_view bytes) {
  BeginField(bytes.size());
  Update(bytes);
}

Fingerprint128 Fingerprinter::Finish() const {
  // Two different mixes of the lanes, the tail and the length give the two
  // halves.
  uint64_t a = Rotl(lanes_[0], 1) + Rotl(lanes_[1], 7) + Rotl(lanes_[2], 12) + Rotl(lanes_[3], 18);
  uint64_t b = lanes_[0] ^ Rotl(lanes_[1], 29) ^ Rotl(lanes_[2], 41) ^ Rotl(lanes_[3], 53);
  a += total_;
  b ^= total_ * kP3;
  for (size_t i = 0; i < tail_size_; ++i) {
    a = Rotl(a ^ (tail_[i] * kP3), 11) * kP1;
    b = Rotl(b + (tail_[i] * kP1), 23) * kP2;
  }
  return {Avalanche(a), Avalanche(b ^ Avalanche(a + kP3))};
}

Fingerprint128 FingerprintOf(absl::string_view bytes) {
  Fingerprinter f;
  f.Update(bytes);
  return f.Finish();
}

}  // namespace xonnx
