// tempra/llm/runtime/chat_prompt.h: a conversation turned into the tokens a chat model prefills.
//
// Contract: the model's chat template renders `messages` (ChatML when the file has none or the
// engine cannot use it: `warning` says why), with the vocab's BOS and EOS texts as the
// template's bos_token / eos_token, then the text is tokenized with special tokens parsed and
// the vocab's own BOS rule (what `tempra generate --chat`, `tempra chat` and the server do).
// `ends_in_thinking`: the prompt leaves a <think> open (GenerateOptions::start_in_thinking).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tempra/llm/template/chat_template.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::llm {

struct ChatPrompt {
  std::string text;
  std::vector<int32_t> ids;
  std::string warning;
  bool ends_in_thinking = false;
};

// The text alone: `messages` rendered as chat_prompt renders them, options.bos_token and
// eos_token set from the tokenizer (what fine-tuning data renders through: train/dataset.h).
RenderedChat render_chat_text(const std::string& chat_template, const Tokenizer& tokenizer,
                                const std::vector<ChatMessage>& messages, ChatTemplateOptions options = {});

// options.bos_token and eos_token are set from the tokenizer; the rest is the caller's
// (add_generation_prompt, enable_thinking, tools).
ChatPrompt chat_prompt(const std::string& chat_template, const Tokenizer& tokenizer,
                       const std::vector<ChatMessage>& messages, ChatTemplateOptions options = {});

}  // namespace tempra::llm
