// apps/tempra/generate.h: `tempra generate -m MODEL.gguf -p PROMPT -n N`, one-shot generation.
//
// Contract: stdout carries only the generated text, streamed as it is decoded (or, with
// --ids-out, only the generated ids as "[a, b, c]"); the model line, notes, progress and
// llama-server's timing lines go to stderr. The prompt is -p TEXT, -f FILE or --ids 1,2,3
// (exactly one); raw completion, or with --chat the model's chat template (--system,
// --no-think). --logits-out FILE.npy writes the float32 logits of every prompt position,
// shape [n_tokens, n_vocab], NumPy .npy format 1.0, through a temporary file renamed into place
// (io/atomic_write.h).
// Exit 0 success, 1 failure (model, prompt too long for the context, invalid UTF-8), 2 usage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "args.h"

namespace tempra::app {

cli::Command generate_command();
int run_generate(const cli::Args& args);

// The .npy v1.0 header for a C-order little-endian float32 array of `shape` (padded to 64
// bytes, as NumPy writes it).
std::string npy_header_f32(const std::vector<int64_t>& shape);

}  // namespace tempra::app
