// The instruction sets this CPU runs, for kernels that pick a build at run
// time (the library is compiled for baseline x86-64). Each is read once.
#ifndef XONNX_BACKENDS_CPU_KERNELS_CPU_FEATURES_H_
#define XONNX_BACKENDS_CPU_KERNELS_CPU_FEATURES_H_

namespace xonnx::cpu {

bool CpuHasAvx2();
bool CpuHasAvx2Fma();     // AVX2 and FMA
bool CpuHasAvx512();      // AVX-512 F
bool CpuHasAvx2F16c();    // AVX2 and F16C (half-precision conversions)
bool CpuHasAvx512Vbmi();  // AVX-512 F, BW and VBMI (byte permutes)
bool CpuHasAvx512Bw();    // AVX-512 F, BW, VL and DQ (byte and mask loads, 128-bit forms)
bool CpuHasAvx512Vnni();  // those and VNNI (8-bit dot products into 32-bit sums)

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_KERNELS_CPU_FEATURES_H_
