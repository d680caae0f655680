// tempra/llm/runtime/scheduler.cpp: see scheduler.h.
#include "tempra/llm/runtime/scheduler.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "tempra/core/error.h"
#include "tempra/core/timing.h"

namespace tempra::llm {
namespace {

constexpr std::string_view kOp = "Scheduler";

// A request that ends before it ever ran (cancelled in the queue, or not admitted) still hears it.
void end_unrun(Request& request) {
  if (!request.on_done) return;
  GenerationResult result;
  result.reason = StopReason::cancelled;
  request.on_done(result);
}

}  // namespace

// A request in a slot: its sampler and its output, from admission to on_done.
struct Scheduler::Running {
  Running(RequestId id_in, Request request_in, const Tokenizer& tokenizer, std::span<const int32_t> eog,
          const std::shared_ptr<const GrammarVocab>& grammar_vocab, uint64_t admitted_in)
      : id(id_in),
        request(std::move(request_in)),
        sampler(make_sampler(request.options, grammar_vocab)),
        out(tokenizer, eog, request.options, request.on_text),
        admitted(admitted_in) {}

  RequestId id;
  Request request;
  Sampler sampler;
  TokenOutput out;
  uint64_t admitted;        // admission order: prefill chunks are served first come first served
  int64_t prefilled = 0;    // prompt tokens in the cache (the reused prefix included)
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  bool generating() const { return prefilled == int64_t(request.prompt.size()); }
};

struct Scheduler::Slot {
  explicit Slot(KvCache cache_in) : cache(std::move(cache_in)) {}

  KvCache cache;
  std::vector<int32_t> tokens;  // what the cache holds, in order
  uint64_t last_used = 0;
  std::unique_ptr<Running> running;
  int32_t pending = -1;  // the last sampled token, fed to the next step's decode row
  ContextDrafter drafter;             // tokens and pending, for speculative drafts
  std::vector<int32_t> verify_rows;   // this step's rows: pending, then the draft it verifies
  int draft_match = 0;
};

Scheduler::Scheduler(ExecContext& ctx, const Model& model, const Tokenizer& tokenizer, const SchedulerOptions& options)
    : ctx_(&ctx), model_(&model), tokenizer_(&tokenizer), options_(options), eog_(end_of_generation_ids(tokenizer)) {
  check(options.slots >= 1, kOp, "slots must be at least 1, got ", options.slots);
  check(options.max_queue >= 0, kOp, "max_queue must be >= 0, got ", options.max_queue);
  check(options.chunk >= 1, kOp, "chunk must be at least 1, got ", options.chunk);
  // A prefilling slot is not decoding, so the other slots add at most slots - 1 decode rows: a
  // whole chunk must still fit beside them, or a prompt could wait forever.
  check(options.batch >= options.slots - 1 + options.chunk, kOp, "batch ", options.batch, " cannot hold ",
        options.slots - 1, " decode rows and a prompt chunk of ", options.chunk);
  check(tokenizer.size() <= model.info().n_vocab, kOp, "the tokenizer has ", tokenizer.size(),
        " tokens but the model's vocab has ", model.info().n_vocab);
  for (int i = 0; i < options.slots; ++i)
    slots_.push_back(std::make_unique<Slot>(model.make_cache(ctx, options.context, options.cache_type, options.batch)));
  options_.context = slots_.front()->cache.capacity();
  // Logit rows: one per slot, and up to SpeculationGate::kMaxRows for the rows of verify passes.
  logit_rows_ = std::min<int64_t>(options.batch, options.slots + SpeculationGate::kMaxRows);
  buffers_ = model.make_buffers(ctx, options.batch, logit_rows_, options_.context);
}

Scheduler::~Scheduler() = default;

std::optional<RequestId> Scheduler::submit(Request request) {
  check_prompt(kOp, request.prompt, options_.context, model_->info().n_vocab);
  Sampler validate(request.options.sampling);  // throws naming a parameter out of range
  std::lock_guard lock(mutex_);
  // Waiting requests beyond the free slots (as of the last step) are the queue.
  if (int64_t(queue_.size()) + stats_.busy_slots >= options_.slots + options_.max_queue) return std::nullopt;
  const RequestId id = next_id_++;
  queue_.push_back({id, std::move(request)});
  stats_.queued = int64_t(queue_.size());
  return id;
}

void Scheduler::cancel(RequestId id) {
  std::lock_guard lock(mutex_);
  cancelled_.push_back(id);
}

void Scheduler::cancel_all() {
  std::lock_guard lock(mutex_);
  for (const Queued& q : queue_) cancelled_.push_back(q.id);
  for (const auto& s : slots_)
    if (s->running) cancelled_.push_back(s->running->id);
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Scheduler::count_busy_slots() {
  std::lock_guard lock(mutex_);
  stats_.busy_slots = 0;
  for (const auto& s : slots_) stats_.busy_slots += s->running ? 1 : 0;
}

void Scheduler::admit() {
  for (;;) {
    std::vector<Slot*> idle;
    for (auto& s : slots_)
      if (!s->running) idle.push_back(s.get());
    if (idle.empty()) return;
    Queued next;
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty()) return;
      next = std::move(queue_.front());
      queue_.pop_front();
      stats_.queued = int64_t(queue_.size());
      // It holds a slot from now on, for submit()'s queue count too: admission can take a while
      // (the first constrained request builds the grammar vocabulary). count_busy_slots() recounts.
      ++stats_.busy_slots;
    }
    const std::vector<int32_t>& prompt = next.request.prompt;
    const auto n = static_cast<int64_t>(prompt.size());
    // The slot with the longest cached prefix (at most n - 1 tokens: the last is evaluated for
    // its logits), when that prefix is more than half the prompt (llama-server's
    // slot_prompt_similarity); else the least recently used slot, an empty one first. Every chat
    // prompt starts with the same template tokens: without the threshold a new conversation
    // would evict a cached one while empty slots wait.
    auto common = [&](const Slot& s) { return reusable_prefix(s.cache, s.tokens, prompt); };
    Slot* best = nullptr;
    int64_t best_keep = 0;
    for (Slot* s : idle)
      if (const int64_t keep = common(*s); keep > best_keep) {
        best = s;
        best_keep = keep;
      }
    if (best == nullptr || 2 * best_keep <= n) {
      best = *std::min_element(idle.begin(), idle.end(),
                               [](const Slot* a, const Slot* b) { return a->last_used < b->last_used; });
      best_keep = common(*best);
    }
    best->cache.truncate(best_keep);
    best->tokens.resize(size_t(best_keep));
    best->drafter.truncate(size_t(best_keep));  // the previous request's tokens past the shared prefix
    best->pending = -1;
    best->last_used = ++clock_;
    try {
      if (next.request.options.grammar && !grammar_vocab_)  // once, at the first constrained request
        grammar_vocab_ = GrammarVocab::from_tokenizer(*tokenizer_, eog_);
      best->running =
          std::make_unique<Running>(next.id, std::move(next.request), *tokenizer_, eog_, grammar_vocab_, clock_);
    } catch (const std::exception&) {  // out of memory
      end_unrun(next.request);
      continue;
    }
    best->running->prefilled = best_keep;
    best->running->out.result().reused_tokens = best_keep;
    std::lock_guard lock(mutex_);
    stats_.reused_tokens += best_keep;
  }
}

void Scheduler::finish(Slot& slot, StopReason reason) {
  Running& r = *slot.running;
  r.out.finish(reason);
  GenerationResult& result = r.out.result();
  result.timings.total_ms = ms_since(r.start);
  {
    std::lock_guard lock(mutex_);
    stats_.generated_tokens += int64_t(result.ids.size());
  }
  const auto done = std::move(r.request.on_done);
  const GenerationResult final_result = std::move(result);
  slot.running.reset();
  slot.pending = -1;
  slot.last_used = ++clock_;
  if (!done) return;
  try {
    done(final_result);
  } catch (...) {
    // The caller's own callback failed (out of memory): the request has ended either way, and
    // the other requests of this step must still be served.
  }
}

void Scheduler::accept(Slot& slot, std::span<const float> logits) {
  try {
    Running& r = *slot.running;
    const int32_t id = r.sampler.sample(logits, slot.tokens);
    if (r.request.on_token) r.request.on_token(id, logits);
    if (r.out.push(id)) return finish(slot, r.out.result().reason);
    const GenerateOptions& o = r.request.options;
    if (o.max_new_tokens >= 0 && int64_t(r.out.result().ids.size()) >= o.max_new_tokens)
      return finish(slot, StopReason::max_tokens);
    if (int64_t(slot.tokens.size()) >= options_.context) return finish(slot, StopReason::context_full);
    slot.pending = id;
  } catch (const std::exception&) {
    // This request's sampling or callbacks failed (no finite logit, out of memory): it ends,
    // cancelled, and the other requests of the step go on.
    if (slot.running) finish(slot, StopReason::cancelled);
  }
}

// The draft `slot` verifies this step (into slot.verify_rows after its pending token; returns
// its length): its drafter's continuation, within the request's room, cut where its grammar
// would refuse, as much as the gate finds worth it beside the step's other rows.
int Scheduler::plan_draft(Slot& slot, int rows_before, double tokens_before, int max_rows) {
  Running& r = *slot.running;
  const SpeculativeOptions& spec = r.request.options.speculative;
  if (!spec.enabled || !slot.cache.rewinds()) return 0;
  slot.drafter.truncate(slot.tokens.size());
  slot.drafter.append(std::span<const int32_t>(slot.tokens).subspan(slot.drafter.tokens().size()));
  slot.drafter.append(slot.pending);
  int64_t room = std::min<int64_t>(spec.draft_max, options_.context - int64_t(slot.tokens.size()) - 1);
  if (r.request.options.max_new_tokens >= 0)
    room = std::min<int64_t>(room, r.request.options.max_new_tokens - int64_t(r.out.result().ids.size()) - 1);
  if (room <= 0) return 0;
  ContextDrafter::Draft d = slot.drafter.draft(int(room));
  if (d.tokens.empty()) return 0;
  if (GrammarMatcher* grammar = r.sampler.grammar()) d.tokens.resize(grammar_prefix(*grammar, d.tokens));
  const int available = std::min({int(d.tokens.size()), SpeculationGate::kMaxRows - 1, max_rows});
  const int k = spec.always ? available : gate_.choose(available, d.match_length, rows_before, tokens_before);
  slot.draft_match = d.match_length;
  slot.verify_rows.insert(slot.verify_rows.end(), d.tokens.begin(), d.tokens.begin() + k);
  return k;
}

bool Scheduler::step() {
  // Cancellations first: a queued request ends without running, a running one at this step.
  std::vector<RequestId> cancelled;
  std::vector<Queued> dropped;
  {
    std::lock_guard lock(mutex_);
    cancelled.swap(cancelled_);
    for (RequestId id : cancelled) {
      const auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.id == id; });
      if (it == queue_.end()) continue;
      dropped.push_back(std::move(*it));
      queue_.erase(it);
    }
    stats_.queued = int64_t(queue_.size());
  }
  for (Queued& q : dropped) end_unrun(q.request);
  for (auto& s : slots_)
    if (s->running && std::find(cancelled.begin(), cancelled.end(), s->running->id) != cancelled.end())
      finish(*s, StopReason::cancelled);

  admit();

  // The batch: a decode row per generating slot, then whole prompt chunks first come first served.
  struct Part {
    Slot* slot;
    int64_t count;  // prompt tokens of this step (0: a decode row)
  };
  std::vector<SequenceRows> rows;
  std::vector<Part> parts;
  int64_t budget = options_.batch;
  std::vector<Slot*> decoding, prefilling;
  for (auto& s : slots_) {
    if (s->running && s->running->generating() && s->pending >= 0) decoding.push_back(s.get());
    if (s->running && !s->running->generating()) prefilling.push_back(s.get());
  }
  // Speculation only in decode-only steps: a prompt chunk keeps its room, and the gate's timings
  // are of steps like the one it plans.
  const bool speculate = prefilling.empty();
  int rows_before = int(decoding.size()) - 1;  // the other slots' decode rows, and their drafts
  double tokens_before = double(decoding.size()) - 1;
  // Every row of a decode-only step has logits: drafts fit in what the batch and the logit
  // buffer leave beside one row per slot.
  int64_t draft_room = std::min(options_.batch, logit_rows_) - int64_t(decoding.size());
  for (Slot* s : decoding) {
    s->verify_rows.assign(1, s->pending);
    const int k = speculate && draft_room > 0 ? plan_draft(*s, rows_before, tokens_before, int(draft_room)) : 0;
    draft_room -= k;
    rows.push_back({&s->cache, std::span<const int32_t>(s->verify_rows), 1 + k});
    parts.push_back({s, 0});
    budget -= 1 + k;
    rows_before += k;
    if (k > 0) tokens_before += gate_.expected_tokens(k, s->draft_match) - 1;
  }
  std::sort(prefilling.begin(), prefilling.end(),
            [](const Slot* a, const Slot* b) { return a->running->admitted < b->running->admitted; });
  for (Slot* s : prefilling) {
    const Running& r = *s->running;
    const int64_t left = int64_t(r.request.prompt.size()) - r.prefilled;
    const int64_t count = std::min(options_.chunk, left);
    if (count > budget) break;
    rows.push_back({&s->cache, std::span(r.request.prompt).subspan(size_t(r.prefilled), size_t(count)),
                    count == left ? 1 : 0});
    parts.push_back({s, count});
    budget -= count;
  }
  count_busy_slots();
  if (rows.empty()) return false;

  const auto start = std::chrono::steady_clock::now();
  model_->forward(*ctx_, rows, *buffers_);
  const double ms = ms_since(start);
  if (speculate && options_.batch - budget <= SpeculationGate::kMaxRows) gate_.record_step(int(options_.batch - budget), ms);
  int64_t prompt_tokens = 0, generated = 0;
  int64_t logit_row = 0;
  for (const Part& p : parts) {
    Slot& s = *p.slot;
    Running& r = *s.running;
    GenerationTimings& t = r.out.result().timings;
    if (p.count == 0) {  // a decode step, or a verify pass of pending and a draft
      const int k = int(s.verify_rows.size()) - 1;
      if (k > 0) {
        t.draft_tokens += k;
        ++t.verify_passes;
      }
      int accepted = 0;
      for (int j = 0; j <= k; ++j) {
        s.tokens.push_back(s.pending);  // row j's input enters the cache for good
        s.pending = -1;
        GenerationTimings& timings = s.running->out.result().timings;
        timings.eval_ms += j == 0 ? ms : 0.0;
        ++timings.eval_tokens;
        if (j > 0) ++timings.draft_accepted;
        accept(s, buffers_->logits_row(logit_row + j));
        if (!s.running || j == k || s.pending != s.verify_rows[size_t(j) + 1]) break;
        ++accepted;
      }
      logit_row += 1 + k;
      if (k > 0) {
        s.cache.truncate(int64_t(s.tokens.size()));  // the rejected rest of the draft
        gate_.record_acceptance(k, accepted, s.draft_match);
      }
      generated += 1 + accepted;
      continue;
    }
    const auto chunk = std::span(r.request.prompt).subspan(size_t(r.prefilled), size_t(p.count));
    s.tokens.insert(s.tokens.end(), chunk.begin(), chunk.end());
    r.prefilled += p.count;
    t.prompt_tokens += p.count;
    t.prompt_ms += ms;
    prompt_tokens += p.count;
    if (!r.generating()) continue;
    const std::span<const float> logits = buffers_->logits_row(logit_row++);
    if (r.request.options.max_new_tokens == 0) finish(s, StopReason::max_tokens);
    else accept(s, logits);
  }
  {
    std::lock_guard lock(mutex_);
    if (prompt_tokens > 0) {
      stats_.prompt_ms += ms;
    } else {
      stats_.decode_ms += ms;
      stats_.decode_only_tokens += generated;
    }
    stats_.prompt_tokens += prompt_tokens;
    ++stats_.steps;
  }
  count_busy_slots();  // requests that ended in this step
  return true;
}

void Scheduler::run_until_idle() {
  while (step()) {
  }
}

}  // namespace tempra::llm
