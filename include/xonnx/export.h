// XONNX_API marks what libxonnx.so exports: the public API. Everything else
// in the library is compiled with hidden visibility, so a program linking
// xonnx sees only these names and cannot clash with the copies of internal
// code (or of abseil, protobuf) it may carry itself.
#ifndef XONNX_EXPORT_H_
#define XONNX_EXPORT_H_

#if defined(_WIN32)
#define XONNX_API
#else
#define XONNX_API __attribute__((visibility("default")))
#endif

#endif  // XONNX_EXPORT_H_
