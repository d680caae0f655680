// tempra/serve/engine.h: the scheduler on a thread of its own, and the channel each HTTP request
// reads its tokens from.
//
// Contract:
// - Engine owns a Scheduler (llm/runtime/scheduler.h) and one engine thread that steps it while
//   there is work and sleeps otherwise. submit() may be called from any thread: it returns a
//   Stream, or nullptr when the scheduler's queue is full (the caller answers 429). A bad
//   request (prompt too long, token out of range, bad sampling values) throws tempra::Error
//   from submit(), before anything is queued.
// - A Stream receives the request's events in order: each sampled token with its logits'
//   log-probabilities when asked for, each piece of text, and last the result. next() blocks
//   until an event or the timeout; cancel() (any thread, idempotent) stops the request at the
//   engine's next step, and the stream still ends with its result (StopReason::cancelled).
// - Streams must not outlive their Engine (a Stream's cancel() calls into it).
// - drain() stops new submissions (submit throws "[engine] shutting down") and returns once no
//   request is queued or running; the destructor drains, then joins the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tempra/llm/runtime/scheduler.h"

namespace tempra::serve {

// A sampled token's log-probability and, when asked, the most likely alternatives.
struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // (id, logprob), most likely first
};

struct StreamEvent {
  enum class Kind : uint8_t { token, text, done };
  Kind kind = Kind::text;
  std::string text;                                 // text
  llm::TextKind text_kind = llm::TextKind::content;  // text
  TokenLogprob token;                               // token
  llm::GenerationResult result;                     // done
};

class Stream {
 public:
  // Waits up to `timeout` for the next event; false when none came.
  bool next(StreamEvent& event, std::chrono::milliseconds timeout);
  void cancel();

 private:
  friend class Engine;
  void push(StreamEvent event);

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<StreamEvent> events_;
  std::function<void()> cancel_;
};

struct EngineStats {
  llm::SchedulerStats scheduler;
  int64_t requests = 0;  // submitted
};

class Engine {
 public:
  Engine(ExecContext& ctx, const llm::Model& model, const llm::Tokenizer& tokenizer,
         const llm::SchedulerOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // `logprobs`: report each token's log-probability, with the `top_logprobs` most likely.
  std::shared_ptr<Stream> submit(std::vector<int32_t> prompt, const llm::GenerateOptions& options,
                                 bool logprobs = false, int top_logprobs = 0);
  void drain();
  EngineStats stats() const;
  const llm::SchedulerOptions& options() const { return scheduler_.options(); }

 private:
  void run();
  void poke();  // new work or a cancellation: the engine thread steps again

  llm::Scheduler scheduler_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_changed_;
  bool stopping_ = false, draining_ = false, idle_ = false;
  uint64_t signal_ = 0;     // bumped by poke()
  uint64_t idle_seen_ = 0;  // the signal_ the engine had seen when it last found nothing to do
  int64_t requests_ = 0;
  std::thread thread_;  // last: starts after everything above is built
};

// The log-probabilities of `logits` (a log-softmax in double) for `id` and the top `top` ids.
TokenLogprob token_logprob(std::span<const float> logits, int32_t id, int top);

}  // namespace tempra::serve
