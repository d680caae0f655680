// tempra/llm/runtime/generator.h: the generation loop (prefill, then sample and decode token by token)
// over a Session, streaming text through a callback. No I/O: `tempra generate`, `tempra
// chat` and the server all drive it and print what they like.
//
// Contract:
// - Generator::generate(prompt) makes the session hold `prompt` followed by what it generates.
//   The session's tokens that `prompt` starts with are kept (prefix reuse: a chat turn only
//   evaluates the new messages); at least the last prompt token is always evaluated, for its
//   logits. A prompt longer than the session's context throws tempra::Error "prompt has N
//   tokens but the context holds M"; nothing is ever truncated silently. Prefill runs in
//   batches of GenerateOptions::batch tokens, keeping only the last row of logits, so memory
//   stays O(batch x n_vocab) whatever the prompt length. Each decode step is one
//   Session::decode (no allocation in the model). Logits may depend on how the prompt was
//   split into batches (Numerics in model/qwen3.h: exact numerics, and formats or arms
//   without an integer GEMM, multiply quantized weights in f32 in batches past 32 tokens), so
//   "same seed, same output" is promised for the same prompt, batch size and cache reuse.
// - Each new token is drawn by a Sampler (sampler.h: llama.cpp's chain and order) over the
//   session's tokens as history (prompt included, as llama.cpp's penalties see them).
//   Generation stops at the first of: an end-of-generation token (llama.cpp's EOG set,
//   end_of_generation_ids() below: Qwen3's <|im_end|> and <|endoftext|>), a user stop string,
//   max_new_tokens, a full context. The EOG token is in GenerationResult::ids but its text is
//   never emitted.
// - Text is decoded with StreamingDecoder (never splits a UTF-8 sequence; control tokens render
//   as nothing, llama.cpp's default) and passed through StopStringFilter (stop text and
//   anything after it are never emitted; text that could be the start of a stop string is held
//   back until it cannot) and then ThinkSplitter (classifies `<think>...</think>` spans).
//   Concatenating every emitted piece gives GenerationResult::text, the model's raw output up
//   to the stop string.
// - Same model, prompt, options and seed: same tokens (the sampler's draws are keyed by seed and
//   step; the step counter runs on across generate() calls of one Generator).
//
// Parity: the EOG set and the penalty history are llama.cpp's (src/llama-vocab.cpp,
// common/sampling.cpp); the timing fields are those llama-server prints (prompt eval / eval /
// total, tools/server/server-context.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/decode/draft.h"
#include "tempra/llm/decode/grammar_matcher.h"
#include "tempra/llm/decode/sampler.h"
#include "tempra/llm/runtime/session.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::llm {

// llama.cpp's end-of-generation tokens for this vocab: the EOS id plus every token whose text
// llama.cpp's vocab loader puts in special_eog_ids (<|im_end|>, <|endoftext|>, <|eot_id|>, ...,
// and Qwen's FIM pad/repo/file-separator tokens). Sorted, unique.
std::vector<int32_t> end_of_generation_ids(const Tokenizer& tokenizer);

// Throws tempra::Error (op: `op`) unless `prompt` is 1 ... context tokens, each in [0, n_vocab):
// "prompt has N tokens but the context holds M", "prompt token i is id X, outside the vocab".
void check_prompt(std::string_view op, std::span<const int32_t> prompt, int64_t context, int64_t n_vocab);

// How many of a cache's tokens a new prompt keeps: their common prefix, but at most all the
// prompt's tokens except its last, which is always evaluated for its logits.
int64_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt);
// The same for `cache`, which holds `cached`: 0 where the cache cannot keep that prefix (a
// recurrent model's keeps all it holds or nothing: KvCache::can_truncate).
int64_t reusable_prefix(const KvCache& cache, std::span<const int32_t> cached, std::span<const int32_t> prompt);

// The length of the longest proper prefix of `word` that `text` ends with: how much of a
// streamed text to hold back because it may be the start of `word` (a stop string, a tag).
size_t partial_suffix(std::string_view text, std::string_view word);

// Holds back emitted text that could still turn into a stop string; cuts at the first one.
class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);  // empty strings are ignored

  // Appends `text`; returns what can be emitted now. After stopped() is true, returns "".
  std::string push(std::string_view text);
  // The held-back text, when generation ends for another reason.
  std::string finish();
  bool stopped() const { return stopped_; }
  // The stop string that cut the text ("" until one did).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_, matched_;
  bool stopped_ = false;
};

enum class TextKind : uint8_t {
  content,      // the answer
  thinking,     // inside <think> ... </think>
  think_open,   // the "<think>" tag itself
  think_close,  // the "</think>" tag itself
};

using TextSink = std::function<void(std::string_view text, TextKind kind)>;

// Splits a text stream at "<think>" and "</think>" (tags split across pushes included) and
// reports each span with its kind. The tags themselves come as think_open/think_close pieces,
// so printing every piece verbatim reproduces the input.
class ThinkSplitter {
 public:
  explicit ThinkSplitter(bool start_in_thinking = false) : thinking_(start_in_thinking) {}
  void push(std::string_view text, const TextSink& sink);
  void finish(const TextSink& sink);  // emits a held partial tag as ordinary text
  bool thinking() const { return thinking_; }

 private:
  bool thinking_;
  std::string held_;  // a suffix that may be the start of the next tag
};

// Speculative decoding without a draft model (decode/draft.h): drafts continue the longest
// recent match of the context's end, a verify pass checks them in one forward, and the gate
// verifies only when its measurements say it pays. Lossless: every token is the one the sampler
// draws from that position's logits with that step's random number, exactly as without
// speculation (a verify pass of at most 32 rows takes a decode step's kernels, so its logits are
// bit for bit a decode step's); a draft token is kept only when it equals that token. So greedy
// and seeded sampling give the same tokens with or without it. A model with recurrent layers
// (qwen35) never drafts: its cache cannot drop a draft's rejected rows (KvCache::rewinds).
struct SpeculativeOptions {
  bool enabled = true;
  int draft_max = 16;   // tokens per draft, 1 ... 31
  bool always = false;  // verify every draft, whatever the gate says (tests, benchmarks)
};

struct GenerateOptions {
  SamplerParams sampling = {};
  int64_t max_new_tokens = -1;         // < 0: until end of generation or a full context
  std::vector<std::string> stop = {};  // user stop strings
  bool start_in_thinking = false;      // the prompt leaves a <think> open (classification only)
  int64_t batch = 512;                 // prompt tokens per forward pass
  // Constrained output (decode/grammar.h): every token is one the grammar allows, and the end of
  // generation comes only where the grammar may end. Null: unconstrained.
  std::shared_ptr<const Grammar> grammar = nullptr;
  SpeculativeOptions speculative = {};
};

// How many of `draft`'s tokens the grammar allows in a row from its position (which it keeps):
// a speculative draft is cut there.
size_t grammar_prefix(GrammarMatcher& grammar, std::span<const int32_t> draft);

// A sampler for `options` (its chain, and the grammar's matcher over `vocab` when constrained).
// `vocab` may be null when options.grammar is.
Sampler make_sampler(const GenerateOptions& options, const std::shared_ptr<const GrammarVocab>& vocab);

struct GenerateCallbacks {
  TextSink on_text = {};  // each emitted piece, in order
  // After each prefill batch: prompt tokens evaluated so far (reused ones included), total.
  std::function<void(int64_t done, int64_t total)> on_prefill = {};
  // Each prefill batch's logits, f32 [m, n_vocab], rows for prompt positions first ... first+m.
  std::function<void(int64_t first, const Array& logits)> on_prompt_logits = {};
};

enum class StopReason : uint8_t { end_of_generation, stop_string, max_tokens, context_full, cancelled };
std::string_view to_string(StopReason reason);

// The figures llama-server reports after a completion.
struct GenerationTimings {
  int64_t prompt_tokens = 0;  // evaluated in the prefill (not the reused prefix)
  double prompt_ms = 0;
  int64_t eval_tokens = 0;  // generated tokens that entered the cache (by decode steps or verify passes)
  double eval_ms = 0;
  int64_t draft_tokens = 0;     // drafted tokens verified
  int64_t draft_accepted = 0;   // of those, the ones kept
  int64_t verify_passes = 0;
  double total_ms = 0;  // the whole generate() call, sampling included
};

struct GenerationResult {
  std::vector<int32_t> ids;  // every sampled token, in order (a final EOG token included)
  std::string text;          // every emitted piece, concatenated
  StopReason reason = StopReason::max_tokens;
  std::string stop_string;    // the stop string that ended it (reason stop_string)
  int64_t reused_tokens = 0;  // prompt tokens the session already held
  GenerationTimings timings;
};

// What happens to each sampled token, whoever sampled it (Generator, Scheduler): the end-of-
// generation check, text decoding (StreamingDecoder), stop strings (StopStringFilter) and
// <think> spans (ThinkSplitter), in that order, filling a GenerationResult. The tokenizer and the
// EOG set must outlive it.
class TokenOutput {
 public:
  TokenOutput(const Tokenizer& tokenizer, std::span<const int32_t> eog_sorted, const GenerateOptions& options,
              TextSink on_text);
  TokenOutput(const TokenOutput&) = delete;  // its text sink points at this object
  TokenOutput& operator=(const TokenOutput&) = delete;

  // Records a sampled token; true when generation ends with it (an EOG token or a stop string,
  // then result().reason says which). The token is in result().ids either way.
  bool push(int32_t id);
  // Ends generation (for `reason` unless push() ended it): emits the text still held back.
  void finish(StopReason reason);
  const GenerationResult& result() const { return result_; }
  GenerationResult& result() { return result_; }

 private:
  void emit(const std::string& decoded);

  std::span<const int32_t> eog_;
  StreamingDecoder decoder_;
  StopStringFilter stops_;
  ThinkSplitter think_;
  TextSink sink_;
  GenerationResult result_;
  bool ended_ = false;
};

class Generator {
 public:
  // The model, tokenizer and session must outlive the Generator; the session must be empty or
  // hold exactly what tokens() will report (a fresh one, normally).
  Generator(ExecContext& ctx, const Model& model, const Tokenizer& tokenizer, Session& session);

  GenerationResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                            const GenerateCallbacks& callbacks = {});

  // What the session's cache holds, in order.
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t context() const { return session_->cache().capacity(); }
  bool is_end_of_generation(int32_t id) const;
  // Empties the session (chat's /reset).
  void reset();

 private:
  ExecContext* ctx_;
  const Model* model_;
  const Tokenizer* tokenizer_;
  Session* session_;
  std::vector<int32_t> tokens_;
  std::vector<int32_t> eog_;  // sorted
  uint64_t sampler_step_ = 0;
  std::shared_ptr<const GrammarVocab> grammar_vocab_;  // built at the first constrained request
  int draft_after(int32_t previous, const GenerateOptions& options, Sampler& sampler, int64_t capacity,
                  int64_t emitted, std::vector<int32_t>& draft);

  ContextDrafter drafter_;  // tokens_ and the token being decoded
  int draft_match_ = 0;     // the match length of the last draft
  SpeculationGate gate_;    // learns across generate() calls
};

}  // namespace tempra::llm
