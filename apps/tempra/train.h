// apps/tempra/train.h: `tempra train -m INIT.gguf --data TEXT... -o OUT.gguf`, every weight of a
// Qwen3 trained by gradient: pretraining from a synthesized initial model (nanochat's base
// stage), or full fine-tuning on conversations (its chat stage).
//
// Contract:
// - The data files make one token stream (train/pretrain.h) in the order given, each file's
//   tokens followed by the end-of-text token (the vocab's bos/pad: <|endoftext|> in tempra's
//   trained vocabs): a .jsonl of {"messages": [...]} trains on the assistants' tokens only, of
//   {"text": ...} on every token (train/dataset.h, one example after another, each ended by
//   end-of-text); any other file is plain text, tokenized whole (special-token text such as
//   "<|endoftext|>" becoming those tokens), every token trained.
// - --val FILE (plain text) is scored as bits per byte every --eval-every steps and at the end.
// - Progress: one line per --log-every steps on stderr (step, loss, lr, gradient norm, tokens/s,
//   validation bits per byte when measured, ETA); --log FILE also writes every step as CSV
//   (step,loss,lr,grad_norm,val_bpb,seconds), what the report's loss curve is drawn from; a
//   resumed run keeps the file's rows up to its checkpoint's step and counts seconds on from them.
// - --val is read and checked (at least one window, some text to score) before training starts.
// - Checkpoints (--checkpoint, default OUT.ckpt) every --checkpoint-every steps and at the end,
//   and on SIGINT/SIGTERM after the current step (exit 130); --stop-at N stops after step N the
//   same way (exit 0, no model written); --resume continues bit for bit.
// - OUT is the model with the trained weights, in f32, written atomically with the initial
//   model's metadata and tensor order (merge.h's write_model_replacing).
// Exits 1 naming the file for a missing or malformed file, a model that is not Qwen3, data of
// fewer than --seq + 2 tokens; 2 for a bad command line.
#pragma once

#include "args.h"

namespace tempra::app {

cli::Command train_command();
int run_train(const cli::Args& args);

}  // namespace tempra::app
