#include "runtime/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace xonnx {

void TraceRecorder::Slice(std::string name, std::string category, int64_t start_ns, int64_t end_ns, int64_t tid,
                          std::map<std::string, std::string> args) {
  std::lock_guard<std::mutex> l(mu_);
  events_.push_back({std::move(name), std::move(category), start_ns, std::max(start_ns, end_ns), tid, std::move(args)});
}

void TraceRecorder::OnKernel(void* self, const char* name, const char* kind, const char* op_type, const char* op_name,
                             int64_t start_ns, int64_t end_ns) {
  std::map<std::string, std::string> args = {{"instruction", name}, {"kernel", kind}};
  if (*op_type) args["op_type"] = op_type;
  if (*op_name) args["op_name"] = op_name;
  // Named by the ONNX node where there is one: that is what a user reads.
  std::string title = *op_name ? absl::StrCat(op_type, " ", op_name) : name;
  static_cast<TraceRecorder*>(self)->Slice(std::move(title), "kernel", start_ns, end_ns, ThreadId(), std::move(args));
}

PJRT_XonnxKernelTrace_Extension TraceRecorder::KernelExtension() {
  PJRT_XonnxKernelTrace_Extension e;
  std::memset(&e, 0, sizeof(e));
  e.base.struct_size = sizeof(e);
  e.base.type = PJRT_Extension_Type_XonnxKernelTrace;
  e.on_kernel = OnKernel;
  e.context = this;
  return e;
}

absl::Status TraceRecorder::Write(const std::string& path) const {
  nlohmann::json events = nlohmann::json::array();
  int64_t pid = ::getpid();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", "xonnx"}}}});
  {
    std::lock_guard<std::mutex> l(mu_);
    int64_t origin = events_.empty() ? 0 : events_.front().start_ns;
    for (const Event& e : events_) origin = std::min(origin, e.start_ns);
    for (const Event& e : events_) {
      nlohmann::json j = {{"name", e.name},
                          {"cat", e.category},
                          {"ph", "X"},
                          {"ts", (e.start_ns - origin) / 1e3},
                          {"dur", (e.end_ns - e.start_ns) / 1e3},
                          {"pid", pid},
                          {"tid", e.tid}};
      if (!e.args.empty()) j["args"] = e.args;
      events.push_back(std::move(j));
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write the profile: ", std::strerror(errno)));
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat(path, ": writing the profile failed"));
  return absl::OkStatus();
}

size_t TraceRecorder::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return events_.size();
}

int64_t TraceRecorder::ThreadId() { return static_cast<int64_t>(::syscall(SYS_gettid)); }

}  // namespace xonnx
