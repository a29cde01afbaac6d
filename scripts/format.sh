#!/usr/bin/env bash
# Formats every C and C++ file of the repository as .clang-format says
# (CI's format test fails on any file this would change).
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format)
# New files count too: tracked ones and untracked ones git does not ignore.
git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.c' | xargs "$fmt" -i
