// tempra/train/pretrain.h: training every weight of a Qwen3 from its initial values on a token
// stream: nanochat's base stage (`tempra train`), and its chat stage on conversations.
//
// Contract:
// - TrainableQwen3::copy_of makes f32 copies of every weight of a model (whatever its file's
//   type), each a leaf that requires a gradient, named by its GGUF tensor name
//   ("blk.0.attn_q.weight"); with tied embeddings the head stays the embedding (one array, one
//   gradient). matrices() are the layers' 2-D projections, which Muon updates; others() the
//   embedding, an untied head and the norms, which AdamW updates (the split of Muon's reference
//   and nanochat).
// - The data is a TokenStream: the corpus's tokens in order, documents separated by the
//   end-of-text token, and for each token whether its prediction is trained (all of them for
//   pretraining; the assistant's replies for chat fine-tuning, dataset.h's marks).
// - Step s takes `batch` windows of seq + 1 tokens starting at offsets drawn uniformly from the
//   counter RNG keyed by (seed, s * batch + j): a pure function of (seed, step), so a resumed run
//   continues bit for bit. Its loss is the mean cross entropy of the windows' trained targets;
//   backward (activation checkpointing per block when asked, rerunning the whole block, weight
//   products included); the global gradient norm clipped to `clip` (0: no clipping); each
//   group's lr set by warmup_cosine(warmup, steps, min_lr_ratio); one Muon step (AdamW groups
//   inside it).
// - eval_bpb: the validation stream cut into consecutive windows of seq + 1 tokens (at most
//   max_windows), without gradients: bits per byte = the summed cross entropy (nats) of the
//   trained targets that are not special tokens / ln 2 / the UTF-8 bytes those targets stand for
//   (nanochat's evaluate_bpb: special tokens are neither scored nor counted).
// - save/load: the weights, Muon's state, the step and the run's identity (model shape, every
//   option, a hash of the training stream) through optim/checkpoint.h; load refuses another run's file
//   naming the key, before it changes anything.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tempra/core/exec_context.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/optim/muon.h"
#include "tempra/optim/schedule.h"
#include "tempra/train/qwen3_train.h"

namespace tempra::train {

struct TrainableQwen3 {
  Qwen3Weights weights;  // every array an f32 leaf that requires a gradient
  bool tied = false;
  std::vector<optim::Param> matrices, others;

  static TrainableQwen3 copy_of(ExecContext& ctx, const Qwen3Weights& weights);
  // Every param by GGUF name (what an exported model replaces).
  std::map<std::string, Array> by_name() const;
  std::vector<optim::Param> params() const;
};

struct TokenStream {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> trained;  // per token: is its prediction trained; empty: all are
};

struct PretrainOptions {
  int64_t batch = 8, seq = 256;
  int64_t steps = 1000, warmup = 20;
  double min_lr_ratio = 0.0;
  double lr_matrix = 0.02;  // Muon's, for the hidden matrices
  double lr_other = 0.004;  // AdamW's, for the embedding, head and norms
  double weight_decay = 0.0;
  double clip = 1.0;
  uint64_t seed = 0;
  bool checkpoint_activations = false;
};

struct PretrainStep {
  double loss = 0;
  double grad_norm = 0;  // before clipping
  int64_t tokens = 0;    // tokens the step ran through the model
  double lr_matrix = 0;  // the lr the step used
};

class Pretrainer {
 public:
  // `model` and `train` must outlive the Pretrainer. The stream must hold at least one window
  // (seq + 1 tokens); batch x seq at most 2^24. Throws tempra::Error naming what is wrong.
  Pretrainer(ExecContext& ctx, TrainableQwen3& model, const TokenStream& train, const PretrainOptions& options);

  int64_t steps_done() const { return optimizer_->step_count(); }
  PretrainStep step();
  double eval_bpb(const TokenStream& val, const llm::Tokenizer& tokenizer, int64_t max_windows) const;

  void save(const std::filesystem::path& path) const;
  void load(const std::filesystem::path& path);

 private:
  std::map<std::string, std::string> identity() const;

  ExecContext& ctx_;
  TrainableQwen3& model_;
  const TokenStream& train_;
  PretrainOptions options_;
  optim::LrSchedule schedule_;
  std::unique_ptr<optim::Muon> optimizer_;
};

// The windows' tokens i32 [n, seq] and targets i32 [n, seq] (-100 where not trained) of a stream,
// starting at `offsets`.
struct Windows {
  Array tokens, targets;
  int64_t trained = 0;
};
Windows stream_windows(ExecContext& ctx, const TokenStream& stream, const std::vector<int64_t>& offsets, int64_t seq);

// FNV-1a over the stream's tokens and marks (a checkpoint's identity).
uint64_t stream_hash(const TokenStream& stream);

}  // namespace tempra::train
