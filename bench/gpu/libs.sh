# Sourced by the kit makers: pack_libs DEST BINARY... copies into DEST every
# shared library the binaries link that is not part of the C and C++
# runtimes (the GPU machine's own, newer libstdc++ serves xonnx and the CUDA
# plugin alike).
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
