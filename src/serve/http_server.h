// cpp-httplib's server with our own connection loop. httplib reads a
// connection through a stream that makes two system calls (poll, recv) per
// 4 KiB of body, a cost fixed when the library was compiled: 300 calls for
// a 600 KB image, about half a millisecond on a virtual machine. Ours reads
// whatever the socket holds, up to 256 KiB at a time, and serves httplib's
// small reads from that buffer; it also keeps bytes that arrive early for
// the next request on the connection, and lets idle keep-alive connections
// go as soon as the server stops instead of after their timeout.
// Parsing, routing and answering stay httplib's.
#ifndef XONNX_SERVE_HTTP_SERVER_H_
#define XONNX_SERVE_HTTP_SERVER_H_

#include <httplib.h>

namespace xonnx::serve {

class HttpServer : public httplib::Server {
 private:
  // Called by httplib on a pool thread for each accepted connection.
  bool process_and_close_socket(socket_t sock) override;
  // Until the next request's first bytes are readable: false when the
  // keep-alive timeout passes, the peer closes, or the server stops.
  bool WaitForRequest(httplib::Stream& stream) const;
};

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_HTTP_SERVER_H_
