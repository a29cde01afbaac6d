// xonnx._xonnx: the Python binding of the public C++ API (xonnx/session.h),
// with numpy arrays for tensors. The Python-facing names and the ONNX
// Runtime-compatible surface are in xonnx/__init__.py; this module converts
// values, releases the GIL while a model runs, and turns every error Status
// into an exception of the matching class with the same message.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xonnx/float16.h"
#include "xonnx/generate.h"
#include "xonnx/session.h"
#include "xonnx/tokenizer.h"

namespace py = pybind11;

namespace {

using xonnx::DataType;
using xonnx::Status;
using xonnx::StatusCode;
using xonnx::Tensor;

// A failed Status on its way to Python (translated by the registered
// translator into xonnx.Error or one of its subclasses).
struct StatusError {
  Status status;
};

template <typename T>
T Take(xonnx::StatusOr<T> s) {
  if (!s.ok()) throw StatusError{s.status()};
  return *std::move(s);
}

// The exception classes, made once when the module loads.
struct Errors {
  py::object base, invalid_argument, no_such_file, not_implemented, cancelled, deadline;
};
Errors* errors = nullptr;

py::object ClassOf(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return errors->invalid_argument;
    case StatusCode::kNotFound:
      return errors->no_such_file;
    case StatusCode::kUnimplemented:
      return errors->not_implemented;
    case StatusCode::kCancelled:
      return errors->cancelled;
    case StatusCode::kDeadlineExceeded:
      return errors->deadline;
    default:
      return errors->base;
  }
}

// The exception for a failed Status, its `code` the status code's name.
py::object MakeError(const Status& st) {
  py::object err = ClassOf(st.code())(st.message());
  err.attr("code") = xonnx::StatusCodeName(st.code());
  return err;
}

struct TypeEntry {
  DataType dtype;
  const char* numpy;  // numpy's name of the same element type
};
constexpr TypeEntry kTypes[] = {
    {DataType::kFloat32, "float32"}, {DataType::kFloat16, "float16"}, {DataType::kFloat64, "float64"},
    {DataType::kInt8, "int8"},       {DataType::kInt16, "int16"},     {DataType::kInt32, "int32"},
    {DataType::kInt64, "int64"},     {DataType::kUInt8, "uint8"},     {DataType::kUInt16, "uint16"},
    {DataType::kUInt32, "uint32"},   {DataType::kUInt64, "uint64"},   {DataType::kBool, "bool"},
};

// An input array as a Tensor of the type the model declares for it. A
// float32 array for a bfloat16 input is rounded (numpy has no bfloat16);
// other types must match, as ONNX Runtime requires.
// With `keep`, a numeric array is read in place (Tensor::View) and the
// array it reads is kept alive in `keep` for the call; without, copied.
Tensor ToTensor(const std::string& name, py::handle value, DataType want, std::vector<py::object>* keep) {
  py::array a = py::array::ensure(value);
  if (!a) throw StatusError{Status(StatusCode::kInvalidArgument, "input '" + name + "' is not an array")};
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  char kind = a.dtype().kind();
  if (want == DataType::kString || kind == 'U' || kind == 'S' || kind == 'O') {
    if (want != DataType::kString)
      throw StatusError{Status(StatusCode::kInvalidArgument,
                               "input '" + name + "' holds strings, the model expects " + xonnx::DataTypeName(want))};
    std::vector<std::string> values;
    for (py::handle item : a.attr("ravel")()) values.push_back(py::str(item));
    return Tensor::FromStrings(std::move(dims), std::move(values));
  }
  if (want == DataType::kBFloat16 && a.dtype().is(py::dtype::of<float>())) {
    auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
    Tensor t(DataType::kBFloat16, dims);
    auto* out = t.data_as<uint16_t>();
    for (py::ssize_t i = 0; i < f.size(); ++i) out[i] = xonnx::FloatToBF16Bits(f.data()[i]);
    return t;
  }
  for (const auto& e : kTypes) {
    if (e.dtype != want) continue;
    if (!a.dtype().is(py::dtype(e.numpy)))
      throw StatusError{Status(StatusCode::kInvalidArgument, "input '" + name + "' has type " +
                                                                 std::string(py::str(a.dtype())) +
                                                                 ", the model expects " + xonnx::DataTypeName(want))};
    py::array c = py::array::ensure(a, py::array::c_style);
    if (!keep) return Tensor::FromData(want, std::move(dims), c.data());
    keep->push_back(c);
    return Tensor::View(want, std::move(dims), c.data());
  }
  throw StatusError{Status(StatusCode::kUnimplemented,
                           "input '" + name + "': type " + xonnx::DataTypeName(want) + " is not taken from Python")};
}

// An output as a numpy array that owns the Tensor's memory (no copy), or a
// float32 copy for bfloat16, or an object array for strings.
py::object ToArray(Tensor t) {
  std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
  if (t.dtype() == DataType::kString) {
    py::list flat;
    for (const std::string& s : t.strings()) flat.append(py::str(s));
    return py::module_::import("numpy").attr("array")(flat, "object").attr("reshape")(shape);
  }
  if (t.dtype() == DataType::kBFloat16) {
    py::array_t<float> out(shape);
    const auto* in = t.data_as<uint16_t>();
    for (int64_t i = 0; i < t.element_count(); ++i) out.mutable_data()[i] = xonnx::BF16BitsToFloat(in[i]);
    return out;
  }
  for (const auto& e : kTypes) {
    if (e.dtype != t.dtype()) continue;
    auto* owner = new Tensor(std::move(t));
    py::capsule free_it(owner, [](void* p) { delete static_cast<Tensor*>(p); });
    return py::array(py::dtype(e.numpy), shape, owner->data(), free_it);
  }
  throw StatusError{Status(StatusCode::kUnimplemented, "an output of type " + xonnx::DataTypeName(t.dtype()))};
}

// A session whose destruction releases the GIL: closing it waits for its
// asynchronous calls, whose callbacks take the GIL to deliver results.
class PySession {
 public:
  explicit PySession(std::unique_ptr<xonnx::Session> s) : session_(std::move(s)) {}
  ~PySession() {
    py::gil_scoped_release release;
    session_.reset();
  }
  xonnx::Session& get() { return *session_; }

  // The named inputs as tensors of the model's types (read in place when
  // `keep` holds the arrays for the call; see ToTensor).
  std::map<std::string, Tensor> Inputs(const py::dict& feed, std::vector<py::object>* keep) {
    std::map<std::string, Tensor> in;
    for (auto [key, value] : feed) {
      std::string name = py::str(key);
      const xonnx::TensorSpec* spec = nullptr;
      for (const auto& s : session_->inputs())
        if (s.name == name) spec = &s;
      if (!spec) {
        std::string known;
        for (const auto& s : session_->inputs()) known += (known.empty() ? "'" : ", '") + s.name + "'";
        throw StatusError{Status(StatusCode::kInvalidArgument,
                                 "the model has no input named '" + name + "' (its inputs: " + known + ")")};
      }
      in[name] = ToTensor(name, value, spec->dtype, keep);
    }
    return in;
  }

  // Positions of the outputs asked for (None: all).
  std::vector<size_t> Select(const py::object& names) {
    std::vector<size_t> out;
    const auto& outputs = session_->outputs();
    if (names.is_none()) {
      for (size_t i = 0; i < outputs.size(); ++i) out.push_back(i);
      return out;
    }
    for (py::handle n : names) {
      std::string name = py::str(n);
      size_t i = 0;
      while (i < outputs.size() && outputs[i].name != name) ++i;
      if (i == outputs.size())
        throw StatusError{Status(StatusCode::kInvalidArgument, "the model has no output named '" + name + "'")};
      out.push_back(i);
    }
    return out;
  }

 private:
  std::unique_ptr<xonnx::Session> session_;
};

xonnx::RunOptions MakeRunOptions(int64_t deadline_ms, std::shared_ptr<xonnx::CancelToken> cancel) {
  xonnx::RunOptions run;
  run.deadline_ms = deadline_ms;
  run.cancel = std::move(cancel);
  return run;
}

// The outputs asked for, in order; each moved into its array, unless the
// same output is asked for again later.
py::list Pick(std::vector<Tensor> outs, const std::vector<size_t>& selected) {
  py::list result;
  for (size_t k = 0; k < selected.size(); ++k) {
    size_t i = selected[k];
    bool again = std::find(selected.begin() + k + 1, selected.end(), i) != selected.end();
    result.append(ToArray(again ? outs[i] : std::move(outs[i])));
  }
  return result;
}

void BindOptions(py::module_& m) {
  py::enum_<DataType>(m, "DataType")
      .value("float32", DataType::kFloat32)
      .value("float16", DataType::kFloat16)
      .value("bfloat16", DataType::kBFloat16);
  py::class_<xonnx::CancelToken, std::shared_ptr<xonnx::CancelToken>>(m, "CancelToken")
      .def(py::init<>())
      .def("cancel", &xonnx::CancelToken::Cancel)
      .def_property_readonly("cancelled", &xonnx::CancelToken::cancelled);
  py::class_<xonnx::SessionOptions>(m, "SessionOptions")
      .def(py::init<>())
      .def_readwrite("plugin", &xonnx::SessionOptions::plugin)
      .def_readwrite("device", &xonnx::SessionOptions::device)
      .def_readwrite("max_batch", &xonnx::SessionOptions::max_batch)
      .def_readwrite("batch_buckets", &xonnx::SessionOptions::batch_buckets)
      .def_readwrite("dim_buckets", &xonnx::SessionOptions::dim_buckets)
      .def_readwrite("data_type", &xonnx::SessionOptions::data_type)
      .def_readwrite("io_data_type", &xonnx::SessionOptions::io_data_type)
      .def_readwrite("allow_tf32", &xonnx::SessionOptions::allow_tf32)
      .def_readwrite("check_indices", &xonnx::SessionOptions::check_indices)
      .def_readwrite("deadline_ms", &xonnx::SessionOptions::deadline_ms)
      .def_readwrite("use_cache", &xonnx::SessionOptions::use_cache)
      .def_readwrite("cache_dir", &xonnx::SessionOptions::cache_dir)
      .def_readwrite("compile_threads", &xonnx::SessionOptions::compile_threads)
      .def_readwrite("profile_file", &xonnx::SessionOptions::profile_file)
      .def_readwrite("optimize", &xonnx::SessionOptions::optimize)
      .def_readwrite("allow_unsupported", &xonnx::SessionOptions::allow_unsupported)
      .def_property(
          "program_format",
          [](const xonnx::SessionOptions& o) {
            using F = xonnx::SessionOptions::ProgramFormat;
            return std::string(o.program_format == F::kHlo         ? "hlo"
                               : o.program_format == F::kStableHlo ? "stablehlo"
                                                                   : "auto");
          },
          [](xonnx::SessionOptions& o, const std::string& v) {
            using F = xonnx::SessionOptions::ProgramFormat;
            if (v != "auto" && v != "hlo" && v != "stablehlo")
              throw py::value_error("program_format must be 'auto', 'hlo' or 'stablehlo', not '" + v + "'");
            o.program_format = v == "hlo" ? F::kHlo : v == "stablehlo" ? F::kStableHlo : F::kAuto;
          },
          "How programs go to the plugin: 'hlo', 'stablehlo' (MLIR text) or 'auto'.")
      .def_static(
          "_assign", [](xonnx::SessionOptions& to, const xonnx::SessionOptions& from) { to = from; },
          "Copies every field of `from` into `to` (the package's copy of a caller's options).")
      .def(
          "add_create_option",
          [](xonnx::SessionOptions& o, const std::string& text) {
            o.create_options.push_back(Take(xonnx::ParseCreateOption(text)));
          },
          "Adds a plugin create option, 'name=value' as `xonnx --create-option` takes it.")
      .def(
          "set_xonnx_flags",
          [](xonnx::SessionOptions& o, const std::string& flags) {
            o.dump = Take(xonnx::ParseXonnxFlags(flags, o.dump));
          },
          "Dump flags, as the XONNX_FLAGS environment variable takes them.");
}

py::dict SpecDict(const xonnx::TensorSpec& s) {
  py::list shape;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (s.dims[d] >= 0)
      shape.append(s.dims[d]);
    else if (d < s.dim_names.size() && !s.dim_names[d].empty())
      shape.append(s.dim_names[d]);
    else
      shape.append(py::none());
  }
  py::dict out;
  out["name"] = s.name;
  out["shape"] = shape;
  out["dtype"] = xonnx::DataTypeName(s.dtype);
  out["sequence"] = s.sequence;
  out["optional"] = s.optional;
  return out;
}

void BindSession(py::module_& m) {
  py::class_<PySession>(m, "Session")
      .def_static(
          "open",
          [](const std::string& path, const xonnx::SessionOptions& o) {
            std::unique_ptr<xonnx::Session> s;
            {
              py::gil_scoped_release release;
              auto opened = xonnx::Session::Open(path, o);
              if (!opened.ok()) throw StatusError{opened.status()};
              s = *std::move(opened);
            }
            return std::make_unique<PySession>(std::move(s));
          },
          py::arg("path"), py::arg("options"))
      .def_static(
          "open_bytes",
          [](const py::bytes& bytes, const xonnx::SessionOptions& o, const std::string& data_dir) {
            std::string b = bytes;
            std::unique_ptr<xonnx::Session> s;
            {
              py::gil_scoped_release release;
              auto opened = xonnx::Session::OpenFromMemory(b.data(), b.size(), "model", o, data_dir);
              if (!opened.ok()) throw StatusError{opened.status()};
              s = *std::move(opened);
            }
            return std::make_unique<PySession>(std::move(s));
          },
          py::arg("bytes"), py::arg("options"), py::arg("external_data_dir"))
      .def("inputs",
           [](PySession& s) {
             py::list l;
             for (const auto& spec : s.get().inputs()) l.append(SpecDict(spec));
             return l;
           })
      .def("outputs",
           [](PySession& s) {
             py::list l;
             for (const auto& spec : s.get().outputs()) l.append(SpecDict(spec));
             return l;
           })
      .def(
          "run",
          [](PySession& s, const py::object& names, const py::dict& feed, int64_t deadline_ms,
             std::shared_ptr<xonnx::CancelToken> cancel) {
            std::vector<size_t> selected = s.Select(names);
            std::vector<py::object> keep;  // the arrays the views read
            std::map<std::string, Tensor> in = s.Inputs(feed, &keep);
            xonnx::StatusOr<std::vector<Tensor>> out = Status(StatusCode::kUnknown, "not run");
            {
              py::gil_scoped_release release;
              out = s.get().Run(in, MakeRunOptions(deadline_ms, std::move(cancel)));
            }
            return Pick(Take(std::move(out)), selected);
          },
          py::arg("output_names"), py::arg("input_feed"), py::arg("deadline_ms") = -1, py::arg("cancel") = nullptr)
      .def(
          "run_async",
          [](PySession& s, const py::object& names, const py::dict& feed, py::function done, int64_t deadline_ms,
             std::shared_ptr<xonnx::CancelToken> cancel) {
            std::vector<size_t> selected = s.Select(names);
            std::map<std::string, Tensor> in = s.Inputs(feed, nullptr);  // copies: the call outlives this
            // The callback is called on a worker thread: it takes the GIL,
            // and the Python function it holds is released under it too.
            auto held = std::make_shared<py::function>(std::move(done));
            auto deliver = [held, selected](xonnx::StatusOr<std::vector<Tensor>> out) {
              py::gil_scoped_acquire gil;
              try {
                if (out.ok())
                  (*held)(py::none(), Pick(*std::move(out), selected));
                else
                  (*held)(MakeError(out.status()), py::none());
              } catch (py::error_already_set& e) {
                e.discard_as_unraisable("xonnx run_async callback");
              }
              *held = py::function();
            };
            py::gil_scoped_release release;
            s.get().RunAsync(std::move(in), MakeRunOptions(deadline_ms, std::move(cancel)), std::move(deliver));
          },
          py::arg("output_names"), py::arg("input_feed"), py::arg("done"), py::arg("deadline_ms") = -1,
          py::arg("cancel") = nullptr)
      .def("model_metadata",
           [](PySession& s) {
             xonnx::ModelInfo info = s.get().Info();
             py::dict d;
             d["producer_name"] = info.producer_name;
             d["producer_version"] = info.producer_version;
             d["domain"] = info.domain;
             d["description"] = info.doc_string;
             d["version"] = info.model_version;
             d["graph_name"] = info.graph_name;
             d["graph_description"] = info.graph_doc_string;
             d["custom_metadata_map"] = info.metadata_props;
             return d;
           })
      .def("device_summary", [](PySession& s) { return s.get().DeviceSummary(); })
      .def("write_profile", [](PySession& s) {
        Status st = s.get().WriteProfile();
        if (!st.ok()) throw StatusError{st};
      });
}

// xonnx.Generator's native half: the model opened, generation run with the
// GIL released, and the token callback called with it taken again. An
// exception the callback raises stops the generation and is raised from
// generate().
struct PyGenerator {
  std::unique_ptr<xonnx::Generator> g;
};

void BindGenerator(py::module_& m) {
  py::class_<PyGenerator>(m, "Generator")
      .def_static(
          "open",
          [](const std::string& path, const xonnx::SessionOptions& o, const std::string& kv_cache) {
            xonnx::KvCachePlacement placement;
            if (!xonnx::ParseKvCachePlacement(kv_cache, &placement))
              throw py::value_error("kv_cache must be 'auto', 'host' or 'device', not '" + kv_cache + "'");
            auto p = std::make_unique<PyGenerator>();
            py::gil_scoped_release release;
            p->g = Take(xonnx::Generator::Open(path, o, placement));
            return p;
          },
          py::arg("path"), py::arg("options"), py::arg("kv_cache"))
      .def_property_readonly("style", [](PyGenerator& p) { return p.g->style(); })
      .def_property_readonly("kv_cache",
                             [](PyGenerator& p) { return xonnx::KvCachePlacementName(p.g->cache_placement()); })
      .def_property_readonly("layers", [](PyGenerator& p) { return p.g->layers(); })
      .def(
          "generate",
          [](PyGenerator& p, const std::vector<std::vector<int64_t>>& prompts, int64_t max_new_tokens, bool greedy,
             float temperature, int64_t top_k, float top_p, float repetition_penalty, uint64_t seed,
             const std::vector<int64_t>& stop_tokens, py::object on_token) {
            xonnx::GenerateOptions o;
            o.max_new_tokens = max_new_tokens;
            o.sampling = {greedy, temperature, top_k, top_p, repetition_penalty, seed};
            o.stop_tokens = stop_tokens;
            std::exception_ptr raised;
            xonnx::TokenCallback callback = nullptr;
            if (!on_token.is_none())
              callback = [&](size_t sequence, int64_t token) {
                py::gil_scoped_acquire acquire;
                if (raised) return false;  // the rest of the step's tokens: the callback has failed
                try {
                  py::object r = on_token(sequence, token);
                  return r.is_none() || py::bool_(r);
                } catch (py::error_already_set&) {
                  raised = std::current_exception();
                  return false;
                }
              };
            xonnx::StatusOr<std::vector<std::vector<int64_t>>> out = std::vector<std::vector<int64_t>>{};
            {
              py::gil_scoped_release release;
              out = p.g->Generate(prompts, o, callback);
            }
            if (raised) std::rethrow_exception(raised);
            return Take(std::move(out));
          },
          py::arg("prompts"), py::arg("max_new_tokens"), py::arg("greedy"), py::arg("temperature"), py::arg("top_k"),
          py::arg("top_p"), py::arg("repetition_penalty"), py::arg("seed"), py::arg("stop_tokens"),
          py::arg("on_token"));
}

}  // namespace

PYBIND11_MODULE(_xonnx, m) {
  m.doc() = "xonnx's Python binding (use the xonnx package, not this module)";
  using namespace pybind11::literals;
  errors = new Errors();  // lives as long as the interpreter: translators use it
  py::object builtins = py::module_::import("builtins");
  py::object type = builtins.attr("type");
  errors->base = type("Error", py::make_tuple(builtins.attr("RuntimeError")), py::dict("__module__"_a = "xonnx"));
  auto sub = [&](const char* name, const char* builtin) {
    return type(name, py::make_tuple(errors->base, builtins.attr(builtin)), py::dict("__module__"_a = "xonnx"));
  };
  errors->invalid_argument = sub("InvalidArgument", "ValueError");
  errors->no_such_file = sub("NoSuchFile", "FileNotFoundError");
  errors->not_implemented = sub("NotImplemented", "NotImplementedError");
  errors->cancelled = sub("Cancelled", "RuntimeError");
  errors->deadline = sub("DeadlineExceeded", "TimeoutError");
  m.attr("Error") = errors->base;
  m.attr("InvalidArgument") = errors->invalid_argument;
  m.attr("NoSuchFile") = errors->no_such_file;
  m.attr("NotImplemented") = errors->not_implemented;
  m.attr("Cancelled") = errors->cancelled;
  m.attr("DeadlineExceeded") = errors->deadline;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object err = MakeError(e.status);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
    }
  });
  BindOptions(m);
  BindSession(m);
  BindGenerator(m);
  py::class_<xonnx::Tokenizer>(m, "Tokenizer")
      .def(py::init([](const std::string& path) { return Take(xonnx::Tokenizer::Open(path)); }), py::arg("path"),
           "A SentencePiece model (.model): encode(text) -> ids, decode(ids) -> text")
      .def(
          "encode", [](const xonnx::Tokenizer& t, const std::string& text) { return Take(t.Encode(text)); },
          py::arg("text"))
      .def(
          "decode", [](const xonnx::Tokenizer& t, const std::vector<int64_t>& ids) { return Take(t.Decode(ids)); },
          py::arg("ids"))
      .def_property_readonly("vocab_size", &xonnx::Tokenizer::vocab_size)
      .def_property_readonly("bos", &xonnx::Tokenizer::bos)
      .def_property_readonly("eos", &xonnx::Tokenizer::eos)
      .def_property_readonly("unk", &xonnx::Tokenizer::unk);
  m.def("default_plugin_path", &xonnx::DefaultPluginPath);
  m.def("version", &xonnx::Version);
  m.def("plugins", [] {
    py::list l;
    for (const auto& p : xonnx::FindPlugins()) {
      py::dict d;
      d["name"] = p.name;
      d["path"] = p.path;
      d["source"] = p.source;
      d["refused"] = p.refused;
      l.append(d);
    }
    return l;
  });
}
