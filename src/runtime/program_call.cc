// A call of one program on the plugin: its inputs uploaded (or read in
// place, or already on the device), the run, and its results copied back
// (or left on the device). ModelRunner::RunExact.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/monotonic_clock.h"
#include "base/status.h"
#include "runtime/dtype.h"
#include "runtime/model_runner.h"
#include "runtime/xonnx_flags.h"

namespace xonnx {

// Named, not anonymous: ModelRunner::Call, declared in a header, holds one.
namespace program_call {

// When the steps of one call were done, from the plugin's events: each
// slot holds the steady clock's reading (ns) when the last event of its
// kind became ready, 0 until then.
struct CallTimeline : std::enable_shared_from_this<CallTimeline> {
  int64_t start = Now();
  std::atomic<int64_t> uploaded{0}, executed{0}, downloaded{0};

  static int64_t Now() { return MonotonicNs(); }
  // Marks `slot` when `event` is ready (from the plugin's thread; the
  // callback keeps the timeline alive). A plugin without callbacks leaves
  // the slot unmarked.
  void Note(pjrt::Event& event, std::atomic<int64_t> CallTimeline::*slot) {
    (void)event.OnReady([self = shared_from_this(), slot] {
      std::atomic<int64_t>& s = self.get()->*slot;
      int64_t now = Now(), seen = s.load();
      while (seen < now && !s.compare_exchange_weak(seen, now)) {
      }
    });
  }
  // The call and its phases as slices of `trace`, once every event was
  // waited for.
  void TraceTo(TraceRecorder& trace, const std::string& program) const {
    int64_t end = std::max(Now(), downloaded.load()), tid = TraceRecorder::ThreadId();
    int64_t up = std::max(start, uploaded.load()), ex = std::max(up, executed.load() ? executed.load() : end);
    int64_t down = std::max(ex, downloaded.load() ? downloaded.load() : end);
    trace.Slice("call", "call", start, end, tid, {{"program", program}});
    trace.Slice("upload", "phase", start, up, tid);
    trace.Slice("execute", "phase", up, ex, tid);
    trace.Slice("download", "phase", ex, down, tid);
  }
  // Adds this call's phases to `total`, once every event was waited for.
  // An unmarked slot counts its phase's time in the one after it.
  void AddTo(std::mutex& mu, RunPhases& total) const {
    int64_t down = downloaded.load(), ex = executed.load();
    if (!down) down = Now();
    if (!ex) ex = down;
    int64_t up = std::max(start, uploaded.load());
    ex = std::max(ex, up);
    down = std::max(down, ex);
    std::lock_guard<std::mutex> lock(mu);
    total.calls++;
    total.upload_ms += (up - start) * 1e-6;
    total.execute_ms += (ex - up) * 1e-6;
    total.download_ms += (down - ex) * 1e-6;
  }
};

}  // namespace program_call

using program_call::CallTimeline;

namespace {

// A call its bounds stopped (CANCELLED or DEADLINE_EXCEEDED from the
// plugin while they hold): the call's own message, and where the plugin
// stopped it (its message less the reason, which the call's repeats). OK
// for any other outcome.
absl::Status StoppedByBounds(const absl::Status& run, const CallBounds& bounds, const std::string& file) {
  if (!absl::IsCancelled(run) && !absl::IsDeadlineExceeded(run)) return absl::OkStatus();
  absl::Status b = bounds.Check(file);
  if (b.ok()) return b;
  absl::string_view where = run.message();
  where = where.substr(0, std::min(where.size(), where.rfind(": ")));
  return absl::Status(b.code(), absl::StrCat(b.message(), " (stopped at ", where, ")"));
}

// The public types of a program's computed outputs.
absl::StatusOr<std::vector<DataType>> OutputTypes(const Program& prog) {
  std::vector<DataType> types;
  for (const auto& info : prog.computed) {
    ASSIGN_OR_RETURN(DataType t, FromHlo(info.type));
    types.push_back(t);
  }
  return types;
}

}  // namespace

// One call's transfers and the memory they use: everything here outlives
// the waits for them.
struct ModelRunner::Call {
  std::shared_ptr<CallTimeline> timeline = std::make_shared<CallTimeline>();
  std::chrono::steady_clock::time_point spin_until;     // waits poll until then, then sleep
  std::vector<MappedStaging::Lease> leases;             // staging blocks (declared first, gone last)
  std::vector<std::unique_ptr<pjrt::Buffer>> uploaded;  // kept until the run is over
  std::vector<pjrt::Event> released;                    // the inputs' host memory, let go of
  std::vector<pjrt::Buffer*> args;
  std::vector<Tensor> computed;
  std::vector<pjrt::Event> copies;
  std::vector<size_t> copied;     // per copy: its output
  std::vector<void*> staged_out;  // per output: its leased block, or null

  int spin_left() const {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(spin_until - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  }
  // Every started upload is waited for before returning, whatever fails:
  // the plugin may still be reading the caller's inputs.
  absl::Status FinishUploads(absl::Status st) {
    for (auto& e : released) st.Update(e.Await(spin_left()));
    return st;
  }
};

absl::Status ModelRunner::StartInputs(Call& c, const Program& prog, const std::map<std::string, Tensor>& inputs,
                                      int dev, DeviceIo* io) {
  const std::string& file = path();
  for (const std::string& name : prog.params) {
    if (io)
      if (auto on_device = io->inputs.find(name); on_device != io->inputs.end()) {
        // The program was found for the host tensor's shape: the buffer must have it.
        absl::StatusOr<std::vector<int64_t>> dims = on_device->second->Dimensions();
        if (!dims.ok() || *dims != inputs.at(name).dims())
          return InvalidArgument("%s: input '%s': the device buffer given is not %s", file, name,
                                 inputs.at(name).ShapeString());
        absl::StatusOr<PJRT_Buffer_Type> type = on_device->second->ElementType(),
                                         want = ToPjrt(inputs.at(name).dtype());
        if (!type.ok() || !want.ok() || *type != *want)
          return InvalidArgument("%s: input '%s': the device buffer given is not of type %s", file, name,
                                 DataTypeName(inputs.at(name).dtype()));
        c.args.push_back(on_device->second.get());
        continue;
      }
    const Tensor& t = inputs.at(name);
    auto type = ToPjrt(t.dtype());
    if (!type.ok()) return Annotate(type.status(), absl::StrCat(file, ": input '", name, "'"));
    const void* src = t.data();
    if (auto lease = Stage(t.byte_size())) {
      std::memcpy(lease.data(), src, t.byte_size());
      src = lease.data();
      c.leases.push_back(std::move(lease));
    } else if (!xla_plugin_) {  // read in place: see RunExact in model_runner.h
      auto in_place = client_->BufferFromHostZeroCopy(src, *type, t.dims(), *devices_[dev], nullptr);
      if (!in_place.ok()) return Annotate(in_place.status(), absl::StrCat(file, ": input '", name, "'"));
      c.args.push_back(in_place->get());
      c.uploaded.push_back(*std::move(in_place));
      continue;
    }
    auto up = client_->StartBufferFromHost(src, *type, t.dims(), *devices_[dev]);
    if (!up.ok()) return Annotate(up.status(), absl::StrCat(file, ": input '", name, "'"));
    c.timeline->Note(up->host_released, &CallTimeline::uploaded);
    c.args.push_back(up->buffer.get());
    c.uploaded.push_back(std::move(up->buffer));
    c.released.push_back(std::move(up->host_released));
  }
  for (const auto& w : prog.weights) c.args.push_back(w.get());
  return absl::OkStatus();
}

absl::Status ModelRunner::StartOutputs(Call& c, const Program& prog, pjrt::LoadedExecutable::Launch& launch,
                                       DeviceIo* io) {
  ASSIGN_OR_RETURN(std::vector<DataType> output_types, OutputTypes(prog));
  for (size_t k = 0; k < prog.computed.size(); ++k) {
    const auto& info = prog.computed[k];
    c.staged_out.push_back(nullptr);
    if (io && io->keep.count(info.name)) {
      io->kept[info.name] = std::move(launch.outputs[k]);
      c.computed.emplace_back();
      continue;
    }
    c.computed.push_back(Tensor::ForOverwrite(output_types[k], info.dims));
    void* dst = c.computed.back().data();
    if (auto lease = Stage(c.computed.back().byte_size())) {
      dst = c.staged_out.back() = lease.data();
      c.leases.push_back(std::move(lease));
    }
    auto copy = launch.outputs[k]->StartToHost(dst, c.computed.back().byte_size());
    if (!copy.ok()) return Annotate(copy.status(), absl::StrCat(path(), ": output '", info.name, "'"));
    c.timeline->Note(*copy, &CallTimeline::downloaded);
    c.copies.push_back(*std::move(copy));
    c.copied.push_back(k);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> ModelRunner::RunExact(const std::map<std::string, Tensor>& inputs, int dev,
                                                          const InputStructure* structure, std::vector<int>* counts,
                                                          const CallBounds* bounds, DeviceIo* io) {
  const std::string& file = path();
  // Whatever happens, the device inputs are not to be used again.
  struct ClearInputs {
    DeviceIo* io;
    ~ClearInputs() {
      if (io) io->inputs.clear();
    }
  } clear_inputs{io};
  // Device inputs give no values: a program that needs one compiled in
  // (a binding, made before or while it is found) cannot take it, and would
  // otherwise read the host tensor's stale bytes.
  auto device_inputs_are_parameters = [&](const Program& prog) -> absl::Status {
    if (!io) return absl::OkStatus();
    for (const auto& [name, buffer] : io->inputs)
      if (std::find(prog.params.begin(), prog.params.end(), name) == prog.params.end())
        return absl::FailedPreconditionError(
            absl::StrCat(file, ": input '", name, "' decides the program's shapes, and cannot stay on the device"));
    return absl::OkStatus();
  };
  // One call is put to the plugin whole (uploads, the run, the copies back)
  // and waited for once at the end: the plugin orders the steps on the
  // device, and each wait in between would cost a round trip through the
  // host while the device idles.
  for (int attempt = 0;; ++attempt) {
    Call c;
    c.spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_wait_us_);
    ASSIGN_OR_RETURN(std::shared_ptr<const Program> held, Get(inputs, dev, structure, bounds));
    const Program& prog = *held;
    RETURN_IF_ERROR(device_inputs_are_parameters(prog));
    if (bounds) RETURN_IF_ERROR(bounds->Check(file));
    if (absl::Status started = StartInputs(c, prog, inputs, dev, io); !started.ok()) return c.FinishUploads(started);
    auto launch = Launch(prog, c.args, bounds);
    absl::Status run, copy_status;
    if (launch.ok()) {
      c.timeline->Note(launch->done, &CallTimeline::executed);
      copy_status = StartOutputs(c, prog, *launch, io);
      // A failed run fails its copies too: its own error is the one to report.
      run = launch->done.Await(c.spin_left());
      for (size_t k = 0; k < c.copies.size(); ++k)
        if (absl::Status st = c.copies[k].Await(c.spin_left()); !st.ok() && copy_status.ok())
          copy_status = Annotate(st, absl::StrCat(file, ": output '", prog.computed[c.copied[k]].name, "'"));
    } else {
      run = launch.status();
    }
    run = c.FinishUploads(run);
    if (bounds)
      if (absl::Status stopped = StoppedByBounds(run, *bounds, file); !stopped.ok()) return stopped;
    if (!run.ok()) {
      // (Not with device inputs: the first attempt may have consumed them.)
      if (absl::IsDataLoss(run) && !prog.cache_keys.empty() && attempt == 0 && !(io && !io->inputs.empty())) {
        programs_.Drop(prog, run);  // a damaged cache entry: compile afresh, once
        continue;
      }
      return Annotate(run, file);
    }
    RETURN_IF_ERROR(copy_status);
    std::vector<Tensor>& computed = c.computed;
    for (size_t k = 0; k < c.staged_out.size(); ++k)
      if (c.staged_out[k]) std::memcpy(computed[k].data(), c.staged_out[k], computed[k].byte_size());
    if (!prog.checks.empty()) {
      RETURN_IF_ERROR(CheckIndexRanges(prog.checks, computed.back(), file));
      computed.pop_back();
    }
    c.timeline->AddTo(phases_mu_, phases_);
    if (trace_) {
      ShapeMap shapes;
      for (const auto& [name, t] : inputs) shapes[name] = t.dims();
      c.timeline->TraceTo(*trace_, ShapeKey(shapes));
    }
    if (counts) *counts = prog.output_counts;
    // Each computed output moved, not copied (a conditional expression
    // between the program's const string outputs and a moved tensor would
    // be a const value, and copied).
    std::vector<Tensor> outs;
    outs.reserve(prog.output_index.size());
    for (size_t k = 0; k < prog.output_index.size(); ++k) {
      if (prog.output_index[k] < 0)
        outs.push_back(prog.string_outputs[k]);
      else
        outs.push_back(std::move(computed[prog.output_index[k]]));
    }
    return outs;
  }
}

absl::Status CheckIndexRanges(const std::vector<onnx_import::IndexCheck>& checks, const Tensor& ranges,
                              const std::string& file) {
  if (ranges.element_count() != 2 * static_cast<int64_t>(checks.size()))
    return Internal("%s: the program returned %d index bounds for %d checks", file, ranges.element_count(),
                    checks.size());
  const int64_t* r = ranges.data_as<int64_t>();
  for (size_t k = 0; k < checks.size(); ++k) {
    const int64_t lo = r[2 * k], hi = r[2 * k + 1];
    if (lo > hi) continue;  // no index was read (a loop that ran no iteration)
    const auto& c = checks[k];
    if (lo < c.lo || hi > c.hi)
      return InvalidArgument("%s: %s: %d is outside [%d, %d]", file, c.what, lo < c.lo ? lo : hi, c.lo, c.hi);
  }
  return absl::OkStatus();
}

absl::StatusOr<pjrt::LoadedExecutable::Launch> ModelRunner::Launch(const Program& prog,
                                                                   absl::Span<pjrt::Buffer* const> args,
                                                                   const CallBounds* bounds) {
  // Only xonnx's CPU plugin knows xonnx's extensions: the bounds, and a
  // trace of its kernels when the session records one.
  PJRT_XonnxRunBounds_Extension bounds_ext;
  PJRT_XonnxKernelTrace_Extension trace_ext;
  PJRT_Extension_Base* chain = nullptr;
  if (!xla_plugin_ && bounds && bounds->bounded()) {
    bounds_ext = bounds->Extension();
    bounds_ext.base.next = chain;
    chain = &bounds_ext.base;
  }
  if (!xla_plugin_ && trace_) {
    trace_ext = trace_->KernelExtension();
    trace_ext.base.next = chain;
    chain = &trace_ext.base;
  }
  return prog.exe->Start(args, chain);
}

MappedStaging::Lease ModelRunner::Stage(size_t bytes) {
  if (!staging_ || bytes == 0) return {};
  return staging_->Acquire(bytes);
}

RunPhases ModelRunner::phases() const {
  std::lock_guard<std::mutex> lock(phases_mu_);
  return phases_;
}

}  // namespace xonnx
