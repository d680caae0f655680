// apps/tempra/train_tokenizer.h: `tempra train-tokenizer -i TEXT... OUT.gguf`, a byte-level BPE
// vocab learned from text (nanochat's tokenizer stage).
//
// Contract: reads every -i file (UTF-8 text; documents may be separated by <|endoftext|>, which is
// never learned from), trains with llm::train_bpe (bpe_trainer.h: --vocab-size tokens counting
// the 256 bytes and the specials <|endoftext|>, <|im_start|>, <|im_end|>; --min-count; the qwen2
// pre-tokenizer unless --pre says llama-bpe or qwen35) and writes OUT as a vocab-only GGUF: the
// tokenizer.* keys llama.cpp reads, with a ChatML chat template, and no tensors (`tempra tokenize
// -m OUT.gguf` reads it; `tempra synth --vocab-from OUT.gguf` gives a model its vocab). Prints
// the words counted, the merges learned and the time to stderr. Written through a temporary file.
// Exits 1 naming the file and byte of invalid UTF-8, for an empty corpus, or when --vocab-size
// is below 256 + 3; 2 for a bad command line.
#pragma once

#include "args.h"

namespace tempra::app {

cli::Command train_tokenizer_command();
int run_train_tokenizer(const cli::Args& args);

}  // namespace tempra::app
