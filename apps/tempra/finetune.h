// apps/tempra/finetune.h: `tempra finetune -m BASE.gguf --data FILE.jsonl -o ADAPTER.gguf`, LoRA
// fine-tuning of a Qwen3 GGUF of any weight type (tempra/train/finetune.h).
//
// Contract: reads the model and its tokenizer and chat template, the data (train/dataset.h:
// chat messages with the loss on the assistant's tokens, or plain text; a bad line exits 1
// naming it), holds out --eval-split of the examples, and trains --steps steps, printing one
// progress line per step on stderr (step, loss, eval loss when measured, tokens/s, ETA) and the
// eval loss every --eval-every steps and at the end. --checkpoint FILE is written every
// --checkpoint-every steps, at the end, and on Ctrl-C (SIGINT/SIGTERM: the step in flight
// finishes, the checkpoint is saved, exit 130); --resume FILE continues bit for bit. The adapter
// is written to -o as llama.cpp's LoRA GGUF (train/adapter.h), atomically, when the run ends.
#pragma once

#include "args.h"

namespace tempra::app {

cli::Command finetune_command();
int run_finetune(const cli::Args& args);

}  // namespace tempra::app
