// apps/tempra/bench.h: `tempra bench`, llama-bench's flags and table for tempra's engine, so anyone
// can set the two side by side on their own machine.
//
// Contract: the flags are llama-bench's (tools/llama-bench/llama-bench.cpp) where tempra has the
// feature: -m (repeatable), -p, -n, -d, -t (comma lists, every combination runs), -r, -b, -ub,
// -ctk/-ctv, -o md|json|jsonl, --no-warmup; -ngl and -fa are accepted and ignored (a CPU engine).
// Each model is loaded once; for every thread count, depth and test:
//   - the cache is filled to the depth once (untimed, random tokens); each repetition rewinds it
//     there (KvCache::truncate, which reads what follows exactly as a fresh cache would), or for
//     a recurrent model, whose state cannot give back positions, fills it again from empty
//     (untimed too);
//   - `ppN` times a prefill of N random tokens in forward passes of min(-b, -ub) tokens, logits of
//     the last position only (llama-bench's llama_batch_get_one); `tgN` times N decode steps of
//     one token each, fed fixed random ids (no sampling, so every run does the same work);
//   - unless --no-warmup, one untimed pass first, as llama-bench's: the whole prompt (pp), one
//     step (tg).
// A row reports t/s as mean ± sample standard deviation over the repetitions, as llama-bench's
// does; `test` reads `pp512`, `tg128`, with ` @ d4096` at a depth. The table goes to stdout as
// each row finishes; stderr gets the CPU model, the kernels and the build at the end.
// Bad flags exit 2 naming the flag; a model that cannot be loaded exits 1.
#pragma once

#include "args.h"

namespace tempra::app {

int run_bench(const cli::Args& args);
// The options of `tempra bench` for its row in main.cpp's table.
cli::Command bench_command();

}  // namespace tempra::app
