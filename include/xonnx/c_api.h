/* xonnx's C API: a stable ABI over the C++ Session (xonnx/session.h) and
 * Generator (xonnx/generate.h) and Tokenizer (xonnx/tokenizer.h).
 *
 * Everything is reached through one table of function pointers:
 *
 *   const XonnxApi* api = XonnxGetApi(XONNX_API_VERSION);
 *   XonnxSession* session;
 *   XonnxStatus* st = api->CreateSession("model.onnx", NULL, &session);
 *   if (st) { fprintf(stderr, "%s\n", api->StatusMessage(st)); api->ReleaseStatus(st); }
 *
 * Compatibility: the table only grows. A program compiled against version N
 * asks for N and works with any library of version N or later; a library
 * older than the program's version returns NULL from XonnxGetApi. Structs
 * the caller fills in (XonnxTensorView, XonnxTensorBuffer) start with
 * `struct_size` = sizeof as the caller compiled it, so that fields added
 * later are known to be absent (PjRT's convention).
 *
 * Conventions:
 * - A function that can fail returns XonnxStatus*: NULL on success, else an
 *   error the caller releases with ReleaseStatus.
 * - Every handle a Create function returns is released by its Release
 *   function; Release functions accept NULL.
 * - Strings returned by the library stay valid as long as the object they
 *   came from (a status's message until it is released, a session's names
 *   until the session is released).
 * - Element types are ONNX's TensorProto numbers (XonnxDataType).
 * - Functions may be called from several threads at once on one session
 *   (runs, metadata); options objects are not shared while they change.
 */
#ifndef XONNX_C_API_H_
#define XONNX_C_API_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define XONNX_C_EXPORT
#else
#define XONNX_C_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the table this header describes. */
#define XONNX_API_VERSION 3 /* 2: text generation; 3: tokenizers */

/* The canonical error codes (the numbers of gRPC and of the C++ API's
 * xonnx::StatusCode). */
typedef enum XonnxErrorCode {
  XONNX_OK = 0,
  XONNX_CANCELLED = 1,
  XONNX_UNKNOWN = 2,
  XONNX_INVALID_ARGUMENT = 3,
  XONNX_DEADLINE_EXCEEDED = 4,
  XONNX_NOT_FOUND = 5,
  XONNX_ALREADY_EXISTS = 6,
  XONNX_PERMISSION_DENIED = 7,
  XONNX_RESOURCE_EXHAUSTED = 8,
  XONNX_FAILED_PRECONDITION = 9,
  XONNX_ABORTED = 10,
  XONNX_OUT_OF_RANGE = 11,
  XONNX_UNIMPLEMENTED = 12,
  XONNX_INTERNAL = 13,
  XONNX_UNAVAILABLE = 14,
  XONNX_DATA_LOSS = 15,
  XONNX_UNAUTHENTICATED = 16
} XonnxErrorCode;

/* Element types: ONNX's TensorProto.DataType numbers. */
typedef enum XonnxDataType {
  XONNX_TYPE_UNDEFINED = 0,
  XONNX_TYPE_FLOAT32 = 1,
  XONNX_TYPE_UINT8 = 2,
  XONNX_TYPE_INT8 = 3,
  XONNX_TYPE_UINT16 = 4,
  XONNX_TYPE_INT16 = 5,
  XONNX_TYPE_INT32 = 6,
  XONNX_TYPE_INT64 = 7,
  XONNX_TYPE_STRING = 8,
  XONNX_TYPE_BOOL = 9,
  XONNX_TYPE_FLOAT16 = 10,
  XONNX_TYPE_FLOAT64 = 11,
  XONNX_TYPE_UINT32 = 12,
  XONNX_TYPE_UINT64 = 13,
  XONNX_TYPE_BFLOAT16 = 16
} XonnxDataType;

typedef struct XonnxStatus XonnxStatus;
typedef struct XonnxSessionOptions XonnxSessionOptions;
typedef struct XonnxSession XonnxSession;
typedef struct XonnxRunOptions XonnxRunOptions;
/* An output tensor owned by the library (row-major, dense). */
typedef struct XonnxValue XonnxValue;

/* An input: the caller's memory, read during the call only. Strings are not
 * taken through the C API. */
typedef struct XonnxTensorView {
  size_t struct_size; /* sizeof(XonnxTensorView) */
  const char* name;   /* a model input's name */
  int32_t dtype;      /* XonnxDataType */
  const int64_t* dims;
  size_t num_dims;
  const void* data;
  size_t byte_size; /* must be the element count times the element size */
} XonnxTensorView;

/* An output written into the caller's memory (RunInto). */
typedef struct XonnxTensorBuffer {
  size_t struct_size; /* sizeof(XonnxTensorBuffer) */
  void* data;
  size_t capacity;  /* bytes available at data */
  size_t byte_size; /* out: bytes written */
  int32_t dtype;    /* out: XonnxDataType */
  int64_t dims[16]; /* out: the output's shape (at most 16 dims) */
  size_t num_dims;  /* out */
} XonnxTensorBuffer;

/* A model input or output as the model declares it. `dims` has -1 for a
 * dynamic dimension, whose symbolic name (if any) is dim_names[i] (else
 * ""). The pointers stay valid as long as the session. */
typedef struct XonnxTensorInfo {
  const char* name;
  int32_t dtype; /* XonnxDataType */
  const int64_t* dims;
  const char* const* dim_names;
  size_t num_dims;
  int32_t is_sequence; /* a sequence of tensors: run it with the C++ API */
  int32_t is_optional;
} XonnxTensorInfo;

/* Called once when an asynchronous run ends, on one of the session's worker
 * threads. On success `status` is NULL and `outputs` holds `num_outputs`
 * values; on failure `status` is set and `outputs` is NULL. The callee owns
 * both (ReleaseStatus, ReleaseValue each) and must not release the session
 * from the callback. */
typedef void (*XonnxRunCallback)(void* user_data, XonnxStatus* status, XonnxValue** outputs, size_t num_outputs);

/* --- text generation (version 2; xonnx/generate.h) --- */
typedef struct XonnxGenerator XonnxGenerator;
typedef struct XonnxGeneration XonnxGeneration;
/* How tokens are chosen. Set struct_size = sizeof(XonnxGenerateOptions);
 * NULL options mean 32 greedy tokens. Zero is the default of temperature,
 * top_p and repetition_penalty; max_new_tokens 0 generates nothing. */
typedef struct XonnxGenerateOptions {
  size_t struct_size;
  int64_t max_new_tokens;
  int32_t greedy;           /* nonzero: the most likely token; the next four are then ignored */
  float temperature;        /* > 0; 0: 1 */
  int64_t top_k;            /* 0: all tokens */
  float top_p;              /* in (0, 1]; 0: 1 */
  float repetition_penalty; /* >= 1; 0 or 1: none */
  uint64_t seed;            /* sequence i samples with seed + i */
  const int64_t* stop_tokens;
  size_t num_stop_tokens;
} XonnxGenerateOptions;
/* Called with each token as it is chosen, on the calling thread; returning
 * 0 stops the generation after this step. */
typedef int (*XonnxTokenCallback)(void* user_data, size_t sequence, int64_t token);

/* --- tokenizers (version 3; xonnx/tokenizer.h) --- */
/* A SentencePiece model (a .model file): text to token ids and back. Safe
 * to use from several threads at once. */
typedef struct XonnxTokenizer XonnxTokenizer;

typedef struct XonnxApi {
  /* sizeof(XonnxApi) in the library: a caller may check that a function
   * added after its own version is present before calling it. */
  size_t struct_size;
  uint32_t version; /* XONNX_API_VERSION of the library */

  /* The library's version, e.g. "0.1.0". */
  const char* (*GetVersionString)(void);

  /* --- status --- */
  XonnxErrorCode (*StatusCode)(const XonnxStatus* status);
  /* The message: names the file (and node, op) the error concerns. */
  const char* (*StatusMessage)(const XonnxStatus* status);
  void (*ReleaseStatus)(XonnxStatus* status);

  /* --- session options --- */
  XonnxStatus* (*CreateSessionOptions)(XonnxSessionOptions** out);
  void (*ReleaseSessionOptions)(XonnxSessionOptions* options);
  /* Sets one option by name; the values are text, as the command line
   * takes them. Unknown names and malformed values are errors that list
   * what is accepted. Names:
   *   plugin            "cpu" (default), a short name ("cuda", "tpu") or a path
   *   device            an index, or "all" to split a batch across devices
   *   batch_buckets     "1,8,32": batch sizes compiled when the session opens
   *   max_batch         largest batch for buckets made as powers of two
   *   data_type         "f32", "f16" or "bf16": the precision of compute
   *   io_data_type      "f32", "f16" or "bf16": float inputs and outputs
   *   cache             "on" or "off": the persistent compile cache
   *   cache_dir         its folder
   *   compile_threads   threads compiling buckets (0: one per core)
   *   deadline_ms       default time limit of a call (0: none)
   *   create_option     "name=value" for the plugin's client (repeatable)
   *   optimize          "on" or "off": the importer's optimization passes
   *   check_indices     "on" (default) or "off": run-time index inputs checked
   *                     against the dimensions they index (a value out of range
   *                     fails the call, naming the node)
   *   profile_file      a Chrome/Perfetto trace written when the session closes
   *   xonnx_flags       dump flags, as XONNX_FLAGS takes them
   *   program_format    "auto", "hlo" or "stablehlo": how programs go to the plugin
   *   kv_cache          "auto", "host" or "device": where CreateGenerator's
   *                     key/value cache lives between steps (docs/generation.md) */
  XonnxStatus* (*SetSessionOption)(XonnxSessionOptions* options, const char* name, const char* value);

  /* --- sessions --- */
  /* Opens a model file. `options` may be NULL (defaults). */
  XonnxStatus* (*CreateSession)(const char* model_path, const XonnxSessionOptions* options, XonnxSession** out);
  /* Opens a serialized ModelProto held in memory (copied; the caller may
   * free it on return). `name` stands for the file in messages (NULL:
   * "model"); external data is read relative to `external_data_dir` (NULL:
   * the current folder). */
  XonnxStatus* (*CreateSessionFromMemory)(const void* bytes, size_t size, const char* name,
                                          const XonnxSessionOptions* options, const char* external_data_dir,
                                          XonnxSession** out);
  /* Cancels the session's calls in flight, waits for them, and frees it. */
  void (*ReleaseSession)(XonnxSession* session);
  size_t (*SessionInputCount)(const XonnxSession* session);
  size_t (*SessionOutputCount)(const XonnxSession* session);
  XonnxStatus* (*SessionInputInfo)(const XonnxSession* session, size_t index, XonnxTensorInfo* out);
  XonnxStatus* (*SessionOutputInfo)(const XonnxSession* session, size_t index, XonnxTensorInfo* out);

  /* --- run options (per call; NULL everywhere means the defaults) --- */
  XonnxStatus* (*CreateRunOptions)(XonnxRunOptions** out);
  void (*ReleaseRunOptions)(XonnxRunOptions* options);
  /* Milliseconds from a call's start (-1: the session's deadline_ms, 0: none). */
  void (*RunOptionsSetDeadline)(XonnxRunOptions* options, int64_t deadline_ms);
  /* Stops every call made with these options, now and later: they fail with
   * XONNX_CANCELLED. Safe from any thread. */
  void (*RunOptionsCancel)(XonnxRunOptions* options);

  /* --- runs --- */
  /* Runs the model. `output_names` chooses outputs and their order (NULL:
   * all, in model order; num_outputs must then be the model's output count).
   * outputs[i] receives a value the caller releases with ReleaseValue. */
  XonnxStatus* (*Run)(XonnxSession* session, const XonnxRunOptions* run_options, const XonnxTensorView* inputs,
                      size_t num_inputs, const char* const* output_names, size_t num_outputs, XonnxValue** outputs);
  /* Run() writing each output into caller-owned memory: fails with
   * XONNX_OUT_OF_RANGE, before writing anything, if one does not fit (its
   * byte_size and shape are still filled in, so the caller can grow it). */
  XonnxStatus* (*RunInto)(XonnxSession* session, const XonnxRunOptions* run_options, const XonnxTensorView* inputs,
                          size_t num_inputs, const char* const* output_names, size_t num_outputs,
                          XonnxTensorBuffer* outputs);
  /* Starts a run and returns: the inputs are copied before it returns;
   * `callback` receives the outcome. Errors found before the run starts
   * (unknown output names, bad views) are returned here and the callback is
   * not called. */
  XonnxStatus* (*RunAsync)(XonnxSession* session, const XonnxRunOptions* run_options, const XonnxTensorView* inputs,
                           size_t num_inputs, const char* const* output_names, size_t num_outputs,
                           XonnxRunCallback callback, void* user_data);

  /* --- values --- */
  int32_t (*ValueDataType)(const XonnxValue* value);
  size_t (*ValueNumDims)(const XonnxValue* value);
  const int64_t* (*ValueDims)(const XonnxValue* value);
  const void* (*ValueData)(const XonnxValue* value);
  size_t (*ValueByteSize)(const XonnxValue* value);
  void (*ReleaseValue)(XonnxValue* value);

  /* --- text generation (version 2) --- */
  /* Opens a decoder model (Hugging Face / Optimum style); a model this
   * runtime cannot drive fails with XONNX_UNIMPLEMENTED, naming what it
   * lacks. `options` may be NULL. */
  XonnxStatus* (*CreateGenerator)(const char* model_path, const XonnxSessionOptions* options, XonnxGenerator** out);
  void (*ReleaseGenerator)(XonnxGenerator* generator);
  /* Generates from num_prompts prompts (prompts[i] holds prompt_lengths[i]
   * token ids). `callback` (may be NULL) sees each token as it comes; `out`
   * (may be NULL) receives every sequence's new tokens. */
  XonnxStatus* (*Generate)(XonnxGenerator* generator, const int64_t* const* prompts, const size_t* prompt_lengths,
                           size_t num_prompts, const XonnxGenerateOptions* options, XonnxTokenCallback callback,
                           void* user_data, XonnxGeneration** out);
  size_t (*GenerationLength)(const XonnxGeneration* generation, size_t sequence);
  const int64_t* (*GenerationTokens)(const XonnxGeneration* generation, size_t sequence);
  void (*ReleaseGeneration)(XonnxGeneration* generation);

  /* --- tokenizers (version 3) --- */
  /* Loads a SentencePiece model. A file that is not one, or a library built
   * without SentencePiece, fails naming the file and the reason. */
  XonnxStatus* (*CreateTokenizer)(const char* path, XonnxTokenizer** out);
  void (*ReleaseTokenizer)(XonnxTokenizer* tokenizer);
  /* UTF-8 text of text_length bytes to ids (no begin-of-sequence id is
   * added), written to ids[0, capacity); *num_ids receives their count.
   * When they do not fit: XONNX_OUT_OF_RANGE, nothing written, and
   * *num_ids the capacity needed (RunInto's convention). */
  XonnxStatus* (*TokenizerEncode)(const XonnxTokenizer* tokenizer, const char* text, size_t text_length, int64_t* ids,
                                  size_t capacity, size_t* num_ids);
  /* Ids to UTF-8 text, written to text[0, capacity) with a terminating NUL;
   * *text_length receives its length without the NUL. When it does not
   * fit: XONNX_OUT_OF_RANGE, nothing written, and *text_length the text's
   * length (the capacity needed is one more). An id outside the vocabulary
   * is XONNX_INVALID_ARGUMENT, naming it. Both calls accept a NULL array
   * with capacity 0, to learn the size first. */
  XonnxStatus* (*TokenizerDecode)(const XonnxTokenizer* tokenizer, const int64_t* ids, size_t num_ids, char* text,
                                  size_t capacity, size_t* text_length);
  /* The vocabulary's size and the special pieces' ids (-1 where the model
   * has none); any pointer may be NULL. */
  void (*TokenizerInfo)(const XonnxTokenizer* tokenizer, int64_t* vocab_size, int64_t* bos, int64_t* eos, int64_t* unk);
} XonnxApi;

/* The function table for a caller compiled against `version`
 * (XONNX_API_VERSION), or NULL when this library is older than that. */
XONNX_C_EXPORT const XonnxApi* XonnxGetApi(uint32_t version);

#ifdef __cplusplus
}
#endif

#endif /* XONNX_C_API_H_ */
