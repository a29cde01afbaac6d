#!/usr/bin/env bash
# Builds the fuzz targets with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer (Debian's clang-14 and libclang-rt-14-dev), and
# runs each for SECONDS (default 3600) on the seed corpora, in parallel up
# to the machine's cores. Prints each target's executions and coverage;
# crashes are written to BUILD/fuzz_findings/<target>/.
#   tests/fuzz/run_fuzzers.sh [SECONDS] [BUILD_DIR]   (after a normal build in ./build)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-3600}
build=${2:-build-fuzz}
command -v clang++-14 >/dev/null || { echo "run_fuzzers: needs clang-14 and libclang-rt-14-dev" >&2; exit 2; }
[[ -x build/bin/xonnx ]] || { echo "run_fuzzers: build xonnx in ./build first (the seeds come from it)" >&2; exit 2; }
[[ -d build/onnx_backend_tests/node ]] || { echo "run_fuzzers: run ctest in ./build first (the node tests seed it)" >&2; exit 2; }
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXONNX_LIBFUZZER=ON \
  -DXONNX_ENABLE_ASAN=ON -DXONNX_ENABLE_UBSAN=ON -DXONNX_BUILD_PYTHON=OFF >/dev/null
targets=(fuzz_model fuzz_tensor_file fuzz_hlo_proto fuzz_stablehlo fuzz_cache_entry)
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
tests/fuzz/seeds.sh "$build/fuzz_seeds" build/bin/xonnx examples/tiny_cnn.onnx build/onnx_backend_tests/node
export ASAN_OPTIONS=detect_leaks=0
running=0
for t in "${targets[@]}"; do
  corpus=$build/fuzz_corpus/${t#fuzz_}
  mkdir -p "$corpus" "$build/fuzz_findings/$t"
  cp -n "$build/fuzz_seeds/${t#fuzz_}"/* "$corpus/" 2>/dev/null || true
  "$build/tests/$t" "$corpus" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
    -artifact_prefix="$build/fuzz_findings/$t/" >"$build/$t.log" 2>&1 &
  # One target per core: wait for one to end before starting another.
  if ((++running >= $(nproc))); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
for t in "${targets[@]}"; do
  echo "$t: $(grep -E '^#[0-9]+ +DONE' "$build/$t.log" | tail -1 || echo 'no DONE line (see the log)')"
  ls "$build/fuzz_findings/$t" | sed 's/^/  finding: /'
done
