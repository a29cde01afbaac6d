// `xonnx serve`: the inference server over a Triton-style model repository,
// with Triton's flag names where they overlap. Ports 0 pick free ports; the
// ports bound are printed on stderr. SIGTERM or SIGINT drains: readiness
// turns false, new requests get UNAVAILABLE, those in flight finish (for at
// most --exit-timeout-secs), then the process exits.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "serve/grpc_frontend.h"
#include "serve/http_frontend.h"
#include "serve/server.h"

namespace xonnx::cli {
namespace {

using serve::ControlMode;

// Triton's bool flags take true/on/1 and false/off/0.
bool ParseBool(const std::string& v, const std::string& flag) {
  if (v == "true" || v == "on" || v == "1") return true;
  if (v == "false" || v == "off" || v == "0") return false;
  throw CliError{absl::StrCat(flag, " '", v, "': expected true or false")};
}

std::vector<int> ParseDevices(const std::string& text, const xonnx::SessionOptions& base) {
  std::vector<int> out;
  if (text == "all") {
    auto plugin = Check(xonnx::DescribePlugin(base));
    for (const auto& d : plugin.devices) out.push_back(d.index);
    if (out.empty()) throw CliError{"--device all: the plugin has no devices", kExitRuntime};
    return out;
  }
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int d = 0;
    if (!absl::SimpleAtoi(part, &d) || d < 0)
      throw CliError{
          absl::StrCat("--device '", text, "': expected device indices (0 or 0,1; see `xonnx devices`) or all")};
    out.push_back(d);
  }
  return out;
}

void Say(const std::string& line) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << "xonnx serve: " << line << std::endl;
}

}  // namespace

CLI::App* AddServe(CLI::App& app, ServeArgs& a) {
  auto* s = app.add_subcommand(
      "serve",
      "Serve a model repository (Triton's layout: REPO/<model>/[config.pbtxt], REPO/<model>/<version>/model.onnx) "
      "over the Open Inference Protocol (KServe v2) on HTTP/REST and gRPC, with dynamic batching and Prometheus "
      "metrics");
  s->add_option("--model-repository,--model-store", a.repositories, "Model repository folder; repeatable")->required();
  s->add_option("--http-port", a.http_port, "HTTP/REST port (0: any free port)")->capture_default_str();
  s->add_option("--grpc-port", a.grpc_port, "gRPC port (0: any free port)")->capture_default_str();
  s->add_option("--metrics-port", a.metrics_port, "Prometheus metrics port, GET /metrics (0: any free port)")
      ->capture_default_str();
  s->add_option("--http-address", a.http_address, "Address HTTP listens on")->capture_default_str();
  s->add_option("--grpc-address", a.grpc_address, "Address gRPC listens on")->capture_default_str();
  s->add_option("--metrics-address", a.metrics_address, "Address the metrics listen on")->capture_default_str();
  s->add_option("--allow-http", a.allow_http, "Serve HTTP/REST (true/false)")->capture_default_str();
  s->add_option("--allow-grpc", a.allow_grpc, "Serve gRPC (true/false)")->capture_default_str();
  s->add_option("--allow-metrics", a.allow_metrics, "Serve metrics (true/false)")->capture_default_str();
  s->add_option("--model-control-mode", a.control_mode,
                "none: load every model at start, never change; poll: also load, reload and unload as the "
                "repository's folders change; explicit: load --load-model at start, then only through the "
                "repository API (POST /v2/repository/models/NAME/load|unload)")
      ->check(CLI::IsMember({"none", "poll", "explicit"}, CLI::ignore_case))
      ->capture_default_str();
  s->add_option("--repository-poll-secs", a.poll_secs, "Seconds between looks at the repository (poll mode)")
      ->capture_default_str();
  s->add_option("--load-model", a.load_models, "Model to load at start in explicit mode ('*': all); repeatable");
  s->add_option("--strict-model-config", a.strict_config,
                "Refuse config.pbtxt fields xonnx does not read (default: list them in the log and go on)")
      ->capture_default_str();
  s->add_option("--exit-timeout-secs", a.exit_timeout_s,
                "On SIGTERM or SIGINT, how long requests in flight may take to finish before the server exits")
      ->capture_default_str();
  s->add_option("--default-max-batch-size", a.default_max_batch,
                "Batch size for models without config.pbtxt whose every input and output has a variable first "
                "dimension (dynamic batching on); 0: such models do not batch")
      ->capture_default_str();
  s->add_option("--max-queue-size", a.max_queue,
                "Requests a model may have waiting (unless its config's default_queue_policy sets it); beyond "
                "them requests get 429 / RESOURCE_EXHAUSTED at once")
      ->capture_default_str();
  s->add_option("--http-thread-count", a.http_threads,
                "Most HTTP connections served at once (a keep-alive connection holds a thread)")
      ->capture_default_str();
  s->add_option("--http-max-input-size", a.max_input_bytes,
                "Largest request body (HTTP) or message (gRPC) in bytes; larger ones get 413 / RESOURCE_EXHAUSTED")
      ->capture_default_str();
  s->add_option("--access-log", a.access_log,
                "Write one JSON line per request (time, peer, method, target, status, model, version, id, bytes, "
                "total, queue and compute microseconds, batch rows) to FILE, or '-' for stdout");
  s->add_option("--device", a.devices,
                "Devices to put each model's instances on: an index, a list (0,1) or 'all' (see `xonnx devices`)")
      ->capture_default_str();
  s->add_option("--cache-dir", g_device.cache_dir, absl::StrCat("Persistent compile cache folder ", kCacheDirDefault));
  s->add_flag("--no-cache", g_device.no_cache, "Do not read or write the persistent compile cache");
  s->add_flag("--no-warmup", a.no_warmup, "Do not run each batch size once when a model loads");
  s->add_option("--profile", a.profile_dir,
                "Record a Chrome/Perfetto trace of each model version's calls (their phases and, on xonnx's CPU "
                "plugin, every kernel) and write it to DIR/<model>_v<version>_d<device>.json when the model "
                "unloads or the server stops (`xonnx profile FILE` sums one)");
  return s;
}

int Serve(const ServeArgs& a) {
  // Signals go to the thread that waits for them, never to the servers'.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  serve::ServerOptions o;
  o.repositories = a.repositories;
  std::string mode = absl::AsciiStrToLower(a.control_mode);
  o.control_mode = mode == "poll"       ? ControlMode::kPoll
                   : mode == "explicit" ? ControlMode::kExplicit
                                        : ControlMode::kNone;
  if (!a.load_models.empty() && o.control_mode != ControlMode::kExplicit)
    throw CliError{"--load-model needs --model-control-mode=explicit"};
  if (a.poll_secs < 1) throw CliError{"--repository-poll-secs must be >= 1"};
  if (a.max_queue < 1) throw CliError{"--max-queue-size must be >= 1"};
  if (a.http_threads < 1) throw CliError{"--http-thread-count must be >= 1"};
  o.poll_secs = a.poll_secs;
  o.load_models = a.load_models;
  o.settings.session = BaseOptions();
  o.settings.devices = ParseDevices(a.devices, o.settings.session);
  o.settings.default_max_batch = a.default_max_batch;
  o.settings.default_queue_size = a.max_queue;
  o.settings.strict_config = ParseBool(a.strict_config, "--strict-model-config");
  o.settings.warmup = !a.no_warmup;
  o.settings.profile_dir = a.profile_dir;
  if (!a.profile_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.profile_dir, ec);
    if (ec) throw CliError{absl::StrCat("--profile ", a.profile_dir, ": ", ec.message()), kExitInput};
  }
  o.settings.log = Say;
  std::shared_ptr<std::ostream> log_file;
  if (a.access_log == "-") {
    o.access_log = [](const std::string& line) { std::cout << line << "\n" << std::flush; };
  } else if (!a.access_log.empty()) {
    log_file = std::make_shared<std::ofstream>(a.access_log, std::ios::app);
    if (!*log_file) throw CliError{absl::StrCat("--access-log ", a.access_log, ": cannot be opened"), kExitInput};
    o.access_log = [log_file](const std::string& line) { *log_file << line << "\n" << std::flush; };
  }
  Say(absl::StrCat("xonnx ", xonnx::Version(), ", model repository ", absl::StrJoin(a.repositories, ", "),
                   ", model control mode ", mode));
  auto server = Check(serve::InferenceServer::Start(o));
  int64_t elements = a.max_input_bytes;
  std::unique_ptr<serve::HttpFrontend> http, metrics;
  std::unique_ptr<serve::GrpcFrontend> grpc;
  if (ParseBool(a.allow_http, "--allow-http")) {
    serve::HttpOptions h{a.http_address, a.http_port, a.http_threads, a.max_input_bytes, elements};
    http = std::make_unique<serve::HttpFrontend>(*server, h);
    Say(absl::StrCat("HTTP listening on ", a.http_address, ":", Check(http->Start())));
  }
  if (ParseBool(a.allow_grpc, "--allow-grpc")) {
    grpc = std::make_unique<serve::GrpcFrontend>(
        *server, serve::GrpcOptions{a.grpc_address, a.grpc_port, a.max_input_bytes, elements});
    Say(absl::StrCat("gRPC listening on ", a.grpc_address, ":", Check(grpc->Start())));
  }
  if (ParseBool(a.allow_metrics, "--allow-metrics")) {
    serve::HttpOptions m{a.metrics_address, a.metrics_port, 8};
    m.metrics_only = true;
    metrics = std::make_unique<serve::HttpFrontend>(*server, m);
    Say(absl::StrCat("metrics listening on ", a.metrics_address, ":", Check(metrics->Start())));
  }
  Say(server->ready() ? "ready" : "started, but not every model loaded (see above; /v2/health/ready says 400)");
  int sig = 0;
  sigwait(&signals, &sig);
  Say(absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT", ": draining (at most ", a.exit_timeout_s, " s)"));
  if (grpc) grpc->BeginDrain();
  int64_t left = server->Drain(a.exit_timeout_s);
  if (left > 0) {
    Say(absl::StrCat(left, " requests still in flight after --exit-timeout-secs: cancelled, answered 503"));
    server->CancelAll();
  }
  if (http) http->Stop();
  if (grpc) grpc->Stop(1);
  if (metrics) metrics->Stop();
  server.reset();
  Say("stopped");
  return kExitOk;
}

}  // namespace xonnx::cli
