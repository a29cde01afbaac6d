// Batch splitting: a program whose every value treats the rows of the
// batch independently can run as several calls on parts of the batch. At
// batch 16 the activations of memory-bound convolutional nets (77 MB after
// MobileNetV2's first expansion) leave the cache between layers; one image
// at a time keeps them in the last-level cache from layer to layer
// (MobileNetV2 at batch 16: 94 -> 72 ms on 2 cores). Nets with many small
// late layers lose more to per-call costs than they gain (MobileNetV3-Large
// 75 -> 113 ms), so the CPU backend splits only when asked
// (CompileOptions::batch_rows, the plugin's `batch_rows` create option).
#ifndef XONNX_BACKENDS_CPU_PLANNING_BATCH_SPLIT_H_
#define XONNX_BACKENDS_CPU_PLANNING_BATCH_SPLIT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hlo/ir.h"

namespace xonnx::cpu {

// Which values of an entry computation carry the batch and along which
// dim: the parameters whose dim 0 is the batch, and every value computed
// from them by operations that keep its rows apart (elementwise ops,
// convolutions and dots with the batch as a batch or free dim, reductions
// and windows not across it, reshapes and transposes that move it whole,
// ...). Constants, broadcasts and iotas that other batch values combine with
// carry it too when they are the same for every row.
struct BatchRows {
  int64_t batch = 0;
  absl::flat_hash_map<const hlo::Instruction*, int64_t> dim;
};

// The analysis: nullopt when some operation mixes rows (a reduction across
// the batch, a gather from it, control flow reading it), when a result
// does not have the batch as its dim 0, or when the first parameter has no
// batch of at least 2 rows.
std::optional<BatchRows> FindBatchRows(const hlo::Computation& entry);

// How to run a program in parts of the batch.
struct BatchSplit {
  std::unique_ptr<hlo::Module> part;  // the program for `rows` rows
  int64_t rows = 0, parts = 0;        // rows per call, calls per run
  std::vector<bool> split_param;      // parameter k is split along dim 0 (else passed whole)
};

// The program rewritten for `rows` rows of the batch (which must divide it),
// or nullopt when it is not separable (FindBatchRows).
std::optional<BatchSplit> SplitBatch(const hlo::Module& module, int64_t rows);

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_PLANNING_BATCH_SPLIT_H_
