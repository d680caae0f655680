// tempra/llm/runtime/scheduler.h: continuous batching. Many requests share one model: each runs
// in a slot (a KV cache of its own), and every step is one batched forward (model.h) holding a
// decode row of every generating slot plus prompt chunks of the slots still prefilling.
//
// Contract:
// - submit() queues a request and returns its id; it may be called from any thread. step() runs
//   one batch and must be called from one thread at a time (the server's engine thread, or a
//   test's loop); run_until_idle() steps until nothing is queued or running. Every callback of
//   a request runs inside step(), on the stepping thread.
// - Admission: a queued request takes an idle slot, first come first served. The slot chosen is
//   the idle one whose cached tokens share the longest prefix with the prompt (the previous turn
//   of the same chat, a common system prompt), else the least recently used; only the prompt's
//   tokens past that prefix are prefilled (at least its last token, for its logits). Idle slots
//   keep their cache until another request needs the slot.
// - Each step: one decode row per generating slot (they never wait for a prefill), then prompt
//   chunks of at most `chunk` tokens for prefilling slots in admission order while the batch has
//   room for a whole chunk (at most `batch` rows in all). A prompt is split at the same places
//   whatever else runs, so a request's tokens do not depend on its neighbours: the batched
//   forward keeps each sequence's own kernel path (model.h), and each request samples with its
//   own Sampler (seed, step 0 at its first token), over its own history (its slot's tokens).
// - A request ends at its end-of-generation token, a stop string, max_new_tokens, a full slot
//   context (TokenOutput: generator.h), or cancel(); on_done then receives its result exactly
//   once and the slot becomes idle, its cache still holding the prompt and what was generated.
//   A prompt longer than the slot context, an empty prompt, a token outside the vocab or bad
//   sampling parameters are refused by submit() (tempra::Error naming them, nothing queued);
//   with max_queue requests already waiting beyond the free slots it returns no id (the server
//   answers 429).
// - cancel(id) (any thread) stops a queued or running request at the next step: on_done gets
//   StopReason::cancelled. Unknown or finished ids are ignored.
//
// - Speculative decoding (generator.h's SpeculativeOptions, per request): in a step without
//   prompt chunks, a slot's decode row may carry a draft (decode/draft.h), verified in the same
//   pass; the gate weighs each draft against the step's other rows. The tokens are those without
//   speculation, as in the generator.
//
// Parity: the slot choice and the reuse rule are llama-server's (tools/server: slots, the
// longest-common-prefix match, LRU); its `n_batch`/`n_ubatch` split is `batch` here, and
// `chunk` bounds one prompt's share of a step as llama-server's chunked prefill does.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/llm/decode/sampler.h"
#include "tempra/llm/model/kv_cache.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/runtime/generator.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::llm {

struct SchedulerOptions {
  int slots = 4;          // concurrent requests (llama-server's -np)
  int64_t context = 0;    // each slot's KV capacity in tokens; 0: the model's context_length
  KvCacheType cache_type = KvCacheType::f16;
  int64_t batch = 512;    // the most rows of one forward pass
  int64_t chunk = 256;    // the most prompt tokens of one request in one step
  int64_t max_queue = 64; // requests that may wait beyond the free slots; submit() refuses past it
};

using RequestId = uint64_t;

struct Request {
  std::vector<int32_t> prompt;
  GenerateOptions options = {};  // sampling, max_new_tokens, stop strings, start_in_thinking
  TextSink on_text = {};         // each emitted piece, in order
  // Each sampled token (before its text) with the logits it was drawn from (valid during the call).
  std::function<void(int32_t token, std::span<const float> logits)> on_token = {};
  std::function<void(const GenerationResult&)> on_done = {};  // exactly once
};

struct SchedulerStats {
  int64_t queued = 0, busy_slots = 0;
  int64_t prompt_tokens = 0, reused_tokens = 0, generated_tokens = 0;  // totals since start
  int64_t steps = 0;
  // Wall time of the steps that had prompt rows, and of those with decode rows only: what the
  // prompt and decode rates of /metrics divide by.
  double prompt_ms = 0, decode_ms = 0;
  int64_t decode_only_tokens = 0;  // tokens sampled in decode-only steps
};

class Scheduler {
 public:
  // The model and the tokenizer must outlive the scheduler.
  Scheduler(ExecContext& ctx, const Model& model, const Tokenizer& tokenizer, const SchedulerOptions& options = {});
  ~Scheduler();

  std::optional<RequestId> submit(Request request);
  void cancel(RequestId id);
  // Cancels every queued and running request (at the next step). Call it from the stepping
  // thread only (between steps): it reads the slots.
  void cancel_all();
  // Runs one batch; false when there was nothing to do.
  bool step();
  void run_until_idle();

  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Running;
  struct Slot;

  void admit();
  int plan_draft(Slot& slot, int rows_before, double tokens_before, int max_rows);
  void accept(Slot& slot, std::span<const float> logits);
  void finish(Slot& slot, StopReason reason);
  void count_busy_slots();  // into stats_.busy_slots

  ExecContext* ctx_;
  const Model* model_;
  const Tokenizer* tokenizer_;
  SchedulerOptions options_;
  std::vector<int32_t> eog_;
  std::shared_ptr<const GrammarVocab> grammar_vocab_;
  SpeculationGate gate_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unique_ptr<ForwardBuffers> buffers_;
  int64_t logit_rows_ = 0;  // of buffers_
  uint64_t clock_ = 0;  // admission order and LRU

  mutable std::mutex mutex_;  // guards queue_, cancelled_, next_id_, stats_
  struct Queued {
    RequestId id;
    Request request;
  };
  std::deque<Queued> queue_;
  std::vector<RequestId> cancelled_;
  RequestId next_id_ = 1;
  SchedulerStats stats_;
};

}  // namespace tempra::llm
