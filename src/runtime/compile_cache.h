// The persistent compile cache: a folder of entries, one file per key, shared
// by every process that uses it.
//
// Each entry holds a header (magic, format version, the full key, the payload
// size and its fingerprint) and the payload. A read checks all of them, so a
// truncated, damaged or mismatched file is reported as DataLoss (and removed)
// instead of being trusted. A write goes to a temporary file in the same
// folder and is renamed over the entry, which POSIX makes atomic: a reader
// sees the old entry, the new one, or none, never a partial one; two processes
// writing the same key both write complete entries and the last rename wins.
#ifndef XONNX_RUNTIME_COMPILE_CACHE_H_
#define XONNX_RUNTIME_COMPILE_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xonnx/cache.h"

namespace xonnx {

class CompileCache {
 public:
  // $XONNX_CACHE_DIR, else $XDG_CACHE_HOME/xonnx, else $HOME/.cache/xonnx;
  // empty when none of them is set.
  static std::string DefaultDir();

  // The bound of DefaultCacheMaxBytes (xonnx/cache.h); 0 for none.
  static uint64_t DefaultMaxBytes();

  // Creates the folder if needed (and fails when it cannot). Store keeps
  // the folder to `max_bytes` (0: unbounded): once this process has stored
  // a sixteenth of it since it last looked, and at its first store, it
  // prunes the least recently used entries (Prune).
  [[nodiscard]] static absl::StatusOr<CompileCache> Open(const std::string& dir);
  [[nodiscard]] static absl::StatusOr<CompileCache> Open(const std::string& dir, uint64_t max_bytes);

  const std::string& dir() const { return dir_; }
  // The file an entry with this key lives in.
  std::string PathFor(absl::string_view key) const;

  // The payload stored under `key`: NotFound when there is none, DataLoss
  // when the file is damaged or belongs to another key (it is then removed).
  [[nodiscard]] absl::StatusOr<std::string> Load(absl::string_view key) const;
  // Stores the payload under `key`, replacing any entry atomically.
  [[nodiscard]] absl::Status Store(absl::string_view key, absl::string_view payload) const;
  // Removes the entry stored under `key`, if any (best effort: a cache on a
  // read-only folder keeps it).
  void Remove(absl::string_view key) const;

  // One file of the folder, as List() and Prune() see it.
  using FileInfo = CacheFile;
  // The cache's entries and temporary files, least recently used first.
  // Other files in the folder are not the cache's and are left out.
  [[nodiscard]] absl::StatusOr<std::vector<FileInfo>> List() const;
  // Removes entries, least recently used first (unreadable ones before
  // all), until the rest take at most `max_bytes`; and temporary files
  // older than `stale_seconds`, which writers that died left behind (a live
  // writer renames its file within moments). Returns what was removed. Safe
  // beside running sessions: one whose entry is removed recompiles it.
  [[nodiscard]] absl::StatusOr<std::vector<FileInfo>> Prune(uint64_t max_bytes, int64_t stale_seconds = 3600) const;

 private:
  CompileCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  // After a store of `bytes`: prunes when it is time (Open).
  void KeepBound(uint64_t bytes) const;
  std::string dir_;
  uint64_t max_bytes_ = 0;
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_COMPILE_CACHE_H_
