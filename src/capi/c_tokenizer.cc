// The C API's tokenizers (xonnx/c_api.h, version 3) over xonnx/tokenizer.h.
// Results go into the caller's memory, as RunInto's outputs do: a C caller
// then frees nothing of ours, and learns the size it needs from a first
// call when it does not know it.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/c_internal.h"
#include "xonnx/tokenizer.h"

struct XonnxTokenizer {
  std::unique_ptr<xonnx::Tokenizer> tokenizer;
};

namespace xonnx::capi {

XonnxStatus* CreateTokenizer(const char* path, XonnxTokenizer** out) {
  return Guard(path ? path : "CreateTokenizer", [&]() -> XonnxStatus* {
    if (!path || !out) return Error(StatusCode::kInvalidArgument, "CreateTokenizer: path or out is NULL");
    *out = nullptr;
    StatusOr<std::unique_ptr<Tokenizer>> t = Tokenizer::Open(path);
    if (!t.ok()) return MakeStatus(t.status());
    *out = new XonnxTokenizer{std::move(*t)};
    return nullptr;
  });
}

void ReleaseTokenizer(XonnxTokenizer* tokenizer) { delete tokenizer; }

XonnxStatus* TokenizerEncode(const XonnxTokenizer* tokenizer, const char* text, size_t text_length, int64_t* ids,
                             size_t capacity, size_t* num_ids) {
  return Guard("TokenizerEncode", [&]() -> XonnxStatus* {
    if (!tokenizer || !num_ids || (text_length && !text) || (capacity && !ids))
      return Error(StatusCode::kInvalidArgument, "TokenizerEncode: tokenizer, num_ids, text or ids is NULL");
    StatusOr<std::vector<int64_t>> got = tokenizer->tokenizer->Encode(std::string(text ? text : "", text_length));
    if (!got.ok()) return MakeStatus(got.status());
    *num_ids = got->size();
    if (got->size() > capacity)
      return Error(StatusCode::kOutOfRange, "TokenizerEncode: the text is " + std::to_string(got->size()) +
                                                " ids, more than the capacity of " + std::to_string(capacity));
    if (!got->empty()) std::memcpy(ids, got->data(), got->size() * sizeof(int64_t));
    return nullptr;
  });
}

XonnxStatus* TokenizerDecode(const XonnxTokenizer* tokenizer, const int64_t* ids, size_t num_ids, char* text,
                             size_t capacity, size_t* text_length) {
  return Guard("TokenizerDecode", [&]() -> XonnxStatus* {
    if (!tokenizer || !text_length || (num_ids && !ids) || (capacity && !text))
      return Error(StatusCode::kInvalidArgument, "TokenizerDecode: tokenizer, text_length, ids or text is NULL");
    StatusOr<std::string> got = tokenizer->tokenizer->Decode(std::vector<int64_t>(ids, ids + num_ids));
    if (!got.ok()) return MakeStatus(got.status());
    *text_length = got->size();
    if (got->size() >= capacity)
      return Error(StatusCode::kOutOfRange, "TokenizerDecode: the text is " + std::to_string(got->size()) +
                                                " bytes and its NUL, more than the capacity of " +
                                                std::to_string(capacity));
    std::memcpy(text, got->data(), got->size());
    text[got->size()] = '\0';
    return nullptr;
  });
}

void TokenizerInfo(const XonnxTokenizer* tokenizer, int64_t* vocab_size, int64_t* bos, int64_t* eos, int64_t* unk) {
  const Tokenizer* t = tokenizer ? tokenizer->tokenizer.get() : nullptr;
  if (vocab_size) *vocab_size = t ? t->vocab_size() : 0;
  if (bos) *bos = t ? t->bos() : -1;
  if (eos) *eos = t ? t->eos() : -1;
  if (unk) *unk = t ? t->unk() : -1;
}

}  // namespace xonnx::capi
