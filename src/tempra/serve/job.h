// tempra/serve/job.h: one generation as every API dialect asks for it, and what comes back.
//
// Contract:
// - A Job is a tokenized prompt, the generation options and what to split out of the text.
//   start_job() submits it to the engine before any response byte is sent, so a refusal is
//   still an HTTP status: a full queue is ApiError 429 (Retry-After), a prompt over the context
//   or a bad value is ApiError 400 naming it (code context_length_exceeded for the former).
// - follow() reads the engine's events until the result, passing each JobEvent to `on_event`
//   (reasoning text, answer text, a parsed tool call, a token's log-probability); when
//   on_event returns false (the client has gone) the request is cancelled and follow() returns
//   what there is. `on_idle` runs after every `idle_every` without events (a streaming
//   endpoint writes a keep-alive comment there, which is also how a client that left while its
//   request waited is noticed); false from it cancels too.
// - OutputSplitter is the splitting, exposed for tests: <think>...</think> spans become
//   reasoning (unless split_reasoning is false: then everything is content, tags included),
//   Qwen3's <tool_call>{"name": ..., "arguments": {...}}</tool_call> blocks become tool calls
//   when parse_tools is set (a block whose JSON does not parse stays content, verbatim), and,
//   when reasoning is split (a chat answer), the whitespace a template puts after </think> or
//   at the start is not content. Raw text (split_reasoning false) passes untouched.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tempra/llm/runtime/generator.h"
#include "tempra/serve/engine.h"

namespace tempra::serve {

struct ParsedToolCall {
  std::string id;         // "call_" + 24 random alphanumerics
  std::string name;
  std::string arguments;  // JSON text of an object
};

struct JobEvent {
  enum class Kind : uint8_t { reasoning, content, tool_call, logprob };
  Kind kind = Kind::content;
  std::string text;         // reasoning, content
  ParsedToolCall tool_call;  // tool_call
  TokenLogprob logprob;      // logprob
};

class OutputSplitter {
 public:
  OutputSplitter(bool split_reasoning, bool parse_tools)
      : split_reasoning_(split_reasoning), parse_tools_(parse_tools), trim_content_(split_reasoning) {}
  void push(std::string_view text, llm::TextKind kind, const std::function<void(JobEvent)>& out);
  void finish(const std::function<void(JobEvent)>& out);  // emits a held partial tag or an unclosed block

 private:
  void content(std::string_view text, const std::function<void(JobEvent)>& out);
  void emit_content(std::string_view text, const std::function<void(JobEvent)>& out);

  bool split_reasoning_, parse_tools_;
  bool trim_content_;           // at the start and after </think> (split_reasoning): drop leading whitespace
  bool trim_reasoning_ = true;  // right after <think>
  bool in_call_ = false;
  std::string held_;  // a possible tag start, or the body of an open <tool_call>
};

struct Job {
  std::vector<int32_t> prompt;
  llm::GenerateOptions options;
  bool split_reasoning = true;
  bool parse_tools = false;
  bool logprobs = false;
  int top_logprobs = 0;
};

struct JobResult {
  llm::GenerationResult result;
  std::string reasoning, content;
  std::vector<ParsedToolCall> tool_calls;
  std::vector<TokenLogprob> logprobs;
  int64_t prompt_tokens = 0;
  bool client_gone = false;
};

// A submitted job. When the last copy goes without follow() having seen its end (a streamed
// response whose body never ran, a writer that threw), the request is cancelled: nobody is left
// to read it, and it must not hold its slot.
struct RunningJob {
  Job job;
  std::shared_ptr<Stream> stream;
  std::shared_ptr<void> cancel_if_abandoned;
};

RunningJob start_job(Engine& engine, Job job);
JobResult follow(RunningJob& running, const std::function<bool(const JobEvent&)>& on_event,
                 const std::function<bool()>& on_idle = {},
                 std::chrono::milliseconds idle_every = std::chrono::milliseconds(2000));

// A fresh random id with this prefix ("chatcmpl-", "call_", "msg_", ...): 24 alphanumerics.
std::string random_id(const std::string& prefix);

}  // namespace tempra::serve
