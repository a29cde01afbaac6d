// The C API's text generation (xonnx/c_api.h, version 2) over
// xonnx/generate.h.
#include <cstddef>
#include <memory>
#include <vector>

#include "capi/c_internal.h"
#include "xonnx/generate.h"

struct XonnxGenerator {
  std::unique_ptr<xonnx::Generator> generator;
};
struct XonnxGeneration {
  std::vector<std::vector<int64_t>> tokens;
};

namespace xonnx::capi {
namespace {

// The options a caller's struct holds: a field counts only when the
// caller's struct_size reaches past it.
#define XONNX_HAS_FIELD(o, field) ((o)->struct_size >= offsetof(XonnxGenerateOptions, field) + sizeof((o)->field))

StatusOr<GenerateOptions> OptionsOf(const XonnxGenerateOptions* c) {
  GenerateOptions o;
  if (!c) return o;
  if (c->struct_size < offsetof(XonnxGenerateOptions, max_new_tokens) + sizeof(c->max_new_tokens))
    return Status(StatusCode::kInvalidArgument, "Generate: options.struct_size is too small (set it to sizeof)");
  o.max_new_tokens = c->max_new_tokens;
  if (XONNX_HAS_FIELD(c, greedy)) o.sampling.greedy = c->greedy != 0;
  if (XONNX_HAS_FIELD(c, temperature) && c->temperature != 0) o.sampling.temperature = c->temperature;
  if (XONNX_HAS_FIELD(c, top_k)) o.sampling.top_k = c->top_k;
  // Zero, as a zeroed struct holds it, is the default for these.
  if (XONNX_HAS_FIELD(c, top_p) && c->top_p != 0) o.sampling.top_p = c->top_p;
  if (XONNX_HAS_FIELD(c, repetition_penalty) && c->repetition_penalty != 0)
    o.sampling.repetition_penalty = c->repetition_penalty;
  if (XONNX_HAS_FIELD(c, seed)) o.sampling.seed = c->seed;
  if (XONNX_HAS_FIELD(c, num_stop_tokens) && c->num_stop_tokens) {
    if (!c->stop_tokens) return Status(StatusCode::kInvalidArgument, "Generate: stop_tokens is NULL");
    o.stop_tokens.assign(c->stop_tokens, c->stop_tokens + c->num_stop_tokens);
  }
  return o;
}

}  // namespace

XonnxStatus* CreateGenerator(const char* model_path, const XonnxSessionOptions* options, XonnxGenerator** out) {
  return Guard(model_path ? model_path : "CreateGenerator", [&]() -> XonnxStatus* {
    if (!model_path || !out) return Error(StatusCode::kInvalidArgument, "CreateGenerator: model_path or out is NULL");
    *out = nullptr;
    StatusOr<std::unique_ptr<Generator>> g = Generator::Open(model_path, options ? options->options : SessionOptions{},
                                                             options ? options->kv_cache : KvCachePlacement::kAuto);
    if (!g.ok()) return MakeStatus(g.status());
    *out = new XonnxGenerator{std::move(*g)};
    return nullptr;
  });
}

void ReleaseGenerator(XonnxGenerator* generator) { delete generator; }

XonnxStatus* Generate(XonnxGenerator* generator, const int64_t* const* prompts, const size_t* prompt_lengths,
                      size_t num_prompts, const XonnxGenerateOptions* options, XonnxTokenCallback callback,
                      void* user_data, XonnxGeneration** out) {
  return Guard("Generate", [&]() -> XonnxStatus* {
    if (out) *out = nullptr;
    if (!generator) return Error(StatusCode::kInvalidArgument, "Generate: generator is NULL");
    if (num_prompts && (!prompts || !prompt_lengths))
      return Error(StatusCode::kInvalidArgument, "Generate: prompts or prompt_lengths is NULL");
    std::vector<std::vector<int64_t>> p(num_prompts);
    for (size_t i = 0; i < num_prompts; ++i) {
      if (prompt_lengths[i] && !prompts[i])
        return Error(StatusCode::kInvalidArgument, "Generate: prompt " + std::to_string(i) + " is NULL");
      p[i].assign(prompts[i], prompts[i] + prompt_lengths[i]);
    }
    StatusOr<GenerateOptions> o = OptionsOf(options);
    if (!o.ok()) return MakeStatus(o.status());
    TokenCallback each = nullptr;
    if (callback)
      each = [callback, user_data](size_t sequence, int64_t token) {
        return callback(user_data, sequence, token) != 0;
      };
    StatusOr<std::vector<std::vector<int64_t>>> tokens = generator->generator->Generate(p, *o, each);
    if (!tokens.ok()) return MakeStatus(tokens.status());
    if (out) *out = new XonnxGeneration{std::move(*tokens)};
    return nullptr;
  });
}

size_t GenerationLength(const XonnxGeneration* g, size_t sequence) {
  return g && sequence < g->tokens.size() ? g->tokens[sequence].size() : 0;
}
const int64_t* GenerationTokens(const XonnxGeneration* g, size_t sequence) {
  return g && sequence < g->tokens.size() ? g->tokens[sequence].data() : nullptr;
}
void ReleaseGeneration(XonnxGeneration* g) { delete g; }

}  // namespace xonnx::capi
