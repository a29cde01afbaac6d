# Sourced by the GPU kit scripts: the steps every kit maker (on the Debian
# machine) and every kit runner (on the GPU machine) takes.

# new_kit KIT: an empty KIT with bin/ (the xonnx program, from $XONNX or
# build/bin/xonnx), lib/ and models/. Sets $xonnx.
new_kit() {
  local kit=$1
  xonnx="${XONNX:-build/bin/xonnx}"
  [[ -x "$xonnx" ]] || { echo "build xonnx first (cmake --build build)" >&2; exit 1; }
  rm -rf "$kit"
  mkdir -p "$kit/bin" "$kit/lib" "$kit/models"
  cp "$xonnx" "$kit/bin/xonnx"
}

# pack_libs DEST BINARY...: copies into DEST every shared library the
# binaries link that is not part of the C and C++ runtimes (the GPU
# machine's own, newer libstdc++ serves xonnx and the CUDA plugin alike).
pack_libs() {
  local dest=$1
  shift
  for bin in "$@"; do ldd "$bin"; done | sort -u | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*) ;;
      *) cp -L "$lib" "$dest/" ;;
    esac
  done
}

# open_kit KIT MAKER: unpacks KIT.tar.xz when KIT is not there; finds the
# plugin ($plugin, or XLA's CUDA plugin in the machine's jax installation,
# with XLA_FLAGS pointing at the CUDA wheels' ptxas and libdevice); puts
# the kit's libraries on LD_LIBRARY_PATH. Sets $xonnx and $plugin; $py is
# the Python that has jax.
open_kit() {
  local kit=$1 maker=$2 dir nvidia
  [[ -x $kit/bin/xonnx || ! -f $kit.tar.xz ]] || tar -C "$(dirname "$kit")" -xJf "$kit.tar.xz"
  [[ -x $kit/bin/xonnx ]] || { echo "$kit/bin/xonnx not found: make the kit with $maker" >&2; exit 1; }
  if [[ -z $plugin ]]; then
    dir=$("$py" -c "import jax_plugins.xla_cuda13 as p, os; print(os.path.dirname(p.__file__))" 2>/dev/null) ||
      { echo "no --plugin given and jax_plugins.xla_cuda13 is not installed" >&2; exit 1; }
    plugin="$dir/xla_cuda_plugin.so"
    # XLA looks for ptxas and libdevice under the CUDA folder of the wheels.
    nvidia="$(dirname "$(dirname "$dir")")/nvidia/cu13"
    if [[ -z ${XLA_FLAGS:-} && -d $nvidia ]]; then export XLA_FLAGS="--xla_gpu_cuda_data_dir=$nvidia"; fi
  fi
  [[ -f $plugin ]] || { echo "plugin $plugin not found" >&2; exit 1; }
  export LD_LIBRARY_PATH="$(cd "$kit/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  xonnx="$(cd "$kit/bin" && pwd)/xonnx"
}

# open_work NAME: sets $work (the folder WORK names, kept; else a folder of
# our own, removed at exit) and $results ($OUT/NAME when OUT is set, the
# folder made).
open_work() {
  if [[ -n ${WORK:-} ]]; then
    work=$WORK
    mkdir -p "$work"
  else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
  fi
  [[ -z ${OUT:-} ]] || mkdir -p "$OUT"
  results="${OUT:+$OUT/$1}"
}

# say LINE...: prints the line, and appends it to $results when set.
say() { if [[ -n $results ]]; then echo "$@" | tee -a "$results"; else echo "$@"; fi; }
