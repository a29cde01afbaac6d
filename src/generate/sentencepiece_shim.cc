// The SentencePiece shim: a small library linked to Debian's
// libsentencepiece, loaded by xonnx's tokenizer (tokenizer.cc) with
// RTLD_DEEPBIND. libsentencepiece0 carries its own copy of protobuf 3.14 and
// exports its symbols; in a process that has also loaded Debian's protobuf
// 3.21 (ONNX needs it), its calls would bind to the other version and abort
// on protobuf's version check. Opened with RTLD_DEEPBIND, this library and
// libsentencepiece resolve their symbols in their own dependencies first.
// Only these C functions are exported; nothing C++ crosses the boundary.
#include <sentencepiece_processor.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

void Report(const std::string& message, char* error, size_t error_size) {
  if (!error || error_size == 0) return;
  std::strncpy(error, message.c_str(), error_size - 1);
  error[error_size - 1] = '\0';
}

}  // namespace

extern "C" {

// A processor for the .model file at `path`, or null with `error` set.
__attribute__((visibility("default"))) void* xonnx_spm_open(const char* path, char* error, size_t error_size) {
  auto* p = new sentencepiece::SentencePieceProcessor();
  const auto status = p->Load(path);
  if (!status.ok()) {
    Report(status.ToString(), error, error_size);
    delete p;
    return nullptr;
  }
  return p;
}

__attribute__((visibility("default"))) void xonnx_spm_close(void* handle) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(handle);
}

// The vocabulary's size, and the ids of the special pieces (-1: none).
__attribute__((visibility("default"))) int64_t xonnx_spm_info(void* handle, int64_t* bos, int64_t* eos, int64_t* unk) {
  auto* p = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
  *bos = p->bos_id();
  *eos = p->eos_id();
  *unk = p->unk_id();
  return p->GetPieceSize();
}

// Encodes `size` bytes of UTF-8 text; writes up to `capacity` ids and returns
// how many there are (more than `capacity`: call again with room for
// them), or -1 with `error` set.
__attribute__((visibility("default"))) int64_t xonnx_spm_encode(void* handle, const char* text, size_t size,
                                                                int64_t* ids, size_t capacity, char* error,
                                                                size_t error_size) {
  std::vector<int> out;
  const auto status =
      static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Encode(std::string(text, size), &out);
  if (!status.ok()) {
    Report(status.ToString(), error, error_size);
    return -1;
  }
  for (size_t i = 0; i < out.size() && i < capacity; ++i) ids[i] = out[i];
  return static_cast<int64_t>(out.size());
}

// Decodes `n` ids; writes up to `capacity` bytes of UTF-8 text (not
// terminated) and returns how many there are, or -1 with `error` set (an id
// outside the vocabulary).
__attribute__((visibility("default"))) int64_t xonnx_spm_decode(void* handle, const int64_t* ids, size_t n, char* text,
                                                                size_t capacity, char* error, size_t error_size) {
  auto* p = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
  std::vector<int> in(n);
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= p->GetPieceSize()) {
      Report("token " + std::to_string(ids[i]) + " is outside the vocabulary of " + std::to_string(p->GetPieceSize()),
             error, error_size);
      return -1;
    }
    in[i] = static_cast<int>(ids[i]);
  }
  std::string out;
  const auto status = p->Decode(in, &out);
  if (!status.ok()) {
    Report(status.ToString(), error, error_size);
    return -1;
  }
  std::memcpy(text, out.data(), std::min(out.size(), capacity));
  return static_cast<int64_t>(out.size());
}

}  // extern "C"
