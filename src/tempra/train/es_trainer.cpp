// tempra/train/es_trainer.cpp: see es_trainer.h.
#include "tempra/train/es_trainer.h"

#include <charconv>
#include <string>

#include "tempra/core/error.h"
#include "tempra/core/fnv1a.h"
#include "tempra/core/grad_node.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/checkpoint.h"
#include "tempra/train/finetune.h"

namespace tempra::train {

std::vector<optim::Param> full_weights(ExecContext& ctx, io::GgufModel& gguf) {
  NoGradGuard no_grad;
  std::vector<optim::Param> params;
  for (const io::GgufModel::Location& at : gguf.tensors()) {
    const std::string name = gguf.info(at).name;
    const Array w = gguf.tensor(name);
    const Array f32 = f32_copy(ctx, w);
    gguf.replace_tensor(name, f32);
    params.push_back({name, f32});
  }
  return params;
}

EsTrainer::EsTrainer(ExecContext& ctx, const Qwen3Weights& weights, std::vector<optim::Param> params,
                     const LoraAdapter* lora, std::vector<Example> train, std::vector<Example> eval,
                     const EsTrainOptions& options, const llm::Tokenizer& tokenizer, Communicator& comm)
    : ctx_(ctx),
      weights_(weights),
      params_(params),
      lora_(lora),
      train_(std::move(train)),
      eval_(std::move(eval)),
      options_(options),
      tokenizer_(tokenizer),
      comm_(comm),
      es_(std::move(params), options.es) {
  check(!train_.empty(), "finetune", "no training examples");
  check(options_.batch >= 1, "finetune", "--batch ", options_.batch, " must be at least 1");
}

EsStepResult EsTrainer::train_step(int64_t* tokens) {
  std::vector<const Example*> batch;
  for (size_t i : batch_indices(train_.size(), options_.batch, options_.es.seed, es_.steps_done()))
    batch.push_back(&train_[i]);
  int64_t batch_tokens = 0;
  for (const Example* e : batch) batch_tokens += int64_t(e->tokens.size());
  EsStepResult r = es_.step([&](int64_t) { return reward(ctx_, weights_, lora_, batch, options_.reward, tokenizer_); },
                            comm_);
  if (tokens) *tokens += batch_tokens * options_.es.population;  // every member's, over all ranks
  return r;
}

double EsTrainer::eval_reward() {
  std::vector<const Example*> all;
  for (const Example& e : eval_) all.push_back(&e);
  return reward(ctx_, weights_, lora_, all, options_.reward, tokenizer_);
}

std::map<std::string, std::string> EsTrainer::identity() const {
  Fnv1a names;  // of the parameters' names: which weights train
  for (const optim::Param& p : params_) {
    names.mix_bytes(p.name);
    names.mix_bytes("\n");
  }
  std::map<std::string, std::string> id{{"method", "es"},
                                       {"es.population", std::to_string(options_.es.population)},
                                       {"es.sigma", shortest_decimal(options_.es.sigma)},
                                       {"lr", shortest_decimal(options_.es.lr)},
                                       {"reward", options_.reward.name()},
                                       {"seed", std::to_string(options_.es.seed)},
                                       {"batch", std::to_string(options_.batch)},
                                       {"parameters_fnv1a", std::to_string(names.value)},
                                       {"train_examples", std::to_string(train_.size())},
                                       {"train_data_fnv1a", std::to_string(training_data_hash(train_))}};
  if (options_.reward.kind == Reward::Kind::regex)
    id["reward.max_new_tokens"] = std::to_string(options_.reward.max_new_tokens);
  if (lora_) {  // the names fix the targets; rank and alpha set the scale every fitness sees
    id["lora.rank"] = std::to_string(lora_->config().rank);
    id["lora.alpha"] = shortest_decimal(lora_->config().alpha);
  }
  return id;
}

void EsTrainer::save(const std::filesystem::path& path) const {
  std::map<std::string, std::string> meta = identity();
  meta["es.step"] = std::to_string(es_.steps_done());
  optim::save_checkpoint(ctx_, path, params_, nullptr, optim::LrSchedule::constant(), meta);
}

void EsTrainer::load(const std::filesystem::path& path) {
  check_run_identity(path, identity());
  const optim::CheckpointInfo info = optim::load_checkpoint(ctx_, path, params_, nullptr);
  const auto it = info.user.find("es.step");
  int64_t step = -1;
  if (it != info.user.end()) std::from_chars(it->second.data(), it->second.data() + it->second.size(), step);
  check(step >= 0, "finetune", path.string(), ": the checkpoint has no generation count (es.step)");
  es_.set_steps_done(step);
}

}  // namespace tempra::train
