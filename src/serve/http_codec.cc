#include "serve/http_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/str_cat.h"

namespace xonnx::serve {
namespace {

using nlohmann::json;

// The leaves of `data` (nested arrays or a flat one) in row-major order,
// walked without recursion so that hostile nesting cannot exhaust the stack.
Status Flatten(const json& data, int64_t expected, const std::string& what, std::vector<const json*>& out) {
  constexpr size_t kMaxDepth = 64;
  if (!data.is_array()) return Invalid(absl::StrCat(what, ": \"data\" must be an array"));
  std::vector<std::pair<const json*, size_t>> stack = {{&data, 0}};
  while (!stack.empty()) {
    auto& [node, i] = stack.back();
    if (i == node->size()) {
      stack.pop_back();
      continue;
    }
    const json& v = (*node)[i++];
    if (v.is_array()) {
      if (stack.size() >= kMaxDepth) return Invalid(absl::StrCat(what, ": \"data\" is nested too deeply"));
      stack.push_back({&v, 0});
      continue;
    }
    if (static_cast<int64_t>(out.size()) >= expected)
      return Invalid(absl::StrCat(what, ": \"data\" has more than the ", expected, " elements its shape holds"));
    out.push_back(&v);
  }
  if (static_cast<int64_t>(out.size()) != expected)
    return Invalid(absl::StrCat(what, ": \"data\" has ", out.size(), " elements, its shape holds ", expected));
  return OkStatus();
}

template <typename T>
Status FillIntegers(const std::vector<const json*>& values, const std::string& what, Tensor& t) {
  T* p = t.data_as<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    const json& v = *values[i];
    bool ok = false;
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      ok = u <= static_cast<uint64_t>(std::numeric_limits<T>::max());
      p[i] = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      int64_t s = v.get<int64_t>();
      ok = std::numeric_limits<T>::is_signed ? s >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                                   s <= static_cast<int64_t>(std::numeric_limits<T>::max())
                                             : s >= 0 && static_cast<uint64_t>(s) <= std::numeric_limits<T>::max();
      p[i] = static_cast<T>(s);
    }
    if (!ok) return Invalid(absl::StrCat(what, ": element ", i, " (", v.dump(), ") is not an integer of its datatype"));
  }
  return OkStatus();
}

template <typename T>
Status FillFloats(const std::vector<const json*>& values, const std::string& what, Tensor& t) {
  T* p = t.data_as<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i]->is_number()) return Invalid(absl::StrCat(what, ": element ", i, " is not a number"));
    p[i] = static_cast<T>(values[i]->get<double>());
  }
  return OkStatus();
}

StatusOr<Tensor> TensorFromJson(DataType dtype, const std::vector<int64_t>& shape, int64_t count, const json& data,
                                const std::string& what) {
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16)
    return Invalid(absl::StrCat(what, ": ", WireName(dtype),
                                " data cannot be carried in JSON; send it as binary data (binary_data_size)"));
  std::vector<const json*> values;
  Status s = Flatten(data, count, what, values);
  if (!s.ok()) return s;
  if (dtype == DataType::kString) {
    std::vector<std::string> strings;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i]->is_string()) return Invalid(absl::StrCat(what, ": BYTES element ", i, " is not a string"));
      strings.push_back(values[i]->get<std::string>());
    }
    return Tensor::FromStrings(shape, std::move(strings));
  }
  Tensor t = Tensor::ForOverwrite(dtype, shape);
  switch (dtype) {
    case DataType::kBool: {
      auto* p = t.data_as<uint8_t>();
      for (size_t i = 0; i < values.size(); ++i) {
        if (!values[i]->is_boolean()) return Invalid(absl::StrCat(what, ": BOOL element ", i, " is not true or false"));
        p[i] = values[i]->get<bool>() ? 1 : 0;
      }
      break;
    }
    case DataType::kFloat32:
      s = FillFloats<float>(values, what, t);
      break;
    case DataType::kFloat64:
      s = FillFloats<double>(values, what, t);
      break;
    case DataType::kInt8:
      s = FillIntegers<int8_t>(values, what, t);
      break;
    case DataType::kInt16:
      s = FillIntegers<int16_t>(values, what, t);
      break;
    case DataType::kInt32:
      s = FillIntegers<int32_t>(values, what, t);
      break;
    case DataType::kInt64:
      s = FillIntegers<int64_t>(values, what, t);
      break;
    case DataType::kUInt8:
      s = FillIntegers<uint8_t>(values, what, t);
      break;
    case DataType::kUInt16:
      s = FillIntegers<uint16_t>(values, what, t);
      break;
    case DataType::kUInt32:
      s = FillIntegers<uint32_t>(values, what, t);
      break;
    case DataType::kUInt64:
      s = FillIntegers<uint64_t>(values, what, t);
      break;
    default:
      return Invalid(absl::StrCat(what, ": unsupported datatype"));
  }
  if (!s.ok()) return s;
  return t;
}

// A parameter's value when it is a bool (absent: `fallback`).
StatusOr<bool> BoolParameter(const json& params, const char* key, bool fallback, const std::string& what) {
  if (!params.is_object() || !params.contains(key)) return fallback;
  if (!params[key].is_boolean()) return Invalid(absl::StrCat(what, ": parameter \"", key, "\" must be a bool"));
  return params[key].get<bool>();
}

Status DecodeParameters(const json& j, InferRequest& request) {
  if (!j.contains("parameters")) return OkStatus();
  const json& p = j["parameters"];
  if (!p.is_object()) return Invalid("\"parameters\" must be an object");
  StatusOr<bool> binary = BoolParameter(p, "binary_data_output", false, "request");
  if (!binary.ok()) return binary.status();
  request.binary_outputs = *binary;
  if (p.contains("timeout")) {
    if (!p["timeout"].is_number_integer() || p["timeout"].get<int64_t>() < 0)
      return Invalid("parameter \"timeout\" must be a non-negative integer (microseconds)");
    request.timeout_us = p["timeout"].get<int64_t>();
  }
  return OkStatus();
}

}  // namespace

Status DecodeInferRequest(std::string_view body, std::optional<int64_t> header_length, int64_t max_elements,
                          InferRequest& request) {
  InferRequestDecoder decoder(header_length, static_cast<int64_t>(body.size()), max_elements, request);
  decoder.Append(body);
  return decoder.Finish();
}

InferRequestDecoder::InferRequestDecoder(std::optional<int64_t> header_length, int64_t body_length,
                                         int64_t max_elements, InferRequest& request)
    : header_length_(header_length), body_length_(body_length), max_elements_(max_elements), request_(request) {
  streaming_ = body_length >= 0;
  if (!streaming_) return;
  json_size_ = static_cast<uint64_t>(body_length);
  if (header_length) {
    if (*header_length < 0 || *header_length > body_length)
      status_ = Invalid(absl::StrCat("Inference-Header-Content-Length ", *header_length, " is outside the body's ",
                                     body_length, " bytes"));
    else if (*header_length == 0)
      status_ = Invalid(
          "Inference-Header-Content-Length 0 (a body of raw tensor bytes only) is not supported; send "
          "the JSON inference header first");
    else
      json_size_ = static_cast<uint64_t>(*header_length);
  }
  if (status_.ok() && json_size_ > kMaxJsonBytes)
    status_ = Invalid(absl::StrCat("the request's JSON is ", json_size_, " bytes, more than ", kMaxJsonBytes >> 20,
                                   " MiB; send large tensors as binary data (binary_data_size)"));
}

void InferRequestDecoder::Append(std::string_view bytes) {
  received_ += static_cast<int64_t>(bytes.size());
  if (!status_.ok()) return;
  if (!streaming_) {
    // Held whole; a body without binary data is all JSON, and capped as such.
    if (!header_length_ && held_.size() + bytes.size() > kMaxJsonBytes)
      status_ = Invalid(absl::StrCat("the request's JSON is more than ", kMaxJsonBytes >> 20,
                                     " MiB; send large tensors as binary data (binary_data_size)"));
    else
      held_.append(bytes);
    return;
  }
  if (received_ > body_length_) {
    status_ = Invalid(absl::StrCat("the body is longer than its Content-Length, ", body_length_, " bytes"));
    return;
  }
  if (!json_done_) {
    size_t take = std::min<size_t>(bytes.size(), json_size_ - held_.size());
    held_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (held_.size() < json_size_) return;
    json_done_ = true;
    status_ = DecodeJson(held_, static_cast<uint64_t>(body_length_) - json_size_);
    if (!status_.ok()) return;
  }
  Route(bytes);
}

// Copies binary bytes to the parts they belong to, in order.
void InferRequestDecoder::Route(std::string_view bytes) {
  while (!bytes.empty()) {
    while (part_ < parts_.size() && part_at_ == parts_[part_].size) ++part_, part_at_ = 0;
    if (part_ == parts_.size()) {  // DecodeJson found the parts fill the body: cannot happen
      status_ = Invalid("binary data past the inputs' binary_data_size");
      return;
    }
    BinaryPart& p = parts_[part_];
    size_t take = std::min(bytes.size(), p.size - part_at_);
    if (p.held)
      p.bytes.append(bytes.substr(0, take));
    else
      std::memcpy(static_cast<char*>(request_.inputs[p.input].tensor.data()) + part_at_, bytes.data(), take);
    part_at_ += take;
    bytes.remove_prefix(take);
  }
}

Status InferRequestDecoder::Finish() {
  if (!status_.ok()) return status_;
  if (!streaming_) {
    std::string body = std::move(held_);
    return DecodeInferRequest(body, header_length_, max_elements_, request_);
  }
  if (received_ != body_length_)
    return Invalid(absl::StrCat("the body ended after ", received_, " of its ", body_length_, " bytes"));
  if (!json_done_) {  // an empty body
    json_done_ = true;
    Status s = DecodeJson(held_, 0);
    if (!s.ok()) return s;
  }
  for (BinaryPart& p : parts_) {
    if (!p.held) continue;
    InferInput& in = request_.inputs[p.input];
    StatusOr<Tensor> t =
        TensorFromRaw(in.tensor.dtype(), in.tensor.dims(), p.bytes, absl::StrCat("input '", in.name, "'"));
    if (!t.ok()) return t.status();
    in.tensor = std::move(*t);
  }
  return OkStatus();
}

// One input of the JSON part. Binary inputs get their tensor (or a place to
// hold BYTES) here; their bytes come after the JSON.
Status InferRequestDecoder::DecodeInput(const json& in, size_t index, uint64_t binary_size, uint64_t& cursor) {
  std::string what = absl::StrCat("input ", index);
  if (!in.is_object() || !in.contains("name") || !in["name"].is_string())
    return Invalid(absl::StrCat(what, ": needs a \"name\" string"));
  InferInput out;
  out.name = in["name"].get<std::string>();
  what = absl::StrCat("input '", out.name, "'");
  if (!in.contains("datatype") || !in["datatype"].is_string())
    return Invalid(absl::StrCat(what, ": needs a \"datatype\" string"));
  StatusOr<DataType> dtype = DataTypeFromWire(in["datatype"].get<std::string>());
  if (!dtype.ok()) return Invalid(absl::StrCat(what, ": ", dtype.status().message()));
  if (!in.contains("shape") || !in["shape"].is_array()) return Invalid(absl::StrCat(what, ": needs a \"shape\" array"));
  std::vector<int64_t> shape;
  for (const json& d : in["shape"]) {
    if (!d.is_number_integer()) return Invalid(absl::StrCat(what, ": \"shape\" must hold integers"));
    shape.push_back(d.get<int64_t>());
  }
  StatusOr<int64_t> count = ElementCount(shape, max_elements_, what);
  if (!count.ok()) return count.status();
  const json* params = in.contains("parameters") ? &in["parameters"] : nullptr;
  if (params && params->contains("binary_data_size")) {
    const json& size = (*params)["binary_data_size"];
    if (!size.is_number_integer() || size.get<int64_t>() < 0)
      return Invalid(absl::StrCat(what, ": binary_data_size must be a non-negative integer"));
    uint64_t n = size.get<uint64_t>();
    if (n > binary_size - cursor)
      return Invalid(absl::StrCat(what, ": binary_data_size ", n, " but only ", binary_size - cursor,
                                  " bytes of binary data remain in the body"));
    BinaryPart part;
    part.input = request_.inputs.size();
    part.size = static_cast<size_t>(n);
    part.held = *dtype == DataType::kString;
    if (part.held) {
      out.tensor = Tensor::FromStrings(shape, std::vector<std::string>(static_cast<size_t>(*count)));
    } else {
      Status s = CheckRawSize(*dtype, shape, part.size, what);
      if (!s.ok()) return s;
      out.tensor = Tensor::ForOverwrite(*dtype, shape);
    }
    parts_.push_back(std::move(part));
    cursor += n;
  } else {
    if (!in.contains("data")) return Invalid(absl::StrCat(what, ": needs \"data\" or a binary_data_size parameter"));
    StatusOr<Tensor> t = TensorFromJson(*dtype, shape, *count, in["data"], what);
    if (!t.ok()) return t.status();
    out.tensor = std::move(*t);
  }
  request_.inputs.push_back(std::move(out));
  return OkStatus();
}

Status InferRequestDecoder::DecodeJson(std::string_view text, uint64_t binary_size) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return Invalid(absl::StrCat("malformed JSON in the request: ", e.what()));
  }
  if (!j.is_object()) return Invalid("the request must be a JSON object");
  if (j.contains("id")) {
    if (!j["id"].is_string()) return Invalid("\"id\" must be a string");
    request_.id = j["id"].get<std::string>();
  }
  Status s = DecodeParameters(j, request_);
  if (!s.ok()) return s;
  if (!j.contains("inputs") || !j["inputs"].is_array()) return Invalid("the request needs an \"inputs\" array");
  uint64_t cursor = 0;
  for (size_t i = 0; i < j["inputs"].size(); ++i) {
    s = DecodeInput(j["inputs"][i], i, binary_size, cursor);
    if (!s.ok()) return s;
  }
  if (cursor != binary_size)
    return Invalid(absl::StrCat(binary_size - cursor,
                                " bytes of binary data after the JSON are not claimed by any "
                                "input's binary_data_size"));
  if (j.contains("outputs")) {
    if (!j["outputs"].is_array()) return Invalid("\"outputs\" must be an array");
    for (const json& o : j["outputs"]) {
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
        return Invalid("each of \"outputs\" needs a \"name\" string");
      RequestedOutput r{o["name"].get<std::string>(), request_.binary_outputs};
      StatusOr<bool> bin = BoolParameter(o.value("parameters", json::object()), "binary_data", request_.binary_outputs,
                                         absl::StrCat("output '", r.name, "'"));
      if (!bin.ok()) return bin.status();
      r.binary = *bin;
      request_.outputs.push_back(std::move(r));
    }
  }
  return OkStatus();
}

namespace {

json DataJson(const Tensor& t) {
  json data = json::array();
  int64_t n = t.element_count();
  switch (t.dtype()) {
    case DataType::kString:
      for (const auto& s : t.strings()) data.push_back(s);
      break;
    case DataType::kBool:
      for (int64_t i = 0; i < n; ++i) data.push_back(t.data_as<uint8_t>()[i] != 0);
      break;
    case DataType::kFloat32:
      for (int64_t i = 0; i < n; ++i) data.push_back(t.data_as<float>()[i]);
      break;
    case DataType::kFloat64:
      for (int64_t i = 0; i < n; ++i) data.push_back(t.data_as<double>()[i]);
      break;
    case DataType::kUInt64:
      for (int64_t i = 0; i < n; ++i) data.push_back(t.data_as<uint64_t>()[i]);
      break;
    case DataType::kInt64:  // every bit: a double would round above 2^53
      for (int64_t i = 0; i < n; ++i) data.push_back(t.data_as<int64_t>()[i]);
      break;
    case DataType::kInt32:
      for (int64_t i = 0; i < n; ++i) data.push_back(t.data_as<int32_t>()[i]);
      break;
    case DataType::kUInt32:
      for (int64_t i = 0; i < n; ++i) data.push_back(t.data_as<uint32_t>()[i]);
      break;
    default:  // 8- and 16-bit integers, exact as doubles
      for (int64_t i = 0; i < n; ++i) data.push_back(static_cast<int64_t>(t.GetAsDouble(i)));
      break;
  }
  return data;
}

}  // namespace

std::string EncodeInferResponse(const InferResponse& response, size_t& json_length, bool& binary) {
  json j = {{"model_name", response.model}, {"model_version", response.version}};
  if (!response.id.empty()) j["id"] = response.id;
  json outputs = json::array();
  std::string tail;
  binary = false;
  for (const auto& o : response.outputs) {
    // FP16 and BF16 have no JSON form: they always travel as binary.
    bool raw = o.binary || o.tensor.dtype() == DataType::kFloat16 || o.tensor.dtype() == DataType::kBFloat16;
    json out = {{"name", o.name}, {"datatype", WireName(o.tensor.dtype())}, {"shape", o.tensor.dims()}};
    if (raw) {
      size_t before = tail.size();
      AppendRaw(o.tensor, tail);
      out["parameters"] = {{"binary_data_size", tail.size() - before}};
      binary = true;
    } else {
      out["data"] = DataJson(o.tensor);
    }
    outputs.push_back(std::move(out));
  }
  j["outputs"] = std::move(outputs);
  std::string body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  json_length = body.size();
  body += tail;
  return body;
}

std::string ErrorJson(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace xonnx::serve
