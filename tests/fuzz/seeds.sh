#!/usr/bin/env bash
# Seed corpora of the fuzz targets, made from the build's own outputs:
#   seeds.sh OUT_DIR XONNX EXAMPLE_MODEL ONNX_NODE_TESTS_DIR
# OUT_DIR/model: ONNX models (the example and node tests with control flow,
# recurrences, resizing); OUT_DIR/tensor_file: .pb and .npy tensors, each
# behind the byte that tells the target which it is; OUT_DIR/hlo_proto:
# HloModuleProtos from `xonnx convert`; OUT_DIR/stablehlo: the same programs
# as StableHLO text (`xonnx convert --stablehlo`); OUT_DIR/cache_entry: compile-cache
# entries written by `xonnx run`.
set -euo pipefail
out=$1 xonnx=$2 model=$3 node=$4
rm -rf "$out"
mkdir -p "$out"/{model,tensor_file,hlo_proto,stablehlo,cache_entry}
cp "$model" "$out/model/example.onnx"
for t in test_if test_loop11 test_lstm_defaults test_gru_defaults test_resize_upsample_scales_linear \
         test_conv_with_strides_padding test_nonmaxsuppression_center_point_box_format test_scan9_sum; do
  [[ -f $node/$t/model.onnx ]] || { echo "seeds: $node/$t/model.onnx is missing" >&2; exit 1; }
  cp "$node/$t/model.onnx" "$out/model/$t.onnx"
  { printf '\x00'; cat "$node/$t/test_data_set_0/input_0.pb"; } >"$out/tensor_file/$t.pb.seed"
done
/usr/bin/python3 - "$out/tensor_file" <<'PY'
import io, sys
import numpy as np
for name, a in {"f32": np.arange(12, dtype=np.float32).reshape(3, 4), "i64": np.array([5, -1], np.int64),
                "bool": np.array([[True], [False]]), "f16": np.ones((2, 2), np.float16)}.items():
    buf = io.BytesIO()
    np.save(buf, a)
    open(f"{sys.argv[1]}/{name}.npy.seed", "wb").write(b"\x01" + buf.getvalue())
PY
XONNX_CACHE_DIR="$out/cache" "$xonnx" convert "$model" --hlo-proto "$out/hlo_proto/example.pb" >/dev/null
"$xonnx" convert "$node/test_if/model.onnx" --hlo-proto "$out/hlo_proto/if.pb" >/dev/null
"$xonnx" convert "$node/test_lstm_defaults/model.onnx" --hlo-proto "$out/hlo_proto/lstm.pb" >/dev/null
for t in test_if test_lstm_defaults test_scan9_sum test_einsum_batch_matmul test_argmax_default_axis_example \
         test_gathernd_example_int32 test_scatter_elements_with_axis test_maxpool_2d_pads test_erf test_convtranspose test_gru_defaults; do
  "$xonnx" convert "$node/$t/model.onnx" --stablehlo "$out/stablehlo/$t.mlir" >/dev/null
done
"$xonnx" convert "$model" --stablehlo "$out/stablehlo/example.mlir" >/dev/null
"$xonnx" run "$model" --cache-dir "$out/cache" >/dev/null 2>&1
cp "$out"/cache/*.xcache "$out/cache_entry/"
rm -rf "$out/cache"
echo "seeds: $(find "$out" -type f | wc -l) files in $out"
