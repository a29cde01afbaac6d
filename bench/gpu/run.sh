#!/usr/bin/env bash
# xonnx on a GPU through a PjRT plugin (by default XLA's CUDA plugin from the
# machine's jax installation), from the kit bench/gpu/make_kit.sh packs:
#   devices     the plugin loads and lists its devices;
#   conformance the ONNX node tests through the plugin, in each data type
#               (16-bit ones with looser tolerances), sharded over processes;
#   models      the real-model tests (tests/models) in each data type;
#   validate    each model's output on the GPU, computing in f32, f16 and
#               bf16, against the kit's f32 reference (xonnx's CPU plugin)
#               and, when the onnxruntime Python package is there, against
#               ONNX Runtime on the CPU as well;
#   startup     cold against warm start with the compile cache, ResNet-50
#               with 8 batch buckets (bench/startup.sh);
#   dump        XLA's optimized HLO of each model, type and batch (XLA's own
#               dump flags through the plugin): fusions and library calls
#               counted, the dumps packed as $OUT/dumps.tar.gz;
#   throughput  xonnx against PyTorch (bench/gpu/torch_bench.py) on the same
#               GPU, per model, data type and batch, run alternately; medians
#               over rounds of each engine's median latency. Both time a call
#               from host input to host output; xonnx's phases (upload,
#               execute, download) and PyTorch's device-only times are shown
#               too. PyTorch runs eagerly, replaying CUDA graphs and compiled
#               (--peers; torch.compile's --compile-mode). --baseline PATH
#               times another xonnx build alongside (xonnx-base); --in-flight N
#               adds xonnx with N calls in flight (xonnx-xN: Session::RunAsync,
#               one call's transfers overlapping another's compute), for
#               throughput. --variants 'NAME:FLAGS;...' times xonnx with more
#               flags as engine xonnx-NAME in the same rounds (a flag
#               XLA_FLAGS+=F adds F to the plugin's XLA_FLAGS for that run).
# --program-format hlo|stablehlo|auto is how every program goes to the
# plugin (conformance, models, throughput; XONNX_ARGS for the others).
# XONNX_ARGS adds flags to every xonnx command of validate and dump.
# Everything printed is also written to $OUT/gpu_results.txt when OUT is set.
#
# usage: bench/gpu/run.sh [--kit build/gpu_kit] [--plugin PATH]
#          [--parts all | devices,conformance,models,validate,startup,dump,throughput] [--rounds 3]
#          [--iterations 50] [--models resnet50,transformer_encoder]
#          [--dtypes f32,f16,bf16] [--batches 1,8,64] [--peers eager,graphs,compile]
#          [--compile-mode default|max-autotune|...] [--baseline OTHER_XONNX] [--in-flight N]
#          [--variants 'NAME:FLAGS;NAME:FLAGS'] [--program-format hlo|stablehlo|auto]
# --dtypes may name tf32 for the throughput part: float32 with TF32 products
# allowed on both sides (xonnx --allow-tf32, PyTorch's allow_tf32 flags).
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=build/gpu_kit plugin="" parts=devices,conformance,models,validate,startup,dump,throughput rounds=3 iterations=50
peers=eager,graphs,compile compile_mode=default baseline="" in_flight=1 variants="" program_format=auto
models=resnet50,transformer_encoder dtypes=f32,f16,bf16 batches=1,8,64
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kit) kit="$2"; shift 2 ;;
    --plugin) plugin="$2"; shift 2 ;;
    --parts) parts="$2"; [[ $parts != all ]] || parts=devices,conformance,models,validate,startup,dump,throughput; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --iterations) iterations="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --dtypes) dtypes="$2"; shift 2 ;;
    --batches) batches="$2"; shift 2 ;;
    --peers) peers="$2"; shift 2 ;;
    --in-flight) in_flight="$2"; shift 2 ;;
    --variants) variants="$2"; shift 2 ;;
    --compile-mode) compile_mode="$2"; shift 2 ;;
    --program-format) program_format="$2"; shift 2 ;;
    --baseline) baseline="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
py=python3
source bench/gpu/kit.sh
open_kit "$kit" bench/gpu/make_kit.sh
open_work gpu_results.txt
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
IFS=, read -ra model_list <<<"$models"
IFS=, read -ra dtype_list <<<"$dtypes"
IFS=, read -ra batch_list <<<"$batches"
variant_list=()
[[ -z $variants ]] || IFS=';' read -ra variant_list <<<"$variants"

say "xonnx GPU run: $(head -1 "$kit/MANIFEST"); plugin $plugin; $(date -u +%Y-%m-%dT%H:%MZ)"
for m in "${model_list[@]}"; do
  [[ -f $work/$m.onnx ]] || "$py" bench/gpu/weights.py fill "$kit/models/$m.skeleton.onnx" "$work/$m.onnx"
done
shape_of() { if [[ $1 == transformer_encoder ]]; then echo "input=$2x64x256"; else echo "input=$2x3x224x224"; fi; }

if [[ ,$parts, == *,devices,* ]]; then
  say "== devices"
  say "$("$xonnx" devices --plugin "$plugin" 2>&1)"
fi

# Options of the plugin's client for the test runners: several processes
# share the GPU, so none may take most of its memory up front (XLA's default).
# CREATE_OPTIONS="" for plugins that know no such option.
create=()
for o in ${CREATE_OPTIONS-preallocate=false}; do create+=(--create-option "$o"); done

# One shard of the node tests in one process (XLA's client is slow to create
# and does not survive fork()), restarted after the case that crashed it.
conformance_shard() {
  local shard=$1 d=$2 log=$3 after="" rc
  : >"$log"
  while true; do
    rc=0
    "$kit/bin/conformance_runner" --data "$work/node_tests/node" --expected-failures "$kit/expected_failures.txt" \
      --in-process --shard "$shard" ${after:+--after "$after"} --timeout 60 --plugin "$plugin" --data-type "$d" \
      --program-format "$program_format" \
      "${create[@]}" $(tolerances "$d") >>"$log" 2>"$log.err" || rc=$?
    ((rc > 1)) || break
    after=$(grep '^running ' "$log.err" | tail -1 | cut -d' ' -f2)
    [[ -n $after ]] || { echo "crash       (before any case) rc=$rc $(tail -2 "$log.err" | tr '\n' ' ')" >>"$log"; break; }
    echo "crash       $after  rc=$rc  -- $(grep -v '^running ' "$log.err" | tail -2 | tr '\n' ' ')" >>"$log"
  done
}
# ONNX's tolerances in f32; a 16-bit type keeps 11 (f16) or 8 (bf16)
# significant bits, so its relative bar is a few units of its last place.
tolerances() { case $1 in f16) echo "--rtol 4e-3 --atol 1e-3" ;; bf16) echo "--rtol 3e-2 --atol 1e-2" ;; *) ;; esac; }

if [[ ,$parts, == *,conformance,* ]]; then
  say "== conformance: ONNX node tests (onnx 1.12) through the plugin"
  [[ -d $work/node_tests/node ]] || { mkdir -p "$work/node_tests" && tar -C "$work/node_tests" -xf "$kit/node_tests.tar"; }
  shards=${SHARDS:-8}
  for d in "${dtype_list[@]}"; do
    for ((k = 0; k < shards; k++)); do conformance_shard "$k/$shards" "$d" "$work/conf_${d}_$k.log" & done
    wait
    cat "$work"/conf_"${d}"_*.log | grep -E '^(pass|fail|unsupported|crash) ' | sort -k2 >"$work/conf_$d.txt"
    [[ -z ${OUT:-} ]] || cp "$work/conf_$d.txt" "$OUT/conformance_$d.txt"
    say "$d: $(awk '{n[$1]++} END {printf "%d cases: %d pass, %d fail, %d unsupported, %d crashed", NR, n["pass"], n["fail"], n["unsupported"], n["crash"]}' "$work/conf_$d.txt")"
    say "$d: not in the CPU plugin's expected failures: $(grep -c -E 'REGRESSION|^crash' "$work/conf_$d.txt")"
  done
fi

if [[ ,$parts, == *,models,* ]]; then
  say "== models: the real-model tests (relative L2 error per data set)"
  if [[ ! -d $work/real_models ]]; then
    cp -r "$kit/real_models" "$work/real_models"
    while read -r m; do
      "$py" bench/gpu/weights.py fill "$work/real_models/$m/model.onnx" "$work/real_models/$m/model.onnx" 2>/dev/null
      "$py" bench/gpu/tensors.py refs "$work/real_models/$m"
    done <"$work/real_models/stripped"
  fi
  # Every data type at once, each over MODEL_SHARDS processes (XLA compiles
  # on the host, one model at a time per process; the GPU is mostly idle).
  names=() shards=${MODEL_SHARDS:-4}
  for m in "$work"/real_models/*/; do [[ -f $m/model.onnx ]] && names+=("$(basename "$m")"); done
  for d in "${dtype_list[@]}"; do
    case $d in f16) tol=2e-2 ;; bf16) tol=5e-2 ;; *) tol=1e-3 ;; esac
    for ((k = 0; k < shards; k++)); do
      only=$(for ((i = k; i < ${#names[@]}; i += shards)); do echo "${names[i]}"; done | paste -sd,)
      [[ -n $only ]] || continue
      timeout "${MODELS_TIMEOUT:-3600}" "$kit/bin/model_runner" --models "$work/real_models" --only "$only" --tolerance "$tol" --plugin "$plugin" \
        --program-format "$program_format" \
        --data-type "$d" "${create[@]}" >"$work/models_${d}_$k.log" 2>&1 &
    done
  done
  wait
  for d in "${dtype_list[@]}"; do
    case $d in f16) tol=2e-2 ;; bf16) tol=5e-2 ;; *) tol=1e-3 ;; esac
    cat "$work"/models_"${d}"_*.log | grep -E '^(PASS|FAIL|     )' >"$work/models_$d.txt" || true
    [[ -z ${OUT:-} ]] || cp "$work/models_$d.txt" "$OUT/models_$d.txt"
    summary=$(cat "$work"/models_"${d}"_*.log | awk '/^[0-9]+ passed, [0-9]+ failed$/ {p += $1; f += $3; n++}
      END {printf "%d passed, %d failed (%d of '"$shards"' runners finished)", p, f, n}')
    say "$d (tolerance $tol): $summary"
    say "$(grep -v '^PASS' "$work/models_$d.txt" | head -20)"
  done
fi

if [[ ,$parts, == *,validate,* ]]; then
  say "== validate: relative L2 error ||got - ref|| / ||ref|| against the f32 reference"
  for m in "${model_list[@]}"; do
    ref="$kit/models/$m/ref_cpu/output_0.pb"
    for d in "${dtype_list[@]}"; do
      out="$work/out_${m}_$d"
      if ! "$xonnx" run "$work/$m.onnx" --input "input=$kit/models/$m/input_0.pb" --plugin "$plugin" --data-type "$d" \
        --output-dir "$out" --no-cache ${XONNX_ARGS:-} >"$work/run.log" 2>&1; then
        say "$m $d: FAILED to run"; say "$(tail -5 "$work/run.log")"; continue
      fi
      say "$("$py" bench/gpu/tensors.py compare "$ref" "$out/output_0.pb" "$m" "$d")"
    done
    say "$("$py" bench/gpu/tensors.py ort "$work/$m.onnx" "$kit/models/$m/input_0.pb" "$ref" "$m" 2>&1)"
  done
fi

if [[ ,$parts, == *,startup,* ]]; then
  say "== startup: ResNet-50, 8 batch buckets up to 64 (bench/startup.sh --rounds $rounds)"
  say "$(XONNX="$xonnx" bench/startup.sh --rounds "$rounds" --model-file "$work/resnet50.onnx" \
    --xonnx-args "--plugin $plugin" --threads "$(nproc)" 2>&1)"
fi

if [[ ,$parts, == *,dump,* ]]; then
  # What XLA makes of our programs: its optimized HLO and the kernels it
  # launches, through the plugin's own dump flags.
  say "== dump: XLA's optimized HLO per model, type and batch (dumps.tar.gz)"
  for m in "${model_list[@]}"; do
    for d in "${dtype_list[@]}"; do
      for b in "${batch_list[@]}"; do
        dir="$work/dumps/${m}_${d}_$b"
        mkdir -p "$dir"
        XLA_FLAGS="${XLA_FLAGS:-} --xla_dump_to=$dir --xla_dump_hlo_as_text" "$xonnx" run "$work/$m.onnx" \
          --shape "$(shape_of "$m" "$b")" --plugin "$plugin" --data-type "$d" --io-data-type "$d" --no-cache ${XONNX_ARGS:-} \
          --output-dir "$work/dump_out" >"$work/dump.log" 2>&1 || { say "$m $d $b: FAILED: $(tail -3 "$work/dump.log")"; continue; }
        f=$(ls "$dir"/*after_optimizations.txt 2>/dev/null | head -1 || true)
        [[ -n $f ]] || { say "$m $d $b: no dump written"; continue; }
        say "$m $d $b: $(grep -c ' fusion(' "$f") fusions, $(grep -c 'custom-call(' "$f") custom calls" \
          "($(grep -o 'custom_call_target="[^"]*"' "$f" | sort | uniq -c | awk '{printf "%s %s; ", $1, $2}'))"
      done
    done
  done
  [[ -z ${OUT:-} ]] || tar -C "$work" -czf "$OUT/dumps.tar.gz" dumps
fi

if [[ ,$parts, == *,throughput,* ]]; then
  say "== throughput: median latency ms (host input to host output), $rounds rounds x $iterations iterations"
  say "   f32 is exact float32 on both sides; tf32 lets both round float32 products to TF32"
  say "   PyTorch modes: $peers${baseline:+; xonnx-base is $baseline}"
  results_jsonl="${OUT:-$work}/speed.jsonl"  # in OUT as it grows: kept if the run is cut short
  : >"$results_jsonl"
  # One xonnx process per model, type and batch (--json adds the fields the
  # table groups by).
  xonnx_run() {
    local engine=$1 bin=$2 m=$3 d=$4 b=$5 j f xla="${XLA_FLAGS:-}" extra=()
    for f in "${@:6}"; do
      if [[ $f == XLA_FLAGS+=* ]]; then xla="$xla ${f#XLA_FLAGS+=}"; else extra+=("$f"); fi
    done
    local xflags=(--data-type "$d" --io-data-type "$d" --program-format "$program_format")
    [[ $d != tf32 ]] || xflags=(--data-type f32 --allow-tf32)
    j=$(XLA_FLAGS="$xla" "$bin" bench "$work/$m.onnx" --shape "$(shape_of "$m" "$b")" --plugin "$plugin" "${xflags[@]}" "${extra[@]}" \
      --iterations "$iterations" --warmup 10 --json --cache-dir "$work/cache_$engine" 2>"$work/bench.log") ||
      { say "$m $d $b: $engine FAILED: $(tail -3 "$work/bench.log")"; return 0; }
    echo "$j" | "$py" -c "import json,sys; d=json.load(sys.stdin)
d.update(engine=sys.argv[1], model=sys.argv[2], dtype=sys.argv[3], batch=int(sys.argv[4])); print(json.dumps(d))" \
      "$engine" "$m" "$d" "$b" >>"$results_jsonl"
  }
  # Rounds alternate the engines; PyTorch times every mode and batch in one
  # process (a hung compile is cut off, what it printed before is kept).
  for ((r = 0; r < rounds; r++)); do
    for m in "${model_list[@]}"; do
      for d in "${dtype_list[@]}"; do
        for b in "${batch_list[@]}"; do
          xonnx_run xonnx "$xonnx" "$m" "$d" "$b"
          [[ -z $baseline ]] || xonnx_run xonnx-base "$baseline" "$m" "$d" "$b"
          ((in_flight <= 1)) || xonnx_run "xonnx-x$in_flight" "$xonnx" "$m" "$d" "$b" --in-flight "$in_flight"
          for v in "${variant_list[@]}"; do
            # shellcheck disable=SC2086  # the variant's flags are words
            xonnx_run "xonnx-${v%%:*}" "$xonnx" "$m" "$d" "$b" ${v#*:}
          done
        done
        tflags=(--dtype "$d")
        [[ $d != tf32 ]] || tflags=(--dtype f32 --tf32)
        timeout "${TORCH_TIMEOUT:-600}" "$py" bench/gpu/torch_bench.py --model "$m" --batch "$batches" "${tflags[@]}" \
          --iterations "$iterations" --modes "$peers" --compile-mode "$compile_mode" >"$work/torch.json" 2>"$work/torch.log" ||
          say "$m $d round $r: pytorch stopped: $(tail -2 "$work/torch.log" | tr '\n' ' ')"
        "$py" -c "import json,sys
for line in open(sys.argv[1]):
    d = json.loads(line); d['dtype'] = sys.argv[2]; print(json.dumps(d))" "$work/torch.json" "$d" >>"$results_jsonl"
      done
    done
  done
  say "$("$py" bench/gpu/speed_table.py "$results_jsonl")"
fi
