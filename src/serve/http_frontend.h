// The Open Inference Protocol over HTTP/REST (and Prometheus' /metrics on
// a port of its own), with cpp-httplib: one thread per open connection,
// started as connections come, up to a bound.
#ifndef XONNX_SERVE_HTTP_FRONTEND_H_
#define XONNX_SERVE_HTTP_FRONTEND_H_

#include <memory>
#include <string>
#include <thread>

#include "serve/server.h"

namespace httplib {
class Server;
class ContentReader;
struct Request;
struct Response;
}  // namespace httplib

namespace xonnx::serve {

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 8000;                            // 0: any free port
  int max_threads = 256;                      // connections served at once
  int64_t max_body_bytes = int64_t{1} << 30;  // larger bodies get 413
  int64_t max_elements = int64_t{1} << 28;    // per tensor
  int idle_timeout_s = 5;                     // keep-alive connections
  bool metrics_only = false;                  // serve GET /metrics only
};

class HttpFrontend {
 public:
  HttpFrontend(InferenceServer& server, HttpOptions options);
  ~HttpFrontend();
  // Binds and starts serving; returns the port bound.
  StatusOr<int> Start();
  // Stops accepting, lets the requests being served finish, joins.
  void Stop();

 private:
  void Routes();
  void Metrics();
  // An infer request; its body read from `content` as it arrives, or, when
  // httplib has read it (a request it does not expect a body of), from
  // req.body.
  void Infer(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader* content);

  InferenceServer& server_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> http_;
  int listen_socket_ = -1;
  std::thread thread_;
};

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_HTTP_FRONTEND_H_
