// tempra/serve/anthropic.h: the Anthropic-compatible endpoint, POST /v1/messages.
//
// Contract: the Messages API's request (system, messages of text / tool_use / tool_result /
// thinking blocks, max_tokens, stop_sequences, temperature, top_p, top_k, tools, tool_choice
// auto/none, thinking) becomes one Job on the model's chat template; the answer is a message
// of thinking, text and tool_use blocks, or with "stream": true the event sequence
// message_start, content_block_start / _delta / _stop per block, message_delta, message_stop.
// As the API does, thinking is off unless the request enables it. Errors use Anthropic's
// shape: {"type": "error", "error": {"type", "message"}}.
#pragma once

#include "tempra/serve/http.h"
#include "tempra/serve/served_model.h"

namespace tempra::serve {

HttpResponse anthropic_messages(const ServedModel& model, const json& body);
HttpResponse anthropic_error(const ApiError& error);

}  // namespace tempra::serve
