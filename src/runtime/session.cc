// The public Session: opens a model, and runs calls through buckets,
// device splits and graph stages on the model runner (runtime/model_runner.h).
#include "xonnx/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/exceptions.h"
#include "base/logging.h"
#include "base/monotonic_clock.h"
#include "base/status.h"
#include "hlo/printer.h"
#include "hlo/proto_codec.h"
#include "hlo/stablehlo.h"
#include "onnx/graph_split.h"
#include "onnx/importer.h"
#include "onnx/model.h"
#include "onnx/tensor_proto.h"
#include "pjrt/client.h"
#include "runtime/batching.h"
#include "runtime/buckets.h"
#include "runtime/clients.h"
#include "runtime/dtype.h"
#include "runtime/graph_stages.h"
#include "runtime/model_runner.h"
#include "runtime/public_status.h"
#include "runtime/session_impl.h"
#include "runtime/threads.h"

namespace xonnx {

std::string Version() { return XONNX_VERSION; }

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() {
  // Calls in flight stop, queued ones fail at once; all of them finish
  // while the session is whole.
  if (impl_) {
    impl_->closing.Cancel();
    // The calls still running use the pool until they end.
    if (impl_->pool) impl_->pool->Shutdown();
    if (impl_->trace)
      if (Status st = WriteProfile(); !st.ok()) LOG(WARNING) << st.message();
  }
}

StatusOr<std::unique_ptr<Session>> Session::Open(const std::string& model_path, const SessionOptions& options) {
  return PublicCall(model_path, [&]() -> absl::StatusOr<std::unique_ptr<Session>> {
    InitLogging();
    auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(std::shared_ptr<onnx_import::LoadedModel> model, onnx_import::LoadModel(model_path));
    ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, Impl::Open(std::move(model), options));
    impl->load_ms = MsSince(start);
    return std::unique_ptr<Session>(new Session(std::move(impl)));
  });
}

absl::StatusOr<std::shared_ptr<onnx_import::LoadedModel>> LoadRewritten(
    const std::string& path, const std::function<bool(onnx::ModelProto*)>& rewrite, const std::string& tag,
    bool* rewritten) {
  ASSIGN_OR_RETURN(std::shared_ptr<onnx_import::LoadedModel> model, onnx_import::LoadModel(path));
  *rewritten = rewrite(&model->proto);
  if (*rewritten) onnx_import::NoteRewrite(*model, tag);
  return model;
}

absl::StatusOr<std::unique_ptr<Session::Impl>> Session::Impl::OpenRewritten(
    const std::string& path, const SessionOptions& options, const std::function<bool(onnx::ModelProto*)>& rewrite,
    const std::string& tag, bool* rewritten) {
  InitLogging();
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::shared_ptr<onnx_import::LoadedModel> model, LoadRewritten(path, rewrite, tag, rewritten));
  ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, Open(std::move(model), options));
  impl->load_ms = MsSince(start);
  return impl;
}

StatusOr<std::unique_ptr<Session>> Session::OpenFromMemory(const void* bytes, size_t size, const std::string& name,
                                                           const SessionOptions& options,
                                                           const std::string& external_data_dir) {
  return PublicCall(name, [&]() -> absl::StatusOr<std::unique_ptr<Session>> {
    InitLogging();
    auto start = std::chrono::steady_clock::now();
    if (!bytes && size) return InvalidArgument("%s: no model bytes (a null pointer of size %d)", name, size);
    ASSIGN_OR_RETURN(std::shared_ptr<onnx_import::LoadedModel> model,
                     onnx_import::LoadModelFromBytes(absl::string_view(static_cast<const char*>(bytes), size), name,
                                                     external_data_dir));
    ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, Impl::Open(std::move(model), options));
    impl->load_ms = MsSince(start);
    return std::unique_ptr<Session>(new Session(std::move(impl)));
  });
}

const std::vector<TensorSpec>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorSpec>& Session::outputs() const { return impl_->outputs; }
double Session::load_ms() const { return impl_->load_ms; }
double Session::last_compile_ms() const { return impl_->runner->programs().last_compile_ms(); }
std::string Session::LastProgramSummary() const {
  if (impl_->stages.split()) {
    std::vector<std::string> parts;
    impl_->stages.ForEachStage([&](int k, const ModelRunner& stage) {
      parts.push_back(absl::StrCat("part ", k, ": ", stage.programs().last_summary()));
    });
    return absl::StrCat(impl_->stages.graph_split().host_nodes.size(), " host node(s), ", parts.size(),
                        " device program(s) compiled", parts.empty() ? "" : "; ", absl::StrJoin(parts, "; "));
  }
  return impl_->runner->programs().last_summary();
}

std::string Session::DevicesText() const {
  std::vector<std::string> names;
  for (const pjrt::Device* d : impl_->runner->devices())
    names.push_back(d->description.empty() ? absl::StrCat("id ", d->id) : d->description);
  return absl::StrCat(names.size() > 1 ? "devices " : "device ", absl::StrJoin(names, ", "));
}

std::string Session::DeviceSummary() const {
  const auto& c = impl_->runner->client();
  if (!c) return "no plugin (the session describes and converts the model; it cannot run it)";
  return absl::StrFormat("%s (PjRT %d.%d), platform %s [%s], %s", c->plugin()->path(), c->plugin()->major_version(),
                         c->plugin()->minor_version(), c->platform_name(), c->platform_version(), DevicesText());
}

ModelInfo Session::Info() const {
  ModelInfo info;
  const onnx_import::LoadedModel& model = impl_->runner->model();
  const auto& p = model.proto;
  info.producer = absl::StrCat(p.producer_name(), p.producer_version().empty() ? "" : " ", p.producer_version());
  info.producer_name = p.producer_name();
  info.producer_version = p.producer_version();
  info.domain = p.domain();
  info.doc_string = p.doc_string();
  info.model_version = p.model_version();
  info.graph_name = p.graph().name();
  info.graph_doc_string = p.graph().doc_string();
  for (const auto& e : p.metadata_props()) info.metadata_props[e.key()] = e.value();
  info.ir_version = p.ir_version();
  info.opsets = model.opsets;
  for (const auto& n : p.graph().node())
    ++info.op_counts[n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type()];
  for (const auto& t : p.graph().initializer()) {
    // Checked: an unchecked model's dims may claim any size (a fuzzing
    // finding); a size that cannot exist counts nothing.
    auto type = onnx_import::HloType(t.data_type());
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    if (!type.ok() || std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) continue;
    std::optional<int64_t> bytes = hlo::Shape(*type, dims).CheckedByteSize();
    if (bytes && *bytes <= std::numeric_limits<int64_t>::max() - info.initializer_bytes)
      info.initializer_bytes += *bytes;
  }
  for (const auto& u : onnx_import::FindUnsupportedOps(model))
    info.unsupported.push_back(onnx_import::DescribeUnsupported({u}));
  const onnx_import::GraphSplit& split = impl_->stages.graph_split();
  info.host_nodes = GraphStages::NodeLabels(model, split.host_nodes);
  for (size_t k = 0; k < split.host_nodes.size(); ++k)
    if (auto why = split.host_control_flow.find(split.host_nodes[k]); why != split.host_control_flow.end())
      absl::StrAppend(&info.host_nodes[k], " (for ", why->second, ")");
  info.value_nodes = GraphStages::NodeLabels(model, split.value_nodes);
  if (split.split()) {
    info.device_programs = 0;
    for (const auto& s : split.segments) info.device_programs += !s.on_host;
  }
  return info;
}

StatusOr<ShapeMap> Session::ResolveShapes(const ShapeMap& given, int64_t dynamic_default) const {
  return PublicCall(impl_->path(), [&]() -> absl::StatusOr<ShapeMap> {
    ShapeMap out;
    for (const auto& [name, dims] : given) {
      bool known = false;
      for (const auto& s : impl_->inputs) known |= s.name == name;
      if (!known) return InvalidArgument("%s: the model has no input named '%s'", impl_->path(), name);
    }
    for (const auto& s : impl_->inputs) {
      auto it = given.find(s.name);
      if (it != given.end()) {
        out[s.name] = it->second;
        continue;
      }
      std::vector<int64_t> d = s.dims;
      for (auto& x : d)
        if (x < 0) x = dynamic_default;
      out[s.name] = d;
    }
    return out;
  });
}

Status Session::Prepare(const std::map<std::string, Tensor>& inputs) {
  return PublicCall(impl_->path(), [&]() -> absl::Status {
    // Run checks the inputs, compiles on first use and finishes a plugin's lazy
    // compilation; the time of all of it is the compile time.
    auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(FromPublic(Run(inputs).status()));
    impl_->runner->programs().NoteCompileTime(MsSince(start));
    return absl::OkStatus();
  });
}

StatusOr<HloDump> Session::DumpHlo(const ShapeMap& shapes, int64_t batch, bool allow_partial, bool optimized) const {
  return PublicCall(impl_->path(), [&]() -> absl::StatusOr<HloDump> {
    ASSIGN_OR_RETURN(ShapeMap all, FromPublic(ResolveShapes(shapes, batch)));
    HloDump dump;
    const ModelRunner* source = impl_->runner.get();
    if (impl_->stages.split()) {
      // Only the program before the first split has shapes known now.
      const auto& segments = impl_->stages.graph_split().segments;
      const auto& first = segments[0];
      const auto& second = segments[first.on_host ? 0 : 1];
      const onnx::NodeProto& next = impl_->runner->model().proto.graph().node(second.nodes[0]);
      if (first.on_host)
        return Unimplemented("%s: the graph starts on the host (node %s): its programs are compiled when it runs",
                             impl_->path(), onnx_import::NodeLabel(next));
      std::map<std::string, DataType> types;
      for (const auto& s : impl_->inputs) types[s.name] = s.dtype;
      ASSIGN_OR_RETURN(source, impl_->stages.Stage(*impl_->runner, 0, types));
      for (auto it = all.begin(); it != all.end();)
        it = std::find(first.inputs.begin(), first.inputs.end(), it->first) == first.inputs.end() ? all.erase(it)
                                                                                                  : std::next(it);
      dump.partial_error = absl::StrCat("node ", onnx_import::NodeLabel(next),
                                        second.on_host ? " runs on the host" : " needs a value computed at run time",
                                        "; this is the program before it (the later ones are compiled "
                                        "for the shapes and values met when the model runs)");
    }
    ASSIGN_OR_RETURN(onnx_import::ImportedModule imported, source->BuildModule(all, {}, allow_partial, optimized));
    if (dump.partial_error.empty()) dump.partial_error = imported.partial_error;
    for (const onnx_import::IndexCheck& c : imported.checks)
      dump.index_checks.push_back(absl::StrCat(c.what, " in [", c.lo, ", ", c.hi, "]"));
    const hlo::Module* m = imported.module.get();
    hlo::PrintOptions po;
    po.max_constant_elements = 16;
    dump.text = hlo::ToText(*m, po);
    dump.proto = hlo::SerializeModule(*m);
    ASSIGN_OR_RETURN(dump.stablehlo, hlo::ToStableHlo(*m));
    return dump;
  });
}

StatusOr<std::vector<Tensor>> Session::Run(const std::map<std::string, Tensor>& inputs, const RunOptions& run) {
  return PublicCall(impl_->path(), [&]() -> absl::StatusOr<std::vector<Tensor>> {
    Impl& m = *impl_;
    RETURN_IF_ERROR(m.CheckRunnable());
    const CallBounds bounds(run, m.options, m.closing);
    if (m.value_io) {
      for (const auto* specs : {&m.inputs, &m.outputs})
        for (const auto& s : *specs)
          if (s.sequence || s.optional)
            return InvalidArgument("%s: '%s' is a%s; run this model with Session::RunValues", m.path(), s.name,
                                   s.optional ? "n optional" : " sequence");
    }
    RETURN_IF_ERROR(m.CheckInputs(inputs));
    if (m.stages.split()) return m.stages.Run(*m.runner, m.outputs, inputs, &bounds);
    // The batch: dimension 0 of the inputs declaring it dynamic. Inputs
    // whose dynamic first dimensions differ ([M, K] by [K, N]) have no
    // batch in common: the call runs whole, as given, unless batch buckets
    // or several devices ask to cut it into rows.
    int64_t rows = -1;
    std::string first;
    for (const auto& s : m.inputs) {
      if (!Buckets::IsBatched(s)) continue;
      int64_t r = inputs.at(s.name).dims()[0];
      if (rows >= 0 && r != rows) {
        if (!m.buckets.batch().empty() || m.num_devices() > 1)
          return InvalidArgument(
              "%s: input '%s' has %d rows in its dynamic dimension 0 and input '%s' has %d: batch buckets and "
              "splits across devices need one batch in every input whose first dimension is dynamic",
              m.path(), s.name, r, first, rows);
        return m.RunRows(inputs, 0, 0, 0, 0, bounds);
      }
      rows = r;
      first = s.name;
    }
    if (rows <= 0) return m.RunRows(inputs, 0, std::max<int64_t>(rows, 0), std::max<int64_t>(rows, 0), 0, bounds);
    // Contiguous shares of the batch per device, each cut into runs no larger
    // than the largest bucket.
    int64_t devices = std::min<int64_t>(m.num_devices(), rows);
    int64_t share = (rows + devices - 1) / devices;
    int64_t cap = m.buckets.batch().empty() ? rows : m.buckets.batch().back();
    struct Part {
      int64_t begin, rows;
    };
    std::vector<std::vector<Part>> per_device(devices);
    for (int64_t d = 0, begin = 0; d < devices && begin < rows; ++d) {
      int64_t end = std::min(rows, begin + share);
      for (int64_t b = begin; b < end; b += cap) per_device[d].push_back({b, std::min(cap, end - b)});
      begin = end;
    }
    auto run_device = [&](int d) -> absl::StatusOr<std::vector<std::vector<Tensor>>> {
      std::vector<std::vector<Tensor>> outs;
      for (const Part& p : per_device[d]) {
        ASSIGN_OR_RETURN(std::vector<Tensor> o, m.RunRows(inputs, p.begin, p.rows, rows, d, bounds));
        outs.push_back(std::move(o));
      }
      return outs;
    };
    std::vector<absl::StatusOr<std::vector<std::vector<Tensor>>>> results(devices, absl::UnknownError("not run"));
    m.pool->ParallelFor(devices, devices, [&](int d) {
      results[d] = run_device(d);
      return true;
    });
    std::vector<std::vector<Tensor>> parts;  // per run, in batch order
    std::vector<int64_t> part_rows;
    for (int d = 0; d < devices; ++d) {
      if (!results[d].ok()) return results[d].status();
      for (size_t k = 0; k < results[d]->size(); ++k) {
        parts.push_back(std::move((*results[d])[k]));
        part_rows.push_back(per_device[d][k].rows);
      }
    }
    if (parts.size() == 1) return std::move(parts[0]);
    std::vector<Tensor> outs;
    for (size_t k = 0; k < parts[0].size(); ++k) {
      std::vector<Tensor> pieces;
      for (size_t p = 0; p < parts.size(); ++p) {
        if (!m.buckets.BatchedOutput(k, parts[p][k], part_rows[p]))
          return InvalidArgument(
              "%s: output '%s' has no batch dimension, so a batch of %d cannot be split into runs "
              "(largest bucket %d, %d devices); use a larger bucket",
              m.path(), k < m.outputs.size() ? m.outputs[k].name : "?", rows, cap, devices);
        pieces.push_back(std::move(parts[p][k]));
      }
      ASSIGN_OR_RETURN(Tensor joined, ConcatRows(pieces));
      outs.push_back(std::move(joined));
    }
    return outs;
  });
}

StatusOr<std::vector<Value>> Session::RunValues(const std::map<std::string, Value>& inputs, const RunOptions& run) {
  return PublicCall(impl_->path(), [&]() -> absl::StatusOr<std::vector<Value>> {
    Impl& m = *impl_;
    RETURN_IF_ERROR(m.CheckRunnable());
    const std::string& file = m.path();
    if (!m.value_io) {
      std::map<std::string, Tensor> tensors;
      for (const auto& [name, v] : inputs) {
        if (v.kind != Value::Kind::kTensor)
          return InvalidArgument("%s: input '%s' is given as a %s, the model takes a tensor", file, name,
                                 v.kind == Value::Kind::kNone ? "empty optional" : "sequence");
        tensors[name] = v.tensor;
      }
      ASSIGN_OR_RETURN(std::vector<Tensor> outs, FromPublic(Run(tensors, run)));
      std::vector<Value> values;
      for (auto& t : outs) values.push_back(Value::Of(std::move(t)));
      return values;
    }
    RETURN_IF_ERROR(m.CheckInputNames(inputs));
    InputStructure structure;
    std::map<std::string, Tensor> flat;
    auto check_type = [&](const TensorSpec& s, const Tensor& t, const std::string& what) -> absl::Status {
      if (t.dtype() != s.dtype)
        return InvalidArgument("%s: %s has type %s, the model expects %s", file, what, DataTypeName(t.dtype()),
                               DataTypeName(s.dtype));
      if (!s.dims.empty() && t.dims().size() != s.dims.size())
        return InvalidArgument("%s: %s has rank %d, the model expects %d", file, what, t.dims().size(), s.dims.size());
      return absl::OkStatus();
    };
    for (const auto& s : m.inputs) {
      auto it = inputs.find(s.name);
      if (it == inputs.end() || it->second.kind == Value::Kind::kNone) {
        if (!s.optional)
          return InvalidArgument("%s: input '%s' is %s, but it is not optional", file, s.name,
                                 it == inputs.end() ? "missing from the call" : "empty");
        structure.absent.insert(s.name);
        continue;
      }
      const Value& v = it->second;
      if (s.sequence != (v.kind == Value::Kind::kSequence))
        return InvalidArgument("%s: input '%s' must be a %s", file, s.name, s.sequence ? "sequence" : "tensor");
      if (!s.sequence) {
        RETURN_IF_ERROR(check_type(s, v.tensor, absl::StrCat("input '", s.name, "'")));
        flat[s.name] = v.tensor;
        continue;
      }
      structure.lengths[s.name] = v.elements.size();
      for (size_t i = 0; i < v.elements.size(); ++i) {
        std::string name = onnx_import::SequenceElementName(s.name, i);
        RETURN_IF_ERROR(check_type(s, v.elements[i], absl::StrCat("input '", s.name, "' element ", i)));
        flat[name] = v.elements[i];
      }
    }
    std::vector<int> counts;
    const CallBounds bounds(run, m.options, m.closing);
    ASSIGN_OR_RETURN(std::vector<Tensor> outs, m.runner->RunExact(flat, 0, &structure, &counts, &bounds));
    std::vector<Value> values;
    size_t k = 0;
    for (int c : counts) {
      if (c == onnx_import::ImportedModule::kNoneOutput) {
        values.push_back(Value::None());
      } else if (c == onnx_import::ImportedModule::kTensorOutput) {
        values.push_back(Value::Of(std::move(outs.at(k++))));
      } else {
        std::vector<Tensor> elements;
        for (int i = 0; i < c; ++i) elements.push_back(std::move(outs.at(k++)));
        values.push_back(Value::Sequence(std::move(elements)));
      }
    }
    return values;
  });
}

std::future<StatusOr<std::vector<Tensor>>> Session::RunAsync(std::map<std::string, Tensor> inputs, RunOptions run) {
  auto done = std::make_shared<std::promise<StatusOr<std::vector<Tensor>>>>();
  std::future<StatusOr<std::vector<Tensor>>> result = done->get_future();
  RunAsync(std::move(inputs), std::move(run),
           [done](StatusOr<std::vector<Tensor>> out) { done->set_value(std::move(out)); });
  return result;
}

void Session::RunAsync(std::map<std::string, Tensor> inputs, RunOptions run,
                       std::function<void(StatusOr<std::vector<Tensor>>)> done) {
  // The call outlives the caller's frame: views of its memory become copies.
  for (auto& [name, t] : inputs)
    if (t.is_view()) t = t.Owned();
  // Two calls per device keep one call's transfers beside another's compute.
  impl_->async->Submit([this, done = std::move(done), in = std::move(inputs), run = std::move(run)] {
    StatusOr<std::vector<Tensor>> out = Run(in, run);
    try {
      done(std::move(out));
    } catch (...) {
      // The caller's callback threw: nothing above this worker can take it.
      LOG(ERROR) << StatusOfCurrentException("RunAsync's callback").message();
    }
  });
}

Status Session::WriteProfile() const {
  return PublicCall(impl_->path(), [&]() -> absl::Status {
    if (!impl_->trace)
      return absl::FailedPreconditionError(
          absl::StrCat(impl_->path(), ": no profile is recorded (set SessionOptions::profile_file)"));
    return impl_->trace->Write(impl_->options.profile_file);
  });
}

const std::vector<int64_t>& Session::batch_buckets() const { return impl_->buckets.batch(); }
int Session::num_devices() const { return impl_->num_devices(); }
std::string Session::cache_dir() const { return impl_->runner->programs().dir(); }
CompileStats Session::compile_stats() const {
  CompileStats total = impl_->runner->programs().stats();
  // A split graph's programs belong to its segments.
  impl_->stages.ForEachStage([&](int, const ModelRunner& stage) {
    CompileStats s = stage.programs().stats();
    total.compiled += s.compiled;
    total.from_cache += s.from_cache;
    total.cache_rejected += s.cache_rejected;
    for (const auto& msg : s.cache_messages) total.cache_messages.push_back(msg);
  });
  return total;
}

RunPhases Session::run_phases() const {
  RunPhases total = impl_->runner->phases();
  auto add = [&](const RunPhases& p) {
    total.calls += p.calls;
    total.upload_ms += p.upload_ms;
    total.execute_ms += p.execute_ms;
    total.download_ms += p.download_ms;
  };
  impl_->stages.ForEachStage([&](int, const ModelRunner& stage) { add(stage.phases()); });
  return total;
}

}  // namespace xonnx
