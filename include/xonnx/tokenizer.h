// Text to token ids and back with a SentencePiece model (a .model file, as
// LLaMA's, Mistral's or T5's tokenizers ship), for `xonnx generate --prompt
// TEXT --tokenizer FILE` and the APIs.
//
// SentencePiece runs from Debian's libsentencepiece through a small library
// shipped with xonnx (libxonnx_sentencepiece.so), loaded on first use in a
// symbol scope of its own: libsentencepiece carries its own protobuf, which
// must not meet the one ONNX uses. A build without libsentencepiece, or one
// under AddressSanitizer (which cannot load such a scope), says so at Open.
#ifndef XONNX_TOKENIZER_H_
#define XONNX_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xonnx/export.h"
#include "xonnx/status.h"

namespace xonnx {

class XONNX_API Tokenizer {
 public:
  // Loads a SentencePiece model; fails naming the file and what is wrong.
  static StatusOr<std::unique_ptr<Tokenizer>> Open(const std::string& path);
  ~Tokenizer();

  // UTF-8 text to ids (no begin-of-sequence id is added; see bos()).
  StatusOr<std::vector<int64_t>> Encode(const std::string& text) const;
  // Ids to UTF-8 text; an id outside the vocabulary is an error.
  StatusOr<std::string> Decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const { return vocab_size_; }
  // The special pieces' ids, or -1 when the model has none.
  int64_t bos() const { return bos_; }
  int64_t eos() const { return eos_; }
  int64_t unk() const { return unk_; }

 private:
  struct Library;
  Tokenizer(std::shared_ptr<Library> library, void* handle, std::string path);
  std::shared_ptr<Library> library_;
  void* handle_;
  std::string path_;
  int64_t vocab_size_ = 0, bos_ = -1, eos_ = -1, unk_ = -1;
};

}  // namespace xonnx

#endif  // XONNX_TOKENIZER_H_
