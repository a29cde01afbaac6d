// The CPU plugin's executables: compile, (de)serialize and execute, each a
// thin layer over backends/cpu's Program.
#include <omp.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "hlo/proto_codec.h"
#include "hlo/stablehlo.h"
#include "pjrt/compile_options.h"
#include "plugins/cpu/element_types.h"
#include "plugins/cpu/shim.h"

namespace xonnx::pjrt_cpu {

namespace {

// The ABI's view of a program compiled or loaded for `device_id`.
absl::StatusOr<std::shared_ptr<ProgramHandle>> MakeHandle(std::shared_ptr<cpu::Program> program, int device_id) {
  auto h = std::make_shared<ProgramHandle>();
  h->device_id = device_id;
  h->fingerprint = program->Fingerprint(device_id);
  for (const hlo::Shape& s : program->output_shapes()) {
    ASSIGN_OR_RETURN(PJRT_Buffer_Type t, ToPjrtType(s.element_type));
    h->output_types.push_back(t);
    h->output_ranks.push_back(s.dims.size());
    h->output_dims_flat.insert(h->output_dims_flat.end(), s.dims.begin(), s.dims.end());
  }
  h->program = std::move(program);
  return h;
}

PJRT_Error* Client_Compile(PJRT_Client_Compile_Args* a) {
  CHECK_ARGS(PJRT_Client_Compile_Args, a, executable);
  if (!a->program || !a->program->code) return MakeError(absl::InvalidArgumentError("PJRT_Client_Compile: no program"));
  std::string format(a->program->format ? a->program->format : "", a->program->format ? a->program->format_size : 0);
  if (format != "hlo" && format != "mlir")
    return MakeError(absl::InvalidArgumentError(
        absl::StrCat("PJRT_Client_Compile: program format '", format,
                     "' is not supported; the xonnx CPU plugin takes \"hlo\" (a serialized HloModuleProto) and "
                     "\"mlir\" (StableHLO text in MLIR's generic op form, as xonnx writes it)")));
  int device_id = 0;
  if (a->compile_options_size) {
    auto id = xonnx::pjrt::DeviceIdFromCompileOptions(absl::string_view(a->compile_options, a->compile_options_size));
    if (!id.ok()) return MakeError(xonnx::Annotate(id.status(), "PJRT_Client_Compile"));
    device_id = *id;
  }
  if (device_id < 0 || device_id >= static_cast<int>(a->client->device_ptrs.size()))
    return MakeError(xonnx::InvalidArgument("PJRT_Client_Compile: device %d does not exist (the client has %d)",
                                            device_id, a->client->device_ptrs.size()));
  absl::string_view code(a->program->code, a->program->code_size);
  std::string from_mlir;
  if (format == "mlir") {
    // StableHLO is read into the same module an HloModuleProto gives.
    auto m = xonnx::hlo::ParseStableHlo(code);
    if (!m.ok()) return MakeError(xonnx::Annotate(m.status(), "PJRT_Client_Compile"));
    from_mlir = xonnx::hlo::SerializeModule(**m);
    code = from_mlir;
  }
  auto p = cpu::Program::Build(code, a->client->options.program);
  if (!p.ok()) return MakeError(xonnx::Annotate(p.status(), "PJRT_Client_Compile"));
  auto h = MakeHandle(*std::move(p), device_id);
  if (!h.ok()) return MakeError(xonnx::Annotate(h.status(), "PJRT_Client_Compile"));
  auto* e = new PJRT_LoadedExecutable;
  e->program = *std::move(h);
  e->client = a->client;
  e->device = a->client->device_ptrs[device_id];
  a->executable = e;
  return nullptr;
}

PJRT_Error* Executable_Destroy(PJRT_Executable_Destroy_Args* a) {
  CHECK_ARGS(PJRT_Executable_Destroy_Args, a, executable);
  delete a->executable;
  return nullptr;
}
PJRT_Error* LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_Destroy_Args, a, executable);
  delete a->executable;
  return nullptr;
}
PJRT_Error* LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_GetExecutable_Args, a, executable);
  a->executable = new PJRT_Executable{a->loaded_executable->program};
  return nullptr;
}
PJRT_Error* LoadedExecutable_AddressableDevices(PJRT_LoadedExecutable_AddressableDevices_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_AddressableDevices_Args, a, num_addressable_devices);
  a->addressable_devices = &a->executable->device;
  a->num_addressable_devices = 1;
  return nullptr;
}
PJRT_Error* LoadedExecutable_Delete(PJRT_LoadedExecutable_Delete_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_Delete_Args, a, executable);
  a->executable->deleted = true;
  return nullptr;
}
PJRT_Error* LoadedExecutable_IsDeleted(PJRT_LoadedExecutable_Delete_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_Delete_Args, a, is_deleted);
  a->is_deleted = a->executable->deleted;
  return nullptr;
}
PJRT_Error* Executable_Name(PJRT_Executable_String_Args* a) {
  CHECK_ARGS(PJRT_Executable_String_Args, a, value_size);
  return ReturnString(a, a->executable->program->program->name());
}
PJRT_Error* Executable_Fingerprint(PJRT_Executable_String_Args* a) {
  CHECK_ARGS(PJRT_Executable_String_Args, a, value_size);
  return ReturnString(a, a->executable->program->fingerprint);
}
PJRT_Error* Executable_NumReplicas(PJRT_Executable_Count_Args* a) {
  CHECK_ARGS(PJRT_Executable_Count_Args, a, value);
  a->value = 1;
  return nullptr;
}
PJRT_Error* Executable_NumOutputs(PJRT_Executable_Count_Args* a) {
  CHECK_ARGS(PJRT_Executable_Count_Args, a, value);
  a->value = a->executable->program->program->output_shapes().size();
  return nullptr;
}
PJRT_Error* Executable_SizeOfGeneratedCodeInBytes(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args* a) {
  CHECK_ARGS(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, a, size_in_bytes);
  a->size_in_bytes = 0;  // no generated machine code: thunks over precompiled kernels
  return nullptr;
}
PJRT_Error* Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args* a) {
  CHECK_ARGS(PJRT_Executable_OutputElementTypes_Args, a, num_output_types);
  a->output_types = a->executable->program->output_types.data();
  a->num_output_types = a->executable->program->output_types.size();
  return nullptr;
}
PJRT_Error* Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args* a) {
  CHECK_ARGS(PJRT_Executable_OutputDimensions_Args, a, dim_sizes);
  const ProgramHandle& p = *a->executable->program;
  a->num_outputs = p.output_types.size();
  a->dims = p.output_dims_flat.data();
  a->dim_sizes = p.output_ranks.data();
  return nullptr;
}

// The serialized form is the Program's (backends/cpu/program.h): loading
// checks the header, signature and fingerprint at once and decodes the
// module at the first run, so loading a cached bucket costs microseconds.
PJRT_Error* Executable_Serialize(PJRT_Executable_Serialize_Args* a) {
  CHECK_ARGS(PJRT_Executable_Serialize_Args, a, serialized_executable_deleter);
  const ProgramHandle& p = *a->executable->program;
  auto* s = new PJRT_SerializedExecutable;
  s->bytes = p.program->Serialize(p.device_id);
  a->serialized_executable = s;
  a->serialized_bytes = s->bytes.data();
  a->serialized_bytes_size = s->bytes.size();
  a->serialized_executable_deleter = [](PJRT_SerializedExecutable* e) { delete e; };
  return nullptr;
}
PJRT_Error* Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args* a) {
  CHECK_ARGS(PJRT_Executable_DeserializeAndLoad_Args, a, loaded_executable);
  absl::string_view bytes(a->serialized_executable ? a->serialized_executable : "", a->serialized_executable_size);
  auto fail = [](const absl::Status& st) {
    return MakeError(xonnx::Annotate(st, "PJRT_Executable_DeserializeAndLoad"));
  };
  int device_id = 0;
  auto p = cpu::Program::Deserialize(bytes, a->client->options.program, &device_id);
  if (!p.ok()) return fail(p.status());
  if (a->overridden_serialized_compile_options && a->overridden_serialized_compile_options_size &&
      a->struct_size >=
          XONNX_STRUCT_SIZE(PJRT_Executable_DeserializeAndLoad_Args, overridden_serialized_compile_options_size)) {
    auto id = xonnx::pjrt::DeviceIdFromCompileOptions(
        absl::string_view(a->overridden_serialized_compile_options, a->overridden_serialized_compile_options_size));
    if (!id.ok()) return fail(id.status());
    device_id = *id;
  }
  if (device_id < 0 || device_id >= static_cast<int>(a->client->device_ptrs.size()))
    return fail(xonnx::InvalidArgument("device %d does not exist", device_id));
  auto h = MakeHandle(*std::move(p), device_id);
  if (!h.ok()) return fail(h.status());
  auto* e = new PJRT_LoadedExecutable;
  e->program = *std::move(h);
  e->client = a->client;
  e->device = a->client->device_ptrs[device_id];
  a->loaded_executable = e;
  return nullptr;
}
// What a caller chained into the execute options (xonnx's own
// extensions): the call's bounds and a kernel trace. `trace` receives the
// trace callback, which `control` points to.
struct TraceSink {
  PJRT_XonnxKernelTrace_Fn fn = nullptr;
  void* context = nullptr;
};
void OnKernel(void* sink, const cpu::Thunk& t, const std::string& kind, int64_t start_ns, int64_t end_ns) {
  auto* s = static_cast<TraceSink*>(sink);
  s->fn(s->context, t.name.c_str(), kind.c_str(), t.op_type.c_str(), t.op_name.c_str(), start_ns, end_ns);
}
absl::StatusOr<cpu::RunControl> RunControlOf(const PJRT_ExecuteOptions* options, TraceSink* trace) {
  cpu::RunControl control;
  for (const PJRT_Extension_Base* e = options->extension_start; e; e = e->next) {
    if (e->type == PJRT_Extension_Type_XonnxRunBounds) {
      RETURN_IF_ERROR(CheckSize("PJRT_XonnxRunBounds_Extension", e->struct_size,
                                XONNX_STRUCT_SIZE(PJRT_XonnxRunBounds_Extension, deadline_ns)));
      const auto* b = reinterpret_cast<const PJRT_XonnxRunBounds_Extension*>(e);
      for (int k = 0; k < 2; ++k) control.cancelled[k] = static_cast<const std::atomic<int32_t>*>(b->cancel_flags[k]);
      control.deadline_ns = b->deadline_ns;
    } else if (e->type == PJRT_Extension_Type_XonnxKernelTrace) {
      RETURN_IF_ERROR(CheckSize("PJRT_XonnxKernelTrace_Extension", e->struct_size,
                                XONNX_STRUCT_SIZE(PJRT_XonnxKernelTrace_Extension, context)));
      const auto* t = reinterpret_cast<const PJRT_XonnxKernelTrace_Extension*>(e);
      if (!t->on_kernel) continue;
      *trace = {t->on_kernel, t->context};
      control.on_kernel = OnKernel;
      control.trace_context = trace;
    }
  }
  return control;
}

absl::Status ExecuteOne(PJRT_LoadedExecutable* e, PJRT_Buffer* const* args, size_t num_args, PJRT_Buffer** outs,
                        const cpu::RunControl& control) {
  cpu::Program& p = *e->program->program;
  const auto& params = p.parameter_shapes();
  if (num_args != params.size())
    return xonnx::InvalidArgument("the program takes %d arguments, %d given", params.size(), num_args);
  for (size_t k = 0; k < num_args; ++k) {
    const PJRT_Buffer* b = args[k];
    if (!b) return xonnx::InvalidArgument("argument %d is null", k);
    if (b->deleted) return xonnx::InvalidArgument("argument %d was deleted", k);
    if (!b->shape.Compatible(params[k]))
      return xonnx::InvalidArgument("argument %d is %s, the program expects %s", k, b->shape.ToString(false),
                                    params[k].ToString(false));
    if (b->device != e->device)
      return xonnx::InvalidArgument("argument %d is on device %d, the program runs on device %d", k,
                                    b->device->description.id, e->device->description.id);
  }
  std::vector<cpu::WeightArg> weights;
  for (int w : p.weight_params()) weights.push_back({args[w]->id, args[w]->storage->data, args[w]->storage});
  ASSIGN_OR_RETURN(std::shared_ptr<cpu::Executable> exe, p.ExecutableFor(weights));
  // Weights are compiled in; the program takes the other parameters, in order
  // (all of them when there are no weights).
  std::vector<const void*> arg_ptrs;
  for (int k : p.other_params()) arg_ptrs.push_back(args[k]->storage->data);
  std::vector<std::unique_ptr<PJRT_Buffer>> results;
  std::vector<void*> out_ptrs;
  for (const auto& s : p.output_shapes()) {
    auto b = std::make_unique<PJRT_Buffer>();
    b->shape = hlo::Shape(s.element_type, s.dims);
    b->device = e->device;
    b->storage = std::make_shared<Storage>(b->shape.ByteSize());
    if (!b->storage->data) return absl::ResourceExhaustedError("cannot allocate an output buffer");
    out_ptrs.push_back(b->storage->data);
    results.push_back(std::move(b));
  }
  bool bounded = control.deadline_ns || control.cancelled[0] || control.cancelled[1] || control.on_kernel;
  // The kernels (ours and oneDNN's) split work over OpenMP on the calling
  // thread: `threads` sets that thread's team size for this call only.
  const int threads = e->client ? e->client->options.threads : 0;
  const int caller_threads = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
  absl::Status ran = exe->Execute(arg_ptrs, out_ptrs, bounded ? &control : nullptr);
  if (threads > 0) omp_set_num_threads(caller_threads);
  RETURN_IF_ERROR(ran);
  for (size_t k = 0; k < results.size(); ++k) outs[k] = results[k].release();
  return absl::OkStatus();
}
PJRT_Error* LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args* a) {
  CHECK_ARGS(PJRT_LoadedExecutable_Execute_Args, a, device_complete_events);
  PJRT_LoadedExecutable* e = a->executable;
  if (!e) return MakeError(absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: null executable"));
  if (e->deleted)
    return MakeError(absl::FailedPreconditionError("PJRT_LoadedExecutable_Execute: the executable was deleted"));
  if (!a->options)
    return MakeError(absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: options must not be null"));
  if (a->num_devices != 1)
    return MakeError(xonnx::InvalidArgument(
        "PJRT_LoadedExecutable_Execute: the program was compiled for 1 device, arguments for %d given",
        a->num_devices));
  if (!a->argument_lists || !a->output_lists || (!e->program->output_types.empty() && !a->output_lists[0]) ||
      (a->num_args && !a->argument_lists[0]))
    return MakeError(absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: null argument or output lists"));
  PJRT_LoadedExecutable target = *e;
  if (a->struct_size >= XONNX_STRUCT_SIZE(PJRT_LoadedExecutable_Execute_Args, execute_device) && a->execute_device)
    target.device = a->execute_device;
  TraceSink trace;
  absl::StatusOr<cpu::RunControl> control = RunControlOf(a->options, &trace);
  if (!control.ok()) return MakeError(control.status());
  absl::Status st = ExecuteOne(&target, a->argument_lists[0], a->num_args, a->output_lists[0], *control);
  if (!st.ok()) return MakeError(xonnx::Annotate(st, absl::StrCat("executing '", e->program->program->name(), "'")));
  if (a->device_complete_events) a->device_complete_events[0] = ReadyEvent();
  return nullptr;
}

}  // namespace

void SetExecutableSlots(PJRT_Api& api) {
  api.PJRT_Client_Compile = Guarded<Client_Compile>;
  api.PJRT_Executable_Destroy = Guarded<Executable_Destroy>;
  api.PJRT_Executable_Name = Guarded<Executable_Name>;
  api.PJRT_Executable_NumReplicas = Guarded<Executable_NumReplicas>;
  api.PJRT_Executable_NumPartitions = Guarded<Executable_NumReplicas>;  // one of each
  api.PJRT_Executable_NumOutputs = Guarded<Executable_NumOutputs>;
  api.PJRT_Executable_SizeOfGeneratedCodeInBytes = Guarded<Executable_SizeOfGeneratedCodeInBytes>;
  api.PJRT_Executable_Serialize = Guarded<Executable_Serialize>;
  api.PJRT_LoadedExecutable_Destroy = Guarded<LoadedExecutable_Destroy>;
  api.PJRT_LoadedExecutable_GetExecutable = Guarded<LoadedExecutable_GetExecutable>;
  api.PJRT_LoadedExecutable_AddressableDevices = Guarded<LoadedExecutable_AddressableDevices>;
  api.PJRT_LoadedExecutable_Delete = Guarded<LoadedExecutable_Delete>;
  api.PJRT_LoadedExecutable_IsDeleted = Guarded<LoadedExecutable_IsDeleted>;
  api.PJRT_LoadedExecutable_Execute = Guarded<LoadedExecutable_Execute>;
  api.PJRT_Executable_DeserializeAndLoad = Guarded<Executable_DeserializeAndLoad>;
  api.PJRT_Executable_OutputElementTypes = Guarded<Executable_OutputElementTypes>;
  api.PJRT_Executable_OutputDimensions = Guarded<Executable_OutputDimensions>;
  api.PJRT_Executable_Fingerprint = Guarded<Executable_Fingerprint>;
}

}  // namespace xonnx::pjrt_cpu
