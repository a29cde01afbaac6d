// The model the dump tests write out (test-only): two nodes, Relu then Neg,
// in a graph named "dumped", so that every dump file names it.
#ifndef XONNX_RUNTIME_DUMP_TEST_MODEL_H_
#define XONNX_RUNTIME_DUMP_TEST_MODEL_H_

#include <gtest/gtest.h>

#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"

namespace xonnx {

inline onnx::ModelProto TwoNodes() {
  onnx::ModelProto m;
  EXPECT_TRUE(onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 17]>
dumped (float[2] x) => (float[2] y) {
  t = Relu(x)
  y = Neg(t)
})")
                  .IsOK());
  return m;
}

}  // namespace xonnx

#endif  // XONNX_RUNTIME_DUMP_TEST_MODEL_H_
