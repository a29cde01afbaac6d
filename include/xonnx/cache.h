// The persistent compile cache as a whole, for tools that show or trim it
// (`xonnx cache`). Sessions use it on their own (SessionOptions::use_cache,
// cache_dir); entries are safe to remove while sessions run: one whose
// entry is gone compiles its program again.
#ifndef XONNX_CACHE_H_
#define XONNX_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xonnx/export.h"
#include "xonnx/status.h"

namespace xonnx {

// One file of a cache folder.
struct CacheFile {
  std::string path;
  // The key its header names ("program ...", "executable ..."); empty when
  // the header is unreadable.
  std::string key;
  uint64_t bytes = 0;
  // When it was last stored or loaded, seconds since 1970.
  int64_t last_used = 0;
  // A writer's temporary file rather than an entry.
  bool temporary = false;
};

// Where sessions keep the cache when SessionOptions::cache_dir is empty:
// $XONNX_CACHE_DIR, else $XDG_CACHE_HOME/xonnx, else $HOME/.cache/xonnx;
// empty when none of them is set.
XONNX_API std::string DefaultCacheDir();

// The size sessions keep a cache folder to: $XONNX_CACHE_MAX_SIZE ("5G",
// "500M"; "0" for no bound), else 5 GiB. Once a process has stored a
// sixteenth of it since it last looked (and at its first store), the least
// recently used entries are removed until the rest fit, as TrimCache does.
XONNX_API uint64_t DefaultCacheMaxBytes();

// A size as `xonnx cache --max-size` and XONNX_CACHE_MAX_SIZE take it:
// "500M", "2G", "1.5GiB", "0" (K, M, G, T are powers of 1024). False when
// `text` is not one.
XONNX_API bool ParseCacheSize(const std::string& text, uint64_t* bytes);

// The entries and temporary files of the cache in `dir`, least recently
// used first. Other files in the folder are not the cache's and are left
// out.
XONNX_API StatusOr<std::vector<CacheFile>> ListCache(const std::string& dir);

// Removes entries of the cache in `dir`, least recently used first
// (unreadable ones before all), until the rest take at most `max_bytes`
// (0 removes them all), and temporary files older than an hour, which
// writers that died left behind. Returns what was removed.
XONNX_API StatusOr<std::vector<CacheFile>> TrimCache(const std::string& dir, uint64_t max_bytes);

}  // namespace xonnx

#endif  // XONNX_CACHE_H_
