#include "xonnx/tokenizer.h"

#include <dlfcn.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "runtime/clients.h"

namespace xonnx {

namespace {

constexpr char kShim[] = "libxonnx_sentencepiece.so";
constexpr size_t kErrorSize = 512;

Status TokenizerError(StatusCode code, const std::string& path, const std::string& message) {
  return Status(code, absl::StrCat(path, ": ", message));
}

}  // namespace

// The shim's functions (sentencepiece_shim.cc), loaded once per process.
struct Tokenizer::Library {
  void* dl = nullptr;
  void* (*open)(const char*, char*, size_t) = nullptr;
  void (*close)(void*) = nullptr;
  int64_t (*info)(void*, int64_t*, int64_t*, int64_t*) = nullptr;
  int64_t (*encode)(void*, const char*, size_t, int64_t*, size_t, char*, size_t) = nullptr;
  int64_t (*decode)(void*, const int64_t*, size_t, char*, size_t, char*, size_t) = nullptr;

  static StatusOr<std::shared_ptr<Library>> Get() {
    static std::mutex mu;
    static std::shared_ptr<Library> loaded;
    static std::string failed;
    std::lock_guard<std::mutex> lock(mu);
    if (loaded) return loaded;
    if (!failed.empty()) return Status(StatusCode::kUnimplemented, failed);
#if defined(__SANITIZE_ADDRESS__)
    failed =
        "SentencePiece tokenizers are not available in this AddressSanitizer build (it cannot load "
        "libsentencepiece's own protobuf in a symbol scope of its own)";
#elif !defined(XONNX_HAVE_SENTENCEPIECE)
    failed = "this xonnx was built without SentencePiece (install libsentencepiece-dev and rebuild)";
#else
    const std::string path = FindXonnxLibrary(kShim);
    // Its own symbol scope: libsentencepiece's protobuf must not bind to
    // the one already loaded for ONNX (or the other way round).
    void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!dl) {
      const char* why = dlerror();
      failed = absl::StrCat("cannot load SentencePiece (", path, "): ", why ? why : "unknown error");
    } else {
      auto lib = std::make_shared<Library>();
      lib->dl = dl;
      lib->open = reinterpret_cast<decltype(lib->open)>(dlsym(dl, "xonnx_spm_open"));
      lib->close = reinterpret_cast<decltype(lib->close)>(dlsym(dl, "xonnx_spm_close"));
      lib->info = reinterpret_cast<decltype(lib->info)>(dlsym(dl, "xonnx_spm_info"));
      lib->encode = reinterpret_cast<decltype(lib->encode)>(dlsym(dl, "xonnx_spm_encode"));
      lib->decode = reinterpret_cast<decltype(lib->decode)>(dlsym(dl, "xonnx_spm_decode"));
      if (lib->open && lib->close && lib->info && lib->encode && lib->decode) {
        loaded = std::move(lib);  // kept loaded for the process's life
        return loaded;
      }
      failed = absl::StrCat(path, " lacks the functions xonnx calls (a library of another version?)");
      dlclose(dl);
    }
#endif
    return Status(StatusCode::kUnimplemented, failed);
  }
};

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Open(const std::string& path) {
  StatusOr<std::shared_ptr<Library>> lib = Library::Get();
  if (!lib.ok()) return TokenizerError(lib.status().code(), path, lib.status().message());
  char error[kErrorSize] = "";
  void* handle = (*lib)->open(path.c_str(), error, sizeof(error));
  if (!handle)
    return TokenizerError(StatusCode::kInvalidArgument, path,
                          absl::StrCat("not a SentencePiece model: ", error, " (tokenizer.json is not supported)"));
  std::unique_ptr<Tokenizer> t(new Tokenizer(*lib, handle, path));
  t->vocab_size_ = (*lib)->info(handle, &t->bos_, &t->eos_, &t->unk_);
  return t;
}

Tokenizer::Tokenizer(std::shared_ptr<Library> library, void* handle, std::string path)
    : library_(std::move(library)), handle_(handle), path_(std::move(path)) {}

Tokenizer::~Tokenizer() { library_->close(handle_); }

StatusOr<std::vector<int64_t>> Tokenizer::Encode(const std::string& text) const {
  char error[kErrorSize] = "";
  std::vector<int64_t> ids(text.size() + 16);
  for (;;) {
    int64_t n = library_->encode(handle_, text.data(), text.size(), ids.data(), ids.size(), error, sizeof(error));
    if (n < 0) return TokenizerError(StatusCode::kInvalidArgument, path_, absl::StrCat("cannot encode: ", error));
    if (static_cast<size_t>(n) <= ids.size()) {
      ids.resize(n);
      return ids;
    }
    ids.resize(n);
  }
}

StatusOr<std::string> Tokenizer::Decode(const std::vector<int64_t>& ids) const {
  char error[kErrorSize] = "";
  std::string text(ids.size() * 8 + 16, '\0');
  for (;;) {
    int64_t n = library_->decode(handle_, ids.data(), ids.size(), text.data(), text.size(), error, sizeof(error));
    if (n < 0) return TokenizerError(StatusCode::kInvalidArgument, path_, absl::StrCat("cannot decode: ", error));
    if (static_cast<size_t>(n) <= text.size()) {
      text.resize(n);
      return text;
    }
    text.resize(n);
  }
}

}  // namespace xonnx
