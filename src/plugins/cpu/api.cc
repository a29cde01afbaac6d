// libxonnx_pjrt_cpu.so: xonnx's CPU backend behind the PjRT C ABI. It exports
// one symbol, GetPjrtApi; everything a client needs to create a client, list
// devices, compile format "hlo", move buffers both ways, execute, await
// events and (de)serialize executables is implemented, and every other slot
// returns UNIMPLEMENTED naming itself. This file holds errors, events, the
// plugin's attributes and the function table; see shim.h for the rest.
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/cord.h"
#include "base/logging.h"
#include "base/status.h"
#include "plugins/cpu/shim.h"

namespace xonnx::pjrt_cpu {

namespace {

void ErrorDestroyImpl(PJRT_Error* e) { delete e; }
void ErrorMessageImpl(const PJRT_Error* e, const char** msg, size_t* size) {
  *msg = e->message.data();
  *size = e->message.size();
}
PJRT_Error_Code ErrorCodeImpl(const PJRT_Error* e) { return static_cast<PJRT_Error_Code>(e->status.code()); }
void ErrorPayloadsImpl(const PJRT_Error* e, PJRT_Error_PayloadVisitor visitor, void* arg) {
  e->status.ForEachPayload([&](absl::string_view key, const absl::Cord& value) {
    std::string v(value);
    visitor(key.data(), key.size(), v.data(), v.size(), arg);
  });
}

}  // namespace

const PJRT_Error_FunctionTable kErrorTable = {
    sizeof(PJRT_Error_FunctionTable), 0, nullptr, ErrorDestroyImpl, ErrorMessageImpl, ErrorCodeImpl, ErrorPayloadsImpl};

PJRT_Error* MakeError(const absl::Status& st) {
  if (st.ok()) return nullptr;
  auto* e = new PJRT_Error;
  e->status = st;
  e->message = std::string(st.message());
  return e;
}

absl::Status CheckSize(const char* what, size_t given, size_t needed) {
  if (given < needed)
    return InvalidArgument("%s: argument struct is %d bytes, at least %d expected", what, given, needed);
  return absl::OkStatus();
}

PJRT_Event* ReadyEvent(absl::Status st) { return new PJRT_Event{std::make_shared<EventState>(std::move(st))}; }

namespace {

// ------------------------------------------------------------------ errors

void Error_Destroy(PJRT_Error_Destroy_Args* a) {
  if (a) delete a->error;
}
void Error_Message(PJRT_Error_Message_Args* a) {
  if (!a || !a->error) return;
  a->message = a->error->message.data();
  a->message_size = a->error->message.size();
}
PJRT_Error* Error_GetCode(PJRT_Error_GetCode_Args* a) {
  CHECK_ARGS(PJRT_Error_GetCode_Args, a, code);
  a->code = ErrorCodeImpl(a->error);
  return nullptr;
}

// ------------------------------------------------------------------ plugin

PJRT_Error* Plugin_Initialize(PJRT_Plugin_Initialize_Args*) { return nullptr; }

PJRT_NamedValue StringValue(const char* name, const char* value) {
  PJRT_NamedValue v;
  std::memset(&v, 0, sizeof(v));
  v.struct_size = sizeof(v);
  v.name = name;
  v.name_size = std::strlen(name);
  v.type = PJRT_NamedValue_kString;
  v.string_value = value;
  v.value_size = std::strlen(value);
  return v;
}

PJRT_Error* Plugin_Attributes(PJRT_Plugin_Attributes_Args* a) {
  CHECK_ARGS(PJRT_Plugin_Attributes_Args, a, num_attributes);
  static const PJRT_NamedValue attrs[] = {StringValue("xonnx_version", XONNX_VERSION),
                                          StringValue("program_formats", "hlo,mlir")};
  a->attributes = attrs;
  a->num_attributes = 2;
  return nullptr;
}

// ------------------------------------------------------------------ events

PJRT_Error* Event_Destroy(PJRT_Event_Destroy_Args* a) {
  CHECK_ARGS(PJRT_Event_Destroy_Args, a, event);
  delete a->event;
  return nullptr;
}
PJRT_Error* Event_IsReady(PJRT_Event_IsReady_Args* a) {
  CHECK_ARGS(PJRT_Event_IsReady_Args, a, is_ready);
  if (!a->event) return MakeError(absl::InvalidArgumentError("PJRT_Event_IsReady: null event"));
  a->is_ready = a->event->state->ready();
  return nullptr;
}
PJRT_Error* Event_Await(PJRT_Event_Await_Args* a) {
  CHECK_ARGS(PJRT_Event_Await_Args, a, event);
  if (!a->event) return MakeError(absl::InvalidArgumentError("PJRT_Event_Await: null event"));
  return MakeError(a->event->state->Await());
}
PJRT_Error* Event_OnReady(PJRT_Event_OnReady_Args* a) {
  CHECK_ARGS(PJRT_Event_OnReady_Args, a, user_arg);
  if (!a->event || !a->callback)
    return MakeError(absl::InvalidArgumentError("PJRT_Event_OnReady: null event or callback"));
  a->event->state->OnReady(a->callback, a->user_arg);
  return nullptr;
}

PJRT_Api MakeApi() {
  PJRT_Api api;
  std::memset(&api, 0, sizeof(api));
  api.struct_size = sizeof(PJRT_Api);
  api.pjrt_api_version.struct_size = sizeof(PJRT_Api_Version);
  api.pjrt_api_version.major_version = XONNX_PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = XONNX_PJRT_API_MINOR;
  SetUnimplementedSlots(api);
  SetErrorAndEventSlots(api);
  SetClientSlots(api);
  SetBufferSlots(api);
  SetExecutableSlots(api);
  return api;
}

}  // namespace

void SetErrorAndEventSlots(PJRT_Api& api) {
  api.PJRT_Error_Destroy = Error_Destroy;
  api.PJRT_Error_Message = Error_Message;
  api.PJRT_Error_GetCode = Guarded<Error_GetCode>;
  api.PJRT_Plugin_Initialize = Guarded<Plugin_Initialize>;
  api.PJRT_Plugin_Attributes = Guarded<Plugin_Attributes>;
  api.PJRT_Event_Destroy = Guarded<Event_Destroy>;
  api.PJRT_Event_IsReady = Guarded<Event_IsReady>;
  api.PJRT_Event_Error = Guarded<Event_Await>;  // asked of ready events, for which it is Await
  api.PJRT_Event_Await = Guarded<Event_Await>;
  api.PJRT_Event_OnReady = Guarded<Event_OnReady>;
}

}  // namespace xonnx::pjrt_cpu

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() {
  xonnx::InitLogging();
  static const PJRT_Api api = xonnx::pjrt_cpu::MakeApi();
  return &api;
}
