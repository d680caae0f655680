// tempra/serve/served_model.cpp: see served_model.h.
#include "tempra/serve/served_model.h"

namespace tempra::serve {

llm::ChatPrompt chat_prompt(const ServedModel& model, const std::vector<llm::ChatMessage>& messages, const json& tools,
                            std::optional<bool> enable_thinking) {
  llm::ChatTemplateOptions options;
  options.enable_thinking = enable_thinking;
  options.tools = tools.is_array() ? tools : json::array();
  return llm::chat_prompt(model.chat_template, *model.tokenizer, messages, options);
}

std::vector<int32_t> text_prompt(const ServedModel& model, const std::string& text) {
  return model.tokenizer->encode(text, {.parse_special = true, .add_special = true});
}

void check_model_name(const ServedModel& model, const json& body) {
  const std::optional<std::string> name = string_field(body, "model");
  // Clients often send a placeholder; llama-server answers any name. tempra serves one model
  // and says so when asked for another one by a name it does not carry.
  if (name && !name->empty() && *name != model.name)
    throw ApiError(404, "the model '" + *name + "' does not exist; this server serves '" + model.name + "'", "model",
                   "invalid_request_error", "model_not_found");
}

}  // namespace tempra::serve
