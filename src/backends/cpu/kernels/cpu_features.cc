#include "backends/cpu/kernels/cpu_features.h"

namespace xonnx::cpu {

#if defined(__x86_64__) && defined(__GNUC__)
namespace {
bool Supports(bool (*check)()) {
  __builtin_cpu_init();
  return check();
}
}  // namespace

bool CpuHasAvx2() {
  static const bool has = Supports([] { return __builtin_cpu_supports("avx2") != 0; });
  return has;
}
bool CpuHasAvx2Fma() {
  static const bool has = Supports([] { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); });
  return has;
}
bool CpuHasAvx512() {
  static const bool has = Supports([] { return __builtin_cpu_supports("avx512f") != 0; });
  return has;
}
bool CpuHasAvx2F16c() {
  static const bool has = Supports([] { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"); });
  return has;
}
bool CpuHasAvx512Vbmi() {
  static const bool has = Supports([] {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vbmi");
  });
  return has;
}
bool CpuHasAvx512Bw() {
  static const bool has = Supports([] {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  });
  return has;
}
bool CpuHasAvx512Vnni() {
  static const bool has = Supports([] { return CpuHasAvx512Bw() && __builtin_cpu_supports("avx512vnni"); });
  return has;
}
#else
bool CpuHasAvx2() { return false; }
bool CpuHasAvx2Fma() { return false; }
bool CpuHasAvx512() { return false; }
bool CpuHasAvx2F16c() { return false; }
bool CpuHasAvx512Vbmi() { return false; }
bool CpuHasAvx512Bw() { return false; }
bool CpuHasAvx512Vnni() { return false; }
#endif

}  // namespace xonnx::cpu
