// `xonnx generate`: text generation with a decoder model, from token ids
// or, with a SentencePiece tokenizer, from text. Tokens are streamed to
// stderr as they are chosen; stdout's last lines are each sequence's new
// token ids, comma-separated, one line per prompt (with a tokenizer: each
// sequence's new text).
#include <chrono>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "xonnx/generate.h"
#include "xonnx/tokenizer.h"

namespace xonnx::cli {
namespace {

std::vector<int64_t> ParseIds(const std::string& text, const char* flag) {
  std::vector<int64_t> ids;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 0)
      throw CliError{absl::StrCat(flag, " ", text, ": '", part, "' is not a token id (a non-negative integer)"),
                     kExitUsage};
    ids.push_back(v);
  }
  return ids;
}

}  // namespace

CLI::App* AddGenerate(CLI::App& app, GenerateArgs& a) {
  auto* g = app.add_subcommand(
      "generate",
      "Generate tokens with a decoder language model (Hugging Face / Optimum exports, with plain attention or ONNX's "
      "Attention, or onnxruntime-genai's with GroupQueryAttention; float or MatMulNBits weights), from token ids or, "
      "with a SentencePiece --tokenizer, from text");
  g->add_option("MODEL", a.model, "ONNX decoder model file")->required();
  g->add_option("--prompt-ids", a.prompts,
                "A prompt's token ids, comma-separated (repeat for a batch: prompts of different lengths share it)");
  g->add_option("--prompt", a.texts, "A prompt as text, encoded with --tokenizer (repeat for a batch)");
  g->add_option("--tokenizer", a.tokenizer,
                "SentencePiece model (.model) to encode --prompt and decode the new tokens; its end-of-sequence "
                "token ends a sequence")
      ->check(CLI::ExistingFile);
  g->add_flag("--add-bos", a.add_bos, "Put the tokenizer's begin-of-sequence token before each --prompt");
  g->add_option("--max-new-tokens", a.max_new_tokens, "Tokens to generate per prompt")->capture_default_str();
  g->add_flag("--greedy", a.greedy, "Always the most likely token (the default unless a sampling option is given)");
  auto sample = [&a](const std::string&) { a.sampling = true; };
  g->add_option("--temperature", a.temperature, "Sample, dividing the logits by T (> 0)")->each(sample);
  g->add_option("--top-k", a.top_k, "Sample from the K most likely tokens (0: all)")->each(sample);
  g->add_option("--top-p", a.top_p, "Sample from the fewest most likely tokens whose probabilities reach P, in (0, 1]")
      ->each(sample);
  g->add_option("--seed", a.seed, "Seed of the sampling (sequence i uses seed + i)")->capture_default_str();
  g->add_option("--repetition-penalty", a.repetition_penalty,
                "Divide a positive logit of a token already in the sequence by R (multiply a negative one), R >= 1")
      ->capture_default_str();
  g->add_option("--stop-ids", a.stop_ids, "Token ids that end a sequence (comma-separated)");
  g->add_flag("--quiet", a.quiet, "Do not stream tokens to stderr as they come");
  g->add_option("--kv-cache", a.kv_cache,
                "Where the key/value cache lives between steps: device (allocated once, updated in place by the "
                "program), host (new slots copied back each step), or auto (device, except on xonnx's CPU plugin "
                "with presents that are Concat(past, new): it reads a host cache in place)")
      ->check(CLI::IsMember({"auto", "host", "device"}))
      ->capture_default_str();
  g->add_flag("--timings", a.timings,
              "Print to stderr where the cache lives, the time to the first new token (the prompt's call), the first "
              "decode step's time (which compiles or loads its program) and the decode rate in tokens per second "
              "after it (all sequences' tokens)");
  return g;
}

int Generate(const GenerateArgs& a) {
  std::vector<std::vector<int64_t>> prompts;
  for (const auto& p : a.prompts) {
    prompts.push_back(ParseIds(p, "--prompt-ids"));
    if (prompts.back().empty()) throw CliError{"--prompt-ids: a prompt needs at least one token id", kExitUsage};
  }
  if (prompts.empty() && a.texts.empty()) throw CliError{"give a prompt: --prompt-ids or --prompt", kExitUsage};
  if ((!a.texts.empty() || a.add_bos) && a.tokenizer.empty())
    throw CliError{"--prompt and --add-bos need --tokenizer", kExitUsage};
  std::unique_ptr<Tokenizer> tokenizer;
  if (!a.tokenizer.empty()) tokenizer = Check(Tokenizer::Open(a.tokenizer));
  if (a.add_bos && tokenizer->bos() < 0)
    throw CliError{a.tokenizer + ": the tokenizer has no begin-of-sequence token", kExitInput};
  for (const auto& text : a.texts) {
    std::vector<int64_t> ids = Check(tokenizer->Encode(text));
    if (a.add_bos) ids.insert(ids.begin(), tokenizer->bos());
    if (ids.empty()) throw CliError{"--prompt '" + text + "' encodes to no tokens", kExitUsage};
    prompts.push_back(std::move(ids));
  }
  GenerateOptions o;
  o.max_new_tokens = a.max_new_tokens;
  if (a.greedy && a.sampling)
    throw CliError{"--greedy cannot be combined with --temperature, --top-k or --top-p", kExitUsage};
  o.sampling.greedy = !a.sampling;
  o.sampling.temperature = a.temperature;
  o.sampling.top_k = a.top_k;
  o.sampling.top_p = a.top_p;
  o.sampling.seed = a.seed;
  o.sampling.repetition_penalty = a.repetition_penalty;
  Status checked = CheckSamplingOptions(o.sampling);
  if (!checked.ok()) throw CliError{std::string(checked.message()), kExitUsage};
  if (!a.stop_ids.empty()) o.stop_tokens = ParseIds(a.stop_ids, "--stop-ids");
  if (tokenizer && tokenizer->eos() >= 0) o.stop_tokens.push_back(tokenizer->eos());
  KvCachePlacement placement = KvCachePlacement::kAuto;
  ParseKvCachePlacement(a.kv_cache, &placement);  // CLI11 has checked the name
  std::unique_ptr<Generator> g = Check(Generator::Open(a.model, BaseOptions(), placement));
  // Timings: the first token of each step comes after that step's call.
  // The first decode step (token prompts.size() + 1) also compiles or loads
  // its program, so the rate is counted from its end.
  using Clock = std::chrono::steady_clock;
  Clock::time_point begin, first, second, last;
  int64_t tokens = 0;
  const int64_t step = static_cast<int64_t>(prompts.size());
  auto note = [&]() {
    last = Clock::now();
    if (tokens == 0) first = last;
    if (tokens == step) second = last;
    ++tokens;
  };
  TokenCallback stream = nullptr;
  if (a.timings && a.quiet)
    stream = [&](size_t, int64_t) {
      note();
      return true;
    };
  // With a tokenizer and one prompt, the text streams: each token's text
  // is what decoding all new tokens adds (a piece may join the one before).
  std::vector<int64_t> streamed;
  std::string shown;
  if (!a.quiet)
    stream = [&](size_t sequence, int64_t token) {
      if (a.timings) note();
      if (tokenizer && prompts.size() == 1) {
        streamed.push_back(token);
        StatusOr<std::string> text = tokenizer->Decode(streamed);
        if (text.ok() && text->compare(0, shown.size(), shown) == 0) {
          std::cerr << text->substr(shown.size()) << std::flush;
          shown = *text;
        }
        return true;
      }
      std::cerr << (prompts.size() > 1 ? absl::StrCat("[", sequence, "] ", token) : std::to_string(token)) << " "
                << std::flush;
      return true;
    };
  begin = Clock::now();
  std::vector<std::vector<int64_t>> out = Check(g->Generate(prompts, o, stream));
  if (!a.quiet) std::cerr << "\n";
  if (a.timings) {
    auto ms = [](Clock::time_point x, Clock::time_point y) {
      return std::chrono::duration<double, std::milli>(y - x).count();
    };
    // Tokens after the first decode step's, over the time since it (when
    // sequences stop early, a step gives fewer tokens than the batch).
    const int64_t later = tokens - 2 * step;
    std::cerr << "kv cache: " << KvCachePlacementName(g->cache_placement());
    if (tokens > 0) std::cerr << "; first token after " << absl::StrFormat("%.2f", ms(begin, first)) << " ms";
    if (tokens > step) std::cerr << "; first decode step " << absl::StrFormat("%.2f", ms(first, second)) << " ms";
    if (later > 0 && ms(second, last) > 0)
      std::cerr << "; decode " << absl::StrFormat("%.1f", later / (ms(second, last) / 1000)) << " tokens/s (" << later
                << " tokens)";
    std::cerr << "\n";
  }
  for (const auto& tokens : out) {
    if (tokenizer)
      std::cout << Check(tokenizer->Decode(tokens)) << "\n";
    else
      std::cout << absl::StrJoin(tokens, ",") << "\n";
  }
  return 0;
}

}  // namespace xonnx::cli
