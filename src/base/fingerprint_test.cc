#include "base/fingerprint.h"

#include <gtest/gtest.h>

#include <string>

namespace xonnx {
namespace {

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 251);
  return s;
}

// Pieces of any size give the one-shot fingerprint of their concatenation.
TEST(FingerprintTest, StreamingEqualsOneShot) {
  std::string data = Bytes(10000);
  for (size_t piece : {1u, 7u, 64u, 1000u, 4096u}) {
    Fingerprinter f;
    for (size_t at = 0; at < data.size(); at += piece) f.Update(absl::string_view(data).substr(at, piece));
    EXPECT_EQ(f.Finish(), FingerprintOf(data)) << piece;
  }
}

TEST(FingerprintTest, FieldsAreDelimited) {
  Fingerprinter ab_c, a_bc, split;
  ab_c.UpdateField("ab");
  ab_c.UpdateField("c");
  a_bc.UpdateField("a");
  a_bc.UpdateField("bc");
  EXPECT_FALSE(ab_c.Finish() == a_bc.Finish());
  // A field given as its length, then its bytes in pieces.
  split.BeginField(2);
  split.Update("a");
  split.Update("b");
  split.UpdateField("c");
  EXPECT_EQ(split.Finish(), ab_c.Finish());
}

TEST(FingerprintTest, ChangesWithEveryByteAndPrintsAs32HexDigits) {
  std::string data = Bytes(333);
  Fingerprint128 base = FingerprintOf(data);
  for (size_t i = 0; i < data.size(); i += 37) {
    std::string changed = data;
    changed[i] ^= 1;
    EXPECT_FALSE(FingerprintOf(changed) == base) << i;
  }
  EXPECT_EQ(base.Hex().size(), 32u);
  EXPECT_EQ(base.Hex().find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace xonnx
