// tempra/serve/served_model.h: what the API endpoints share: the model's name, tokenizer, chat
// template and engine, and turning a conversation into a job's prompt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tempra/llm/runtime/chat_prompt.h"
#include "tempra/llm/template/chat_template.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/serve/engine.h"
#include "tempra/serve/job.h"
#include "tempra/serve/request_fields.h"

namespace tempra::serve {

struct ServedModel {
  std::string name;  // what clients call it (--alias, else the file's name)
  const llm::Tokenizer* tokenizer = nullptr;
  std::string chat_template;  // "" when the file has none: ChatML
  std::string architecture;
  int64_t n_vocab = 0;
  int64_t context = 0;  // a slot's context in tokens
  Engine* engine = nullptr;
};

// A conversation rendered with the model's template (tools as the template shows them,
// enable_thinking when given) and tokenized: llm/runtime/chat_prompt.h.
llm::ChatPrompt chat_prompt(const ServedModel& model, const std::vector<llm::ChatMessage>& messages, const json& tools,
                            std::optional<bool> enable_thinking);

// Plain text tokenized as llama-server's /completion does (special tokens parsed, BOS as the
// vocab says).
std::vector<int32_t> text_prompt(const ServedModel& model, const std::string& text);

// Checks the request's "model" field, when present, names this model (404 model_not_found).
void check_model_name(const ServedModel& model, const json& body);

}  // namespace tempra::serve
