#include "serve/grpc_frontend.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <limits>

#include "absl/strings/str_cat.h"
#include "serve/proto/grpc_service.grpc.pb.h"

namespace xonnx::serve {
namespace {

namespace pb = inference;
using Clock = std::chrono::steady_clock;

grpc::Status ToGrpc(const Status& s) {
  // xonnx's status codes are gRPC's canonical codes, number for number.
  return s.ok() ? grpc::Status::OK : grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

// The tensor from one typed field, its length checked before anything is
// allocated (a message of a few bytes may declare a shape of billions) and
// each value against its datatype's range.
template <typename T, typename Field>
StatusOr<Tensor> FromTyped(const Field& field, DataType dtype, const std::vector<int64_t>& shape, int64_t count,
                           const char* field_name, const std::string& what) {
  if (static_cast<int64_t>(field.size()) != count)
    return Invalid(
        absl::StrCat(what, ": ", field.size(), " values in contents.", field_name, ", its shape holds ", count));
  Tensor t = Tensor::ForOverwrite(dtype, shape);
  T* p = t.data_as<T>();
  for (int64_t i = 0; i < count; ++i) {
    auto v = field.Get(static_cast<int>(i));
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, decltype(v)>) {
      if (v < static_cast<decltype(v)>(std::numeric_limits<T>::min()) ||
          v > static_cast<decltype(v)>(std::numeric_limits<T>::max()))
        return Invalid(absl::StrCat(what, ": element ", i, " (", v, ") does not fit its datatype"));
    }
    p[i] = static_cast<T>(v);
  }
  return t;
}

StatusOr<Tensor> FromContents(DataType dtype, const std::vector<int64_t>& shape, int64_t count,
                              const pb::InferTensorContents& c, const std::string& what) {
  switch (dtype) {
    case DataType::kString:
      if (c.bytes_contents_size() != count)
        return Invalid(absl::StrCat(what, ": ", c.bytes_contents_size(),
                                    " values in contents.bytes_contents, its shape holds ", count));
      return Tensor::FromStrings(shape, std::vector<std::string>(c.bytes_contents().begin(), c.bytes_contents().end()));
    case DataType::kBool:
      return FromTyped<uint8_t>(c.bool_contents(), dtype, shape, count, "bool_contents", what);
    case DataType::kInt8:
      return FromTyped<int8_t>(c.int_contents(), dtype, shape, count, "int_contents", what);
    case DataType::kInt16:
      return FromTyped<int16_t>(c.int_contents(), dtype, shape, count, "int_contents", what);
    case DataType::kInt32:
      return FromTyped<int32_t>(c.int_contents(), dtype, shape, count, "int_contents", what);
    case DataType::kInt64:
      return FromTyped<int64_t>(c.int64_contents(), dtype, shape, count, "int64_contents", what);
    case DataType::kUInt8:
      return FromTyped<uint8_t>(c.uint_contents(), dtype, shape, count, "uint_contents", what);
    case DataType::kUInt16:
      return FromTyped<uint16_t>(c.uint_contents(), dtype, shape, count, "uint_contents", what);
    case DataType::kUInt32:
      return FromTyped<uint32_t>(c.uint_contents(), dtype, shape, count, "uint_contents", what);
    case DataType::kUInt64:
      return FromTyped<uint64_t>(c.uint64_contents(), dtype, shape, count, "uint64_contents", what);
    case DataType::kFloat32:
      return FromTyped<float>(c.fp32_contents(), dtype, shape, count, "fp32_contents", what);
    case DataType::kFloat64:
      return FromTyped<double>(c.fp64_contents(), dtype, shape, count, "fp64_contents", what);
    default:  // FP16, BF16
      return Invalid(absl::StrCat(what, ": ", WireName(dtype), " has no typed contents; send raw_input_contents"));
  }
}

Status DecodeRequest(const pb::ModelInferRequest& in, int64_t max_elements, InferRequest& out) {
  out.model = in.model_name();
  out.version = in.model_version();
  out.id = in.id();
  out.transport = "grpc";
  bool raw = in.raw_input_contents_size() > 0;
  if (raw && in.raw_input_contents_size() != in.inputs_size())
    return Invalid(absl::StrCat(in.raw_input_contents_size(), " raw_input_contents for ", in.inputs_size(),
                                " inputs: give one per input, in the order of inputs"));
  for (int i = 0; i < in.inputs_size(); ++i) {
    const auto& t = in.inputs(i);
    std::string what = absl::StrCat("input '", t.name(), "'");
    StatusOr<DataType> dtype = DataTypeFromWire(t.datatype());
    if (!dtype.ok()) return Invalid(absl::StrCat(what, ": ", dtype.status().message()));
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    StatusOr<int64_t> count = ElementCount(shape, max_elements, what);
    if (!count.ok()) return count.status();
    StatusOr<Tensor> tensor = Status(StatusCode::kUnknown, "");
    if (raw) {
      if (t.has_contents())
        return Invalid(absl::StrCat(what, ": contents must not be given when raw_input_contents is used"));
      tensor = TensorFromRaw(*dtype, shape, in.raw_input_contents(i), what);
    } else {
      tensor = FromContents(*dtype, shape, *count, t.contents(), what);
    }
    if (!tensor.ok()) return tensor.status();
    out.inputs.push_back({t.name(), std::move(*tensor)});
  }
  for (const auto& o : in.outputs()) out.outputs.push_back({o.name(), true});
  auto timeout = in.parameters().find("timeout");
  if (timeout != in.parameters().end()) {
    if (timeout->second.parameter_choice_case() != pb::InferParameter::kInt64Param || timeout->second.int64_param() < 0)
      return Invalid("parameter \"timeout\" must be a non-negative int64_param (microseconds)");
    out.timeout_us = timeout->second.int64_param();
  }
  return OkStatus();
}

class Service final : public pb::GRPCInferenceService::Service {
 public:
  Service(InferenceServer& server, const GrpcOptions& options) : server_(server), options_(options) {}

  grpc::Status ServerLive(grpc::ServerContext*, const pb::ServerLiveRequest*, pb::ServerLiveResponse* r) override {
    r->set_live(server_.live());
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext*, const pb::ServerReadyRequest*, pb::ServerReadyResponse* r) override {
    r->set_ready(server_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext*, const pb::ModelReadyRequest* q, pb::ModelReadyResponse* r) override {
    StatusOr<bool> ready = server_.ModelReady(q->name(), q->version());
    if (!ready.ok()) return ToGrpc(ready.status());
    r->set_ready(*ready);
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(grpc::ServerContext*, const pb::ServerMetadataRequest*,
                              pb::ServerMetadataResponse* r) override {
    r->set_name(server_.name());
    r->set_version(server_.version());
    for (const auto& e : server_.extensions()) r->add_extensions(e);
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(grpc::ServerContext*, const pb::ModelMetadataRequest* q,
                             pb::ModelMetadataResponse* r) override {
    StatusOr<serve::ModelMetadata> md = server_.Metadata(q->name(), q->version());
    if (!md.ok()) return ToGrpc(md.status());
    r->set_name(md->name);
    r->set_platform(md->platform);
    for (const auto& v : md->versions) r->add_versions(v);
    for (const auto* list : {&md->inputs, &md->outputs})
      for (const auto& t : *list) {
        auto* m = list == &md->inputs ? r->add_inputs() : r->add_outputs();
        m->set_name(t.name);
        m->set_datatype(t.datatype);
        for (int64_t d : t.shape) m->add_shape(d);
      }
    return grpc::Status::OK;
  }
  grpc::Status ModelInfer(grpc::ServerContext* ctx, const pb::ModelInferRequest* q,
                          pb::ModelInferResponse* r) override {
    AccessRecord rec;
    Clock::time_point start = Clock::now();
    rec.bytes_in = static_cast<int64_t>(q->ByteSizeLong());
    InferRequest request;
    Status s = DecodeRequest(*q, options_.max_elements, request);
    rec.model = q->model_name();
    if (s.ok()) {
      StatusOr<InferResponse> out = server_.Infer(std::move(request), &rec);
      s = out.status();
      if (out.ok()) {
        r->set_model_name(out->model);
        r->set_model_version(out->version);
        r->set_id(out->id);
        for (const auto& o : out->outputs) {
          auto* m = r->add_outputs();
          m->set_name(o.name);
          m->set_datatype(WireName(o.tensor.dtype()));
          for (int64_t d : o.tensor.dims()) m->add_shape(d);
          std::string* raw = r->add_raw_output_contents();
          raw->reserve(RawSize(o.tensor));
          AppendRaw(o.tensor, *raw);
        }
      }
    }
    if (s.ok()) rec.bytes_out = static_cast<int64_t>(r->ByteSizeLong());
    Finish(ctx, "ModelInfer", s, rec, start);
    return ToGrpc(s);
  }
  grpc::Status RepositoryIndex(grpc::ServerContext*, const pb::RepositoryIndexRequest* q,
                               pb::RepositoryIndexResponse* r) override {
    for (const auto& e : server_.Index(q->ready())) {
      auto* m = r->add_models();
      m->set_name(e.name);
      if (e.version >= 0) m->set_version(std::to_string(e.version));
      m->set_state(ModelStateName(e.state));
      m->set_reason(e.reason);
    }
    return grpc::Status::OK;
  }
  grpc::Status RepositoryModelLoad(grpc::ServerContext* ctx, const pb::RepositoryModelLoadRequest* q,
                                   pb::RepositoryModelLoadResponse*) override {
    std::string config;
    for (const auto& [key, value] : q->parameters()) {
      if (key.rfind("file:", 0) == 0)
        return ToGrpc(Status(StatusCode::kUnimplemented,
                             "load parameters \"file:...\" (model files in the request) are not supported"));
      if (key == "config") {
        if (value.parameter_choice_case() != pb::ModelRepositoryParameter::kStringParam)
          return ToGrpc(Invalid("parameter \"config\" must be a string_param"));
        config = value.string_param();
      }
    }
    return ToGrpc(server_.Load(q->model_name(), config));
  }
  grpc::Status RepositoryModelUnload(grpc::ServerContext*, const pb::RepositoryModelUnloadRequest* q,
                                     pb::RepositoryModelUnloadResponse*) override {
    return ToGrpc(server_.Unload(q->model_name()));
  }

 private:
  void Finish(grpc::ServerContext* ctx, const char* method, const Status& s, AccessRecord& rec,
              Clock::time_point start) {
    rec.transport = "grpc";
    rec.peer = ctx->peer();
    rec.method = "POST";
    rec.target = absl::StrCat("/inference.GRPCInferenceService/", method);
    rec.status = static_cast<int>(s.code());
    if (!s.ok()) rec.error = s.message();
    rec.total_us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    server_.Log(rec);
  }

  InferenceServer& server_;
  GrpcOptions options_;
};

}  // namespace

struct GrpcFrontend::Impl {
  Impl(InferenceServer& s, GrpcOptions o) : server(s), options(std::move(o)), service(s, options) {}
  InferenceServer& server;
  GrpcOptions options;
  Service service;
  std::unique_ptr<grpc::Server> grpc;
};

GrpcFrontend::GrpcFrontend(InferenceServer& server, GrpcOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}

GrpcFrontend::~GrpcFrontend() { Stop(0); }

StatusOr<int> GrpcFrontend::Start() {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  std::string address = absl::StrCat(impl_->options.host, ":", impl_->options.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  int max = static_cast<int>(std::min<int64_t>(impl_->options.max_message_bytes, std::numeric_limits<int>::max()));
  builder.SetMaxReceiveMessageSize(max);
  builder.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  builder.RegisterService(&impl_->service);
  impl_->grpc = builder.BuildAndStart();
  if (!impl_->grpc || port == 0)
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("cannot listen for gRPC on ", address, " (in use, or not allowed)"));
  return port;
}

void GrpcFrontend::BeginDrain() {
  if (impl_->grpc && impl_->grpc->GetHealthCheckService())
    impl_->grpc->GetHealthCheckService()->SetServingStatus(false);
}

void GrpcFrontend::Stop(int deadline_s) {
  if (!impl_->grpc) return;
  impl_->grpc->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(deadline_s));
  impl_->grpc->Wait();
  impl_->grpc.reset();
}

}  // namespace xonnx::serve
