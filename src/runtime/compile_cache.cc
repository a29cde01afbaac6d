#include "runtime/compile_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/byte_size.h"
#include "base/exceptions.h"
#include "base/fingerprint.h"
#include "base/logging.h"
#include "base/status.h"
#include "runtime/public_status.h"

namespace xonnx {

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[] = "XONNX-CACHE-ENTRY-1";

absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
    bytes.remove_prefix(n);
  }
  return absl::OkStatus();
}

// Opens an entry for reading, only if it is a regular file: a FIFO would
// block the reader and a device (a link to /dev/zero) never end. Opening
// does not block (O_NONBLOCK, which changes nothing for regular files).
// Returns -1 with errno set (EINVAL for other kinds of file).
int OpenRegular(const std::string& path, struct stat* st) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  if (::fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  struct stat st;
  int fd = OpenRegular(path, &st);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such cache entry"));
    if (errno == EINVAL) return absl::DataLossError(absl::StrCat(path, ": not a regular file"));
    return absl::InternalError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::string out;
  if (st.st_size > 0) out.reserve(st.st_size);
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return absl::InternalError(absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
    }
    if (n == 0) break;
    out.append(buf, n);
  }
  ::close(fd);
  return out;
}

// The line at the start of `rest`, which moves past it; false when no line
// ends there.
bool NextLine(absl::string_view* rest, absl::string_view* line) {
  size_t nl = rest->find('\n');
  if (nl == absl::string_view::npos) return false;
  *line = rest->substr(0, nl);
  rest->remove_prefix(nl + 1);
  return true;
}

// An entry starts: magic \n key-size \n key \n payload-size \n
// payload-fingerprint \n payload. Reads the first two lines from `rest`,
// leaving it at the key; the error says which is wrong.
absl::Status ReadKeySize(absl::string_view* rest, uint64_t* key_size) {
  absl::string_view magic, size_text;
  if (!NextLine(rest, &magic) || magic != kMagic) return absl::DataLossError("bad magic");
  if (!NextLine(rest, &size_text) || !absl::SimpleAtoi(size_text, key_size)) return absl::DataLossError("bad key size");
  return absl::OkStatus();
}

// The key in an entry's header, or "" when it is not a readable entry.
std::string ReadKey(const std::string& path) {
  struct stat st;
  int fd = OpenRegular(path, &st);
  if (fd < 0) return "";
  char buf[4096];
  ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  absl::string_view head(buf, n > 0 ? n : 0), rest = head;
  uint64_t size = 0;
  std::string key;
  if (ReadKeySize(&rest, &size).ok() && size > 0 && size < (1u << 20)) {
    key.resize(size);
    if (::pread(fd, key.data(), size, rest.data() - head.data()) != static_cast<ssize_t>(size)) key.clear();
  }
  ::close(fd);
  return key;
}

}  // namespace

std::string CompileCache::DefaultDir() {
  if (const char* d = std::getenv("XONNX_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return (fs::path(d) / "xonnx").string();
  if (const char* d = std::getenv("HOME"); d && *d) return (fs::path(d) / ".cache" / "xonnx").string();
  return "";
}

uint64_t CompileCache::DefaultMaxBytes() {
  constexpr uint64_t kDefault = uint64_t{5} << 30;
  const char* v = std::getenv("XONNX_CACHE_MAX_SIZE");
  if (!v || !*v) return kDefault;
  std::optional<uint64_t> bytes = ParseByteSize(v);
  if (bytes) return *bytes;
  static std::once_flag warned;
  std::call_once(warned, [v] {
    LOG(WARNING) << "XONNX_CACHE_MAX_SIZE='" << v << "' is not a size such as 500M, 2G or 0; keeping the compile "
                 << "cache to 5 GiB";
  });
  return kDefault;
}

absl::StatusOr<CompileCache> CompileCache::Open(const std::string& dir) { return Open(dir, DefaultMaxBytes()); }

absl::StatusOr<CompileCache> CompileCache::Open(const std::string& dir, uint64_t max_bytes) {
  if (dir.empty())
    return absl::InvalidArgumentError(
        "the compile cache folder is not set (no XONNX_CACHE_DIR, XDG_CACHE_HOME or HOME)");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec))
    return absl::PermissionDeniedError(absl::StrCat(dir, ": cannot create the compile cache folder: ", ec.message()));
  return CompileCache(dir, max_bytes);
}

std::string CompileCache::PathFor(absl::string_view key) const {
  // Keys may be long or hold any bytes; the file name is their fingerprint.
  return (fs::path(dir_) / absl::StrCat(FingerprintOf(key).Hex(), ".xcache")).string();
}

absl::StatusOr<std::string> CompileCache::Load(absl::string_view key) const {
  std::string path = PathFor(key);
  auto damaged = [&](absl::string_view why) {
    // A damaged entry is useless to everyone; removing it lets the next
    // writer replace it. A concurrent rename may already have replaced it
    // with a good one, which is then removed too: that costs one recompile.
    ::unlink(path.c_str());
    return absl::DataLossError(absl::StrCat(path, ": damaged compile cache entry (", why, "); recompiling"));
  };
  absl::StatusOr<std::string> read = ReadFile(path);
  if (absl::IsDataLoss(read.status())) return damaged("not a regular file");
  if (!read.ok()) return read.status();
  std::string bytes = *std::move(read);
  absl::string_view rest = bytes, size_text, fp_text;
  uint64_t key_size = 0, size = 0;
  if (absl::Status st = ReadKeySize(&rest, &key_size); !st.ok()) return damaged(st.message());
  if (key_size + 1 > rest.size()) return damaged("bad key size");
  if (rest.substr(0, key_size) != key || rest[key_size] != '\n') return damaged("written for another key");
  rest.remove_prefix(key_size + 1);
  if (!NextLine(&rest, &size_text) || !absl::SimpleAtoi(size_text, &size)) return damaged("bad payload size");
  if (!NextLine(&rest, &fp_text)) return damaged("no payload fingerprint");
  if (rest.size() != size) return damaged(absl::StrCat("payload of ", rest.size(), " bytes, ", size, " expected"));
  if (FingerprintOf(rest).Hex() != fp_text) return damaged("payload fingerprint mismatch");
  // Marks it used, for Prune; a folder this process may not write keeps its times.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return std::string(rest);
}

absl::Status CompileCache::Store(absl::string_view key, absl::string_view payload) const {
  std::string path = PathFor(key);
  static std::atomic<uint64_t> counter{0};
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".",
                                 std::hash<std::thread::id>()(std::this_thread::get_id()), ".", counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat(tmp, ": cannot create: ", std::strerror(errno)));
  std::string header =
      absl::StrCat(kMagic, "\n", key.size(), "\n", key, "\n", payload.size(), "\n", FingerprintOf(payload).Hex(), "\n");
  absl::Status st = WriteAll(fd, header, tmp);
  if (st.ok()) st = WriteAll(fd, payload, tmp);
  if (::close(fd) != 0 && st.ok())
    st = absl::InternalError(absl::StrCat(tmp, ": cannot close: ", std::strerror(errno)));
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = absl::InternalError(absl::StrCat(path, ": cannot rename the new entry into place: ", std::strerror(errno)));
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  KeepBound(header.size() + payload.size());
  return st;
}

void CompileCache::KeepBound(uint64_t bytes) const {
  // Listing the folder reads every entry's header: done once per
  // sixteenth of the bound written, not per store.
  static std::atomic<uint64_t> written{0};
  static std::atomic<bool> first{true};
  if (max_bytes_ == 0) return;
  const bool now = first.exchange(false) || written.fetch_add(bytes) + bytes >= max_bytes_ / 16;
  if (!now) return;
  written = 0;
  // Best effort: a folder this process may not prune keeps its entries.
  auto removed = Prune(max_bytes_);
  if (removed.ok() && !removed->empty())
    VLOG(1) << dir_ << ": removed " << removed->size() << " compile cache files to keep it to " << max_bytes_
            << " bytes";
}

void CompileCache::Remove(absl::string_view key) const { ::unlink(PathFor(key).c_str()); }

absl::StatusOr<std::vector<CompileCache::FileInfo>> CompileCache::List() const {
  std::vector<FileInfo> files;
  std::vector<std::pair<int64_t, FileInfo>> timed;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    FileInfo f;
    f.temporary = name.find(".xcache.tmp.") != std::string::npos;
    if (!f.temporary && !absl::EndsWith(name, ".xcache")) continue;  // not ours
    f.path = it->path().string();
    struct stat st;
    if (::lstat(f.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // gone meanwhile, or not a file
    f.bytes = st.st_size;
    f.last_used = st.st_mtim.tv_sec;
    if (!f.temporary) f.key = ReadKey(f.path);
    // Ordered to the nanosecond: entries stored within one second (a
    // session's programs) must not be taken for older than each other.
    timed.emplace_back(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, std::move(f));
  }
  if (ec) return absl::InternalError(absl::StrCat(dir_, ": cannot list the compile cache folder: ", ec.message()));
  std::sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.path) < std::tie(b.first, b.second.path);
  });
  for (auto& [ns, f] : timed) files.push_back(std::move(f));
  return files;
}

absl::StatusOr<std::vector<CompileCache::FileInfo>> CompileCache::Prune(uint64_t max_bytes,
                                                                        int64_t stale_seconds) const {
  ASSIGN_OR_RETURN(std::vector<FileInfo> files, List());
  int64_t now = ::time(nullptr);
  uint64_t total = 0;
  for (const auto& f : files)
    if (!f.temporary) total += f.bytes;
  // Unreadable entries go first, then the least recently used.
  std::stable_partition(files.begin(), files.end(), [](const FileInfo& f) { return !f.temporary && f.key.empty(); });
  std::vector<FileInfo> removed;
  for (auto& f : files) {
    bool remove = f.temporary ? now - f.last_used > stale_seconds : total > max_bytes;
    if (!remove) continue;
    if (::unlink(f.path.c_str()) != 0 && errno != ENOENT)
      return absl::InternalError(absl::StrCat(f.path, ": cannot remove: ", std::strerror(errno)));
    if (!f.temporary) total -= f.bytes;
    removed.push_back(std::move(f));
  }
  return removed;
}

std::string DefaultCacheDir() { return CompileCache::DefaultDir(); }
uint64_t DefaultCacheMaxBytes() { return CompileCache::DefaultMaxBytes(); }
bool ParseCacheSize(const std::string& text, uint64_t* bytes) {
  std::optional<uint64_t> parsed = ParseByteSize(text);
  if (parsed) *bytes = *parsed;
  return parsed.has_value();
}

StatusOr<std::vector<CacheFile>> ListCache(const std::string& dir) {
  return PublicCall(dir, [&]() -> absl::StatusOr<std::vector<CacheFile>> {
    ASSIGN_OR_RETURN(CompileCache cache, CompileCache::Open(dir));
    return cache.List();
  });
}

StatusOr<std::vector<CacheFile>> TrimCache(const std::string& dir, uint64_t max_bytes) {
  return PublicCall(dir, [&]() -> absl::StatusOr<std::vector<CacheFile>> {
    ASSIGN_OR_RETURN(CompileCache cache, CompileCache::Open(dir));
    return cache.Prune(max_bytes);
  });
}

}  // namespace xonnx
