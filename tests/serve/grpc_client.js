// A gRPC client of the Open Inference Protocol from a real gRPC stack
// (Node's @grpc/grpc-js with @grpc/proto-loader, from npm), driven by the
// serving tests: reads a list of calls as JSON on stdin, makes them in
// order against ADDRESS, and prints one JSON array of results on stdout.
//
//   node grpc_client.js PROTO ADDRESS < calls.json
//
// A call is {"rpc": "ModelInfer", "request": {...}} with bytes fields
// (raw_input_contents) given as base64 strings; a result is
// {"ok": true, "response": {...}} (bytes as base64) or
// {"ok": false, "code": N, "details": "..."}. {"rpc": "load", "model":
// NAME, "request": {...}, "concurrency": C, "seconds": S, "max_calls": M}
// runs ModelInfer from C concurrent callers for at most S seconds and M
// calls, and reports {"calls", "ok", "errors": {code: count}, "mismatched"},
// where a mismatch is a response whose raw outputs differ from the first.
'use strict';
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const [protoPath, address] = process.argv.slice(2);
const def = loader.loadSync(protoPath, {keepCase: true, longs: Number, enums: String, defaults: false, oneofs: true});
const Service = grpc.loadPackageDefinition(def).inference.GRPCInferenceService;
const client = new Service(address, grpc.credentials.createInsecure(),
                           {'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1});
// {"rpc": "HealthCheck"} calls grpc.health.v1.Health/Check (health.proto beside this file).
const healthDef = loader.loadSync(require('path').join(__dirname, 'health.proto'), {keepCase: true, enums: String});
const Health = grpc.loadPackageDefinition(healthDef).grpc.health.v1.Health;
const health = new Health(address, grpc.credentials.createInsecure());

function decodeBytes(request) {
  if (request.raw_input_contents)
    request.raw_input_contents = request.raw_input_contents.map((b) => Buffer.from(b, 'base64'));
  for (const input of request.inputs || [])
    if (input.contents && input.contents.bytes_contents)
      input.contents.bytes_contents = input.contents.bytes_contents.map((b) => Buffer.from(b, 'base64'));
  return request;
}

function encode(value) {
  return JSON.parse(JSON.stringify(value, (k, v) => {
    if (v && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data).toString('base64');
    return v;
  }));
}

function call(rpc, request) {
  return new Promise((resolve) => {
    const deadline = new Date(Date.now() + 60000);
    const done = (err, response) => {
      if (err) resolve({ok: false, code: err.code, details: err.details});
      else resolve({ok: true, response});
    };
    if (rpc === 'HealthCheck') return health.Check(request, {deadline}, done);
    client[rpc](request, {deadline}, (err, response) => {
      if (err) resolve({ok: false, code: err.code, details: err.details});
      else resolve({ok: true, response});
    });
  });
}

async function load(spec) {
  const request = decodeBytes(spec.request);
  const stopAt = Date.now() + 1000 * spec.seconds;
  const result = {calls: 0, ok: 0, errors: {}, mismatched: 0};
  let reference = null;
  async function caller() {
    while (Date.now() < stopAt && result.calls < spec.max_calls) {
      result.calls++;
      const r = await call('ModelInfer', request);
      if (!r.ok) {
        result.errors[r.code] = (result.errors[r.code] || 0) + 1;
        continue;
      }
      result.ok++;
      const raw = Buffer.concat(r.response.raw_output_contents).toString('base64');
      if (reference === null) reference = raw;
      else if (raw !== reference) result.mismatched++;
    }
  }
  await Promise.all(Array.from({length: spec.concurrency}, caller));
  return result;
}

async function main() {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const results = [];
  for (const c of JSON.parse(input)) {
    if (c.rpc === 'load') results.push(await load(c));
    else results.push(encode(await call(c.rpc, decodeBytes(c.request || {}))));
  }
  process.stdout.write(JSON.stringify(results) + '\n');
  client.close();
  health.close();
}

main().catch((e) => {
  process.stderr.write(String(e.stack || e) + '\n');
  process.exit(1);
});
