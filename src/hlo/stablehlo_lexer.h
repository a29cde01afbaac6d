// The token level of the StableHLO reader: a cursor over MLIR text that
// skips whitespace and comments, reads names, numbers, strings, types and
// attribute values, and reports errors with the line they are on.
#ifndef XONNX_HLO_STABLEHLO_LEXER_H_
#define XONNX_HLO_STABLEHLO_LEXER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hlo/literal.h"
#include "hlo/shape.h"

namespace xonnx::hlo::mlir_text {

// An attribute value as written: a number (with its type when `: i64`
// follows), true/false, a symbol (@name), an enum word (#stablehlo<kind
// WORD>), an array<...> or [...] list, a struct of named fields
// (#stablehlo.dot<...>), or a dense<...> tensor.
struct Attr {
  enum class Kind { kInt, kBool, kSymbol, kEnum, kList, kStruct, kDense } kind = Kind::kInt;
  int64_t i = 0;
  bool b = false;
  std::string text;  // symbol name; enum word
  std::vector<Attr> items;
  std::map<std::string, Attr> fields;
  Literal dense;
  // The items of a list of integers (an int, or a list of ints or bools).
  absl::StatusOr<std::vector<int64_t>> Ints() const;
};

class Cursor {
 public:
  explicit Cursor(absl::string_view text) : text_(text) {}

  // Skips whitespace and // comments.
  void Skip();
  bool AtEnd();
  bool Peek(absl::string_view token);
  bool Consume(absl::string_view token);
  absl::Status Expect(absl::string_view token);
  // An InvalidArgument error naming the current line and what follows.
  absl::Status Error(absl::string_view what) const;

  // A bare identifier: letters, digits and _ . $ -.
  absl::StatusOr<std::string> Identifier();
  // A "..." literal with MLIR's escapes (\", \\, \n, \t, \XX).
  absl::StatusOr<std::string> String();
  absl::StatusOr<int64_t> Integer();
  // %name, with its result index when written %name#k (else -1).
  absl::StatusOr<std::pair<std::string, int64_t>> Value();
  // @name or @"name".
  absl::StatusOr<std::string> Symbol();
  // tensor<...>, tuple<...>, !stablehlo.token.
  absl::StatusOr<Shape> Type();
  // (t1, t2, ...), possibly empty.
  absl::StatusOr<std::vector<Shape>> TypeList();
  // One attribute value.
  absl::StatusOr<Attr> Attribute();
  // An optional loc("...") after an op or argument: the string, or "".
  absl::StatusOr<std::string> Location();

  // Nesting (regions, tuple types, lists) deeper than this is an error, so
  // that a hostile program cannot exhaust the stack of the recursive reader.
  static constexpr int kMaxDepth = 200;
  // Enters one more level of nesting; an error past kMaxDepth. Leave()
  // undoes it.
  absl::Status Enter();
  void Leave() { --depth_; }

 private:
  absl::StatusOr<Attr> Dense();
  absl::StatusOr<Attr> Fields(bool raw);
  // A nested list of scalars inside dense<...>, flattened.
  absl::Status Scalars(std::vector<std::string>* out);

  absl::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace xonnx::hlo::mlir_text

#endif  // XONNX_HLO_STABLEHLO_LEXER_H_
