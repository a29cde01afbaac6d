#include "serve/model.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xonnx::serve {
namespace {

namespace fs = std::filesystem;

std::string ShapeText(const std::vector<int64_t>& dims) { return absl::StrCat("[", absl::StrJoin(dims, ","), "]"); }

// Zeros (empty strings) of a shape, for the warm-up calls.
Tensor Zeros(DataType t, const std::vector<int64_t>& dims) {
  if (t != DataType::kString) return Tensor(t, dims);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return Tensor::FromStrings(dims, std::vector<std::string>(n));
}

}  // namespace

StatusOr<std::shared_ptr<ServedModel>> ServedModel::Load(const std::string& model_dir, int64_t version,
                                                         ModelConfig config, const ServeSettings& settings) {
  fs::path path = fs::path(model_dir) / std::to_string(version) / config.model_filename;
  std::error_code ec;
  if (fs::is_directory(path, ec)) path /= "model.onnx";
  if (!fs::is_regular_file(path, ec))
    return Status(StatusCode::kNotFound, absl::StrCat(path.string(), ": no such model file"));
  std::shared_ptr<ServedModel> m(new ServedModel);
  m->version_ = version;
  m->devices_ = absl::StrJoin(settings.devices, ",");
  SessionOptions options = settings.session;
  Status s = ApplyXonnxOptions(config, options);
  if (!s.ok()) return s;
  // The model's own tensors decide how it batches: open it once unbatched
  // on the first device to read them, then with its buckets.
  for (size_t d = 0; d < settings.devices.size(); ++d) {
    options.device = settings.devices[d];
    if (!settings.profile_dir.empty())
      options.profile_file =
          (fs::path(settings.profile_dir) / absl::StrCat(config.name, "_v", version, "_d", options.device, ".json"))
              .string();
    if (d == 0) {
      SessionOptions probe = options;
      probe.plugin = SessionOptions::kNoPlugin;
      StatusOr<std::unique_ptr<Session>> described = Session::Open(path.string(), probe);
      if (!described.ok()) return described.status();
      s = CompleteModelConfig(config, (*described)->inputs(), (*described)->outputs(), settings.default_max_batch);
      if (!s.ok()) return s;
      StatusOr<std::vector<int64_t>> buckets = BatchBucketsOf(config);
      if (!buckets.ok()) return buckets.status();
      options.batch_buckets = *buckets;
    }
    StatusOr<std::unique_ptr<Session>> session = Session::Open(path.string(), options);
    if (!session.ok()) return session.status();
    // A cache that cannot be used (a volume this user cannot write) makes
    // every start compile again: say so.
    if (settings.log)
      for (const auto& message : (*session)->compile_stats().cache_messages)
        settings.log(absl::StrCat("model '", config.name, "' version ", version, ": compile cache: ", message));
    m->sessions_.push_back(std::move(*session));
  }
  for (const auto& o : m->sessions_[0]->outputs()) m->session_outputs_.push_back(o.name);
  m->config_ = std::move(config);
  if (settings.warmup) {
    s = m->Warmup(settings);
    if (!s.ok()) return s;
  }
  Batcher::Options b;
  const ModelConfig& c = m->config_;
  b.batching = c.dynamic_batching && c.max_batch_size > 1;
  b.max_batch = std::max(1, c.max_batch_size);
  b.target_rows = c.preferred_batch_sizes.empty()
                      ? b.max_batch
                      : *std::max_element(c.preferred_batch_sizes.begin(), c.preferred_batch_sizes.end());
  b.max_delay_us = c.max_queue_delay_us;
  b.max_queue = c.max_queue_size > 0 ? c.max_queue_size : settings.default_queue_size;
  std::vector<Runner> runners;
  std::shared_ptr<DeviceThreads> threads = settings.device_threads;
  for (size_t d = 0; d < m->sessions_.size(); ++d) {
    int device = settings.devices[d];
    threads->Reserve(device, c.instance_count);
    Session* sp = m->sessions_[d].get();
    for (int i = 0; i < c.instance_count; ++i)
      runners.push_back([sp, device, threads](const std::map<std::string, Tensor>& in, const RunOptions& run) {
        StatusOr<std::vector<Tensor>> out = Status(StatusCode::kInternal, "not run");
        Clock::time_point handed = Clock::now();
        threads->Run(device, [&] {
          // The deadline counts from the hand-off: time spent waiting for
          // the device's thread (another model's call) is part of it.
          RunOptions now = run;
          if (run.deadline_ms > 0) {
            auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - handed).count();
            now.deadline_ms = run.deadline_ms - waited;
            if (now.deadline_ms <= 0) {
              out = Status(StatusCode::kDeadlineExceeded, "the request's timeout passed while the device was busy");
              return;
            }
          }
          try {
            out = sp->Run(in, now);
          } catch (const std::exception& e) {
            out = Status(StatusCode::kResourceExhausted, absl::StrCat("the call failed: ", e.what()));
          }
        });
        return out;
      });
  }
  m->batcher_ = std::make_unique<Batcher>(b, std::move(runners));
  return m;
}

ServedModel::~ServedModel() {
  if (batcher_) batcher_->Stop();
}

Status ServedModel::Warmup(const ServeSettings& settings) {
  // Only shapes the config fixes can be run ahead; others compile on their
  // first request.
  for (const auto& in : config_.inputs)
    if (std::any_of(in.dims.begin(), in.dims.end(), [](int64_t d) { return d < 0; })) {
      if (settings.log)
        settings.log(absl::StrCat("model '", config_.name, "' version ", version_, ": input '", in.name,
                                  "' has a variable dimension; its shapes compile on first use"));
      return OkStatus();
    }
  std::vector<int64_t> sizes = {0};
  if (config_.max_batch_size > 0) sizes = sessions_[0]->batch_buckets();
  for (size_t d = 0; d < sessions_.size(); ++d)
    for (int64_t rows : sizes) {
      Session* session = sessions_[d].get();
      std::map<std::string, Tensor> inputs;
      for (const auto& in : config_.inputs) {
        std::vector<int64_t> dims = in.dims;
        if (config_.max_batch_size > 0) dims.insert(dims.begin(), rows);
        inputs[in.name] = Zeros(in.dtype, dims);
      }
      Status s;
      settings.device_threads->Run(settings.devices[d], [&] {
        try {
          s = session->Prepare(inputs);
        } catch (const std::exception& e) {
          s = Status(StatusCode::kResourceExhausted, e.what());
        }
      });
      if (!s.ok())
        return Status(s.code(), absl::StrCat("warm-up of model '", config_.name, "' version ", version_,
                                             (rows ? absl::StrCat(" at batch ", rows) : ""), ": ", s.message()));
    }
  return OkStatus();
}

std::vector<int64_t> ServedModel::WireShape(const TensorConfig& t) const {
  std::vector<int64_t> dims = t.dims;
  if (config_.max_batch_size > 0) dims.insert(dims.begin(), -1);
  return dims;
}

StatusOr<std::shared_ptr<Job>> ServedModel::MakeJob(InferRequest& request) const {
  auto job = std::make_shared<Job>();
  std::vector<std::string> names;
  for (const auto& c : config_.inputs) names.push_back(c.name);
  bool batched = config_.max_batch_size > 0;
  int64_t rows = -1;
  for (auto& in : request.inputs) {
    auto c = std::find_if(config_.inputs.begin(), config_.inputs.end(),
                          [&](const TensorConfig& t) { return t.name == in.name; });
    if (c == config_.inputs.end())
      return Invalid(absl::StrCat("unexpected input '", in.name, "': model '", config_.name, "' takes ",
                                  absl::StrJoin(names, ", ")));
    if (job->inputs.count(in.name)) return Invalid(absl::StrCat("input '", in.name, "' is given twice"));
    const auto& dims = in.tensor.dims();
    if (in.tensor.dtype() != c->dtype)
      return Invalid(absl::StrCat("input '", in.name, "': datatype ", WireName(in.tensor.dtype()), ", the model takes ",
                                  WireName(c->dtype)));
    std::vector<int64_t> want = WireShape(*c);
    bool ok = dims.size() == want.size();
    for (size_t i = 0; ok && i < dims.size(); ++i) ok = want[i] < 0 || want[i] == dims[i];
    if (!ok)
      return Invalid(absl::StrCat("input '", in.name, "': shape ", ShapeText(dims), ", the model takes ",
                                  ShapeText(want), " (-1: any size)"));
    if (batched) {
      if (dims[0] < 1 || dims[0] > config_.max_batch_size)
        return Invalid(absl::StrCat("input '", in.name, "': batch size ", dims[0], " is outside [1, ",
                                    config_.max_batch_size, "] (max_batch_size)"));
      if (rows >= 0 && dims[0] != rows)
        return Invalid(absl::StrCat("input '", in.name, "': batch size ", dims[0], ", other inputs have ", rows));
      rows = dims[0];
    }
    job->inputs[in.name] = std::move(in.tensor);
  }
  for (const auto& c : config_.inputs)
    if (!job->inputs.count(c.name))
      return Invalid(absl::StrCat("input '", c.name, "' is missing (model '", config_.name, "' takes ",
                                  absl::StrJoin(names, ", "), ")"));
  job->rows = batched ? rows : 1;
  job->shape_key = ShapeKey(job->inputs, batched);
  // A request may shorten the config's timeout (or set one where it has
  // none) only when the config allows it, as in Triton.
  int64_t timeout_us = config_.default_timeout_us;
  int64_t asked = std::min<int64_t>(request.timeout_us, kMaxMicroseconds);
  if (config_.allow_timeout_override && asked > 0) timeout_us = timeout_us > 0 ? std::min(timeout_us, asked) : asked;
  if (timeout_us > 0) job->deadline = job->arrived + std::chrono::microseconds(timeout_us);
  return job;
}

StatusOr<std::vector<size_t>> ServedModel::PickOutputs(const InferRequest& request, std::vector<bool>& binary) const {
  std::vector<std::pair<std::string, bool>> wanted;
  if (request.outputs.empty())
    for (const auto& c : config_.outputs) wanted.push_back({c.name, request.binary_outputs});
  for (const auto& o : request.outputs) wanted.push_back({o.name, o.binary});
  std::vector<size_t> picked;
  std::set<std::string> seen;
  for (const auto& [name, bin] : wanted) {
    bool listed = std::any_of(config_.outputs.begin(), config_.outputs.end(),
                              [&](const TensorConfig& t) { return t.name == name; });
    auto it = std::find(session_outputs_.begin(), session_outputs_.end(), name);
    if (!listed || it == session_outputs_.end()) {
      std::vector<std::string> names;
      for (const auto& c : config_.outputs) names.push_back(c.name);
      return Invalid(absl::StrCat("unknown output '", name, "' requested: model '", config_.name, "' has ",
                                  absl::StrJoin(names, ", ")));
    }
    if (!seen.insert(name).second) return Invalid(absl::StrCat("output '", name, "' is requested twice"));
    picked.push_back(static_cast<size_t>(it - session_outputs_.begin()));
    binary.push_back(bin);
  }
  return picked;
}

StatusOr<std::vector<InferOutput>> ServedModel::Infer(InferRequest& request, JobResult& result) {
  std::vector<bool> binary;
  StatusOr<std::vector<size_t>> picked = PickOutputs(request, binary);
  if (!picked.ok()) return picked.status();
  StatusOr<std::shared_ptr<Job>> job = MakeJob(request);
  if (!job.ok()) return job.status();
  Status s = batcher_->Submit(*job);
  if (!s.ok()) {
    for (auto& in : request.inputs) in.tensor = std::move((*job)->inputs[in.name]);
    return s;
  }
  result = batcher_->Wait(*job);
  if (!result.outputs.ok()) return result.outputs.status();
  std::vector<Tensor>& all = *result.outputs;
  std::vector<InferOutput> out;
  for (size_t i = 0; i < picked->size(); ++i) {
    size_t k = (*picked)[i];
    if (k >= all.size()) return Status(StatusCode::kInternal, "the model returned fewer outputs than it declares");
    out.push_back({session_outputs_[k], std::move(all[k]), binary[i]});
  }
  return out;
}

}  // namespace xonnx::serve
