// The public DumpOptions in the terms of base/dump_flags.h, which the
// importer and xonnx's CPU plugin use.
#ifndef XONNX_RUNTIME_XONNX_FLAGS_H_
#define XONNX_RUNTIME_XONNX_FLAGS_H_

#include "base/dump_flags.h"
#include "xonnx/options.h"

namespace xonnx {

DumpSettings ToDumpSettings(const DumpOptions& o);

}  // namespace xonnx

#endif  // XONNX_RUNTIME_XONNX_FLAGS_H_
