// Lowers a module's f32 computation to f16 or bf16 (SessionOptions::data_type).
//
// Every f32 value becomes the compute type, constants included, except that
// single-result reduce and reduce-window keep accumulating in f32 (their
// operands are converted up and the result back down): sums, means, softmax
// denominators and normalization statistics lose too much in 16 bits.
// Entry parameters marked as weights (hlo::kWeightParameterOpType) take the
// compute type (the caller converts the weights once); other f32 entry
// parameters and the f32 results take `io_type`, so the host transfers that
// type, with converts to and from the compute type inside the program.
#ifndef XONNX_PASSES_CONVERT_PRECISION_H_
#define XONNX_PASSES_CONVERT_PRECISION_H_

#include "hlo/types.h"
#include "passes/pass.h"

namespace xonnx::passes {

class ConvertPrecision : public Pass {
 public:
  ConvertPrecision(hlo::PrimitiveType compute_type, hlo::PrimitiveType io_type)
      : compute_(compute_type), io_(io_type) {}
  absl::string_view name() const override { return "convert-precision"; }
  absl::StatusOr<bool> Run(hlo::Module* module) override;

 private:
  hlo::PrimitiveType compute_, io_;
};

}  // namespace xonnx::passes

#endif  // XONNX_PASSES_CONVERT_PRECISION_H_
