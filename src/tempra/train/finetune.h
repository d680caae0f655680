// tempra/train/finetune.h: LoRA fine-tuning of a Qwen3, step by step (what `tempra finetune` runs).
//
// Contract:
// - The adapters (lora.h) are the only parameters, updated by AdamW (weight decay 0) at a
//   constant learning rate; the base weights stay as mapped. Each step takes `batch` training
//   examples and minimizes the mean cross entropy of their counted tokens (dataset.h) through
//   qwen3_logits, checkpointing activations per block. Each example runs alone (no padding); its
//   loss is its share of the batch's mean, and the step's gradient is the sum of the examples'
//   gradients in batch order, from zero.
// - Data parallel (comm.h): with N processes, rank r runs the examples [B r / N, B (r + 1) / N)
//   of the batch, and the ranks gather every example's gradient, which each sums in batch order
//   as one process would: the same additions in the same order, so the adapters are bit for bit
//   those of a single process with the same batch (for the same thread count: tests/train/
//   finetune_mpi.sh). Every rank holds the whole model and data; only rank 0 should write files.
// - Which examples a step takes is a pure function of (seed, step): each epoch is a permutation
//   of the training examples drawn from the counter RNG keyed by (seed, epoch), and step s takes
//   positions s * batch ... of that endless sequence. LoRA dropout is keyed by s * batch + j for
//   the batch's example j. So a
//   run resumed from a checkpoint (save, then load into a fresh Finetuner over the same data and
//   options) continues bit for bit as if it had never stopped.
// - split_examples holds out round(fraction * n) examples for evaluation (at least one when the
//   fraction is positive and there are two or more), chosen by a permutation of (seed).
// - save writes the adapters, AdamW's state and the step (optim/checkpoint.h) atomically, with
//   the run's identity as metadata: the LoRA configuration, lr, seed, batch and a hash of the
//   training tokens; load refuses a checkpoint of another identity (naming the key) or shape,
//   and changes nothing then.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tempra/core/exec_context.h"
#include "tempra/optim/adamw.h"
#include "tempra/train/comm.h"
#include "tempra/train/dataset.h"
#include "tempra/train/lora.h"
#include "tempra/train/qwen3_train.h"

namespace tempra::train {

struct FinetuneOptions {
  LoraConfig lora;
  double lr = 1e-4;
  int64_t batch = 4;
  uint64_t seed = 0;
  bool checkpoint_activations = true;
  bool recompute_products = false;  // checkpointing keeps a block's input alone (qwen3_train.h)
};

struct Split {
  std::vector<Example> train, eval;
};
Split split_examples(std::vector<Example> all, double eval_fraction, uint64_t seed);

// Which training examples step `step` takes (indices into n examples): the contract's endless
// sequence of permutations keyed by (seed, epoch). Evolution strategies' generations take theirs
// by the same rule (es_trainer.h).
std::vector<size_t> batch_indices(size_t n, int64_t batch, uint64_t seed, int64_t step);

// What the trainers' checkpoints record to recognize their run: the shortest decimal that
// round-trips a real, and a hash (FNV-1a) of the training tokens and their marks.
std::string shortest_decimal(double v);
uint64_t training_data_hash(const std::vector<Example>& examples);
// Throws naming the key when the checkpoint at `path` (its header alone) is of another run.
void check_run_identity(const std::filesystem::path& path, const std::map<std::string, std::string>& identity);

// tokens i32 [B, T] and next-token targets i32 [B, T] of `examples`, padded to the longest:
// a target is -100 (lm_loss's ignored index) where the next token is not counted, and in padding.
struct LmBatch {
  Array tokens, targets;
  int64_t tokens_real = 0, counted = 0;  // unpadded tokens; targets that count
};
LmBatch lm_batch(ExecContext& ctx, std::span<const Example* const> examples);

// The mean cross entropy over every counted token of `examples`, run `group` at a time without
// dropout or gradients; NaN when they count none. Finetuner::eval_loss and the loss reward.
double mean_lm_loss(ExecContext& ctx, const Qwen3Weights& weights, const LoraAdapter* lora,
                    std::span<const Example* const> examples, int64_t group);

struct StepResult {
  double loss = 0;
  int64_t tokens = 0;   // real (unpadded) tokens the step ran through the model
  int64_t counted = 0;  // tokens whose prediction the loss counted
};

class Finetuner {
 public:
  // `weights` must outlive the Finetuner. train must not be empty.
  Finetuner(ExecContext& ctx, const Qwen3Weights& weights, std::vector<Example> train, std::vector<Example> eval,
            const FinetuneOptions& options, Communicator& comm = local_communicator());

  int64_t steps_done() const { return optimizer_->step_count(); }
  const LoraAdapter& adapter() const { return lora_; }
  bool has_eval() const { return !eval_.empty(); }

  StepResult train_step();
  // The mean cross entropy over every counted token of the eval examples (no dropout).
  double eval_loss();

  void save(const std::filesystem::path& path) const;
  void load(const std::filesystem::path& path);

 private:
  std::vector<const Example*> batch_for(int64_t step) const;
  std::map<std::string, std::string> identity() const;

  ExecContext& ctx_;
  const Qwen3Weights& weights_;
  std::vector<Example> train_, eval_;
  FinetuneOptions options_;
  LoraAdapter lora_;
  Communicator& comm_;
  std::unique_ptr<optim::AdamW> optimizer_;
};

}  // namespace tempra::train
