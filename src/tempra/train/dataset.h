// tempra/train/dataset.h: fine-tuning data, tokenized, with the tokens the loss counts marked.
//
// Contract:
// - read_examples reads a JSON Lines file (.jsonl): one object per non-blank line, either
//     {"messages": [{"role": "system"|"user"|"assistant"|"tool", "content": "..."}, ...]}
//   rendered with the model's chat template (ChatML when it has none; llm/runtime/chat_prompt.h),
//   where only the assistant messages' tokens count in the loss (their content through the end
//   of turn), or {"text": "..."}, where every token counts. A .json file is refused (JSON Lines
//   are one object per line); any other file is plain text: tokenized whole and cut into
//   examples of at most max_tokens tokens, every one counted.
// - A chat is tokenized segment by segment at the boundaries the template renders: each
//   assistant message's tokens run from where the prompt for it ends (the conversation before it
//   rendered with add_generation_prompt, which must be a prefix of the whole rendering) through
//   the end of turn it must learn to emit (the vocab's EOS text, <|im_end|> for ChatML and
//   Qwen3; without one, through the conversation rendered up to it). This holds for multi-turn
//   chats under ChatML and Qwen3's template (whose last answer also carries its empty <think>
//   block); a template that renders earlier turns differently is refused by name. When the
//   model's template cannot be used and ChatML is used instead, `warning` receives why.
// - Errors name the file and the line (1-based): malformed JSON, neither "messages" nor "text",
//   a message without a string role or content, an unknown role, a chat with no assistant
//   message, an example longer than max_tokens tokens. An empty file is an error too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::train {

struct Example {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> counted;  // per token: 1 if the loss predicts it
  int line = 0;                  // of the file (plain text: the chunk's index from 1)
};

std::vector<Example> read_examples(const std::filesystem::path& path, const llm::Tokenizer& tokenizer,
                                   const std::string& chat_template, int64_t max_tokens,
                                   std::string* warning = nullptr);

}  // namespace tempra::train
