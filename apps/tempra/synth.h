// apps/tempra/synth.h: `tempra synth [--arch NAME] OUT.gguf`, a model with seeded random weights.
//
// Contract: writes llm::write_synthetic_model's model (tempra/llm/model/synth.h) of --arch (any
// supported architecture, default qwen3) for a preset (`tiny`: 2 layers, hidden 256; qwen3
// `0.6b`: Qwen3-0.6B's shape; llama `1b`: Llama 3.2 1B's), with shape overrides, in --type F32, F16, BF16 directly, or in a quantized llama.cpp file type (Q8_0,
// Q4_0, Q4_K_M, Q6_K, ... as `tempra quantize` lists them): then an F16 model is written to a
// temporary file next to OUT and quantized by `tempra quantize`'s code (byte-identical to
// llama-quantize on that F16 file), and the temporary file is removed.
//
// The vocab: --vocab-from GGUF copies another file's tokenizer (llama.cpp's vocab-only files);
// else Qwen3's real tokenizer from --tokenizer DIR (tokenizer.json + tokenizer_config.json), for
// qwen3 by default the folder baked in at configure time (TEMPRA_DEFAULT_TOKENIZER_DIR,
// tools/oracle/install.sh's copy) when it existed; --tokenizer none (the default of the other
// architectures) asks for the synthetic byte-level vocab. Bad values exit 2 naming the option; a
// failure to write exits 1.
#pragma once

#include "args.h"

namespace tempra::app {

int run_synth(const cli::Args& args);
// The options of `tempra synth` for its row in main.cpp's table.
cli::Command synth_command();

}  // namespace tempra::app
