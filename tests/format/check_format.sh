#!/usr/bin/env bash
# Fails when a C or C++ file of the repository is not formatted as
# .clang-format says; lists the files. Fix them with scripts/format.sh.
set -uo pipefail
cd "${1:-$(dirname "$0")/../..}"
fmt=$(command -v clang-format-14 || command -v clang-format) || { echo "clang-format is not installed (scripts/install_deps.sh)"; exit 1; }
passed=0 failed=0
while IFS= read -r f; do
  if "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1; then
    passed=$((passed + 1))
  else
    echo "$f: not formatted (run scripts/format.sh)"
    failed=$((failed + 1))
  fi
done < <(git ls-files '*.cc' '*.h' '*.c')
echo "format: $passed passed, $failed failed"
[[ $failed == 0 ]]
