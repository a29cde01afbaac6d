// Saves a model as ONNX Runtime optimizes it, with the com.microsoft fused
// ops its optimizer writes (FusedConv, FusedMatMul, BiasGelu, QuickGelu,
// SkipLayerNormalization, ...): real models in the form ONNX Runtime users
// often ship, for bench/ort_optimized.sh.
// usage: node ort_optimize.js MODEL OUT [basic|extended]
// ("extended" by default; "all" would add layouts specific to this CPU.)
const ort = require('onnxruntime-node');

async function main() {
  const [model, out, level] = process.argv.slice(2);
  if (!model || !out) throw new Error('usage: node ort_optimize.js MODEL OUT [basic|extended]');
  await ort.InferenceSession.create(
      model, {graphOptimizationLevel: level || 'extended', optimizedModelFilePath: out, intraOpNumThreads: 1});
}

main().catch((e) => { console.error(e.message); process.exit(1); });
