// A session's profile as a Chrome/Perfetto trace (SessionOptions::
// profile_file, `xonnx bench --profile FILE`): one slice per call and per
// phase of it (upload, execute, download), per program compiled or loaded,
// per host node of a split model, and, on xonnx's CPU plugin, per kernel,
// named by the ONNX node it computes. Open the file in ui.perfetto.dev or
// chrome://tracing; `xonnx profile FILE` sums it by ONNX op type.
#ifndef XONNX_RUNTIME_TRACE_H_
#define XONNX_RUNTIME_TRACE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "pjrt/c_api.h"

namespace xonnx {

class TraceRecorder {
 public:
  // A complete slice on thread `tid` from start to end (MonotonicNs()).
  void Slice(std::string name, std::string category, int64_t start_ns, int64_t end_ns, int64_t tid,
             std::map<std::string, std::string> args = {});
  // The extension that has xonnx's CPU plugin report its kernels here; the
  // recorder must outlive the executions it is given to.
  PJRT_XonnxKernelTrace_Extension KernelExtension();
  // Writes every slice so far as a Chrome trace JSON file.
  absl::Status Write(const std::string& path) const;
  size_t size() const;

  // The calling thread's id, as the trace names threads.
  static int64_t ThreadId();

 private:
  struct Event {
    std::string name, category;
    int64_t start_ns, end_ns, tid;
    std::map<std::string, std::string> args;
  };
  static void OnKernel(void* self, const char* name, const char* kind, const char* op_type, const char* op_name,
                       int64_t start_ns, int64_t end_ns);
  mutable std::mutex mu_;
  std::vector<Event> events_;  // guarded by mu_
};

}  // namespace xonnx

#endif  // XONNX_RUNTIME_TRACE_H_
