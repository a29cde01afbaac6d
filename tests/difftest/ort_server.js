// Runs models on ONNX Runtime (npm onnxruntime-node, CPU) for the
// differential tester, one request per line on stdin, one answer per line
// on stdout, so that one Node.js process serves a whole search.
//
// A request: {"model": PATH, "inputs": [{"name", "type", "dims", "file"}],
//             "out": DIR}
// where each input file holds the raw little-endian values. The answer:
// {"outputs": [{"name", "type", "dims", "file"}]} with each output's raw
// values written to DIR/<k>.raw, or {"error": MESSAGE} when ONNX Runtime
// refuses the model or the inputs.
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');
const readline = require('readline');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};

async function serve(req) {
  const session = await ort.InferenceSession.create(req.model, {intraOpNumThreads: 1, graphOptimizationLevel: 'all', logSeverityLevel: 4});
  // Released at once: the garbage collector does not see a session's
  // native memory, which grew over a long search until the process died.
  try {
    return await runSession(session, req);
  } finally {
    await session.release();
  }
}

async function runSession(session, req) {
  const feeds = {};
  for (const i of req.inputs) {
    const buf = fs.readFileSync(i.file);
    const Arr = ARRAYS[i.type];
    const data = new Arr(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    feeds[i.name] = new ort.Tensor(i.type, data, i.dims);
  }
  const results = await session.run(feeds);
  fs.mkdirSync(req.out, {recursive: true});
  const outputs = session.outputNames.map((name, k) => {
    const t = results[name];
    const file = path.join(req.out, `${k}.raw`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    return {name, type: t.type, dims: t.dims, file};
  });
  return {outputs};
}

const rl = readline.createInterface({input: process.stdin});
let queue = Promise.resolve();
rl.on('line', (line) => {
  queue = queue.then(async () => {
    let answer;
    try {
      answer = await serve(JSON.parse(line));
    } catch (e) {
      answer = {error: String(e.message || e).split('\n')[0]};
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  });
});
