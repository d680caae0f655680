// tempra/serve/engine.cpp: see engine.h.
#include "tempra/serve/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

#include "tempra/core/error.h"

namespace tempra::serve {

bool Stream::next(StreamEvent& event, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  event = std::move(events_.front());
  events_.pop_front();
  return true;
}

void Stream::cancel() {
  std::function<void()> cancel;
  {
    std::lock_guard lock(mutex_);
    cancel = std::exchange(cancel_, nullptr);
  }
  if (cancel) cancel();
}

void Stream::push(StreamEvent event) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_one();
}

TokenLogprob token_logprob(std::span<const float> logits, int32_t id, int top) {
  double max = -INFINITY;
  for (float x : logits) max = std::max(max, double(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - max);
  const double log_z = max + std::log(sum);
  TokenLogprob out;
  out.id = id;
  out.logprob = float(double(logits[size_t(id)]) - log_z);
  if (top > 0) {
    const size_t k = std::min(size_t(top), logits.size());
    thread_local std::vector<int32_t> ids;  // the engine thread's, reused token after token
    ids.resize(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(k), ids.end(), [&](int32_t a, int32_t b) {
      return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    for (size_t i = 0; i < k; ++i) out.top.emplace_back(ids[i], float(double(logits[size_t(ids[i])]) - log_z));
  }
  return out;
}

Engine::Engine(ExecContext& ctx, const llm::Model& model, const llm::Tokenizer& tokenizer,
               const llm::SchedulerOptions& options)
    : scheduler_(ctx, model, tokenizer, options), thread_([this] { run(); }) {}

Engine::~Engine() {
  drain();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<Stream> Engine::submit(std::vector<int32_t> prompt, const llm::GenerateOptions& options, bool logprobs,
                                       int top_logprobs) {
  // Held through the scheduler's submit, so nothing slips in after drain() (lock order: the
  // engine's mutex, then the scheduler's, as in stats()).
  std::unique_lock lock(mutex_);
  check(!draining_, "engine", "shutting down");
  auto stream = std::make_shared<Stream>();
  llm::Request request;
  request.prompt = std::move(prompt);
  request.options = options;
  // The callbacks run on the engine thread; each hands its event to the HTTP thread.
  request.on_text = [stream](std::string_view text, llm::TextKind kind) {
    stream->push({.kind = StreamEvent::Kind::text, .text = std::string(text), .text_kind = kind});
  };
  if (logprobs)
    request.on_token = [stream, top_logprobs](int32_t id, std::span<const float> logits) {
      stream->push({.kind = StreamEvent::Kind::token, .token = token_logprob(logits, id, top_logprobs)});
    };
  request.on_done = [stream](const llm::GenerationResult& result) {
    stream->push({.kind = StreamEvent::Kind::done, .result = result});
  };
  const std::optional<llm::RequestId> id = scheduler_.submit(std::move(request));
  if (!id) return nullptr;
  {
    std::lock_guard stream_lock(stream->mutex_);
    stream->cancel_ = [this, id = *id] {
      scheduler_.cancel(id);
      poke();
    };
  }
  ++requests_;
  ++signal_;
  lock.unlock();
  wake_.notify_all();
  return stream;
}

void Engine::poke() {
  {
    std::lock_guard lock(mutex_);
    ++signal_;
  }
  wake_.notify_all();
}

void Engine::drain() {
  poke();
  std::unique_lock lock(mutex_);
  draining_ = true;
  // Idle after the last signal: nothing queued, nothing running.
  idle_changed_.wait(lock, [&] { return idle_ && idle_seen_ == signal_; });
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  return {scheduler_.stats(), requests_};
}

void Engine::run() {
  for (;;) {
    uint64_t seen;
    {
      std::lock_guard lock(mutex_);
      seen = signal_;
    }
    bool worked = false;
    try {
      worked = scheduler_.step();
    } catch (const std::exception& e) {
      // A step that throws (out of memory, a bug: every request was validated at submit) must
      // not take the server down or leave its clients waiting: every request ends, cancelled.
      std::fprintf(stderr, "engine: a step failed, ending every request: %s\n", e.what());
      scheduler_.cancel_all();
      worked = true;
    }
    std::unique_lock lock(mutex_);
    if (worked) continue;
    idle_ = true;
    idle_seen_ = seen;
    idle_changed_.notify_all();  // drain() waits for this
    if (stopping_) return;
    wake_.wait(lock, [&] { return stopping_ || signal_ != seen; });
    idle_ = false;
  }
}

}  // namespace tempra::serve
