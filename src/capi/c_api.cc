// The C API (xonnx/c_api.h) over the public C++ API, and nothing else: a C
// caller gets exactly what a C++ caller gets. Every entry point turns
// exceptions into statuses, as the C++ API does.
#include "xonnx/c_api.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "capi/c_internal.h"
#include "xonnx/session.h"

struct XonnxRunOptions {
  xonnx::RunOptions run;
};
struct XonnxValue {
  xonnx::Tensor tensor;
};

namespace xonnx::capi {
// A model input or output's description, with the C strings kept alive.
// In a named namespace: XonnxSession, which holds it, has external linkage.
struct CInfo {
  std::vector<const char*> dim_names;
  XonnxTensorInfo info;
};
}  // namespace xonnx::capi

namespace {

using xonnx::DataType;
using xonnx::Status;
using xonnx::StatusCode;
using xonnx::capi::CInfo;
using xonnx::capi::CurrentException;
using xonnx::capi::Error;
using xonnx::capi::Guard;
using xonnx::capi::MakeStatus;

}  // namespace

struct XonnxSession {
  std::unique_ptr<xonnx::Session> session;
  std::vector<CInfo> inputs, outputs;
};

namespace {

struct TypeEntry {
  int32_t onnx;
  DataType dtype;
};
constexpr TypeEntry kTypes[] = {
    {XONNX_TYPE_FLOAT32, DataType::kFloat32}, {XONNX_TYPE_UINT8, DataType::kUInt8},
    {XONNX_TYPE_INT8, DataType::kInt8},       {XONNX_TYPE_UINT16, DataType::kUInt16},
    {XONNX_TYPE_INT16, DataType::kInt16},     {XONNX_TYPE_INT32, DataType::kInt32},
    {XONNX_TYPE_INT64, DataType::kInt64},     {XONNX_TYPE_STRING, DataType::kString},
    {XONNX_TYPE_BOOL, DataType::kBool},       {XONNX_TYPE_FLOAT16, DataType::kFloat16},
    {XONNX_TYPE_FLOAT64, DataType::kFloat64}, {XONNX_TYPE_UINT32, DataType::kUInt32},
    {XONNX_TYPE_UINT64, DataType::kUInt64},   {XONNX_TYPE_BFLOAT16, DataType::kBFloat16},
};

int32_t ToC(DataType t) {
  for (const auto& e : kTypes)
    if (e.dtype == t) return e.onnx;
  return XONNX_TYPE_UNDEFINED;
}
bool FromC(int32_t onnx, DataType* out) {
  for (const auto& e : kTypes)
    if (e.onnx == onnx) {
      *out = e.dtype;
      return true;
    }
  return false;
}

bool ParseInt(const std::string& text, int64_t* out) {
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, *out);
  return !text.empty() && r.ec == std::errc() && r.ptr == end;
}
bool ParseSwitch(const std::string& text, bool* out) {
  if (text == "on" || text == "true" || text == "1") return *out = true, true;
  if (text == "off" || text == "false" || text == "0") return *out = false, true;
  return false;
}
bool ParseFloatType(const std::string& text, DataType* out) {
  if (text == "f32" || text == "float32") return *out = DataType::kFloat32, true;
  if (text == "f16" || text == "float16") return *out = DataType::kFloat16, true;
  if (text == "bf16" || text == "bfloat16") return *out = DataType::kBFloat16, true;
  return false;
}
bool ParseIntList(const std::string& text, std::vector<int64_t>* out) {
  out->clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    int64_t v;
    if (!ParseInt(text.substr(start, comma - start), &v)) return false;
    out->push_back(v);
    start = comma + 1;
  }
  return !out->empty();
}

constexpr char kOptionNames[] =
    "plugin, device, batch_buckets, max_batch, data_type, io_data_type, cache, cache_dir, compile_threads, "
    "deadline_ms, create_option, optimize, check_indices, profile_file, xonnx_flags, program_format, kv_cache";

Status SetOption(xonnx::SessionOptions& o, const std::string& name, const std::string& value) {
  auto bad = [&](const char* expected) {
    return Status(StatusCode::kInvalidArgument, "session option " + name + ": '" + value + "' is not " + expected);
  };
  int64_t n = 0;
  bool b = false;
  if (name == "plugin") {
    o.plugin = value;
  } else if (name == "device") {
    if (value == "all") {
      o.device = xonnx::SessionOptions::kAllDevices;
    } else {
      if (!ParseInt(value, &n) || n < 0 || n > std::numeric_limits<int>::max()) return bad("a device index or \"all\"");
      o.device = static_cast<int>(n);
    }
  } else if (name == "batch_buckets") {
    if (!ParseIntList(value, &o.batch_buckets)) return bad("a comma-separated list of batch sizes");
  } else if (name == "max_batch") {
    if (!ParseInt(value, &n) || n < 0) return bad("a batch size");
    o.max_batch = n;
  } else if (name == "data_type") {
    if (!ParseFloatType(value, &o.data_type)) return bad("f32, f16 or bf16");
  } else if (name == "io_data_type") {
    if (!ParseFloatType(value, &o.io_data_type)) return bad("f32, f16 or bf16");
  } else if (name == "cache") {
    if (!ParseSwitch(value, &o.use_cache)) return bad("on or off");
  } else if (name == "cache_dir") {
    o.cache_dir = value;
  } else if (name == "compile_threads") {
    if (!ParseInt(value, &n) || n < 0 || n > 4096) return bad("a thread count");
    o.compile_threads = static_cast<int>(n);
  } else if (name == "deadline_ms") {
    if (!ParseInt(value, &n) || n < 0) return bad("a number of milliseconds");
    o.deadline_ms = n;
  } else if (name == "create_option") {
    xonnx::StatusOr<xonnx::CreateOption> c = xonnx::ParseCreateOption(value);
    if (!c.ok()) return c.status();
    o.create_options.push_back(*std::move(c));
  } else if (name == "optimize") {
    if (!ParseSwitch(value, &b)) return bad("on or off");
    o.optimize = b;
  } else if (name == "check_indices") {
    if (!ParseSwitch(value, &b)) return bad("on or off");
    o.check_indices = b;
  } else if (name == "profile_file") {
    o.profile_file = value;
  } else if (name == "program_format") {
    using Format = xonnx::SessionOptions::ProgramFormat;
    if (value == "auto") {
      o.program_format = Format::kAuto;
    } else if (value == "hlo") {
      o.program_format = Format::kHlo;
    } else if (value == "stablehlo") {
      o.program_format = Format::kStableHlo;
    } else {
      return bad("auto, hlo or stablehlo");
    }
  } else if (name == "xonnx_flags") {
    xonnx::StatusOr<xonnx::DumpOptions> d = xonnx::ParseXonnxFlags(value, o.dump);
    if (!d.ok()) return d.status();
    o.dump = *std::move(d);
  } else {
    return Status(StatusCode::kInvalidArgument,
                  "unknown session option '" + name + "'; the options are " + kOptionNames);
  }
  return Status();
}

void Describe(const std::vector<xonnx::TensorSpec>& specs, std::vector<CInfo>* out) {
  out->resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const xonnx::TensorSpec& s = specs[i];
    CInfo& c = (*out)[i];
    for (size_t d = 0; d < s.dims.size(); ++d)
      c.dim_names.push_back(d < s.dim_names.size() ? s.dim_names[d].c_str() : "");
    c.info = XonnxTensorInfo{s.name.c_str(), ToC(s.dtype),       s.dims.data(),     c.dim_names.data(),
                             s.dims.size(),  s.sequence ? 1 : 0, s.optional ? 1 : 0};
  }
}

XonnxStatus* Opened(xonnx::StatusOr<std::unique_ptr<xonnx::Session>> opened, XonnxSession** out) {
  if (!opened.ok()) return MakeStatus(opened.status());
  auto s = std::make_unique<XonnxSession>();
  s->session = *std::move(opened);
  Describe(s->session->inputs(), &s->inputs);
  Describe(s->session->outputs(), &s->outputs);
  *out = s.release();
  return nullptr;
}

// The caller's views as the C++ API's inputs, every field checked: read in
// place (Tensor::View) for a call that ends before the function returns,
// copied for one that outlives it (`copy`).
Status ReadInputs(const XonnxTensorView* views, size_t n, bool copy, std::map<std::string, xonnx::Tensor>* out) {
  if (n && !views) return Status(StatusCode::kInvalidArgument, "inputs is NULL with num_inputs > 0");
  for (size_t i = 0; i < n; ++i) {
    const XonnxTensorView& v = views[i];
    std::string which = "input view " + std::to_string(i);
    if (v.struct_size < offsetof(XonnxTensorView, byte_size) + sizeof(v.byte_size))
      return Status(StatusCode::kInvalidArgument, which + ": struct_size is " + std::to_string(v.struct_size) +
                                                      ", at least " + std::to_string(sizeof(XonnxTensorView)) +
                                                      " was expected (set it to sizeof(XonnxTensorView))");
    if (!v.name) return Status(StatusCode::kInvalidArgument, which + ": name is NULL");
    which = "input '" + std::string(v.name) + "'";
    DataType dtype;
    if (!FromC(v.dtype, &dtype) || dtype == DataType::kString)
      return Status(StatusCode::kInvalidArgument,
                    which + ": element type " + std::to_string(v.dtype) + " is not a numeric XonnxDataType");
    if (v.num_dims > 64) return Status(StatusCode::kInvalidArgument, which + ": more than 64 dims");
    if (v.num_dims && !v.dims) return Status(StatusCode::kInvalidArgument, which + ": dims is NULL");
    std::vector<int64_t> dims(v.dims, v.dims + v.num_dims);
    uint64_t count = 1;
    for (int64_t d : dims) {
      if (d < 0) return Status(StatusCode::kInvalidArgument, which + ": a dimension is negative");
      if (d && count > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d) / 16)
        return Status(StatusCode::kInvalidArgument, which + ": the element count overflows");
      count *= static_cast<uint64_t>(d);
    }
    uint64_t bytes = count * static_cast<uint64_t>(xonnx::DataTypeSize(dtype));
    if (bytes != v.byte_size)
      return Status(StatusCode::kInvalidArgument, which + ": byte_size is " + std::to_string(v.byte_size) +
                                                      ", its shape and type take " + std::to_string(bytes));
    if (bytes && !v.data) return Status(StatusCode::kInvalidArgument, which + ": data is NULL");
    if (out->count(v.name)) return Status(StatusCode::kInvalidArgument, which + ": given twice");
    (*out)[v.name] = copy ? xonnx::Tensor::FromData(dtype, std::move(dims), v.data)
                          : xonnx::Tensor::View(dtype, std::move(dims), v.data);
  }
  return Status();
}

// Indices into the model's outputs of the names asked for (all when none).
Status SelectOutputs(const xonnx::Session& s, const char* const* names, size_t n, std::vector<size_t>* out) {
  const auto& outputs = s.outputs();
  out->clear();
  if (!names) {
    if (n != outputs.size())
      return Status(StatusCode::kInvalidArgument, "num_outputs is " + std::to_string(n) + ", the model has " +
                                                      std::to_string(outputs.size()) + " outputs");
    for (size_t i = 0; i < n; ++i) out->push_back(i);
    return Status();
  }
  for (size_t k = 0; k < n; ++k) {
    if (!names[k]) return Status(StatusCode::kInvalidArgument, "output name " + std::to_string(k) + " is NULL");
    size_t i = 0;
    while (i < outputs.size() && outputs[i].name != names[k]) ++i;
    if (i == outputs.size()) {
      std::string known;
      for (const auto& o : outputs) known += (known.empty() ? "'" : ", '") + o.name + "'";
      return Status(StatusCode::kInvalidArgument,
                    "the model has no output named '" + std::string(names[k]) + "' (its outputs: " + known + ")");
    }
    out->push_back(i);
  }
  return Status();
}

xonnx::RunOptions RunOf(const XonnxRunOptions* r) { return r ? r->run : xonnx::RunOptions{}; }

// Checks the arguments common to the run functions and reads the inputs.
Status Prepare(XonnxSession* session, const XonnxTensorView* inputs, size_t num_inputs, const char* const* output_names,
               size_t num_outputs, bool copy, std::map<std::string, xonnx::Tensor>* in, std::vector<size_t>* selected) {
  if (!session) return Status(StatusCode::kInvalidArgument, "session is NULL");
  Status st = ReadInputs(inputs, num_inputs, copy, in);
  if (!st.ok()) return st;
  return SelectOutputs(*session->session, output_names, num_outputs, selected);
}

// ---- the table's functions ----

const char* GetVersionString() { return XONNX_VERSION; }

XonnxErrorCode StatusCode_(const XonnxStatus* s) {
  return s ? static_cast<XonnxErrorCode>(s->status.code()) : XONNX_OK;
}
const char* StatusMessage(const XonnxStatus* s) { return s ? s->status.message().c_str() : ""; }
void ReleaseStatus(XonnxStatus* s) { delete s; }

XonnxStatus* CreateSessionOptions(XonnxSessionOptions** out) {
  return Guard("CreateSessionOptions", [&]() -> XonnxStatus* {
    if (!out) return Error(StatusCode::kInvalidArgument, "CreateSessionOptions: out is NULL");
    *out = new XonnxSessionOptions();
    return nullptr;
  });
}
void ReleaseSessionOptions(XonnxSessionOptions* o) { delete o; }
XonnxStatus* SetSessionOption(XonnxSessionOptions* o, const char* name, const char* value) {
  return Guard("SetSessionOption", [&]() -> XonnxStatus* {
    if (!o || !name || !value)
      return Error(StatusCode::kInvalidArgument, "SetSessionOption: options, name and value must not be NULL");
    if (std::string(name) == "kv_cache") {
      if (!xonnx::ParseKvCachePlacement(value, &o->kv_cache))
        return Error(StatusCode::kInvalidArgument,
                     "session option kv_cache: '" + std::string(value) + "' is not auto, host or device");
      return nullptr;
    }
    return MakeStatus(SetOption(o->options, name, value));
  });
}

XonnxStatus* CreateSession(const char* path, const XonnxSessionOptions* o, XonnxSession** out) {
  return Guard(path ? path : "CreateSession", [&]() -> XonnxStatus* {
    if (!path || !out) return Error(StatusCode::kInvalidArgument, "CreateSession: model_path and out must be set");
    return Opened(xonnx::Session::Open(path, o ? o->options : xonnx::SessionOptions{}), out);
  });
}
XonnxStatus* CreateSessionFromMemory(const void* bytes, size_t size, const char* name, const XonnxSessionOptions* o,
                                     const char* external_data_dir, XonnxSession** out) {
  return Guard(name ? name : "model", [&]() -> XonnxStatus* {
    if (!out) return Error(StatusCode::kInvalidArgument, "CreateSessionFromMemory: out is NULL");
    return Opened(
        xonnx::Session::OpenFromMemory(bytes, size, name ? name : "model", o ? o->options : xonnx::SessionOptions{},
                                       external_data_dir ? external_data_dir : ""),
        out);
  });
}
void ReleaseSession(XonnxSession* s) { delete s; }
size_t SessionInputCount(const XonnxSession* s) { return s ? s->inputs.size() : 0; }
size_t SessionOutputCount(const XonnxSession* s) { return s ? s->outputs.size() : 0; }

XonnxStatus* Info(const XonnxSession* s, size_t i, XonnxTensorInfo* out, bool input) {
  if (!s || !out) return Error(StatusCode::kInvalidArgument, "session and out must not be NULL");
  const std::vector<CInfo>& list = input ? s->inputs : s->outputs;
  if (i >= list.size())
    return Error(StatusCode::kOutOfRange, std::string(input ? "input" : "output") + " index " + std::to_string(i) +
                                              ": the model has " + std::to_string(list.size()));
  *out = list[i].info;
  return nullptr;
}
XonnxStatus* SessionInputInfo(const XonnxSession* s, size_t i, XonnxTensorInfo* out) { return Info(s, i, out, true); }
XonnxStatus* SessionOutputInfo(const XonnxSession* s, size_t i, XonnxTensorInfo* out) { return Info(s, i, out, false); }

XonnxStatus* CreateRunOptions(XonnxRunOptions** out) {
  return Guard("CreateRunOptions", [&]() -> XonnxStatus* {
    if (!out) return Error(StatusCode::kInvalidArgument, "CreateRunOptions: out is NULL");
    auto r = std::make_unique<XonnxRunOptions>();
    r->run.cancel = std::make_shared<xonnx::CancelToken>();
    *out = r.release();
    return nullptr;
  });
}
void ReleaseRunOptions(XonnxRunOptions* r) { delete r; }
void RunOptionsSetDeadline(XonnxRunOptions* r, int64_t ms) {
  if (r) r->run.deadline_ms = ms;
}
void RunOptionsCancel(XonnxRunOptions* r) {
  if (r && r->run.cancel) r->run.cancel->Cancel();
}

// What Run and RunInto share: the checks, the call, and the outputs asked
// for, in the order asked, with their names.
Status RunNow(XonnxSession* s, const XonnxRunOptions* r, const XonnxTensorView* inputs, size_t num_inputs,
              const char* const* names, size_t num_outputs, const void* outputs,
              std::vector<std::pair<std::string, xonnx::Tensor>>* picked) {
  std::map<std::string, xonnx::Tensor> in;
  std::vector<size_t> selected;
  if (num_outputs && !outputs) return Status(StatusCode::kInvalidArgument, "outputs is NULL");
  if (Status st = Prepare(s, inputs, num_inputs, names, num_outputs, /*copy=*/false, &in, &selected); !st.ok())
    return st;
  xonnx::StatusOr<std::vector<xonnx::Tensor>> out = s->session->Run(in, RunOf(r));
  if (!out.ok()) return out.status();
  for (size_t k = 0; k < selected.size(); ++k) {
    size_t i = selected[k];
    // Moved, unless the same output is asked for again later.
    bool again = std::find(selected.begin() + k + 1, selected.end(), i) != selected.end();
    picked->emplace_back(s->session->outputs()[i].name, again ? (*out)[i] : std::move((*out)[i]));
  }
  return Status();
}

XonnxStatus* Run(XonnxSession* s, const XonnxRunOptions* r, const XonnxTensorView* inputs, size_t num_inputs,
                 const char* const* names, size_t num_outputs, XonnxValue** outputs) {
  return Guard("Run", [&]() -> XonnxStatus* {
    std::vector<std::pair<std::string, xonnx::Tensor>> picked;
    if (Status st = RunNow(s, r, inputs, num_inputs, names, num_outputs, outputs, &picked); !st.ok())
      return MakeStatus(st);
    std::vector<std::unique_ptr<XonnxValue>> values;
    for (auto& [name, t] : picked) values.push_back(std::make_unique<XonnxValue>(XonnxValue{std::move(t)}));
    for (size_t k = 0; k < values.size(); ++k) outputs[k] = values[k].release();
    return nullptr;
  });
}

XonnxStatus* RunInto(XonnxSession* s, const XonnxRunOptions* r, const XonnxTensorView* inputs, size_t num_inputs,
                     const char* const* names, size_t num_outputs, XonnxTensorBuffer* outputs) {
  return Guard("RunInto", [&]() -> XonnxStatus* {
    for (size_t k = 0; outputs && k < num_outputs; ++k)
      if (outputs[k].struct_size < sizeof(XonnxTensorBuffer))
        return Error(StatusCode::kInvalidArgument,
                     "output buffer " + std::to_string(k) + ": struct_size must be sizeof(XonnxTensorBuffer)");
    std::vector<std::pair<std::string, xonnx::Tensor>> picked;
    if (Status st = RunNow(s, r, inputs, num_inputs, names, num_outputs, outputs, &picked); !st.ok())
      return MakeStatus(st);
    std::string too_small;
    for (size_t k = 0; k < num_outputs; ++k) {
      const auto& [name, t] = picked[k];
      XonnxTensorBuffer& b = outputs[k];
      if (t.dtype() == DataType::kString || t.dims().size() > 16)
        return Error(StatusCode::kUnimplemented,
                     "output '" + name + "': string tensors and more than 16 dims need Run()");
      b.dtype = ToC(t.dtype());
      b.num_dims = t.dims().size();
      for (size_t d = 0; d < b.num_dims; ++d) b.dims[d] = t.dims()[d];
      b.byte_size = t.byte_size();
      if (t.byte_size() > b.capacity && too_small.empty())
        too_small = "output '" + name + "' takes " + std::to_string(t.byte_size()) + " bytes, its buffer holds " +
                    std::to_string(b.capacity);
      if (t.byte_size() && !b.data && too_small.empty()) too_small = "output '" + name + "': data is NULL";
    }
    if (!too_small.empty()) return Error(StatusCode::kOutOfRange, too_small);
    for (size_t k = 0; k < num_outputs; ++k)
      if (picked[k].second.byte_size())
        std::memcpy(outputs[k].data, picked[k].second.data(), picked[k].second.byte_size());
    return nullptr;
  });
}

XonnxStatus* RunAsync(XonnxSession* s, const XonnxRunOptions* r, const XonnxTensorView* inputs, size_t num_inputs,
                      const char* const* names, size_t num_outputs, XonnxRunCallback callback, void* user_data) {
  return Guard("RunAsync", [&]() -> XonnxStatus* {
    if (!callback) return Error(StatusCode::kInvalidArgument, "RunAsync: callback is NULL");
    std::map<std::string, xonnx::Tensor> in;
    std::vector<size_t> selected;
    if (Status st = Prepare(s, inputs, num_inputs, names, num_outputs, /*copy=*/true, &in, &selected); !st.ok())
      return MakeStatus(st);
    s->session->RunAsync(
        std::move(in), RunOf(r), [callback, user_data, selected](xonnx::StatusOr<std::vector<xonnx::Tensor>> out) {
          if (!out.ok()) return callback(user_data, MakeStatus(out.status()), nullptr, 0);
          XonnxValue** values = new (std::nothrow) XonnxValue*[selected.size() + 1];
          if (!values)
            return callback(user_data, Error(StatusCode::kResourceExhausted, "RunAsync: out of memory"), nullptr, 0);
          for (size_t k = 0; k < selected.size(); ++k) values[k] = new XonnxValue{std::move((*out)[selected[k]])};
          callback(user_data, nullptr, values, selected.size());
          delete[] values;
        });
    return nullptr;
  });
}

int32_t ValueDataType(const XonnxValue* v) { return v ? ToC(v->tensor.dtype()) : XONNX_TYPE_UNDEFINED; }
size_t ValueNumDims(const XonnxValue* v) { return v ? v->tensor.dims().size() : 0; }
const int64_t* ValueDims(const XonnxValue* v) { return v ? v->tensor.dims().data() : nullptr; }
const void* ValueData(const XonnxValue* v) { return v ? v->tensor.data() : nullptr; }
size_t ValueByteSize(const XonnxValue* v) { return v ? v->tensor.byte_size() : 0; }
void ReleaseValue(XonnxValue* v) { delete v; }

const XonnxApi kApi = {
    sizeof(XonnxApi),
    XONNX_API_VERSION,
    GetVersionString,
    StatusCode_,
    StatusMessage,
    ReleaseStatus,
    CreateSessionOptions,
    ReleaseSessionOptions,
    SetSessionOption,
    CreateSession,
    CreateSessionFromMemory,
    ReleaseSession,
    SessionInputCount,
    SessionOutputCount,
    SessionInputInfo,
    SessionOutputInfo,
    CreateRunOptions,
    ReleaseRunOptions,
    RunOptionsSetDeadline,
    RunOptionsCancel,
    Run,
    RunInto,
    RunAsync,
    ValueDataType,
    ValueNumDims,
    ValueDims,
    ValueData,
    ValueByteSize,
    ReleaseValue,
    xonnx::capi::CreateGenerator,
    xonnx::capi::ReleaseGenerator,
    xonnx::capi::Generate,
    xonnx::capi::GenerationLength,
    xonnx::capi::GenerationTokens,
    xonnx::capi::ReleaseGeneration,
    xonnx::capi::CreateTokenizer,
    xonnx::capi::ReleaseTokenizer,
    xonnx::capi::TokenizerEncode,
    xonnx::capi::TokenizerDecode,
    xonnx::capi::TokenizerInfo,
};

}  // namespace

extern "C" const XonnxApi* XonnxGetApi(uint32_t version) {
  return version >= 1 && version <= XONNX_API_VERSION ? &kApi : nullptr;
}
