// tempra/llm/runtime/chat_prompt.cpp: see chat_prompt.h.
#include "tempra/llm/runtime/chat_prompt.h"

namespace tempra::llm {

RenderedChat render_chat_text(const std::string& chat_template, const Tokenizer& tokenizer,
                                const std::vector<ChatMessage>& messages, ChatTemplateOptions options) {
  if (tokenizer.bos() >= 0) options.bos_token = tokenizer.text(tokenizer.bos());
  if (tokenizer.eos() >= 0) options.eos_token = tokenizer.text(tokenizer.eos());
  return render_chat_or_chatml(chat_template, messages, options);
}

ChatPrompt chat_prompt(const std::string& chat_template, const Tokenizer& tokenizer,
                       const std::vector<ChatMessage>& messages, ChatTemplateOptions options) {
  RenderedChat rendered = render_chat_text(chat_template, tokenizer, messages, std::move(options));
  ChatPrompt out{std::move(rendered.prompt), {}, std::move(rendered.warning), rendered.ends_in_thinking};
  out.ids = tokenizer.encode(out.text, {.parse_special = true, .add_special = true});
  return out;
}

}  // namespace tempra::llm
