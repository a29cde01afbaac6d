// Table lookups indexed by 8-bit values: the fused loops' way of computing
// an elementwise chain of one 8-bit input (a dequantize, an activation and
// a requantize) from its 256 precomputed results.
#ifndef XONNX_BACKENDS_CPU_FUSION_TABLE_LOOKUP_H_
#define XONNX_BACKENDS_CPU_FUSION_TABLE_LOOKUP_H_

#include <cstdint>

namespace xonnx::cpu {

// y[i] = table[index[i]] for elements of `width` bytes (1, 2, 4 or 8):
// `table` holds 256 of them. Byte tables run 64 lanes at a time on CPUs
// with AVX-512 VBMI (two-table byte permutes), the rest one element at a
// time.
void LookupTable(const uint8_t* table, int width, const uint8_t* index, uint8_t* y, int64_t n);

// y[i] = table[((phase + i) % period) * 256 + index[i]]: a periodic table
// (fused::Table) of `period` rows of 256 elements of `width` bytes, the
// row chosen by the element's position, the entry by its 8-bit value.
void LookupPeriodic(const uint8_t* table, int width, int64_t period, int64_t phase, const uint8_t* index, uint8_t* y,
                    int64_t n);

namespace internal {
// The byte lookup one element at a time, for tests of the vector one.
void LookupBytesPortable(const uint8_t* table, const uint8_t* index, uint8_t* y, int64_t n);
// Whether LookupTable's byte tables use the 64-lane kernel on this CPU.
bool LookupBytesIsVector();
}  // namespace internal

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_FUSION_TABLE_LOOKUP_H_
