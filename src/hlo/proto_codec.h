// Converts between hlo::Module and the HloModuleProto wire format that XLA's
// PjRT plugins accept as program format "hlo".
#ifndef XONNX_HLO_PROTO_CODEC_H_
#define XONNX_HLO_PROTO_CODEC_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "hlo/ir.h"
#include "hlo/proto/hlo.pb.h"

namespace xonnx::hlo {

// Fills host_program_shape, parameter names, ids and callee-first order as XLA requires.
wire::HloModuleProto ToProto(const Module& module);
// Serialized bytes of ToProto(module).
std::string SerializeModule(const Module& module);

// Reads a module; any malformed content (unknown opcode, dangling operand,
// inconsistent shape) is an error, never a crash.
absl::StatusOr<std::unique_ptr<Module>> FromProto(const wire::HloModuleProto& proto);
absl::StatusOr<std::unique_ptr<Module>> ParseModule(absl::string_view bytes);

wire::ShapeProto ShapeToProto(const Shape& shape);
absl::StatusOr<Shape> ShapeFromProto(const wire::ShapeProto& proto);
wire::LiteralProto LiteralToProto(const Literal& literal);
absl::StatusOr<Literal> LiteralFromProto(const wire::LiteralProto& proto);

}  // namespace xonnx::hlo

#endif  // XONNX_HLO_PROTO_CODEC_H_
