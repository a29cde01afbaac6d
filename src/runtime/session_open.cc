// Opening a session: checks of the loaded model, its input and output
// specs, the plugin's client and devices, buckets compiled up front.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"
#include "onnx/graph_split.h"
#include "onnx/importer.h"
#include "onnx/intermediates.h"
#include "onnx/model.h"
#include "runtime/clients.h"
#include "runtime/dtype.h"
#include "runtime/public_status.h"
#include "runtime/session_impl.h"

namespace xonnx {

namespace {

absl::StatusOr<TensorSpec> SpecOf(const onnx_import::TensorInfo& info) {
  if (info.is_string) return TensorSpec{info.name, DataType::kString, info.dims, info.dim_names};
  ASSIGN_OR_RETURN(DataType t, FromHlo(info.type));
  return TensorSpec{info.name, t, info.dims, info.dim_names, info.is_sequence, info.is_optional};
}

// The session's dump options: its own when they name a folder, else
// XONNX_FLAGS'.
absl::StatusOr<DumpOptions> ResolveDump(const DumpOptions& given) {
  if (!given.to.empty()) return given;
  const char* flags = std::getenv("XONNX_FLAGS");
  if (!flags || !*flags) return given;
  ASSIGN_OR_RETURN(DumpOptions dump, FromPublic(ParseXonnxFlags(flags, given)));
  if (dump.to.empty() && (dump.onnx || !dump.pass_re.empty()))
    return absl::InvalidArgumentError("XONNX_FLAGS: the --dump_* flags need --dump_to=DIR");
  return dump;
}

// The model as imported (nodes sorted), beside the modules' dumps.
absl::Status DumpOnnx(const onnx_import::LoadedModel& model, const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("dumping the ONNX model needs a dump folder (DumpOptions::to)");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string path = (std::filesystem::path(dir) / std::filesystem::path(model.path).filename()).string();
  if (path == model.path) path += ".imported.onnx";  // never over the model itself
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !model.proto.SerializeToOstream(&out))
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write the imported model"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session::Impl>> Session::Impl::Open(std::shared_ptr<onnx_import::LoadedModel> model,
                                                                   const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  ASSIGN_OR_RETURN(impl->options.dump, ResolveDump(options.dump));
  if (options.expose_intermediates) RETURN_IF_ERROR(onnx_import::ExposeIntermediates(*model).status());
  if (impl->options.dump.onnx) RETURN_IF_ERROR(DumpOnnx(*model, impl->options.dump.to));
  std::vector<onnx_import::UnsupportedOp> unsupported = onnx_import::FindUnsupportedOps(*model);
  if (!unsupported.empty()) {
    impl->unsupported =
        absl::StrFormat("%s: %d unsupported op%s: %s", model->path, unsupported.size(),
                        unsupported.size() > 1 ? "s" : "", onnx_import::DescribeUnsupported(unsupported));
    if (!options.allow_unsupported) return absl::UnimplementedError(impl->unsupported);
  } else {
    RETURN_IF_ERROR(onnx_import::CheckModel(*model));
    ASSIGN_OR_RETURN(onnx_import::GraphSplit split, onnx_import::SplitGraph(*model));
    impl->stages.set_split(std::move(split));
  }
  ASSIGN_OR_RETURN(auto ins, onnx_import::ModelInputs(*model));
  ASSIGN_OR_RETURN(auto outs, onnx_import::ModelOutputs(*model));
  for (const auto& i : ins) {
    auto s = SpecOf(i);
    if (!s.ok()) return Annotate(s.status(), absl::StrCat(model->path, ": input '", i.name, "'"));
    impl->inputs.push_back(*s);
  }
  for (const auto& o : outs) {
    auto s = SpecOf(o);
    if (!s.ok()) return Annotate(s.status(), absl::StrCat(model->path, ": output '", o.name, "'"));
    impl->outputs.push_back(*s);
  }
  for (DataType t : {options.data_type, options.io_data_type})
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return InvalidArgument("%s: data types must be float32, float16 or bfloat16, not %s", model->path,
                             DataTypeName(t));
  // The host sees float32 inputs and outputs in the io type.
  for (auto* specs : {&impl->inputs, &impl->outputs})
    for (auto& s : *specs)
      if (s.dtype == DataType::kFloat32) s.dtype = options.io_data_type;
  // Plugin "none": a session that describes and converts but cannot run.
  const bool no_plugin = options.plugin == SessionOptions::kNoPlugin;
  std::shared_ptr<pjrt::Client> client;
  if (!no_plugin) {
    ASSIGN_OR_RETURN(client, GetClient(options));
  }
  std::vector<const pjrt::Device*> devices;
  if (no_plugin) {
    // No devices, no compile cache: nothing will be compiled.
  } else if (options.device == SessionOptions::kAllDevices) {
    for (const auto& d : client->devices()) devices.push_back(&d);
    if (devices.empty())
      return absl::NotFoundError(absl::StrCat(client->plugin()->path(), ": the plugin has no addressable devices"));
  } else {
    ASSIGN_OR_RETURN(const pjrt::Device* d, client->device(options.device));
    devices.push_back(d);
  }
  impl->runner = std::make_unique<ModelRunner>(model, impl->options, client, devices, impl->outputs.size());
  size_t per_device = std::max<size_t>(4, 2 * devices.size());
  impl->pool =
      std::make_unique<ThreadPool>(std::max({per_device, static_cast<size_t>(std::thread::hardware_concurrency()),
                                             static_cast<size_t>(std::max(0, options.compile_threads))}));
  impl->async = std::make_unique<LimitedQueue>(impl->pool.get(), per_device);
  if (!options.profile_file.empty()) {
    impl->trace = std::make_shared<TraceRecorder>();
    impl->runner->SetTrace(impl->trace);
  }
  impl->runner->set_unsupported(impl->unsupported);
  ASSIGN_OR_RETURN(impl->buckets, Buckets::Make(options, impl->inputs, impl->outputs, model->path));
  RETURN_IF_ERROR(impl->CheckSplitOptions());
  for (const auto* specs : {&impl->inputs, &impl->outputs})
    for (const auto& s : *specs) impl->value_io |= s.sequence || s.optional;
  RETURN_IF_ERROR(impl->CheckValueOptions());
  VLOG(1) << model->path << ": opened: " << impl->inputs.size() << " input(s), " << impl->outputs.size()
          << " output(s), " << (impl->stages.split() ? "split around host nodes, " : "")
          << (no_plugin ? std::string("no plugin")
                        : absl::StrCat(devices.size(), " device(s) on ", client->plugin()->path()));
  if (no_plugin) {
    if (!impl->buckets.empty())
      return absl::FailedPreconditionError(
          absl::StrCat(model->path, ": batch or dimension buckets are compiled, which needs a plugin (not \"none\")"));
    return impl;
  }
  impl->runner->programs().OpenPersistent(impl->options);
  RETURN_IF_ERROR(impl->CompileBuckets());
  return impl;
}

}  // namespace xonnx
