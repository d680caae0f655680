// tempra/llm/runtime/generator.cpp: see generator.h.
#include "tempra/llm/runtime/generator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <utility>

#include "tempra/core/error.h"
#include "tempra/core/timing.h"
#include "tempra/ops/ops.h"

namespace tempra::llm {
namespace {

constexpr std::string_view kOp = "generate";

// llama.cpp's vocab loader (src/llama-vocab.cpp, special_eog_ids): the texts it treats as end of
// generation, plus the FIM pad / repo / file-separator tokens it detects by text and adds too.
constexpr std::array<std::string_view, 32> kEndOfGenerationTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>",
    "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "[e~[",
    // FIM tokens (special_fim_pad_id, special_fim_rep_id, special_fim_sep_id).
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
    "<|file_sep|>"};

}  // namespace

void check_prompt(std::string_view op, std::span<const int32_t> prompt, int64_t context, int64_t n_vocab) {
  const auto n = static_cast<int64_t>(prompt.size());
  check(n > 0, op, "the prompt is empty");
  check(n <= context, op, "prompt has ", n, " tokens but the context holds ", context);
  for (int64_t i = 0; i < n; ++i)
    check(prompt[size_t(i)] >= 0 && prompt[size_t(i)] < n_vocab, op, "prompt token ", i, " is id ", prompt[size_t(i)],
          ", outside the vocab [0, ", n_vocab, ")");
}

int64_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt) {
  const auto limit = std::min<int64_t>(int64_t(cached.size()), int64_t(prompt.size()) - 1);
  int64_t keep = 0;
  while (keep < limit && cached[size_t(keep)] == prompt[size_t(keep)]) ++keep;
  return keep;
}

int64_t reusable_prefix(const KvCache& cache, std::span<const int32_t> cached, std::span<const int32_t> prompt) {
  const int64_t keep = reusable_prefix(cached, prompt);
  return cache.can_truncate(keep) ? keep : 0;
}

size_t partial_suffix(std::string_view text, std::string_view word) {
  for (size_t k = std::min(text.size(), word.size() - 1); k > 0; --k)
    if (text.ends_with(word.substr(0, k))) return k;
  return 0;
}

std::vector<int32_t> end_of_generation_ids(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  if (tokenizer.eos() >= 0) ids.push_back(tokenizer.eos());
  for (int32_t id = 0; id < tokenizer.size(); ++id)
    if (std::find(kEndOfGenerationTexts.begin(), kEndOfGenerationTexts.end(), tokenizer.text(id)) !=
        kEndOfGenerationTexts.end())
      ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

StopStringFilter::StopStringFilter(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopStringFilter::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  size_t cut = std::string::npos;
  for (const auto& s : stops_)
    if (const size_t at = held_.find(s); at < cut) {
      cut = at;
      matched_ = s;
    }
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  size_t keep = 0;
  for (const auto& s : stops_) keep = std::max(keep, partial_suffix(held_, s));
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStringFilter::finish() {
  return std::exchange(held_, std::string());
}

void ThinkSplitter::push(std::string_view text, const TextSink& sink) {
  held_.append(text);
  for (;;) {
    const std::string_view tag = thinking_ ? "</think>" : "<think>";
    const TextKind kind = thinking_ ? TextKind::thinking : TextKind::content;
    const size_t pos = held_.find(tag);
    if (pos == std::string::npos) {
      const size_t keep = partial_suffix(held_, tag);
      if (held_.size() > keep) sink(std::string_view(held_).substr(0, held_.size() - keep), kind);
      held_.erase(0, held_.size() - keep);
      return;
    }
    if (pos > 0) sink(std::string_view(held_).substr(0, pos), kind);
    sink(tag, thinking_ ? TextKind::think_close : TextKind::think_open);
    thinking_ = !thinking_;
    held_.erase(0, pos + tag.size());
  }
}

void ThinkSplitter::finish(const TextSink& sink) {
  if (!held_.empty()) sink(held_, thinking_ ? TextKind::thinking : TextKind::content);
  held_.clear();
}

TokenOutput::TokenOutput(const Tokenizer& tokenizer, std::span<const int32_t> eog_sorted,
                         const GenerateOptions& options, TextSink on_text)
    : eog_(eog_sorted),
      decoder_(tokenizer, /*render_special=*/false),
      stops_(options.stop),
      think_(options.start_in_thinking),
      sink_([this, on_text = std::move(on_text)](std::string_view text, TextKind kind) {
        result_.text.append(text);
        if (on_text) on_text(text, kind);
      }) {}

void TokenOutput::emit(const std::string& decoded) {
  const std::string out = stops_.push(decoded);
  if (!out.empty()) think_.push(out, sink_);
}

bool TokenOutput::push(int32_t id) {
  check(!ended_, kOp, "a token after the end of generation");
  result_.ids.push_back(id);
  if (std::binary_search(eog_.begin(), eog_.end(), id)) {
    result_.reason = StopReason::end_of_generation;
    ended_ = true;
    return true;
  }
  emit(decoder_.push(id));
  if (stops_.stopped()) {
    result_.reason = StopReason::stop_string;
    result_.stop_string = stops_.matched();
    ended_ = true;
  }
  return ended_;
}

void TokenOutput::finish(StopReason reason) {
  if (!ended_) result_.reason = reason;
  ended_ = true;
  if (!stops_.stopped()) {
    emit(decoder_.finish());
    if (stops_.stopped()) {
      result_.reason = StopReason::stop_string;
      result_.stop_string = stops_.matched();
    } else if (const std::string rest = stops_.finish(); !rest.empty()) {
      think_.push(rest, sink_);
    }
  }
  think_.finish(sink_);
}

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::end_of_generation:
      return "end of generation";
    case StopReason::stop_string:
      return "stop string";
    case StopReason::max_tokens:
      return "max tokens";
    case StopReason::context_full:
      return "context full";
    case StopReason::cancelled:
      return "cancelled";
  }
  return "?";
}

Generator::Generator(ExecContext& ctx, const Model& model, const Tokenizer& tokenizer, Session& session)
    : ctx_(&ctx), model_(&model), tokenizer_(&tokenizer), session_(&session), eog_(end_of_generation_ids(tokenizer)) {
  check(session.size() == 0, kOp, "the session must start empty, it holds ", session.size(), " tokens");
  check(tokenizer.size() <= model.info().n_vocab, kOp, "the tokenizer has ", tokenizer.size(),
        " tokens but the model's vocab has ", model.info().n_vocab);
}

bool Generator::is_end_of_generation(int32_t id) const {
  return std::binary_search(eog_.begin(), eog_.end(), id);
}

void Generator::reset() {
  session_->truncate(0);
  tokens_.clear();
}

size_t grammar_prefix(GrammarMatcher& grammar, std::span<const int32_t> draft) {
  const GrammarMatcher::Position start = grammar.position();
  size_t ok = 0;
  try {
    while (ok < draft.size() && grammar.accept(draft[ok])) ++ok;
  } catch (const std::exception&) {
    // A draft may lead the matcher where no generation would go, past one of its limits: the
    // draft stops there; the generation itself is untouched.
  }
  grammar.restore(start);
  return ok;
}

// The draft to verify after `previous` (into `draft`; returns how many of its tokens, 0: decode
// plainly): the drafter's continuation, no longer than the output and the cache have room for,
// cut at the first token the grammar would refuse, then as much of it as the gate finds worth it.
int Generator::draft_after(int32_t previous, const GenerateOptions& options, Sampler& sampler, int64_t capacity,
                           int64_t emitted, std::vector<int32_t>& draft) {
  drafter_.truncate(tokens_.size());
  drafter_.append(std::span<const int32_t>(tokens_).subspan(drafter_.tokens().size()));
  drafter_.append(previous);
  int64_t room = std::min<int64_t>(options.speculative.draft_max, capacity - int64_t(tokens_.size()) - 1);
  if (options.max_new_tokens >= 0)
    room = std::min<int64_t>(room, options.max_new_tokens - emitted - 1);
  if (room <= 0) return 0;
  ContextDrafter::Draft d = drafter_.draft(int(room));
  draft = std::move(d.tokens);
  draft_match_ = d.match_length;
  if (draft.empty()) return 0;
  if (GrammarMatcher* grammar = sampler.grammar()) draft.resize(grammar_prefix(*grammar, draft));
  return options.speculative.always ? int(draft.size()) : gate_.choose(int(draft.size()), draft_match_);
}

Sampler make_sampler(const GenerateOptions& options, const std::shared_ptr<const GrammarVocab>& vocab) {
  Sampler sampler(options.sampling);
  if (options.grammar) sampler.constrain(std::make_unique<GrammarMatcher>(options.grammar, vocab));
  return sampler;
}

GenerationResult Generator::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                     const GenerateCallbacks& callbacks) {
  const auto start = std::chrono::steady_clock::now();
  const auto n = static_cast<int64_t>(prompt.size());
  const int64_t capacity = context();
  const int64_t n_vocab = model_->info().n_vocab;
  check_prompt(kOp, prompt, capacity, n_vocab);
  check(options.batch > 0, kOp, "batch must be positive, got ", options.batch);
  if (options.grammar && !grammar_vocab_) grammar_vocab_ = GrammarVocab::from_tokenizer(*tokenizer_, eog_);
  Sampler sampler = make_sampler(options, grammar_vocab_);
  sampler.set_step(sampler_step_);

  const int64_t keep = reusable_prefix(session_->cache(), tokens_, prompt);
  session_->truncate(keep);
  tokens_.resize(size_t(keep));

  TokenOutput out(*tokenizer_, eog_, options, callbacks.on_text);
  GenerationResult& result = out.result();
  result.reused_tokens = keep;
  // The logits the next draw reads: the session's own buffer (prefill/decode, valid until its
  // next call) or, when the caller wants every prompt row, a copy of forward()'s last row.
  std::span<const float> logits;
  std::vector<float> last_row;
  auto keep_last_row = [&](const Array& rows) {
    check(rows.dtype() == DType::f32 && rows.rank() == 2 && rows.dim(1) == n_vocab, kOp,
          "the model returned logits of shape ", rows.shape());
    Array last = rows.select(0, rows.dim(0) - 1);
    if (!last.is_contiguous()) last = contiguous(*ctx_, last);
    last_row.assign(last.data<float>(), last.data<float>() + n_vocab);
    logits = last_row;
  };

  const auto prefill_start = std::chrono::steady_clock::now();
  for (int64_t first = keep; first < n; first += options.batch) {
    const int64_t m = std::min(options.batch, n - first);
    const auto chunk = prompt.subspan(size_t(first), size_t(m));
    if (callbacks.on_prompt_logits) {
      const Array rows = session_->forward(*ctx_, chunk);
      callbacks.on_prompt_logits(first, rows);
      keep_last_row(rows);
    } else {
      logits = session_->prefill(*ctx_, chunk);  // the last position's logits only
    }
    tokens_.insert(tokens_.end(), chunk.begin(), chunk.end());
    if (callbacks.on_prefill) callbacks.on_prefill(first + m, n);
  }
  result.timings.prompt_tokens = n - keep;
  result.timings.prompt_ms = ms_since(prefill_start);

  const SpeculativeOptions& spec = options.speculative;
  check(!spec.enabled || (spec.draft_max >= 1 && spec.draft_max < SpeculationGate::kMaxRows), kOp,
        "draft_max must be 1 ... ", SpeculationGate::kMaxRows - 1, ", got ", spec.draft_max);
  drafter_.truncate(size_t(keep));
  // A cache that cannot drop a rejected draft's rows (recurrent layers) is never drafted for.
  const bool drafts = spec.enabled && session_->cache().rewinds();
  std::vector<int32_t> draft;
  for (;;) {
    if (options.max_new_tokens >= 0 && int64_t(result.ids.size()) >= options.max_new_tokens) {
      out.finish(StopReason::max_tokens);
      break;
    }
    if (!result.ids.empty()) {  // the previous token goes into the cache for the next logits
      if (int64_t(tokens_.size()) >= capacity) {
        out.finish(StopReason::context_full);
        break;
      }
      const int32_t previous = result.ids.back();
      const int k = drafts ? draft_after(previous, options, sampler, capacity, int64_t(result.ids.size()), draft) : 0;
      if (k > 0) {
        // One pass over [previous, draft...]; each row's token drawn as a decode step would draw it.
        std::vector<int32_t> rows{previous};
        rows.insert(rows.end(), draft.begin(), draft.begin() + k);
        const auto step_start = std::chrono::steady_clock::now();
        const ForwardBuffers& verified = session_->verify(*ctx_, rows);
        const double ms = ms_since(step_start);
        tokens_.push_back(previous);
        int accepted = 0;
        bool ended = false;
        for (int j = 0; j <= k; ++j) {
          const int32_t id = sampler.sample(verified.logits_row(j), tokens_);
          if (out.push(id)) {
            ended = true;
            break;
          }
          if (j == k || id != draft[size_t(j)]) break;
          tokens_.push_back(id);
          ++accepted;
        }
        session_->truncate(int64_t(tokens_.size()));  // the rejected rest of the draft leaves the cache
        gate_.record_verify(k, accepted, draft_match_, ms);
        result.timings.eval_ms += ms;
        result.timings.eval_tokens += 1 + accepted;
        result.timings.draft_tokens += k;
        result.timings.draft_accepted += accepted;
        ++result.timings.verify_passes;
        if (ended) {
          out.finish(result.reason);
          break;
        }
        continue;
      }
      const auto step_start = std::chrono::steady_clock::now();
      logits = session_->decode(*ctx_, previous);
      const double ms = ms_since(step_start);
      gate_.record_decode(ms);
      result.timings.eval_ms += ms;
      ++result.timings.eval_tokens;
      tokens_.push_back(previous);
    }
    if (out.push(sampler.sample(logits, tokens_))) {
      out.finish(result.reason);
      break;
    }
  }
  sampler_step_ = sampler.step();
  result.timings.total_ms = ms_since(start);
  return std::move(result);
}

}  // namespace tempra::llm
