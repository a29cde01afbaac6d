// `xonnx cache`: what the persistent compile cache holds, and trimming it.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "xonnx/cache.h"

namespace xonnx::cli {

namespace {

// "12.3 MiB": a size for people.
std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", v, units[u]);
}

// "3 h ago": how long since a time, for people.
std::string Ago(int64_t then, int64_t now) {
  int64_t d = std::max<int64_t>(0, now - then);
  if (d < 120) return absl::StrCat(d, " s ago");
  if (d < 7200) return absl::StrCat(d / 60, " min ago");
  if (d < 2 * 86400) return absl::StrCat(d / 3600, " h ago");
  return absl::StrCat(d / 86400, " days ago");
}

// "500M", "2G", "1.5GiB", "0": a size in bytes (xonnx::ParseCacheSize).
uint64_t ParseByteSize(const std::string& text, const std::string& flag) {
  uint64_t bytes = 0;
  if (!xonnx::ParseCacheSize(text, &bytes))
    throw CliError{absl::StrCat(flag, " '", text, "': expected a size such as 500M, 2G or 0")};
  return bytes;
}

}  // namespace

// `xonnx cache`: what the persistent compile cache holds; with `max_size`,
// removes the least recently used entries until the rest fit.
int Cache(std::string dir, const std::string& max_size, bool clear, bool json) {
  if (dir.empty()) dir = xonnx::DefaultCacheDir();
  if (dir.empty())
    throw CliError{"no cache folder: give --cache-dir (XONNX_CACHE_DIR, XDG_CACHE_HOME and HOME are unset)"};
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    if (json) {
      std::cout << nlohmann::json{{"dir", dir}, {"entries", 0}, {"bytes", 0}}.dump() << "\n";
    } else {
      std::cout << "cache:   " << dir << " (does not exist yet: nothing has been cached there)\n";
    }
    return 0;
  }
  if (!std::filesystem::is_directory(dir, ec)) throw CliError{absl::StrCat(dir, ": not a folder"), kExitInput};
  nlohmann::json j{{"dir", dir}};
  if (clear || !max_size.empty()) {
    uint64_t limit = clear ? 0 : ParseByteSize(max_size, "--max-size");
    std::vector<xonnx::CacheFile> removed = Check(xonnx::TrimCache(dir, limit));
    uint64_t bytes = 0;
    int entries = 0, temporaries = 0;
    for (const auto& f : removed) {
      (f.temporary ? temporaries : entries) += 1;
      bytes += f.bytes;
    }
    j["removed_entries"] = entries;
    j["removed_temporaries"] = temporaries;
    j["removed_bytes"] = bytes;
    if (!json)
      std::cout << absl::StrFormat("removed: %d entries and %d stale temporary files, %s\n", entries, temporaries,
                                   HumanBytes(bytes));
  }
  std::vector<xonnx::CacheFile> files = Check(xonnx::ListCache(dir));
  std::map<std::string, int> kinds;
  uint64_t bytes = 0;
  int entries = 0, temporaries = 0;
  int64_t oldest = 0, newest = 0;
  for (const auto& f : files) {
    if (f.temporary) {
      ++temporaries;
      continue;
    }
    ++entries;
    bytes += f.bytes;
    // A key starts with what it holds ("program ...", "executable ...").
    ++kinds[f.key.empty() ? "unreadable" : f.key.substr(0, f.key.find(' '))];
    oldest = entries == 1 ? f.last_used : std::min(oldest, f.last_used);
    newest = std::max(newest, f.last_used);
  }
  if (json) {
    j["entries"] = entries;
    j["bytes"] = bytes;
    j["kinds"] = kinds;
    j["temporaries"] = temporaries;
    if (entries) {
      j["oldest_use"] = oldest;
      j["newest_use"] = newest;
    }
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::vector<std::string> parts;
  for (const auto& [kind, n] : kinds) parts.push_back(absl::StrCat(n, " ", kind, n == 1 ? "" : "s"));
  std::cout << "cache:   " << dir << "\nentries: " << entries
            << (parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")")) << ", " << HumanBytes(bytes)
            << "\n";
  int64_t now = ::time(nullptr);
  if (entries)
    std::cout << "used:    least recently " << Ago(oldest, now) << ", most recently " << Ago(newest, now) << "\n";
  if (temporaries)
    std::cout << "temporary files: " << temporaries << " (being written, or left by a writer that died)\n";
  return 0;
}

}  // namespace xonnx::cli
