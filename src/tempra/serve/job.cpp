// tempra/serve/job.cpp: see job.h.
#include "tempra/serve/job.h"

#include <random>
#include <string_view>

#include "tempra/core/error.h"
#include "tempra/serve/request_fields.h"

namespace tempra::serve {
namespace {

constexpr std::string_view kCallOpen = "<tool_call>", kCallClose = "</tool_call>";

std::string_view trim_left(std::string_view s) {
  const size_t at = s.find_first_not_of(" \t\r\n");
  return at == std::string_view::npos ? std::string_view() : s.substr(at);
}

}  // namespace

std::string random_id(const std::string& prefix) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

void OutputSplitter::emit_content(std::string_view text, const std::function<void(JobEvent)>& out) {
  if (trim_content_) {
    text = trim_left(text);
    if (text.empty()) return;
    trim_content_ = false;
  }
  out({.kind = JobEvent::Kind::content, .text = std::string(text)});
}

// Answer text, with Qwen3's tool-call blocks cut out when asked for.
void OutputSplitter::content(std::string_view text, const std::function<void(JobEvent)>& out) {
  if (!parse_tools_) return emit_content(text, out);
  held_.append(text);
  for (;;) {
    if (!in_call_) {
      const size_t open = held_.find(kCallOpen);
      if (open == std::string::npos) {
        const size_t keep = llm::partial_suffix(held_, kCallOpen);
        if (held_.size() > keep) emit_content(std::string_view(held_).substr(0, held_.size() - keep), out);
        held_.erase(0, held_.size() - keep);
        return;
      }
      if (open > 0) emit_content(std::string_view(held_).substr(0, open), out);
      held_.erase(0, open + kCallOpen.size());
      in_call_ = true;
    }
    const size_t close = held_.find(kCallClose);
    if (close == std::string::npos) return;  // the block is still arriving
    const std::string body = held_.substr(0, close);
    held_.erase(0, close + kCallClose.size());
    in_call_ = false;
    try {
      const json call = json::parse(body);
      const json* name = call.is_object() ? field(call, "name") : nullptr;
      const json* arguments = call.is_object() ? field(call, "arguments") : nullptr;
      if (name == nullptr || !name->is_string()) throw std::invalid_argument("no name");
      std::string args = arguments == nullptr ? "{}" : arguments->is_string() ? arguments->get<std::string>()
                                                                              : dump(*arguments);
      out({.kind = JobEvent::Kind::tool_call,
           .tool_call = {random_id("call_"), name->get<std::string>(), std::move(args)}});
      trim_content_ = true;  // the newline between blocks is not an answer
    } catch (const std::exception&) {
      emit_content(std::string(kCallOpen) + body + std::string(kCallClose), out);
    }
  }
}

void OutputSplitter::push(std::string_view text, llm::TextKind kind, const std::function<void(JobEvent)>& out) {
  if (!split_reasoning_) return content(text, out);
  switch (kind) {
    case llm::TextKind::think_open:
      trim_reasoning_ = true;
      return;
    case llm::TextKind::think_close:
      trim_content_ = true;
      return;
    case llm::TextKind::thinking: {
      if (trim_reasoning_) {
        const size_t at = text.find_first_not_of('\n');
        text = at == std::string_view::npos ? std::string_view() : text.substr(at);
        if (text.empty()) return;
        trim_reasoning_ = false;
      }
      out({.kind = JobEvent::Kind::reasoning, .text = std::string(text)});
      return;
    }
    case llm::TextKind::content:
      return content(text, out);
  }
}

void OutputSplitter::finish(const std::function<void(JobEvent)>& out) {
  if (held_.empty()) return;
  const std::string rest = in_call_ ? std::string(kCallOpen) + held_ : held_;
  held_.clear();
  in_call_ = false;
  emit_content(rest, out);
}

RunningJob start_job(Engine& engine, Job job) {
  std::shared_ptr<Stream> stream;
  try {
    stream = engine.submit(job.prompt, job.options, job.logprobs, job.top_logprobs);
  } catch (const Error& e) {
    const std::string message = e.what();
    const bool too_long = message.find("tokens but the context holds") != std::string::npos;
    const bool shutting_down = message.find("shutting down") != std::string::npos;
    if (shutting_down) throw ApiError(503, "the server is shutting down", "", "unavailable_error");
    throw ApiError(400, message, too_long ? "messages" : "", "invalid_request_error",
                   too_long ? "context_length_exceeded" : "");
  }
  if (!stream)
    throw ApiError(429, "every slot is busy and the queue is full; retry later", "", "rate_limit_error",
                   "rate_limit_exceeded");
  // Cancelling a finished request is a no-op (the scheduler ignores ids it does not hold).
  std::shared_ptr<void> guard(nullptr, [stream](void*) { stream->cancel(); });
  return {std::move(job), std::move(stream), std::move(guard)};
}

JobResult follow(RunningJob& running, const std::function<bool(const JobEvent&)>& on_event,
                 const std::function<bool()>& on_idle, std::chrono::milliseconds idle_every) {
  JobResult out;
  out.prompt_tokens = int64_t(running.job.prompt.size());
  OutputSplitter splitter(running.job.split_reasoning, running.job.parse_tools);
  bool cancelled = false;
  auto cancel = [&] {
    if (cancelled) return;
    cancelled = true;
    out.client_gone = true;
    running.stream->cancel();
  };
  const std::function<void(JobEvent)> deliver = [&](JobEvent e) {
    switch (e.kind) {
      case JobEvent::Kind::reasoning:
        out.reasoning += e.text;
        break;
      case JobEvent::Kind::content:
        out.content += e.text;
        break;
      case JobEvent::Kind::tool_call:
        out.tool_calls.push_back(e.tool_call);
        break;
      case JobEvent::Kind::logprob:
        out.logprobs.push_back(e.logprob);
        break;
    }
    if (!cancelled && on_event && !on_event(e)) cancel();
  };
  for (;;) {
    StreamEvent event;
    if (!running.stream->next(event, idle_every)) {  // idle_every without an event
      if (on_idle && !cancelled && !on_idle()) cancel();
      continue;
    }
    switch (event.kind) {
      case StreamEvent::Kind::token:
        deliver({.kind = JobEvent::Kind::logprob, .logprob = event.token});
        break;
      case StreamEvent::Kind::text:
        splitter.push(event.text, event.text_kind, deliver);
        break;
      case StreamEvent::Kind::done:
        splitter.finish(deliver);
        out.result = std::move(event.result);
        return out;
    }
  }
}

}  // namespace tempra::serve
