// tempra/serve/openai.h: the OpenAI-compatible endpoints: POST /v1/chat/completions,
// /v1/completions and /v1/responses, and the sampling fields every dialect shares.
//
// Contract: each endpoint takes the parsed JSON body, validates every field it honors (400
// naming the field otherwise; docs/SERVER.md lists each field as honored, ignored or rejected),
// submits a Job and answers either one JSON object or, with "stream": true, server-sent events
// in OpenAI's shapes (chat.completion.chunk ... data: [DONE]; the Responses API's typed event
// sequence). Errors use OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
#pragma once

#include "tempra/serve/http.h"
#include "tempra/serve/served_model.h"

namespace tempra::serve {

HttpResponse openai_chat_completions(const ServedModel& model, const json& body);
HttpResponse openai_completions(const ServedModel& model, const json& body);
HttpResponse openai_responses(const ServedModel& model, const json& body);

// temperature, top_p, top_k, min_p, seed, presence/frequency/repeat penalties, and the stop
// strings under `stop_field` ("stop", or Anthropic's "stop_sequences"). A request without a
// seed gets a random one, as llama-server does.
void parse_sampling(const json& body, llm::GenerateOptions& options, const char* stop_field = "stop");

// OpenAI's error body for an ApiError.
HttpResponse openai_error(const ApiError& error);

// "data: <json>\n\n", the server-sent event every OpenAI stream is made of.
std::string sse_data(const json& value);

// An SSE response running `body` on the request's thread after the headers.
HttpResponse sse_response(std::function<void(const ChunkWriter&)> body);

// What llama-server reports beside the usage (prompt and generation timings).
json timings_json(const JobResult& r);

}  // namespace tempra::serve
