// ONNX Runtime (onnxruntime-node, CPU) timing of one model, printed as one
// JSON object like `xonnx bench --json`.
// usage: node ort_bench.js MODEL NAME=1x3x224x224 [--threads 2] [--warmup 5] [--iterations 50]
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const a = {threads: 2, warmup: 5, iterations: 50, shapes: {}};
  a.model = argv[0];
  for (let i = 1; i < argv.length; ++i) {
    if (argv[i] === '--threads') a.threads = Number(argv[++i]);
    else if (argv[i] === '--warmup') a.warmup = Number(argv[++i]);
    else if (argv[i] === '--iterations') a.iterations = Number(argv[++i]);
    else {
      const [name, dims] = argv[i].split('=');
      a.shapes[name] = dims.split('x').map(Number);
    }
  }
  return a;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, {
    intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all'});
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const feeds = {};
  let seed = 1;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 1073741824 - 1; };
  for (const name of session.inputNames) {
    const dims = a.shapes[name];
    if (!dims) throw new Error(`no shape given for input ${name}`);
    const n = dims.reduce((x, y) => x * y, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; ++i) data[i] = rand();
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  for (let i = 0; i < a.warmup; ++i) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < a.iterations; ++i) {
    const t = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  ms.sort((x, y) => x - y);
  const median = ms.length % 2 ? ms[(ms.length - 1) / 2] : (ms[ms.length / 2 - 1] + ms[ms.length / 2]) / 2;
  const p90 = ms[Math.min(ms.length - 1, Math.floor(0.9 * ms.length))];
  console.log(JSON.stringify({load_ms: loadMs, latency_ms: {min: ms[0], median, p90}, iterations: a.iterations}));
}

main().catch((e) => { console.error(`ort_bench: ${e.message}`); process.exit(1); });
