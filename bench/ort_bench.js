// ONNX Runtime (onnxruntime-node, CPU) timing of one model, printed as one
// JSON object like `xonnx bench --json`.
// usage: node ort_bench.js MODEL NAME=1x3x224x224|NAME=@FILE.npy ... [--threads 2] [--warmup 5] [--iterations 50]
// An input given as a shape gets random float32 values; one given as @FILE.npy
// gets that file's values and type (float32/64/16, int64/32/8, uint8, bool).
const fs = require('fs');
const ort = require('onnxruntime-node');

// Reads a NumPy .npy file (format 1.0-3.0, C order, little-endian) into an ort.Tensor.
function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.readUInt32BE(0) !== 0x934e554d) throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${path}: Fortran order is not supported`);
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((d) => d.trim()).filter((d) => d).map(Number);
  const types = {'<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
    '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '|i1': ['int8', Int8Array],
    '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array]};
  const t = types[descr];
  if (!t) throw new Error(`${path}: element type ${descr} is not supported`);
  const bytes = buf.subarray(start);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const data = new t[1](copy.buffer, 0, bytes.length / t[1].BYTES_PER_ELEMENT);
  return new ort.Tensor(t[0], data, dims);
}

function parseArgs(argv) {
  const a = {threads: 2, warmup: 5, iterations: 50, shapes: {}};
  a.model = argv[0];
  for (let i = 1; i < argv.length; ++i) {
    if (argv[i] === '--threads') a.threads = Number(argv[++i]);
    else if (argv[i] === '--warmup') a.warmup = Number(argv[++i]);
    else if (argv[i] === '--iterations') a.iterations = Number(argv[++i]);
    else {
      const [name, dims] = argv[i].split('=');
      a.shapes[name] = dims.startsWith('@') ? dims.slice(1) : dims.split('x').map(Number);
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
    if (typeof dims === 'string') {
      feeds[name] = readNpy(dims);
      continue;
    }
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
