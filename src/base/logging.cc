#include "base/logging.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace xonnx {

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// "warning" or "1" -> 1; -1 when it is neither a name nor 0-3.
int SeverityOf(const std::string& text) {
  static const char* const kNames[] = {"info", "warning", "error", "fatal"};
  for (int i = 0; i < 4; ++i)
    if (text == kNames[i] || text == std::to_string(i)) return i;
  return -1;
}

void Configure() {
  bool ours = !google::IsGoogleLoggingInitialized();
  if (ours) {
    FLAGS_logtostderr = true;  // a library writes no log files
    google::InitGoogleLogging("xonnx");
  }
  if (const char* level = Env("XONNX_LOG_LEVEL")) {
    int s = SeverityOf(level);
    if (s < 0)
      LOG(WARNING) << "XONNX_LOG_LEVEL='" << level << "' is not info, warning, error, fatal or 0-3; ignored";
    else
      FLAGS_minloglevel = s;
  }
  if (const char* v = Env("XONNX_V")) {
    int n;
    if (!absl::SimpleAtoi(v, &n) || n < 0)
      LOG(WARNING) << "XONNX_V='" << v << "' is not a verbosity level (0, 1, 2, ...); ignored";
    else
      FLAGS_v = n;
  }
  if (const char* vmodule = Env("XONNX_VMODULE")) {
    for (absl::string_view entry : absl::StrSplit(vmodule, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
      int n;
      if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &n) || n < 0) {
        LOG(WARNING) << "XONNX_VMODULE entry '" << entry << "' is not FILE=LEVEL; ignored";
        continue;
      }
      google::SetVLOGLevel(kv.first.c_str(), n);
    }
  }
}

}  // namespace

void InitLogging() {
  static std::once_flag once;
  std::call_once(once, Configure);
}

}  // namespace xonnx
