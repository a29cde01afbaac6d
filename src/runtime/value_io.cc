// Value files: a model input or output of any kind as the ONNX test data
// stores it (TensorProto, SequenceProto, OptionalProto), for `xonnx run` and
// the test runners.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "base/exceptions.h"
#include "base/status.h"
#include "onnx/onnx_pb.h"
#include "runtime/public_status.h"
// After onnx_pb.h, which defines the export macro the generated header uses.
#include "onnx/onnx-data.pb.h"
#include "runtime/dtype.h"
#include "xonnx/session.h"

namespace xonnx {

namespace {

// A tensor read for `spec`: ONNX 1.12 stores bfloat16 test data as uint16
// tensors of the same bits.
Tensor AsSpecType(Tensor t, const TensorSpec& spec) {
  if (t.dtype() == DataType::kUInt16 && spec.dtype == DataType::kBFloat16)
    return Tensor::FromData(DataType::kBFloat16, t.dims(), t.data());
  return t;
}

absl::StatusOr<Tensor> FromProto(const onnx::TensorProto& p, const TensorSpec& spec) {
  ASSIGN_OR_RETURN(Tensor t, TensorFromProto(p));
  return AsSpecType(std::move(t), spec);
}

absl::StatusOr<Value> FromSequence(const onnx::SequenceProto& p, const TensorSpec& spec) {
  if (p.tensor_values_size() == 0 && (p.sequence_values_size() || p.map_values_size() || p.optional_values_size()))
    return Unimplemented("a sequence of sequences, maps or optionals");
  std::vector<Tensor> elements;
  for (const auto& t : p.tensor_values()) {
    ASSIGN_OR_RETURN(Tensor e, FromProto(t, spec));
    elements.push_back(std::move(e));
  }
  return Value::Sequence(std::move(elements));
}

}  // namespace

StatusOr<Value> ReadValueFile(const std::string& path, const TensorSpec& spec) {
  return PublicCall(path, [&]() -> absl::StatusOr<Value> {
    if (!spec.sequence && !spec.optional) {
      ASSIGN_OR_RETURN(Tensor t, FromPublic(ReadTensorFile(path)));
      return Value::Of(AsSpecType(std::move(t), spec));
    }
    ASSIGN_OR_RETURN(std::string bytes, ReadAll(path));
    absl::StatusOr<Value> v = absl::UnknownError("");
    if (spec.optional) {
      onnx::OptionalProto p;
      if (!p.ParseFromString(bytes)) return InvalidArgument("%s: not an ONNX OptionalProto file", path);
      if (p.has_sequence_value()) {
        v = FromSequence(p.sequence_value(), spec);
      } else if (p.has_tensor_value()) {
        auto t = FromProto(p.tensor_value(), spec);
        v = t.ok() ? absl::StatusOr<Value>(Value::Of(*std::move(t))) : absl::StatusOr<Value>(t.status());
      } else {
        v = Value::None();
      }
    } else {
      onnx::SequenceProto p;
      if (!p.ParseFromString(bytes)) return InvalidArgument("%s: not an ONNX SequenceProto file", path);
      v = FromSequence(p, spec);
    }
    if (!v.ok()) return Annotate(v.status(), path);
    return v;
  });
}

Status WriteValueFile(const std::string& path, const Value& v, const TensorSpec& spec) {
  return PublicCall(path, [&]() -> absl::Status {
    auto sequence = [&](onnx::SequenceProto* p) {
      p->set_name(spec.name);
      p->set_elem_type(onnx::SequenceProto::TENSOR);
      for (const Tensor& t : v.elements) *p->add_tensor_values() = TensorToProto(t, "");
    };
    if (spec.optional) {
      onnx::OptionalProto p;
      p.set_name(spec.name);
      if (v.kind == Value::Kind::kTensor) {
        p.set_elem_type(onnx::OptionalProto::TENSOR);
        *p.mutable_tensor_value() = TensorToProto(v.tensor, "");
      } else if (v.kind == Value::Kind::kSequence) {
        p.set_elem_type(onnx::OptionalProto::SEQUENCE);
        sequence(p.mutable_sequence_value());
      }
      return WriteFileBytes(path, p.SerializeAsString());
    }
    if (spec.sequence) {
      if (v.kind != Value::Kind::kSequence)
        return InvalidArgument("%s: '%s' is a sequence, the value is not", path, spec.name);
      onnx::SequenceProto p;
      sequence(&p);
      return WriteFileBytes(path, p.SerializeAsString());
    }
    if (v.kind != Value::Kind::kTensor)
      return InvalidArgument("%s: '%s' is a tensor, the value is not", path, spec.name);
    return FromPublic(WriteTensorProto(path, v.tensor, spec.name));
  });
}

}  // namespace xonnx
