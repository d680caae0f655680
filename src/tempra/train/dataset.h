// tempra/train/dataset.h: fine-tuning data, tokenized, with the tokens the loss counts marked.
//
// Contract:
// - read_examples reads a JSON Lines file (.jsonl): one object per non-blank line, either
//     {"messages": [{"role": "system"|"user"|"assistant"|"tool", "content": "..."}, ...]}
//   rendered with the model's chat template (ChatML when it has none; llm/template), where only
//   the assistant messages' tokens count in the loss (their content through the end-of-turn the
//   template writes), or {"text": "..."}, where every token counts. Any other file is plain text:
//   tokenized whole and cut into examples of at most max_tokens tokens, every one counted.
// - A chat is tokenized segment by segment at the message boundaries the template renders: the
//   prompt before each assistant message (as add_generation_prompt renders it) and the
//   conversation through it must each be a prefix of the whole rendering, which holds for
//   ChatML and Qwen3's template; a template that rewrites earlier turns is refused by name.
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
                                   const std::string& chat_template, int64_t max_tokens);

}  // namespace tempra::train
