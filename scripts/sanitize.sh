#!/usr/bin/env bash
# Builds xonnx under the sanitizers and runs the suites that exercise its own
# code under them (CI runs it after the main tests):
#   asan  AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer:
#         the unit tests, the plugin's PjRT conformance, serving, the CLI
#         contract, the mutation test and the fuzz replays;
#   tsan  ThreadSanitizer: the concurrency tests (thread pool, serving,
#         stress: many threads, Run and RunAsync, several sessions; bounds;
#         the inference server's batcher, without serve_test's protobuf
#         parts: protobuf's headers lay map fields out differently under
#         ThreadSanitizer than Debian's libprotobuf does).
# The conformance and real-model suites are left to the main build: they
# run the same kernels as the unit tests, for minutes more. So is the
# tokenizer's (label deepbind): AddressSanitizer refuses the RTLD_DEEPBIND
# with which xonnx loads libsentencepiece and its own protobuf.
# Any finding fails the run; suppressions are in tests/lsan.supp and
# tests/tsan.supp, each justified there.
#   scripts/sanitize.sh [asan|tsan|all] [BUILD_ROOT]   (default: all, build-san)
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
root=${2:-build-san}
jobs=$(nproc)
src=$PWD

# -O1 keeps the reports' stacks readable and the tests quick; a unity build
# compiles the many small sources in a few large units, which halves the
# build (the sanitizer runs add a second and third build to CI).
configure() {  # DIR FLAGS...
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -g1" -DXONNX_BUILD_PYTHON=OFF -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "$@" >/dev/null
}

status=0
if [[ $which == asan || $which == all ]]; then
  dir=$root/asan
  configure "$dir" -DXONNX_ENABLE_ASAN=ON -DXONNX_ENABLE_UBSAN=ON
  echo "sanitize: building with AddressSanitizer and UndefinedBehaviorSanitizer in $dir" >&2
  cmake --build "$dir" -j "$jobs"
  # LeakSanitizer cannot scan dlopen'ed libraries' thread-local storage on
  # Debian 12 (tests/lsan.supp says why use_tls=0 and what it suppresses).
  (cd "$dir" &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1 \
      LSAN_OPTIONS=use_tls=0:print_suppressions=0:suppressions=$src/tests/lsan.supp \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --output-on-failure -j "$jobs" \
      -LE '^(source|long|install|deepbind)$') || status=1
fi
if [[ $which == tsan || $which == all ]]; then
  dir=$root/tsan
  configure "$dir" -DXONNX_ENABLE_TSAN=ON
  targets=(threads_test stress_test serving_test bounds_test serve_test xonnx_pjrt_cpu)
  echo "sanitize: building the concurrency tests with ThreadSanitizer in $dir" >&2
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
  # The OpenMP regions are invisible to ThreadSanitizer (tests/tsan.supp
  # says why), so they run on one thread: nothing checkable is lost, and
  # libgomp's spinning workers under ThreadSanitizer take minutes per test.
  (cd "$dir" &&
    OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$src/tests/tsan.supp \
      ctest --output-on-failure -j "$jobs" -R '^(threads_test|stress_test|serving_test|bounds_test|serve_batcher)$') || status=1
fi
exit $status
