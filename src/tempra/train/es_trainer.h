// tempra/train/es_trainer.h: evolution strategies on a Qwen3 (`tempra finetune --method es`).
//
// Contract:
// - The parameters ES perturbs are f32 arrays the forward reads in place: a LoRA adapter's
//   (LoraAdapter::parameters, with the adapter passed as `lora`), or every weight of the model
//   (full_weights: each GGUF tensor replaced by an f32 copy before the model is loaded from it).
// - Generation s scores every member (es.h) with the reward (reward.h) on the same `batch`
//   training examples: those the gradient trainer's step s takes (batch_indices, finetune.h).
//   eval_reward scores the center on the eval examples.
// - Over several processes (comm.h) the members are spread over the ranks and only their
//   fitness scalars travel; every rank then holds the same parameters, bit for bit those of one
//   process (tests/train/finetune_mpi.sh). Only rank 0 should write files.
// - save writes the parameters and the generation count, with the run's identity (method,
//   population, sigma, lr, reward and its length limit, seed, batch, the parameters' names, the
//   adapter's rank and alpha, and a hash of the training tokens), atomically (optim/checkpoint.h); load refuses another run's checkpoint naming the
//   key, and a resumed run continues bit for bit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tempra/core/exec_context.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/optim/optimizer.h"
#include "tempra/train/comm.h"
#include "tempra/train/dataset.h"
#include "tempra/train/es.h"
#include "tempra/train/lora.h"
#include "tempra/train/qwen3_train.h"
#include "tempra/train/reward.h"

namespace tempra::train {

// Replaces every tensor of `gguf` by an f32 copy of its values (decoded from any type) and
// returns them as parameters named as in the file; load the model from `gguf` afterwards, and
// its weights are these arrays.
std::vector<optim::Param> full_weights(ExecContext& ctx, io::GgufModel& gguf);

struct EsTrainOptions {
  EsOptions es;
  Reward reward;
  int64_t batch = 4;  // training examples each member is scored on
};

class EsTrainer {
 public:
  // `weights`, `lora` (may be null), `tokenizer` and the arrays of `params` must outlive it.
  EsTrainer(ExecContext& ctx, const Qwen3Weights& weights, std::vector<optim::Param> params, const LoraAdapter* lora,
            std::vector<Example> train, std::vector<Example> eval, const EsTrainOptions& options,
            const llm::Tokenizer& tokenizer, Communicator& comm = local_communicator());

  int64_t steps_done() const { return es_.steps_done(); }
  bool has_eval() const { return !eval_.empty(); }
  int64_t parameter_count() const { return es_.parameter_count(); }

  // One generation; adds to `tokens` the tokens all members were scored on, over all ranks.
  EsStepResult train_step(int64_t* tokens = nullptr);
  double eval_reward();

  void save(const std::filesystem::path& path) const;
  void load(const std::filesystem::path& path);

 private:
  std::map<std::string, std::string> identity() const;

  ExecContext& ctx_;
  const Qwen3Weights& weights_;
  std::vector<optim::Param> params_;
  const LoraAdapter* lora_;
  std::vector<Example> train_, eval_;
  EsTrainOptions options_;
  const llm::Tokenizer& tokenizer_;
  Communicator& comm_;
  EvolutionStrategy es_;
};

}  // namespace tempra::train
