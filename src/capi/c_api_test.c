/* The C API from a C99 program:
 *   c_api_test MODEL.onnx [DECODER.onnx [TOKENIZER.model TEXT]]
 *
 * Opens the model (a float32 image classifier with one input and one
 * output, as examples/tiny_cnn.onnx) from its path and from memory, runs it
 * every way the API offers, and checks that all give the same bits, that
 * the outputs are probabilities, and that each misuse is an error with a
 * message. A model that is not a decoder must be refused as one; with a
 * DECODER (Hugging Face style), two prompts' greedy tokens are printed as
 * "generate: I: T,T,..." for the caller (tests/generate) to check against
 * its reference. With a TOKENIZER (SentencePiece), TEXT's ids are printed as
 * "tokenize: T,T,..." and those ids' text as "detokenize: TEXT" for the
 * caller (tests/generate/test_tokenizer.py) to check against SentencePiece's
 * own tools; without one, a file that is not a tokenizer must be refused.
 * Built in the tree and, by tests/install, against an installed
 * prefix. Prints "c_api_test: N checks passed" or the failures, and exits
 * non-zero on any. */
#include "xonnx/c_api.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const XonnxApi* api;
static int failures, checks;

#define CHECK(cond, ...)                                       \
  do {                                                         \
    ++checks;                                                  \
    if (!(cond)) {                                             \
      ++failures;                                              \
      fprintf(stderr, "c_api_test:%d: %s: ", __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                            \
      fprintf(stderr, "\n");                                   \
    }                                                          \
  } while (0)

/* Checks that `st` is an error of `code` whose message contains `part`,
 * and releases it. */
static void ExpectError(XonnxStatus* st, XonnxErrorCode code, const char* part, int line) {
  ++checks;
  if (!st) {
    ++failures;
    fprintf(stderr, "c_api_test:%d: expected an error containing '%s', got success\n", line, part);
    return;
  }
  if (api->StatusCode(st) != code || !strstr(api->StatusMessage(st), part)) {
    ++failures;
    fprintf(stderr, "c_api_test:%d: expected code %d with '%s', got %d: %s\n", line, (int)code, part,
            (int)api->StatusCode(st), api->StatusMessage(st));
  }
  api->ReleaseStatus(st);
}
#define EXPECT_ERROR(st, code, part) ExpectError((st), (code), (part), __LINE__)

/* Aborts the test on an unexpected error (nothing after it can run). */
static void Must(XonnxStatus* st, const char* what) {
  if (!st) return;
  fprintf(stderr, "c_api_test: %s failed: %s\n", what, api->StatusMessage(st));
  api->ReleaseStatus(st);
  exit(1);
}

static char* ReadFile(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  char* bytes;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  bytes = (char*)malloc(n > 0 ? (size_t)n : 1);
  if (bytes && fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    free(bytes);
    bytes = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return bytes;
}

/* An asynchronous run's outcome, handed from the worker thread. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  XonnxStatus* status;
  XonnxValue** outputs;
  size_t num_outputs;
} AsyncResult;

static void OnDone(void* user_data, XonnxStatus* status, XonnxValue** outputs, size_t num_outputs) {
  AsyncResult* r = (AsyncResult*)user_data;
  size_t i;
  pthread_mutex_lock(&r->mu);
  r->status = status;
  r->num_outputs = num_outputs;
  if (outputs) {
    r->outputs = (XonnxValue**)malloc(num_outputs * sizeof(XonnxValue*));
    for (i = 0; i < num_outputs; ++i) r->outputs[i] = outputs[i];
  }
  r->done = 1;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static void WaitFor(AsyncResult* r) {
  pthread_mutex_lock(&r->mu);
  while (!r->done) pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

/* What the checks share: the session, an input for it, and the reference
 * output of the first Run. */
typedef struct {
  XonnxSessionOptions* options;
  XonnxSession* session;
  XonnxTensorInfo in_info, out_info;
  XonnxTensorView view;
  int64_t dims[8];
  float* image;
  XonnxValue* out;
  const float* probs;
  size_t out_bytes;
} Fixture;

/* Version negotiation, options, a missing file; then opens the model and
 * makes an input of its declared shape (batch 1 where dynamic). */
static void Open(Fixture* f, const char* model) {
  size_t i, n = 1;
  XonnxSession* none = NULL;
  CHECK(api->version >= XONNX_API_VERSION, "version %u", api->version);
  CHECK(api->struct_size >= sizeof(XonnxApi), "struct_size %zu", api->struct_size);
  CHECK(XonnxGetApi(XONNX_API_VERSION + 1000) == NULL, "a future version must be refused");
  CHECK(strlen(api->GetVersionString()) > 0, "empty version");

  Must(api->CreateSessionOptions(&f->options), "CreateSessionOptions");
  Must(api->SetSessionOption(f->options, "cache", "off"), "SetSessionOption(cache)");
  EXPECT_ERROR(api->SetSessionOption(f->options, "no_such_option", "1"), XONNX_INVALID_ARGUMENT, "batch_buckets");
  EXPECT_ERROR(api->SetSessionOption(f->options, "data_type", "f8"), XONNX_INVALID_ARGUMENT, "f32, f16 or bf16");
  EXPECT_ERROR(api->SetSessionOption(f->options, "device", "-1"), XONNX_INVALID_ARGUMENT, "device index");

  /* A missing file: the message names it. */
  EXPECT_ERROR(api->CreateSession("/nonexistent/model.onnx", f->options, &none), XONNX_NOT_FOUND,
               "/nonexistent/model.onnx");
  CHECK(none == NULL, "no session on failure");

  Must(api->CreateSession(model, f->options, &f->session), "CreateSession");
  CHECK(api->SessionInputCount(f->session) == 1, "inputs %zu", api->SessionInputCount(f->session));
  CHECK(api->SessionOutputCount(f->session) == 1, "outputs %zu", api->SessionOutputCount(f->session));
  Must(api->SessionInputInfo(f->session, 0, &f->in_info), "SessionInputInfo");
  Must(api->SessionOutputInfo(f->session, 0, &f->out_info), "SessionOutputInfo");
  EXPECT_ERROR(api->SessionInputInfo(f->session, 5, &f->in_info), XONNX_OUT_OF_RANGE, "index 5");
  CHECK(f->in_info.dtype == XONNX_TYPE_FLOAT32, "input type %d", f->in_info.dtype);
  if (f->in_info.num_dims < 2 || f->in_info.num_dims > 8) {
    fprintf(stderr, "c_api_test: the input has rank %zu; an image classifier was expected\n", f->in_info.num_dims);
    exit(1);
  }
  for (i = 0; i < f->in_info.num_dims; ++i) {
    f->dims[i] = f->in_info.dims[i] < 0 ? 1 : f->in_info.dims[i];
    n *= (size_t)f->dims[i];
  }
  f->image = (float*)malloc(n * sizeof(float));
  for (i = 0; i < n; ++i) f->image[i] = (float)((i * 7919u) % 1000u) / 1000.0f;
  f->view.struct_size = sizeof(f->view);
  f->view.name = f->in_info.name;
  f->view.dtype = XONNX_TYPE_FLOAT32;
  f->view.dims = f->dims;
  f->view.num_dims = f->in_info.num_dims;
  f->view.data = f->image;
  f->view.byte_size = n * sizeof(float);
}

/* Run with all outputs: probabilities that sum to 1. */
static void RunOnce(Fixture* f) {
  size_t i;
  double sum = 0;
  Must(api->Run(f->session, NULL, &f->view, 1, NULL, 1, &f->out), "Run");
  CHECK(api->ValueDataType(f->out) == XONNX_TYPE_FLOAT32, "output type %d", api->ValueDataType(f->out));
  f->out_bytes = api->ValueByteSize(f->out);
  f->probs = (const float*)api->ValueData(f->out);
  CHECK(f->out_bytes > 0 && f->out_bytes % sizeof(float) == 0, "output bytes %zu", f->out_bytes);
  for (i = 0; i < f->out_bytes / sizeof(float); ++i) {
    CHECK(f->probs[i] >= 0 && f->probs[i] <= 1, "probability %g", f->probs[i]);
    sum += f->probs[i];
  }
  CHECK(sum > 0.999 && sum < 1.001, "probabilities sum to %g", sum);
}

/* The same model from memory, output chosen by name: the same bits. */
static void FromMemory(Fixture* f, const char* model) {
  size_t size = 0;
  char* bytes = ReadFile(model, &size);
  XonnxSession *session = NULL, *none = NULL;
  XonnxValue* out = NULL;
  CHECK(bytes != NULL, "cannot read %s", model);
  if (!bytes) return;
  Must(api->CreateSessionFromMemory(bytes, size, "in-memory model", f->options, NULL, &session),
       "CreateSessionFromMemory");
  free(bytes); /* the session keeps no reference */
  Must(api->Run(session, NULL, &f->view, 1, &f->out_info.name, 1, &out), "Run (from memory)");
  CHECK(api->ValueByteSize(out) == f->out_bytes && memcmp(api->ValueData(out), f->probs, f->out_bytes) == 0,
        "the in-memory session's output differs");
  api->ReleaseValue(out);
  api->ReleaseSession(session);
  EXPECT_ERROR(api->CreateSessionFromMemory("not a model", 11, "garbage", f->options, NULL, &none),
               XONNX_INVALID_ARGUMENT, "garbage");
  CHECK(none == NULL, "no session on failure");
}

/* RunInto: too small first (nothing written, size reported), then enough. */
static void IntoBuffers(Fixture* f) {
  XonnxTensorBuffer buffer;
  memset(&buffer, 0, sizeof(buffer));
  buffer.struct_size = sizeof(buffer);
  buffer.data = malloc(f->out_bytes);
  buffer.capacity = 1;
  EXPECT_ERROR(api->RunInto(f->session, NULL, &f->view, 1, NULL, 1, &buffer), XONNX_OUT_OF_RANGE, "bytes");
  CHECK(buffer.byte_size == f->out_bytes, "reported size %zu", buffer.byte_size);
  buffer.capacity = f->out_bytes;
  Must(api->RunInto(f->session, NULL, &f->view, 1, NULL, 1, &buffer), "RunInto");
  CHECK(buffer.dtype == XONNX_TYPE_FLOAT32 && memcmp(buffer.data, f->probs, f->out_bytes) == 0,
        "RunInto's output differs from Run's");
  free(buffer.data);
}

/* RunAsync: the callback receives the same bits. */
static void Async(Fixture* f) {
  AsyncResult async;
  memset(&async, 0, sizeof(async));
  pthread_mutex_init(&async.mu, NULL);
  pthread_cond_init(&async.cv, NULL);
  Must(api->RunAsync(f->session, NULL, &f->view, 1, NULL, 1, OnDone, &async), "RunAsync");
  WaitFor(&async);
  CHECK(async.status == NULL, "async run failed: %s", async.status ? api->StatusMessage(async.status) : "");
  if (!async.status) {
    CHECK(async.num_outputs == 1 && api->ValueByteSize(async.outputs[0]) == f->out_bytes &&
              memcmp(api->ValueData(async.outputs[0]), f->probs, f->out_bytes) == 0,
          "RunAsync's output differs from Run's");
    api->ReleaseValue(async.outputs[0]);
    free(async.outputs);
  }
  api->ReleaseStatus(async.status);
  pthread_mutex_destroy(&async.mu);
  pthread_cond_destroy(&async.cv);
}

/* Cancellation and misuse of runs: each an error that says what is wrong;
 * the session goes on working. */
static void Misuse(Fixture* f) {
  XonnxRunOptions* run_options;
  XonnxValue* out = NULL;
  const char* bad_name = "no_such_output";
  XonnxTensorView view = f->view;
  Must(api->CreateRunOptions(&run_options), "CreateRunOptions");
  api->RunOptionsCancel(run_options);
  EXPECT_ERROR(api->Run(f->session, run_options, &view, 1, NULL, 1, &out), XONNX_CANCELLED, "");
  api->ReleaseRunOptions(run_options);

  EXPECT_ERROR(api->Run(f->session, NULL, &view, 1, &bad_name, 1, &out), XONNX_INVALID_ARGUMENT, f->out_info.name);
  view.byte_size -= 4;
  EXPECT_ERROR(api->Run(f->session, NULL, &view, 1, NULL, 1, &out), XONNX_INVALID_ARGUMENT, "byte_size");
  view = f->view;
  view.struct_size = 8;
  EXPECT_ERROR(api->Run(f->session, NULL, &view, 1, NULL, 1, &out), XONNX_INVALID_ARGUMENT, "struct_size");
  view = f->view;
  view.dtype = XONNX_TYPE_INT32;
  EXPECT_ERROR(api->Run(f->session, NULL, &view, 1, NULL, 1, &out), XONNX_INVALID_ARGUMENT, "int32");
  view = f->view;
  EXPECT_ERROR(api->Run(f->session, NULL, &view, 1, NULL, 2, &out), XONNX_INVALID_ARGUMENT, "num_outputs");
  CHECK(out == NULL, "no output on failure");
}

/* What the token callback saw. */
typedef struct Streamed {
  size_t count;
  int64_t first;
} Streamed;

static int OnToken(void* user_data, size_t sequence, int64_t token) {
  Streamed* s = (Streamed*)user_data;
  if (s->count++ == 0 && sequence == 0) s->first = token;
  return 1;
}

static void Generation(const char* classifier, const char* decoder) {
  XonnxGenerator* g = NULL;
  int64_t p0[] = {5, 17, 3, 88, 41}, p1[] = {9};
  const int64_t* prompts[] = {p0, p1};
  size_t lengths[] = {5, 1}, i, k;
  XonnxGenerateOptions o;
  Streamed seen = {0, -1};
  XonnxGeneration* out = NULL;
  EXPECT_ERROR(api->CreateGenerator(classifier, NULL, &g), XONNX_UNIMPLEMENTED, "no input 'input_ids'");
  CHECK(g == NULL, "no generator on failure");
  if (!decoder) return;
  Must(api->CreateGenerator(decoder, NULL, &g), "CreateGenerator");
  memset(&o, 0, sizeof(o));
  o.struct_size = sizeof(o);
  o.max_new_tokens = 8;
  o.greedy = 1;
  Must(api->Generate(g, prompts, lengths, 2, &o, OnToken, &seen, &out), "Generate");
  CHECK(api->GenerationLength(out, 0) == 8 && api->GenerationLength(out, 1) == 8, "8 tokens each");
  CHECK(seen.count == 16 && seen.first == api->GenerationTokens(out, 0)[0], "the callback saw every token");
  CHECK(api->GenerationTokens(out, 2) == NULL && api->GenerationLength(out, 2) == 0, "no third sequence");
  for (i = 0; i < 2; ++i) {
    printf("generate: %d: ", (int)i);
    for (k = 0; k < api->GenerationLength(out, i); ++k)
      printf(k ? ",%lld" : "%lld", (long long)api->GenerationTokens(out, i)[k]);
    printf("\n");
  }
  {
    /* The cache kept on the device gives the same tokens. */
    XonnxSessionOptions* so = NULL;
    XonnxGenerator* on_device = NULL;
    XonnxGeneration* again = NULL;
    Must(api->CreateSessionOptions(&so), "CreateSessionOptions");
    EXPECT_ERROR(api->SetSessionOption(so, "kv_cache", "gpu"), XONNX_INVALID_ARGUMENT, "auto, host or device");
    Must(api->SetSessionOption(so, "kv_cache", "device"), "SetSessionOption kv_cache");
    Must(api->CreateGenerator(decoder, so, &on_device), "CreateGenerator on the device");
    Must(api->Generate(on_device, prompts, lengths, 2, &o, NULL, NULL, &again), "Generate on the device");
    for (i = 0; i < 2; ++i) {
      CHECK(api->GenerationLength(again, i) == api->GenerationLength(out, i), "as many tokens on the device");
      for (k = 0; k < api->GenerationLength(out, i); ++k)
        CHECK(api->GenerationTokens(again, i)[k] == api->GenerationTokens(out, i)[k], "the same tokens on the device");
    }
    api->ReleaseGeneration(again);
    api->ReleaseGenerator(on_device);
    api->ReleaseSessionOptions(so);
  }
  api->ReleaseGeneration(out);
  o.greedy = 0;
  o.temperature = -1; /* 0 would be the default, 1 */
  EXPECT_ERROR(api->Generate(g, prompts, lengths, 2, &o, NULL, NULL, NULL), XONNX_INVALID_ARGUMENT, "temperature");
  o.struct_size = 4;
  EXPECT_ERROR(api->Generate(g, prompts, lengths, 2, &o, NULL, NULL, NULL), XONNX_INVALID_ARGUMENT, "struct_size");
  api->ReleaseGenerator(g);
  api->ReleaseGenerator(NULL);
  api->ReleaseGeneration(NULL);
}

static void Tokenization(const char* not_a_tokenizer, const char* path, const char* text) {
  XonnxTokenizer* t = NULL;
  int64_t ids[256], vocab = 0, bos = 0, eos = 0, unk = 0;
  char back[1024];
  size_t n = 0, length = 0, i;
  XonnxStatus* st = api->CreateTokenizer(not_a_tokenizer, &t);
  CHECK(st != NULL && t == NULL && strstr(api->StatusMessage(st), not_a_tokenizer), "an ONNX file is no tokenizer");
  api->ReleaseStatus(st);
  EXPECT_ERROR(api->CreateTokenizer(NULL, &t), XONNX_INVALID_ARGUMENT, "NULL");
  api->ReleaseTokenizer(NULL);
  if (!path) return;
  Must(api->CreateTokenizer(path, &t), "CreateTokenizer");
  api->TokenizerInfo(t, &vocab, &bos, &eos, &unk);
  CHECK(vocab > 0 && bos < vocab && eos < vocab && unk < vocab, "vocabulary %lld", (long long)vocab);
  Must(api->TokenizerEncode(t, text, strlen(text), ids, 256, &n), "TokenizerEncode");
  CHECK(n > 1, "%s: %d ids", text, (int)n);
  printf("tokenize: ");
  for (i = 0; i < n; ++i) printf(i ? ",%lld" : "%lld", (long long)ids[i]);
  printf("\n");
  /* Too small a capacity: the count needed, and nothing written. */
  ids[0] = -7;
  EXPECT_ERROR(api->TokenizerEncode(t, text, strlen(text), ids, 1, &length), XONNX_OUT_OF_RANGE, "capacity of 1");
  CHECK(length == n && ids[0] == -7, "the capacity needed and nothing written");
  length = 0;
  EXPECT_ERROR(api->TokenizerEncode(t, text, strlen(text), NULL, 0, &length), XONNX_OUT_OF_RANGE, "capacity of 0");
  CHECK(length == n, "the count asked for first");
  /* ids[0] still holds -7 from the check above: the text is encoded again. */
  Must(api->TokenizerEncode(t, text, strlen(text), ids, 256, &n), "TokenizerEncode");
  Must(api->TokenizerDecode(t, ids, n, back, sizeof(back), &length), "TokenizerDecode");
  CHECK(length == strlen(back), "the length without the NUL");
  printf("detokenize: %s\n", back);
  EXPECT_ERROR(api->TokenizerDecode(t, ids, n, back, length, &length), XONNX_OUT_OF_RANGE, "its NUL");
  EXPECT_ERROR(api->TokenizerDecode(t, ids, n, NULL, 0, &length), XONNX_OUT_OF_RANGE, "capacity of 0");
  CHECK(length == strlen(back), "the length asked for first");
  ids[0] = vocab;
  EXPECT_ERROR(api->TokenizerDecode(t, ids, 1, back, sizeof(back), &length), XONNX_INVALID_ARGUMENT,
               "outside the vocabulary");
  EXPECT_ERROR(api->TokenizerEncode(t, text, 1, NULL, 4, &n), XONNX_INVALID_ARGUMENT, "NULL");
  api->ReleaseTokenizer(t);
}

int main(int argc, char** argv) {
  Fixture f;
  if (argc != 2 && argc != 3 && argc != 5) {
    fprintf(stderr, "usage: c_api_test MODEL.onnx [DECODER.onnx [TOKENIZER.model TEXT]]\n");
    return 2;
  }
  api = XonnxGetApi(XONNX_API_VERSION);
  if (!api) {
    fprintf(stderr, "c_api_test: XonnxGetApi(%d) returned NULL\n", XONNX_API_VERSION);
    return 1;
  }
  memset(&f, 0, sizeof(f));
  Open(&f, argv[1]);
  RunOnce(&f);
  FromMemory(&f, argv[1]);
  IntoBuffers(&f);
  Async(&f);
  Misuse(&f);
  Generation(argv[1], argc >= 3 ? argv[2] : NULL);
  Tokenization(argv[1], argc == 5 ? argv[3] : NULL, argc == 5 ? argv[4] : NULL);
  api->ReleaseValue(f.out);
  api->ReleaseSession(f.session);
  api->ReleaseSessionOptions(f.options);
  api->ReleaseSession(NULL);
  api->ReleaseStatus(NULL);
  free(f.image);
  if (failures) {
    fprintf(stderr, "c_api_test: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  printf("c_api_test: %d checks passed\n", checks);
  return 0;
}
