// ONNX Runtime (onnxruntime-node, CPU) generating greedily with a Hugging
// Face-style decoder, its cache fed back each step (present.N.* as the next
// past_key_values.N.*): the peer of `xonnx generate`. Prints one JSON object:
// the tokens, the prefill time (ms) and decode tokens per second.
// usage: node ort_generate.js MODEL --prompt 1,2,3 --new 64 --heads H --dim D [--threads 2]
// (H and D: the cache's heads and head size; the first call's past is empty)
const ort = require('onnxruntime-node');

async function main() {
  const argv = process.argv.slice(2);
  const a = {model: argv[0], threads: 2, n: 32, prompt: [1], heads: 0, dim: 0};
  for (let i = 1; i < argv.length; ++i) {
    if (argv[i] === '--threads') a.threads = Number(argv[++i]);
    else if (argv[i] === '--new') a.n = Number(argv[++i]);
    else if (argv[i] === '--prompt') a.prompt = argv[++i].split(',').map(Number);
    else if (argv[i] === '--heads') a.heads = Number(argv[++i]);
    else if (argv[i] === '--dim') a.dim = Number(argv[++i]);
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  const s = await ort.InferenceSession.create(a.model, {intraOpNumThreads: a.threads, interOpNumThreads: 1,
    graphOptimizationLevel: 'all'});
  const pasts = s.inputNames.filter((n) => n.startsWith('past_key_values.'));
  // One untimed prefill first, as xonnx's runs find their programs compiled.
  {
    const t = a.prompt.length;
    const feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(a.prompt.map(BigInt)), [1, t]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(t).fill(1n), [1, t]),
    };
    if (s.inputNames.includes('position_ids')) {
      feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from({length: t}, (_, i) => BigInt(i)), [1, t]);
    }
    for (const name of pasts) feeds[name] = new ort.Tensor('float32', new Float32Array(0), [1, a.heads, 0, a.dim]);
    await s.run(feeds);
  }
  let past = null;
  let ids = a.prompt.map(BigInt);
  let at = 0;
  const tokens = [];
  let prefillMs = 0;
  let decodeStart = 0;
  for (let step = 0; step < a.n; ++step) {
    const t = ids.length;
    const feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids), [1, t]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(at + t).fill(1n), [1, at + t]),
    };
    if (s.inputNames.includes('position_ids')) {
      feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from({length: t}, (_, i) => BigInt(at + i)), [1, t]);
    }
    for (const name of pasts) {
      feeds[name] = past ? past[name] : new ort.Tensor('float32', new Float32Array(0), [1, a.heads, 0, a.dim]);
    }
    const start = process.hrtime.bigint();
    const out = await s.run(feeds);
    const logits = out.logits;
    const vocab = logits.dims[2];
    const row = logits.data.subarray((t - 1) * vocab, t * vocab);
    let best = 0;
    for (let v = 1; v < vocab; ++v) if (row[v] > row[best]) best = v;
    tokens.push(best);
    if (step === 0) {
      prefillMs = Number(process.hrtime.bigint() - start) / 1e6;
      decodeStart = process.hrtime.bigint();
    }
    past = {};
    for (const name of pasts) past[name] = out[name.replace('past_key_values.', 'present.')];
    at += t;
    ids = [BigInt(best)];
  }
  const decodeS = Number(process.hrtime.bigint() - decodeStart) / 1e9;
  console.log(JSON.stringify({tokens, prefill_ms: prefillMs, decode_tokens_per_s: (a.n - 1) / decodeS}));
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
