#!/usr/bin/env bash
# Runs clang-tidy with .clang-tidy's checks over the project's sources (or
# the files given), using the build folder's compile_commands.json.
#   scripts/tidy.sh                      every .cc under src/
#   scripts/tidy.sh src/runtime/*.cc     just these
# Exits non-zero when clang-tidy reports anything.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${XONNX_BUILD_DIR:-build}"
[[ -f "$build/compile_commands.json" ]] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
tidy=$(command -v clang-tidy-14 || command -v clang-tidy) || { echo "clang-tidy is not installed (scripts/install_deps.sh)" >&2; exit 1; }
if (($#)); then files=("$@"); else mapfile -t files < <(git ls-files 'src/*.cc'); fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# GCC's flags that clang does not know are dropped from its view.
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet \
  --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-unused-command-line-argument 2>/dev/null | tee "$out"
if grep -q "warning:\|error:" "$out"; then
  echo "tidy: findings above" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files, no findings"
