// Logging through glog (Debian's libgoogle-glog): LOG(WARNING) << ...,
// VLOG(2) << ..., to stderr, in glog's one format
//   W1126 08:00:00.123456  4242 model.cc:127] model.onnx: ...
// What is shown: XONNX_LOG_LEVEL (info, warning, error, fatal or 0-3;
// default info: xonnx logs little at that level, and VLOG's lines are
// info lines) and verbose logs by file, XONNX_VMODULE=session_open=1,
// model_runner=2 (glog's --vmodule syntax, file names without .cc,
// wildcards allowed), or XONNX_V=N for every file. A program that sets up
// glog itself keeps its own settings, unless it sets these variables.
#ifndef XONNX_BASE_LOGGING_H_
#define XONNX_BASE_LOGGING_H_

#include <glog/logging.h>

namespace xonnx {

// Sets glog up as above, once per process; cheap to call again. Every
// entry point that may log calls it (opening a session or a plugin).
void InitLogging();

}  // namespace xonnx

#endif  // XONNX_BASE_LOGGING_H_
