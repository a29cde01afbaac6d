// ONNX Runtime (onnxruntime-node, CPU) generating greedily with a Hugging
// Face-style decoder, its cache fed back each step (present.N.* as the next
// past_key_values.N.*): the peer of `xonnx generate`. Prints one JSON object:
// the tokens, the prefill time (ms) and decode tokens per second.
// usage: node ort_generate.js MODEL --prompt 1,2,3 [--prompt 4,5,6 ...] --new 64 --heads H --dim D [--threads 2]
// (prompts of one length; several make a batch)
// (H and D: the cache's heads and head size; the first call's past is empty)
const ort = require('onnxruntime-node');

async function main() {
  const argv = process.argv.slice(2);
  const a = {model: argv[0], threads: 2, n: 32, prompts: [], heads: 0, dim: 0};
  for (let i = 1; i < argv.length; ++i) {
    if (argv[i] === '--threads') a.threads = Number(argv[++i]);
    else if (argv[i] === '--new') a.n = Number(argv[++i]);
    else if (argv[i] === '--prompt') a.prompts.push(argv[++i].split(',').map(Number));
    else if (argv[i] === '--heads') a.heads = Number(argv[++i]);
    else if (argv[i] === '--dim') a.dim = Number(argv[++i]);
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  const s = await ort.InferenceSession.create(a.model, {intraOpNumThreads: a.threads, interOpNumThreads: 1,
    graphOptimizationLevel: 'all'});
  const pasts = s.inputNames.filter((n) => n.startsWith('past_key_values.'));
  const b = a.prompts.length;
  const t0 = a.prompts[0].length;
  if (a.prompts.some((p) => p.length !== t0)) throw new Error('prompts must have one length');
  // A call on `ids` ([b][t]) after `at` tokens, the past given (null: empty).
  const call = async (ids, at, past) => {
    const t = ids[0].length;
    const feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.flat().map(BigInt)), [b, t]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(b * (at + t)).fill(1n), [b, at + t]),
    };
    if (s.inputNames.includes('position_ids')) {
      feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from({length: b * t}, (_, i) => BigInt(at + (i % t))),
          [b, t]);
    }
    for (const name of pasts) {
      feeds[name] = past ? past[name] : new ort.Tensor('float32', new Float32Array(0), [b, a.heads, 0, a.dim]);
    }
    return s.run(feeds);
  };
  await call(a.prompts, 0, null);  // untimed, as xonnx's runs find their programs compiled
  let past = null;
  let ids = a.prompts;
  let at = 0;
  const tokens = a.prompts.map(() => []);
  let prefillMs = 0;
  let decodeStart = 0;
  for (let step = 0; step < a.n; ++step) {
    const t = ids[0].length;
    const start = process.hrtime.bigint();
    const out = await call(ids, at, past);
    const logits = out.logits;
    const vocab = logits.dims[2];
    for (let r = 0; r < b; ++r) {
      const row = logits.data.subarray(((r + 1) * t - 1) * vocab, (r + 1) * t * vocab);
      let best = 0;
      for (let v = 1; v < vocab; ++v) if (row[v] > row[best]) best = v;
      tokens[r].push(best);
    }
    if (step === 0) {
      prefillMs = Number(process.hrtime.bigint() - start) / 1e6;
      decodeStart = process.hrtime.bigint();
    }
    past = {};
    for (const name of pasts) past[name] = out[name.replace('past_key_values.', 'present.')];
    at += t;
    ids = tokens.map((row) => [row[row.length - 1]]);
  }
  const decodeS = Number(process.hrtime.bigint() - decodeStart) / 1e9;
  console.log(JSON.stringify({tokens, prefill_ms: prefillMs, decode_tokens_per_s: b * (a.n - 1) / decodeS}));
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
