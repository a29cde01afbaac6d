// The Open Inference Protocol over gRPC (inference.GRPCInferenceService,
// with the model repository RPCs), and grpc.health.v1 for probes.
#ifndef XONNX_SERVE_GRPC_FRONTEND_H_
#define XONNX_SERVE_GRPC_FRONTEND_H_

#include <memory>
#include <string>

#include "serve/server.h"

namespace xonnx::serve {

struct GrpcOptions {
  std::string host = "0.0.0.0";
  int port = 8001;  // 0: any free port
  int64_t max_message_bytes = int64_t{1} << 30;
  int64_t max_elements = int64_t{1} << 28;  // per tensor
};

class GrpcFrontend {
 public:
  GrpcFrontend(InferenceServer& server, GrpcOptions options);
  ~GrpcFrontend();
  // Binds and starts serving; returns the port bound.
  StatusOr<int> Start();
  // Health turns NOT_SERVING (load balancers stop sending).
  void BeginDrain();
  // Stops accepting; calls in flight get until `deadline_s` to finish.
  void Stop(int deadline_s);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xonnx::serve

#endif  // XONNX_SERVE_GRPC_FRONTEND_H_
