#!/usr/bin/env bash
# Installs the built tree into a fresh prefix and uses it as a user would:
# a CMake project with find_package(xonnx), a C++ program and a C99 program
# built with pkg-config, the installed command; then moves the prefix and
# runs them again (the library finds its plugin relative to itself).
#   install_test.sh BUILD_DIR SOURCE_DIR MODEL.onnx VERSION ONNX_NODE_TESTS_DIR
set -euo pipefail
build=$1 src=$2 model=$3 version=$4 node_tests=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/ | head -1)
libdir=${libdir%/}
for f in "$libdir"/libxonnx.so "$libdir"/xonnx/libxonnx_pjrt_cpu.so "$libdir"/cmake/xonnx/xonnxConfig.cmake \
         "$libdir"/cmake/xonnx/xonnxConfigVersion.cmake "$libdir"/pkgconfig/xonnx.pc "$prefix"/include/xonnx/c_api.h \
         "$prefix"/bin/xonnx; do
  [[ -e $f ]] || fail "missing after install: $f"
done
soname=$(objdump -p "$libdir"/libxonnx.so | awk '/SONAME/ {print $2}')
[[ $soname == libxonnx.so.* ]] || fail "SONAME is '$soname'"
# Only the public API leaves the library: no abseil, protobuf or ONNX names.
if nm -DC --defined-only "$libdir"/libxonnx.so | grep -E ' (absl|google|onnx)::' | head -3 | grep .; then
  fail "libxonnx.so exports internal names (above)"
fi
# The public headers compile without abseil.
if grep -rl 'absl' "$prefix"/include/xonnx; then fail "public headers mention abseil"; fi

# 1. CMake: find_package(xonnx).
cmake -S "$src/tests/install/consumer" -B "$work/cmake_build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake_build" >/dev/null
out=$("$work/cmake_build/consumer" "$model") || fail "the CMake consumer failed"
grep -q "^output " <<<"$out" || fail "the CMake consumer printed no output: $out"
grep -q "^derivative 1$" <<<"$out" || fail "the CMake consumer's program API derivative is wrong: $out"
grep -q "^plugin $libdir/xonnx/libxonnx_pjrt_cpu.so" <<<"$out" || fail "the plugin was not the installed one: $out"

# 2. pkg-config: a C++ program and the C99 test of the C API.
export PKG_CONFIG_PATH=$libdir/pkgconfig
[[ $(pkg-config --modversion xonnx) == "$version" ]] || fail "pkg-config's version differs"
# shellcheck disable=SC2046
c++ -std=c++17 "$src/tests/install/consumer/consumer.cc" -o "$work/pc_consumer" $(pkg-config --cflags --libs xonnx)
# shellcheck disable=SC2046
cc -std=c99 -pedantic -Wall -Werror "$src/src/capi/c_api_test.c" -o "$work/c_consumer" \
  $(pkg-config --cflags --libs xonnx) -lpthread
# As built, without LD_LIBRARY_PATH: pkg-config's flags carry an rpath.
env -u LD_LIBRARY_PATH "$work/pc_consumer" "$model" | grep -q "^output " ||
  fail "the pkg-config consumer failed (does it find libxonnx.so without LD_LIBRARY_PATH?)"
env -u LD_LIBRARY_PATH "$work/c_consumer" "$model" || fail "the C99 program failed"
export LD_LIBRARY_PATH=$libdir

# 3. The Python package, when it was built (Debian's python3 and numpy).
pydir=$(dirname "$(dirname "$(find "$prefix" -name '_xonnx*.so' | head -1)")")
python_check() {
  PYTHONPATH=$1 /usr/bin/python3 -c '
import sys, numpy as np, xonnx
s = xonnx.InferenceSession(sys.argv[1])
(p,) = s.run(None, {"image": np.zeros((1, 3, 32, 32), np.float32)})
assert p.shape == (1, 10) and abs(p.sum() - 1) < 1e-5, p
print("plugin", xonnx._xonnx.default_plugin_path())' "$model"
}
if [[ $pydir != . ]]; then
  out=$(XONNX_CACHE_DIR=$work/cache python_check "$pydir") || fail "the installed Python package failed"
  grep -q "^plugin $libdir/xonnx/" <<<"$out" || fail "Python's plugin was not the installed one: $out"
  # The package's whole test suite, on the installed package and command.
  PYTHONPATH=$pydir XONNX_CACHE_DIR=$work/cache /usr/bin/python3 -m pytest -q -p no:cacheprovider \
    "$src/python/tests" --installed-package "$pydir" --xonnx-cli "$prefix/bin/xonnx" --onnx-tests "$node_tests" \
    --example "$model" >"$work/pytest.log" 2>&1 || { cat "$work/pytest.log" >&2; fail "the Python tests failed on the installed package"; }
  tail -1 "$work/pytest.log"
fi

# 4. The installed command.
XONNX_CACHE_DIR=$work/cache "$prefix/bin/xonnx" run "$model" >/dev/null 2>&1 || fail "the installed xonnx failed"

# 5. The prefix moved elsewhere: everything still finds the plugin beside the library.
mv "$prefix" "$work/moved"
export LD_LIBRARY_PATH=$work/moved/${libdir#"$prefix"/}
out=$("$work/pc_consumer" "$model") || fail "the consumer failed after the prefix moved"
grep -q "^plugin $work/moved/" <<<"$out" || fail "after the move, the plugin came from elsewhere: $out"
XONNX_CACHE_DIR=$work/cache "$work/moved/bin/xonnx" run "$model" >/dev/null 2>&1 ||
  fail "the installed xonnx failed after the prefix moved"
if [[ $pydir != . ]]; then
  out=$(XONNX_CACHE_DIR=$work/cache python_check "$work/moved/${pydir#"$prefix"/}") ||
    fail "the Python package failed after the prefix moved"
  grep -q "^plugin $work/moved/" <<<"$out" || fail "after the move, Python's plugin came from elsewhere: $out"
fi
echo "install_test: passed (CMake, pkg-config C++ and C99 consumers, Python, command, moved prefix)"
