#include "serve/http_frontend.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "serve/http_codec.h"
#include "serve/http_server.h"

namespace xonnx::serve {
namespace {

using nlohmann::json;

// httplib's task queue, with threads started as connections need them (a
// keep-alive connection holds its thread) up to a bound; connections
// beyond it wait for a free thread.
class GrowingPool : public httplib::TaskQueue {
 public:
  explicit GrowingPool(int max_threads) : max_threads_(max_threads) {}
  ~GrowingPool() override = default;
  void enqueue(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(fn));
    // Idle threads already woken for earlier jobs cannot take this one: a
    // thread is started whenever the jobs waiting outnumber the idle threads.
    if (jobs_.size() > static_cast<size_t>(idle_) && static_cast<int>(threads_.size()) < max_threads_)
      threads_.emplace_back([this] { Work(); });
    cv_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;
      auto fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  const int max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::list<std::thread> threads_;
  int idle_ = 0;
  bool stop_ = false;
};

// What the access log line of the request being served on this thread
// says beyond the request line (httplib's logger runs on the same thread).
thread_local AccessRecord t_record;
thread_local std::chrono::steady_clock::time_point t_start;
thread_local bool t_started = false;

void Fail(httplib::Response& res, const Status& s) {
  res.status = HttpStatusOf(s.code());
  res.set_content(ErrorJson(s.message()), "application/json");
  t_record.error = s.message();
}

void Json(httplib::Response& res, const json& j) {
  res.status = 200;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

StatusOr<json> ParseBody(const httplib::Request& req) {
  if (req.body.empty()) return json::object();
  try {
    json j = json::parse(req.body);
    if (!j.is_object()) return Status(StatusCode::kInvalidArgument, "the request body must be a JSON object");
    return j;
  } catch (const json::exception& e) {
    return Status(StatusCode::kInvalidArgument, absl::StrCat("malformed JSON in the request: ", e.what()));
  }
}

std::string Match(const httplib::Request& req, size_t i) {
  return i < req.matches.size() ? std::string(req.matches[i]) : std::string();
}

}  // namespace

HttpFrontend::HttpFrontend(InferenceServer& server, HttpOptions options)
    : server_(server), options_(std::move(options)), http_(std::make_unique<HttpServer>()) {
  int max_threads = options_.max_threads;
  http_->new_task_queue = [max_threads] { return new GrowingPool(max_threads); };
  http_->set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
  // httplib's own socket options set SO_REUSEPORT, which lets a second
  // server bind the same port and silently take half its connections;
  // SO_REUSEADDR only allows a restart while old connections linger.
  http_->set_socket_options([this](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_socket_ = sock;
  });
  // Small answers go out at once, not after the peer's delayed ACK.
  http_->set_tcp_nodelay(true);
  http_->set_keep_alive_max_count(1u << 30);
  http_->set_keep_alive_timeout(options_.idle_timeout_s);
  http_->set_read_timeout(options_.idle_timeout_s, 0);
  http_->set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    t_record = AccessRecord();
    t_start = std::chrono::steady_clock::now();
    t_started = true;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    Fail(res, Status(StatusCode::kInternal, absl::StrCat("internal error: ", what)));
  });
  http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    // Health answers "no" with an empty body, as the protocol says.
    if (!res.body.empty() || req.path.rfind("/v2/health/", 0) == 0) return;
    const char* text =
        res.status == 404 ? "Not Found"
        : res.status == 413 && req.get_header_value("Content-Type") == "application/x-www-form-urlencoded"
            ? "form-urlencoded bodies (curl -d without a Content-Type) are limited to 8 KiB; send the request with "
              "Content-Type: application/json"
        : res.status == 413 ? "the request body (its Content-Length) is larger than --http-max-input-size allows"
        : res.status == 400 ? "Bad Request: the request could not be read"
                            : "error";
    res.set_content(ErrorJson(text), "application/json");
  });
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    AccessRecord& r = t_record;
    r.transport = "http";
    r.peer = absl::StrCat(req.remote_addr, ":", req.remote_port);
    r.method = req.method;
    r.target = req.path;
    r.status = res.status;
    if (!req.body.empty()) r.bytes_in = static_cast<int64_t>(req.body.size());  // infer counts its own
    r.bytes_out = static_cast<int64_t>(res.body.size());
    // httplib answers an unreadable request before routing: no start time.
    auto now = std::chrono::steady_clock::now();
    r.total_us = t_started ? std::chrono::duration_cast<std::chrono::microseconds>(now - t_start).count() : 0;
    server_.Log(r);
    t_record = AccessRecord();
    t_started = false;
  });
  if (options_.metrics_only)
    Metrics();
  else
    Routes();
}

HttpFrontend::~HttpFrontend() { Stop(); }

void HttpFrontend::Metrics() {
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(server_.MetricsText(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

void HttpFrontend::Infer(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader* content) {
  InferRequest r;
  r.model = Match(req, 1);
  r.version = Match(req, 2);
  r.transport = "http";
  t_record.model = r.model;
  std::optional<int64_t> header;
  Status header_status;
  if (req.has_header("Inference-Header-Content-Length")) {
    int64_t n = 0;
    if (absl::SimpleAtoi(req.get_header_value("Inference-Header-Content-Length"), &n))
      header = n;
    else
      header_status = Invalid("Inference-Header-Content-Length is not an integer");
  }
  // httplib has checked Content-Length against the size limit and
  // reads no more than it says; chunked bodies have none.
  int64_t length = content ? -1 : static_cast<int64_t>(req.body.size());
  if (content && req.has_header("Content-Length") && !absl::SimpleAtoi(req.get_header_value("Content-Length"), &length))
    length = -1;
  InferRequestDecoder decoder(header, length, options_.max_elements, r);
  bool read = true;
  if (content)
    read = (*content)([&](const char* data, size_t n) {
      if (header_status.ok()) decoder.Append(std::string_view(data, n));
      return true;
    });
  else if (header_status.ok())
    decoder.Append(req.body);
  t_record.bytes_in = decoder.bytes_received();
  if (!read) {  // httplib sets 413 over the size limit; the error handler words it
    if (res.status < 400) res.status = 400;
    return;
  }
  if (!header_status.ok()) return Fail(res, header_status);
  Status s = decoder.Finish();
  if (!s.ok()) return Fail(res, s);
  StatusOr<InferResponse> out = server_.Infer(std::move(r), &t_record);
  if (!out.ok()) return Fail(res, out.status());
  size_t json_length = 0;
  bool binary = false;
  std::string body = EncodeInferResponse(*out, json_length, binary);
  if (binary) res.set_header("Inference-Header-Content-Length", std::to_string(json_length));
  res.status = 200;
  res.set_content(std::move(body), binary ? "application/octet-stream" : "application/json");
}

void HttpFrontend::Routes() {
  auto& h = *http_;
  h.Get("/v2/health/live",
        [this](const httplib::Request&, httplib::Response& res) { res.status = server_.live() ? 200 : 400; });
  h.Get("/v2/health/ready",
        [this](const httplib::Request&, httplib::Response& res) { res.status = server_.ready() ? 200 : 400; });
  h.Get("/v2", [this](const httplib::Request&, httplib::Response& res) {
    Json(res, {{"name", server_.name()}, {"version", server_.version()}, {"extensions", server_.extensions()}});
  });
  h.Get(R"(/v2/models/([^/]+)(?:/versions/([0-9]+))?/ready)",
        [this](const httplib::Request& req, httplib::Response& res) {
          StatusOr<bool> ready = server_.ModelReady(Match(req, 1), Match(req, 2));
          if (!ready.ok()) return Fail(res, ready.status());
          if (!*ready) return Fail(res, Status(StatusCode::kInvalidArgument, "Model version not ready"));
          res.status = 200;
        });
  h.Get(R"(/v2/models/([^/]+)(?:/versions/([0-9]+))?)", [this](const httplib::Request& req, httplib::Response& res) {
    StatusOr<ModelMetadata> md = server_.Metadata(Match(req, 1), Match(req, 2));
    if (!md.ok()) return Fail(res, md.status());
    auto tensors = [](const std::vector<TensorMetadata>& list) {
      json a = json::array();
      for (const auto& t : list) a.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
      return a;
    };
    Json(res, {{"name", md->name},
               {"versions", md->versions},
               {"platform", md->platform},
               {"inputs", tensors(md->inputs)},
               {"outputs", tensors(md->outputs)}});
  });
  // Infer reads its own body, straight into the request's tensors.
  const char* infer = R"(/v2/models/([^/]+)(?:/versions/([0-9]+))?/infer)";
  h.Post(infer, [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& content) {
    Infer(req, res, &content);
  });
  h.Post(infer, [this](const httplib::Request& req, httplib::Response& res) { Infer(req, res, nullptr); });
  h.Post(R"(/v2/repository(?:/[^/]+)?/index)", [this](const httplib::Request& req, httplib::Response& res) {
    StatusOr<json> body = ParseBody(req);
    if (!body.ok()) return Fail(res, body.status());
    if (body->contains("ready") && !(*body)["ready"].is_boolean())
      return Fail(res, Status(StatusCode::kInvalidArgument, "\"ready\" must be a bool"));
    json a = json::array();
    for (const auto& e : server_.Index(body->value("ready", false))) {
      json row = {{"name", e.name}, {"state", ModelStateName(e.state)}};
      if (e.version >= 0) row["version"] = std::to_string(e.version);
      if (!e.reason.empty()) row["reason"] = e.reason;
      a.push_back(std::move(row));
    }
    Json(res, a);
  });
  h.Post(R"(/v2/repository(?:/[^/]+)?/models/([^/]+)/(load|unload))",
         [this](const httplib::Request& req, httplib::Response& res) {
           StatusOr<json> body = ParseBody(req);
           if (!body.ok()) return Fail(res, body.status());
           std::string name = Match(req, 1), config;
           t_record.model = name;
           json params = body->value("parameters", json::object());
           if (!params.is_object())
             return Fail(res, Status(StatusCode::kInvalidArgument, "\"parameters\" must be an object"));
           for (const auto& [key, value] : params.items()) {
             if (key.rfind("file:", 0) == 0)
               return Fail(res, Status(StatusCode::kUnimplemented,
                                       "load parameters \"file:...\" (model files in the request) are not supported; "
                                       "put the files in the repository"));
             if (key == "config") {
               if (!value.is_string())
                 return Fail(res, Status(StatusCode::kInvalidArgument, "parameter \"config\" must be a string"));
               config = value.get<std::string>();
             }
           }
           Status s = Match(req, 2) == "load" ? server_.Load(name, config) : server_.Unload(name);
           if (!s.ok()) return Fail(res, s);
           res.status = 200;
         });
}

StatusOr<int> HttpFrontend::Start() {
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
  } else if (!http_->bind_to_port(options_.host, port)) {
    port = -1;
  }
  if (port < 0)
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("cannot listen on ", options_.host, ":", options_.port, " (in use, or not allowed)"));
  // httplib listens with a backlog of 5: connections beyond it while the
  // accepting thread is busy have their SYN dropped and retry a second
  // later. Listening again on the bound socket raises the backlog.
  if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  return port;
}

void HttpFrontend::Stop() {
  if (!thread_.joinable()) return;
  http_->stop();
  thread_.join();
}

}  // namespace xonnx::serve
