#!/usr/bin/env bash
# The inference server against the same models run in-process: what the
# server adds to a call's latency, and what dynamic batching gets out of the
# machine. For each model (default ResNet-50 and a BERT-style encoder,
# masked_encoder: 64 tokens of 256, 4 layers), `xonnx serve` runs it from a
# repository with max_batch_size 16 and dynamic batching, and hey (a Go load
# generator) sends binary-tensor requests on loopback:
#   c=1:  p50 and p99 latency of sequential single requests, beside
#         `xonnx bench` at batch 1 in-process (the server's overhead), and
#         from the server's access log the median time it spent on a
#         request outside the model's call (reading the body, decoding,
#         queueing, encoding, writing: "server ms") and the served calls'
#         own median ("call ms"); the rest of +p50 is the client's and the
#         call's (the same program, here beside a client on the same cores);
#   c=16: requests per second from 16 concurrent clients, merged by the
#         batcher, beside `xonnx bench` at batch 16 in-process (items/s) and
#         the server's own c=1 rate (sequential unbatched calls).
# Rounds alternate the in-process and the served runs; the table gives the
# medians over rounds. The queue delay (--delay-us, max_queue_delay_microseconds)
# bounds how long a call waits for rows the batcher expects; a lone request
# never waits for it.
#
# usage: bench/serve.sh [--rounds 3] [--models resnet50,masked_encoder] [--seconds 10] [--requests 200]
#                       [--delay-us 20000] [--threads 2]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 models=resnet50,masked_encoder seconds=10 requests=200 delay_us=20000 threads=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --delay-us) delay_us="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
xonnx="${XONNX:-build/bin/xonnx}"
[[ -x "$xonnx" ]] || { echo "build xonnx first (scripts/test.sh or cmake --build build)" >&2; exit 1; }
command -v hey >/dev/null || { echo "bench/serve.sh needs hey (apt-get install hey)" >&2; exit 1; }
work="${BENCH_DIR:-build/bench_models}"
export OMP_NUM_THREADS=$threads
corpus=$(/usr/bin/python3 bench/corpus.py --list | awk '{print $1}')
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
json() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# hey's summary: requests/s, and a latency percentile in ms.
hey_rps() { awk '/Requests\/sec:/ {print $2}'; }
hey_pct() { awk -v p="$1%" '$1 == p && $2 == "in" {printf "%.3f\n", $3 * 1000}'; }

IFS=, read -ra list <<<"$models"
printf '%-16s %10s %10s %10s %10s %9s %10s %10s | %12s %12s %12s %8s\n' model "bench p50" "serve p50" "bench p99" \
  "serve p99" "+p50 ms" "server ms" "call ms" "b16 items/s" "c16 req/s" "c1 req/s" "c16/b16"
for m in "${list[@]}"; do
  if grep -qx "$m" <<<"$corpus"; then
    /usr/bin/python3 bench/corpus.py "$work" --models "$m" --opsets 17 2>/dev/null
  else
    /usr/bin/python3 tests/models/export_models.py "$work" --models "$m" --opsets 17 2>/dev/null
  fi
  onnx="$work/${m}_op17/model.onnx"
  # Each input's shape after the batch dimension.
  declare -A dims=()
  if [[ -f "$work/${m}_op17/inputs.txt" ]]; then
    while IFS= read -r line; do dims[${line%%=*}]=${line#*=}; done <"$work/${m}_op17/inputs.txt"
  elif [[ $m == transformer_encoder ]]; then
    dims[input]=64x256
  else
    dims[input]=3x224x224
  fi
  repo=$(mktemp -d)
  mkdir -p "$repo/$m/1"
  ln -s "$(realpath "$onnx")" "$repo/$m/1/model.onnx"
  [[ -f "$onnx.data" ]] && ln -s "$(realpath "$onnx.data")" "$repo/$m/1/"
  printf 'max_batch_size: 16\ndynamic_batching { max_queue_delay_microseconds: %s }\n' "$delay_us" >"$repo/$m/config.pbtxt"
  # The request: every input as binary data, random values (a mask of ones).
  /usr/bin/python3 - "$repo/request.bin" "$repo/header_length" "${!dims[@]}" -- "${dims[@]}" <<'PY'
import json, sys
import numpy as np
out, hl = sys.argv[1], sys.argv[2]
sep = sys.argv.index("--")
names, shapes = sys.argv[3:sep], sys.argv[sep + 1:]
rng = np.random.default_rng(0)
inputs = []
for n, s in zip(names, shapes):
    shape = [1] + [int(d) for d in s.split("x")]
    a = np.ones(shape, np.float32) if n == "mask" else rng.standard_normal(shape).astype(np.float32)
    inputs.append((n, a))
head = json.dumps({"inputs": [{"name": n, "shape": list(a.shape), "datatype": "FP32",
                               "parameters": {"binary_data_size": a.nbytes}} for n, a in inputs],
                   "parameters": {"binary_data_output": True}}).encode()
open(out, "wb").write(head + b"".join(a.tobytes() for _, a in inputs))
open(hl, "w").write(str(len(head)))
PY
  log="$repo/serve.log"
  "$xonnx" serve --model-repository "$repo" --http-address 127.0.0.1 --http-port 0 --allow-grpc false \
    --allow-metrics false --access-log "$repo/access.log" 2>"$log" &
  pid=$!
  for _ in $(seq 600); do grep -q "xonnx serve: ready" "$log" && break; sleep 0.2; done
  port=$(grep -o "HTTP listening on 127.0.0.1:[0-9]*" "$log" | cut -d: -f2)
  [[ -n "$port" ]] || { cat "$log" >&2; kill $pid; exit 1; }
  url="http://127.0.0.1:$port/v2/models/$m/infer"
  heyargs=(-m POST -T application/octet-stream -H "Inference-Header-Content-Length: $(cat "$repo/header_length")"
           -D "$repo/request.bin")
  shapes1=() shapes16=()
  for n in "${!dims[@]}"; do shapes1+=(--shape "$n=1x${dims[$n]}"); shapes16+=(--shape "$n=16x${dims[$n]}"); done
  hey -n 20 -c 1 "${heyargs[@]}" "$url" >/dev/null  # warm the connection path
  bp50=() bp99=() sp50=() sp99=() b16=() c16=() c1=() own=() call=()
  for ((r = 0; r < rounds; r++)); do
    b=$("$xonnx" bench "$onnx" "${shapes1[@]}" --iterations "$requests" --json 2>/dev/null)
    bp50+=("$(json "d['latency_ms']['p50']" <<<"$b")") bp99+=("$(json "d['latency_ms']['p99']" <<<"$b")")
    : >"$repo/access.log"
    s=$(hey -n "$requests" -c 1 "${heyargs[@]}" "$url")
    # The access log's times, in ms: outside the call, and the call.
    read -r o c < <(/usr/bin/python3 -c "
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if '\"compute_us\"' in line]
print(statistics.median(r['total_us'] - r['compute_us'] for r in rows) / 1000,
      statistics.median(r['compute_us'] for r in rows) / 1000)" "$repo/access.log")
    own+=("$o") call+=("$c")
    sp50+=("$(hey_pct 50 <<<"$s")") sp99+=("$(hey_pct 99 <<<"$s")") c1+=("$(hey_rps <<<"$s")")
    b=$("$xonnx" bench "$onnx" "${shapes16[@]}" --duration "$seconds" --json 2>/dev/null)
    b16+=("$(json "d['items_per_s']" <<<"$b")")
    s=$(hey -z "${seconds}s" -c 16 "${heyargs[@]}" "$url")
    grep -q "\[200\]" <<<"$s" && ! grep -q "Error distribution" <<<"$s" || { echo "$s" >&2; kill $pid; exit 1; }
    c16+=("$(hey_rps <<<"$s")")
  done
  kill -TERM $pid
  wait $pid || true
  rm -rf "$repo"
  med() { printf '%s\n' "$@" | median; }
  P50=$(med "${bp50[@]}") S50=$(med "${sp50[@]}") B16=$(med "${b16[@]}") C16=$(med "${c16[@]}")
  printf '%-16s %10.3f %10.3f %10.3f %10.3f %9.3f %10.3f %10.3f | %12.1f %12.1f %12.1f %8.2f\n' "$m" "$P50" "$S50" \
    "$(med "${bp99[@]}")" "$(med "${sp99[@]}")" "$(echo "$S50 - $P50" | bc -l)" "$(med "${own[@]}")" \
    "$(med "${call[@]}")" "$B16" "$C16" "$(med "${c1[@]}")" \
    "$(echo "$C16 / $B16" | bc -l)"
  unset dims
done
echo "(latencies in ms; medians of $rounds rounds; $threads threads, $(nproc) cores, $(uname -m); hey on the same cores)"
