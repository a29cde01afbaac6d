#!/usr/bin/env bash
# xonnx on a GPU through a PjRT plugin (by default XLA's CUDA plugin from the
# machine's jax installation), from the kit bench/gpu/make_kit.sh packs:
#   devices     the plugin loads and lists its devices;
#   validate    each model's output on the GPU, computing in f32, f16 and
#               bf16, against the kit's f32 reference (xonnx's CPU plugin)
#               and, when the onnxruntime Python package is there, against
#               ONNX Runtime on the CPU as well;
#   startup     cold against warm start with the compile cache, ResNet-50
#               with 8 batch buckets (bench/startup.sh);
#   throughput  xonnx against PyTorch (bench/gpu/torch_bench.py) on the same
#               GPU, per model, data type and batch, run alternately; medians
#               over rounds of each engine's median latency. Both time a call
#               from host input to host output; PyTorch's device-only time
#               is shown too.
# Everything printed is also written to $OUT/gpu_results.txt when OUT is set.
#
# usage: bench/gpu/run.sh [--kit build/gpu_kit] [--plugin PATH]
#          [--parts devices,validate,startup,throughput] [--rounds 3]
#          [--iterations 50] [--models resnet50,transformer_encoder]
#          [--dtypes f32,f16,bf16] [--batches 1,8,64]
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=build/gpu_kit plugin="" parts=devices,validate,startup,throughput rounds=3 iterations=50
models=resnet50,transformer_encoder dtypes=f32,f16,bf16 batches=1,8,64
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kit) kit="$2"; shift 2 ;;
    --plugin) plugin="$2"; shift 2 ;;
    --parts) parts="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --iterations) iterations="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --dtypes) dtypes="$2"; shift 2 ;;
    --batches) batches="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x $kit/bin/xonnx ]] || { echo "$kit/bin/xonnx not found: make the kit with bench/gpu/make_kit.sh" >&2; exit 1; }
py=python3
if [[ -z $plugin ]]; then
  dir=$("$py" -c "import jax_plugins.xla_cuda13 as p, os; print(os.path.dirname(p.__file__))" 2>/dev/null) ||
    { echo "no --plugin given and jax_plugins.xla_cuda13 is not installed" >&2; exit 1; }
  plugin="$dir/xla_cuda_plugin.so"
  # XLA looks for ptxas and libdevice under the CUDA folder of the wheels.
  nvidia="$(dirname "$(dirname "$dir")")/nvidia/cu13"
  if [[ -z ${XLA_FLAGS:-} && -d $nvidia ]]; then export XLA_FLAGS="--xla_gpu_cuda_data_dir=$nvidia"; fi
fi
[[ -f $plugin ]] || { echo "plugin $plugin not found" >&2; exit 1; }
libs="$(cd "$kit/lib" && pwd)"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
xonnx="$(cd "$kit/bin" && pwd)/xonnx"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$work"
results="${OUT:+$OUT/gpu_results.txt}"
say() { if [[ -n $results ]]; then echo "$@" | tee -a "$results"; else echo "$@"; fi; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
IFS=, read -ra model_list <<<"$models"
IFS=, read -ra dtype_list <<<"$dtypes"
IFS=, read -ra batch_list <<<"$batches"

say "xonnx GPU run: $(head -1 "$kit/MANIFEST"); plugin $plugin; $(date -u +%Y-%m-%dT%H:%MZ)"
for m in "${model_list[@]}"; do
  [[ -f $work/$m.onnx ]] || "$py" bench/gpu/weights.py fill "$kit/models/$m.skeleton.onnx" "$work/$m.onnx"
done
shape_of() { if [[ $1 == transformer_encoder ]]; then echo "input=$2x64x256"; else echo "input=$2x3x224x224"; fi; }

if [[ ,$parts, == *,devices,* ]]; then
  say "== devices"
  say "$("$xonnx" devices --plugin "$plugin" 2>&1)"
fi

if [[ ,$parts, == *,validate,* ]]; then
  say "== validate: relative L2 error ||got - ref|| / ||ref|| against the f32 reference"
  for m in "${model_list[@]}"; do
    ref="$kit/models/$m/ref_cpu/output_0.pb"
    for d in "${dtype_list[@]}"; do
      out="$work/out_${m}_$d"
      if ! "$xonnx" run "$work/$m.onnx" --input "input=$kit/models/$m/input_0.pb" --plugin "$plugin" --data-type "$d" \
        --output-dir "$out" --no-cache >"$work/run.log" 2>&1; then
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

if [[ ,$parts, == *,throughput,* ]]; then
  say "== throughput: median latency ms (host input to host output), $rounds rounds x $iterations iterations"
  say "$(printf '%-20s %5s %6s %10s %10s %12s %8s' model dtype batch "xonnx" "pytorch" "pytorch dev" "ratio")"
  for m in "${model_list[@]}"; do
    for d in "${dtype_list[@]}"; do
      for b in "${batch_list[@]}"; do
        xs=() ts=() tds=()
        for ((r = 0; r < rounds; r++)); do
          j=$("$xonnx" bench "$work/$m.onnx" --shape "$(shape_of "$m" "$b")" --plugin "$plugin" --data-type "$d" \
            --io-data-type "$d" --iterations "$iterations" --warmup 10 --json --cache-dir "$work/cache" 2>"$work/bench.log") ||
            { say "$m $d $b: xonnx FAILED: $(tail -3 "$work/bench.log")"; continue 2; }
          xs+=("$(echo "$j" | "$py" -c "import json,sys; print(json.load(sys.stdin)['latency_ms']['median'])")")
          j=$("$py" bench/gpu/torch_bench.py --model "$m" --batch "$b" --dtype "$d" --iterations "$iterations" 2>"$work/torch.log") ||
            { say "$m $d $b: pytorch FAILED: $(tail -3 "$work/torch.log")"; continue 2; }
          read -r t td < <(echo "$j" | "$py" -c \
            "import json,sys; d=json.load(sys.stdin); print(d['latency_ms']['median'], d['device_latency_ms']['median'])")
          ts+=("$t") tds+=("$td")
        done
        x=$(printf '%s\n' "${xs[@]}" | median)
        t=$(printf '%s\n' "${ts[@]}" | median)
        td=$(printf '%s\n' "${tds[@]}" | median)
        say "$(printf '%-20s %5s %6s %10.3f %10.3f %12.3f %8.2f' "$m" "$d" "$b" "$x" "$t" "$td" "$(echo "$x / $t" | bc -l)")"
      done
    done
  done
  say "(ratio = xonnx / pytorch, host to host; below 1 means xonnx is faster)"
fi
