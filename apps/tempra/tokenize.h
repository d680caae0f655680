// apps/tempra/tokenize.h: `tempra tokenize -m MODEL.gguf -p TEXT`, the model's token ids for a text.
//
// Contract: prints llm::Tokenizer::encode(TEXT) of the model's tokenizer as one line
// "[a, b, c]" (llama-tokenize --ids' format, which `tempra generate --ids` reads back). Special
// tokens written in the text ("<|im_start|>") are parsed as the tokens they name, as
// llama.cpp's tokenizer does by default; --no-parse-special tokenizes them as plain text. The
// BOS token is added when the vocab asks for it (tokenizer.ggml.add_bos_token; Qwen3 does not).
// The text is -p TEXT or, with --stdin, all of standard input; invalid UTF-8 exits 1 naming
// the byte. Only the tokenizer metadata is read, not the weights.
#pragma once

#include "args.h"

namespace tempra::app {

cli::Command tokenize_command();
int run_tokenize(const cli::Args& args);

}  // namespace tempra::app
