// Jit: programs compiled once per set of input specs, through the session
// options' plugin, with the compile cache sessions use.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "hlo/proto_codec.h"
#include "hlo/stablehlo.h"
#include "passes/exact_products.h"
#include "passes/xla_compatibility.h"
#include "pjrt/client.h"
#include "program/trace_state.h"
#include "runtime/clients.h"
#include "runtime/dtype.h"
#include "runtime/program_cache.h"
#include "runtime/public_status.h"

namespace xonnx::program {
namespace internal {

struct Compiled {
  std::shared_ptr<pjrt::LoadedExecutable> exe;
  std::vector<Spec> outputs;
};

struct JitState {
  Jit::Maker make;
  SessionOptions options;
  std::shared_ptr<pjrt::Client> client;
  const pjrt::Device* device = nullptr;
  std::string compile_options;
  // Whether programs get the rewrites XLA's plugins need, as models do,
  // and go as StableHLO.
  PluginTraits plugin;
  std::unique_ptr<ProgramCache> cache;

  std::mutex mu;  // guards what follows
  std::map<std::string, Compiled> programs;
  int64_t compiled = 0, loaded = 0;

  absl::StatusOr<Compiled> Compile(const std::vector<Spec>& specs);
};

absl::StatusOr<Compiled> JitState::Compile(const std::vector<Spec>& specs) {
  ASSIGN_OR_RETURN(Program p, FromPublic(make(specs)));
  const auto& d = Access::data(p);
  if (!d) return absl::FailedPreconditionError("jit: the program maker returned an empty program");
  if (d->inputs != specs) {
    std::vector<std::string> want, got;
    for (const Spec& s : specs) want.push_back(s.ToString());
    for (const Spec& s : d->inputs) got.push_back(s.ToString());
    return InvalidArgument("jit: the program made for inputs (%s) takes (%s)", absl::StrJoin(want, ", "),
                           absl::StrJoin(got, ", "));
  }
  std::unique_ptr<hlo::Module> m = d->module->Clone();
  if (plugin.xla) {
    if (!options.allow_tf32) RETURN_IF_ERROR(passes::ExactProducts().Run(m.get()).status());
    RETURN_IF_ERROR(passes::XlaCompatibility().Run(m.get()).status());
  }
  using Format = SessionOptions::ProgramFormat;
  bool mlir =
      options.program_format == Format::kStableHlo || (options.program_format == Format::kAuto && plugin.mlir_only);
  std::string bytes;
  if (mlir) {
    ASSIGN_OR_RETURN(bytes, hlo::ToStableHlo(*m));
  } else {
    bytes = hlo::SerializeModule(*m);
  }
  std::string exe_key;
  bool from_cache = false;
  ASSIGN_OR_RETURN(std::shared_ptr<pjrt::LoadedExecutable> exe,
                   cache->CompileOrLoad(bytes, compile_options, absl::StrCat("program '", m->name(), "'"), &exe_key,
                                        &from_cache, mlir ? "mlir" : "hlo"));
  std::lock_guard<std::mutex> l(mu);
  ++compiled;
  loaded += from_cache;
  return Compiled{std::move(exe), d->outputs};
}

// A run started by RunOnDevice, shared by its results: awaited once, by
// the first ToHost or when the last result goes. Its inputs' buffers are
// kept until then, so that no plugin is asked to free memory a run may
// still read (the buffers only: values keep no chain of earlier runs).
struct RunDone {
  explicit RunDone(pjrt::Event e, int spin_us) : event(std::move(e)), spin(spin_us) {}
  ~RunDone() { (void)Wait(); }
  absl::Status Wait() {
    std::lock_guard<std::mutex> l(mu);
    if (event) {
      status = event->Await(spin);
      event.reset();
      inputs.clear();
    }
    return status;
  }
  std::mutex mu;
  std::optional<pjrt::Event> event;
  int spin;
  absl::Status status;
  std::vector<std::shared_ptr<pjrt::Buffer>> inputs;
};

struct DeviceData {
  Spec spec;
  std::shared_ptr<pjrt::Buffer> buffer;
  std::shared_ptr<pjrt::Client> client;  // whose device holds it
  const pjrt::Device* device = nullptr;
  std::shared_ptr<RunDone> done;  // null for an upload
};

namespace {

std::string KeyOf(const std::vector<Spec>& specs) {
  std::vector<std::string> parts;
  for (const Spec& s : specs) parts.push_back(s.ToString());
  return absl::StrJoin(parts, ";");
}

// The program for `specs`: kept, or made and compiled now.
absl::StatusOr<Compiled> ProgramFor(JitState& st, const std::vector<Spec>& specs) {
  const std::string key = KeyOf(specs);
  {
    std::lock_guard<std::mutex> l(st.mu);
    auto it = st.programs.find(key);
    if (it != st.programs.end()) return it->second;
  }
  ASSIGN_OR_RETURN(Compiled c, st.Compile(specs));
  std::lock_guard<std::mutex> l(st.mu);
  return st.programs.emplace(key, c).first->second;  // a twin compiled meanwhile wins
}

absl::StatusOr<std::vector<Tensor>> RunImpl(JitState& st, const std::vector<Tensor>& inputs) {
  std::vector<Spec> specs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].dtype() == DataType::kString) return InvalidArgument("jit: input %d is a string tensor", k);
    specs.push_back(SpecOf(inputs[k]));
  }
  ASSIGN_OR_RETURN(Compiled c, ProgramFor(st, specs));
  // The whole call is started before anything is waited for (uploads, the
  // run, the copies back), then waited for once: each wait through a GPU
  // plugin costs a thread hand-off, as a session's calls found
  // (ModelRunner::RunExact).
  const int spin = st.plugin.xla ? SessionOptions::kGpuSpinUs : 0;
  std::vector<std::unique_ptr<pjrt::Buffer>> args;
  std::vector<pjrt::Buffer*> raw;
  std::vector<pjrt::Event> released;
  for (const Tensor& t : inputs) {
    ASSIGN_OR_RETURN(PJRT_Buffer_Type type, ToPjrt(t.dtype()));
    ASSIGN_OR_RETURN(pjrt::Client::Upload up, st.client->StartBufferFromHost(t.data(), type, t.dims(), *st.device));
    raw.push_back(up.buffer.get());
    args.push_back(std::move(up.buffer));
    released.push_back(std::move(up.host_released));
  }
  ASSIGN_OR_RETURN(pjrt::LoadedExecutable::Launch run, c.exe->Start(raw));
  if (run.outputs.size() != c.outputs.size())
    return Internal("jit: the program returned %d outputs, not %d", run.outputs.size(), c.outputs.size());
  std::vector<Tensor> results;
  results.reserve(run.outputs.size());  // their memory must not move while copies run into it
  std::vector<pjrt::Event> copied;
  for (size_t k = 0; k < run.outputs.size(); ++k) {
    results.emplace_back(c.outputs[k].dtype, c.outputs[k].dims);
    Tensor& t = results.back();
    if (t.byte_size() == 0) continue;
    ASSIGN_OR_RETURN(pjrt::Event e, run.outputs[k]->StartToHost(t.data(), t.byte_size()));
    copied.push_back(std::move(e));
  }
  // Every event is waited for, so that no copy outlives the memory it uses
  // even when one failed; the run's own error comes first.
  absl::Status st_run = run.done.Await(spin);
  for (pjrt::Event& e : copied) st_run.Update(e.Await(spin));
  for (pjrt::Event& e : released) st_run.Update(e.Await(spin));
  RETURN_IF_ERROR(st_run);
  return results;
}

}  // namespace
}  // namespace internal

const Spec& DeviceValue::spec() const {
  static const Spec kNone;
  return data_ ? data_->spec : kNone;
}

StatusOr<Tensor> DeviceValue::ToHost() const {
  return PublicCall("DeviceValue::ToHost", [&]() -> absl::StatusOr<Tensor> {
    if (!data_) return absl::FailedPreconditionError("an empty device value");
    if (data_->done) RETURN_IF_ERROR(data_->done->Wait());
    Tensor t(data_->spec.dtype, data_->spec.dims);
    if (t.byte_size() > 0) RETURN_IF_ERROR(data_->buffer->ToHost(t.data(), t.byte_size()));
    return t;
  });
}

StatusOr<DeviceValue> Jit::Upload(const Tensor& t) const {
  return PublicCall("Jit::Upload", [&]() -> absl::StatusOr<DeviceValue> {
    if (!state_) return absl::FailedPreconditionError("jit: not made by Jit::Of");
    if (t.dtype() == DataType::kString) return InvalidArgument("jit: a string tensor cannot go to a device");
    ASSIGN_OR_RETURN(PJRT_Buffer_Type type, ToPjrt(t.dtype()));
    ASSIGN_OR_RETURN(auto buffer, state_->client->BufferFromHost(t.data(), type, t.dims(), *state_->device));
    auto d = std::make_shared<internal::DeviceData>();
    d->spec = SpecOf(t);
    d->buffer = std::move(buffer);
    d->client = state_->client;
    d->device = state_->device;
    return internal::Access::MakeDeviceValue(std::move(d));
  });
}

StatusOr<std::vector<DeviceValue>> Jit::RunOnDevice(const std::vector<DeviceValue>& inputs) const {
  return PublicCall("Jit::RunOnDevice", [&]() -> absl::StatusOr<std::vector<DeviceValue>> {
    if (!state_) return absl::FailedPreconditionError("jit: not made by Jit::Of");
    internal::JitState& st = *state_;
    std::vector<Spec> specs;
    std::vector<pjrt::Buffer*> raw;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const auto& d = internal::Access::data(inputs[k]);
      if (!d) return InvalidArgument("jit: input %d is an empty device value", k);
      if (d->client != st.client || d->device != st.device)
        return InvalidArgument("jit: input %d is on another plugin client or device", k);
      specs.push_back(d->spec);
      raw.push_back(d->buffer.get());
    }
    ASSIGN_OR_RETURN(internal::Compiled c, internal::ProgramFor(st, specs));
    ASSIGN_OR_RETURN(pjrt::LoadedExecutable::Launch run, c.exe->Start(raw));
    if (run.outputs.size() != c.outputs.size())
      return Internal("jit: the program returned %d outputs, not %d", run.outputs.size(), c.outputs.size());
    auto done =
        std::make_shared<internal::RunDone>(std::move(run.done), st.plugin.xla ? SessionOptions::kGpuSpinUs : 0);
    for (const DeviceValue& v : inputs) done->inputs.push_back(internal::Access::data(v)->buffer);
    std::vector<DeviceValue> results;
    for (size_t k = 0; k < run.outputs.size(); ++k) {
      auto d = std::make_shared<internal::DeviceData>();
      d->spec = c.outputs[k];
      d->buffer = std::move(run.outputs[k]);
      d->client = st.client;
      d->device = st.device;
      d->done = done;
      results.push_back(internal::Access::MakeDeviceValue(std::move(d)));
    }
    return results;
  });
}

StatusOr<Jit> Jit::Of(Maker make, const SessionOptions& options) {
  return PublicCall("Jit::Of", [&]() -> absl::StatusOr<Jit> {
    if (!make) return InvalidArgument("jit: no program maker");
    if (options.plugin == SessionOptions::kNoPlugin) return InvalidArgument("jit: programs need a plugin to run on");
    auto st = std::make_shared<internal::JitState>();
    st->make = std::move(make);
    st->options = options;
    ASSIGN_OR_RETURN(st->client, GetClient(options));
    if (options.device < 0) return InvalidArgument("jit: programs run on one device, not %d", options.device);
    ASSIGN_OR_RETURN(st->device, st->client->device(options.device));
    st->compile_options = pjrt::CompileOptionsFor(*st->device);
    st->plugin = TraitsOf(*st->client->plugin());
    st->cache = std::make_unique<ProgramCache>(st->client);
    st->cache->OpenPersistent(options);
    Jit j;
    j.state_ = std::move(st);
    return j;
  });
}

StatusOr<Jit> Jit::OfFunction(Program::Fn fn, const SessionOptions& options, const std::string& name) {
  return Of([fn = std::move(fn), name](const std::vector<Spec>& specs) { return Program::Trace(fn, specs, name); },
            options);
}

StatusOr<std::vector<Tensor>> Jit::Run(const std::vector<Tensor>& inputs) const {
  return PublicCall("Jit::Run", [&]() -> absl::StatusOr<std::vector<Tensor>> {
    if (!state_) return absl::FailedPreconditionError("jit: not made by Jit::Of");
    return internal::RunImpl(*state_, inputs);
  });
}

int64_t Jit::compiled() const {
  if (!state_) return 0;
  std::lock_guard<std::mutex> l(state_->mu);
  return state_->compiled;
}

int64_t Jit::loaded_from_cache() const {
  if (!state_) return 0;
  std::lock_guard<std::mutex> l(state_->mu);
  return state_->loaded;
}

}  // namespace xonnx::program
