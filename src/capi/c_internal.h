// What the C API's files share: the handles that wrap C++ objects, statuses
// made from C++ ones, and the guard that turns exceptions into statuses.
#ifndef XONNX_CAPI_C_INTERNAL_H_
#define XONNX_CAPI_C_INTERNAL_H_

#include <exception>
#include <new>
#include <string>

#include "xonnx/c_api.h"
#include "xonnx/generate.h"
#include "xonnx/session.h"

struct XonnxStatus {
  xonnx::Status status;
};
struct XonnxSessionOptions {
  xonnx::SessionOptions options;
  // Where CreateGenerator keeps a decoder's key/value cache (sessions
  // ignore it).
  xonnx::KvCachePlacement kv_cache = xonnx::KvCachePlacement::kAuto;
};

namespace xonnx::capi {

inline XonnxStatus* MakeStatus(Status st) {
  if (st.ok()) return nullptr;
  return new (std::nothrow) XonnxStatus{std::move(st)};
}
inline XonnxStatus* Error(StatusCode code, std::string message) { return MakeStatus(Status(code, std::move(message))); }

// The status of an exception that escaped the C++ API's own guards (a
// failed allocation here, say). Call only inside a catch block.
inline XonnxStatus* CurrentException(const char* where) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return Error(StatusCode::kResourceExhausted, std::string(where) + ": out of memory");
  } catch (const std::exception& e) {
    return Error(StatusCode::kInternal, std::string(where) + ": unexpected error (" + e.what() + ")");
  } catch (...) {
    return Error(StatusCode::kInternal, std::string(where) + ": unexpected error of unknown type");
  }
}

// Runs fn() (which returns XonnxStatus*), catching what it throws.
template <typename F>
XonnxStatus* Guard(const char* where, F&& fn) {
  try {
    return fn();
  } catch (...) {
    return CurrentException(where);
  }
}

// Text generation (c_generate.cc).
XonnxStatus* CreateGenerator(const char* model_path, const XonnxSessionOptions* options, XonnxGenerator** out);
void ReleaseGenerator(XonnxGenerator* generator);
XonnxStatus* Generate(XonnxGenerator* generator, const int64_t* const* prompts, const size_t* prompt_lengths,
                      size_t num_prompts, const XonnxGenerateOptions* options, XonnxTokenCallback callback,
                      void* user_data, XonnxGeneration** out);
size_t GenerationLength(const XonnxGeneration* generation, size_t sequence);
const int64_t* GenerationTokens(const XonnxGeneration* generation, size_t sequence);
void ReleaseGeneration(XonnxGeneration* generation);

// Tokenizers (c_tokenizer.cc).
XonnxStatus* CreateTokenizer(const char* path, XonnxTokenizer** out);
void ReleaseTokenizer(XonnxTokenizer* tokenizer);
XonnxStatus* TokenizerEncode(const XonnxTokenizer* tokenizer, const char* text, size_t text_length, int64_t* ids,
                             size_t capacity, size_t* num_ids);
XonnxStatus* TokenizerDecode(const XonnxTokenizer* tokenizer, const int64_t* ids, size_t num_ids, char* text,
                             size_t capacity, size_t* text_length);
void TokenizerInfo(const XonnxTokenizer* tokenizer, int64_t* vocab_size, int64_t* bos, int64_t* eos, int64_t* unk);

}  // namespace xonnx::capi

#endif  // XONNX_CAPI_C_INTERNAL_H_
