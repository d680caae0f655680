// bench/lora_bench.cpp: one LoRA fine-tuning step on a Qwen3-0.6B-shaped model, tempra against
// PyTorch (issue 16's benchmark).
//
// tempra's side: the GGUF given by --model (bench/run_lora.sh synthesizes the 0.6B shape in
// Q8_0 and F16 with `tempra synth --preset 0.6b`), its weights frozen as mapped, LoRA rank 16
// (alpha 32) on all seven projections of every layer, one sequence of 256 tokens, next-token
// cross entropy over all of them, backward with activation checkpointing per block (what
// `tempra finetune` runs), AdamW. PyTorch's side (bench/lora_bench_torch.py): the same shapes
// and adapters over an f32 base (torch 1.13 has no quantized or f16 CPU matmul to train
// through), the same loss, AdamW, no checkpointing. The harness (train_harness.h) alternates
// rounds with the same thread count and reports medians; tokens/s is 256 / step time. Peak
// resident memory: tempra's process (this one, after its rounds) and the script's, both from
// getrusage's ru_maxrss. Not a test: the figures go to docs/BENCHMARK.md.
//
// usage: lora_bench --model FILE.gguf [--threads T] [--rounds R] [--steps N] [--warmup W]
//                   [--python PATH] [--script PATH] [--tempra-only 1] [--checkpoint-activations 0|1|lean]
// --checkpoint-activations 0 keeps every block's activations for the backward pass instead
// (`tempra finetune --no-checkpoint-activations`): no forward rerun, more memory; lean keeps a
// block's input alone and reruns its frozen products too (`--lean-checkpoints`).
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tempra/ag/backward.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/train/finetune.h"
#include "train_harness.h"

namespace {

constexpr int64_t kSeq = 256;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

train_harness::Timing tempra_round(const train_harness::Options& o, const std::string& path,
                                   const std::string& checkpoint) {
  using namespace tempra;
  ExecContext ctx(ExecOptions{.threads = o.threads, .backend = o.backend});
  const llm::Qwen3Model model = llm::Qwen3Model::load(path);
  const train::Qwen3Weights weights = train::Qwen3Weights::of(model);
  // One example of 256 tokens, every one counted: the loss covers all 255 next tokens.
  train::Example example;
  for (int64_t i = 0; i < kSeq; ++i) example.tokens.push_back(int32_t((i * 7919 + 17) % 32000));
  example.counted.assign(size_t(kSeq), 1);
  train::Finetuner tuner(ctx, weights, {example}, {},
                         {.lora = {.rank = 16, .alpha = 32, .targets = train::parse_targets("all")}, .lr = 1e-4,
                          .batch = 1, .seed = 0, .checkpoint_activations = checkpoint != "0",
                          .recompute_products = checkpoint == "lean"});
  return train_harness::time_steps(o.steps, o.warmup, [&] { tuner.train_step(); });
}

}  // namespace

int main(int argc, char** argv) {
  // --model is ours; the rest is the harness's.
  std::string model;
  std::string checkpoint = "1";
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) model = argv[++i];
    else if (std::strcmp(argv[i], "--checkpoint-activations") == 0 && i + 1 < argc)
      checkpoint = argv[++i];
    else rest.push_back(argv[i]);
  }
  if (checkpoint != "0" && checkpoint != "1" && checkpoint != "lean") {
    std::fprintf(stderr, "lora_bench: --checkpoint-activations takes 0, 1 or lean, got '%s'\n", checkpoint.c_str());
    return 2;
  }
  if (model.empty()) {
    std::fprintf(stderr, "lora_bench: --model FILE.gguf is required\n");
    return 2;
  }
  const train_harness::Options o = train_harness::parse_options(
      "lora_bench", int(rest.size()), rest.data(), {.steps = 2, .warmup = 1, .script = "bench/lora_bench_torch.py"});
  std::printf("LoRA step (%s; rank 16 on q,k,v,o,gate,up,down; seq %lld; forward + backward + AdamW), %d threads, "
              "%d steps per round\n",
              model.c_str(), (long long)kSeq, o.threads, o.steps);
  const int rc = train_harness::run_rounds("lora_bench", o, [&] { return tempra_round(o, model, checkpoint); });
  std::printf("tempra peak RSS %.0f MiB\n", peak_rss_mib());
  return rc;
}
