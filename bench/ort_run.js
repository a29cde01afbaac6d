// Runs one model on ONNX Runtime (onnxruntime-node, CPU) and writes its
// outputs, for bench/agree.py to set beside xonnx's.
// usage: node ort_run.js MODEL OUT_DIR NAME=DIMS=FILE [NAME=DIMS=FILE ...]
// Each input is a raw little-endian float32 file of the given dims
// (1x3x224x224); each output k is written to OUT_DIR/output_<k>.raw, raw
// float32, in the model's output order.
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

async function main() {
  const [model, outDir, ...specs] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 2, graphOptimizationLevel: 'all'});
  const feeds = {};
  for (const spec of specs) {
    const [name, dims, file] = spec.split('=');
    const buf = fs.readFileSync(file);
    const data = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
    feeds[name] = new ort.Tensor('float32', data, dims === '' ? [] : dims.split('x').map(Number));
  }
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, {recursive: true});
  session.outputNames.forEach((name, k) => {
    const t = results[name];
    if (t.type !== 'float32') throw new Error(`output ${name} is ${t.type}, not float32`);
    fs.writeFileSync(path.join(outDir, `output_${k}.raw`), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  });
}

main().catch((e) => { console.error(e.message); process.exit(1); });
