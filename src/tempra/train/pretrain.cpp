// tempra/train/pretrain.cpp: see pretrain.h.
#include "tempra/train/pretrain.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "tempra/ag/backward.h"
#include "tempra/core/error.h"
#include "tempra/core/fnv1a.h"
#include "tempra/core/grad_node.h"
#include "tempra/core/rng.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/checkpoint.h"
#include "tempra/optim/clip.h"
#include "tempra/train/finetune.h"

namespace tempra::train {
namespace {

constexpr const char* kOp = "pretrain";
constexpr int64_t kMaxWindowTokens = int64_t(1) << 24;  // tokens in one step's batch

// An f32 copy of `w`, a leaf that requires a gradient.
Array trainable_copy(ExecContext& ctx, const Array& w) {
  NoGradGuard no_grad;
  Array f = f32_copy(ctx, w);
  f.set_requires_grad();
  return f;
}

}  // namespace

TrainableQwen3 TrainableQwen3::copy_of(ExecContext& ctx, const Qwen3Weights& w) {
  TrainableQwen3 t;
  t.weights.config = w.config;
  t.tied = w.output.raw_data() == w.token_embd.raw_data() && w.output.shape() == w.token_embd.shape();
  t.weights.token_embd = trainable_copy(ctx, w.token_embd);
  t.weights.output_norm = trainable_copy(ctx, w.output_norm);
  t.weights.output = t.tied ? t.weights.token_embd : trainable_copy(ctx, w.output);
  t.others.push_back({"token_embd.weight", t.weights.token_embd});
  t.others.push_back({"output_norm.weight", t.weights.output_norm});
  if (!t.tied) t.others.push_back({"output.weight", t.weights.output});
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const llm::Qwen3Layer& from = w.layers[i];
    llm::Qwen3Layer to;
    const std::string blk = "blk." + std::to_string(i) + ".";
    const auto matrix = [&](Array& dst, const Array& src, const char* name) {
      dst = trainable_copy(ctx, src);
      t.matrices.push_back({blk + name + ".weight", dst});
    };
    const auto other = [&](Array& dst, const Array& src, const char* name) {
      dst = trainable_copy(ctx, src);
      t.others.push_back({blk + name + ".weight", dst});
    };
    other(to.attn_norm, from.attn_norm, "attn_norm");
    matrix(to.attn_q, from.attn_q, "attn_q");
    matrix(to.attn_k, from.attn_k, "attn_k");
    matrix(to.attn_v, from.attn_v, "attn_v");
    matrix(to.attn_output, from.attn_output, "attn_output");
    other(to.attn_q_norm, from.attn_q_norm, "attn_q_norm");
    other(to.attn_k_norm, from.attn_k_norm, "attn_k_norm");
    other(to.ffn_norm, from.ffn_norm, "ffn_norm");
    matrix(to.ffn_gate, from.ffn_gate, "ffn_gate");
    matrix(to.ffn_up, from.ffn_up, "ffn_up");
    matrix(to.ffn_down, from.ffn_down, "ffn_down");
    t.weights.layers.push_back(std::move(to));
  }
  return t;
}

std::vector<optim::Param> TrainableQwen3::params() const {
  std::vector<optim::Param> all = matrices;
  all.insert(all.end(), others.begin(), others.end());
  return all;
}

std::map<std::string, Array> TrainableQwen3::by_name() const {
  std::map<std::string, Array> out;
  for (const optim::Param& p : params()) out[p.name] = p.value;
  return out;
}

Windows stream_windows(ExecContext& ctx, const TokenStream& stream, const std::vector<int64_t>& offsets, int64_t seq) {
  const int64_t n = int64_t(offsets.size());
  check(stream.trained.empty() || stream.trained.size() == stream.tokens.size(), kOp, "the stream has ",
        stream.trained.size(), " marks for ", stream.tokens.size(), " tokens");
  std::vector<int32_t> tokens(size_t(n * seq)), targets(size_t(n * seq));
  Windows w;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t at = offsets[size_t(r)];
    check(at >= 0 && at + seq + 1 <= int64_t(stream.tokens.size()), kOp, "window at ", at, " of ", seq + 1,
          " tokens runs past the stream's ", stream.tokens.size());
    for (int64_t i = 0; i < seq; ++i) {
      const size_t next = size_t(at + i + 1);
      const bool trained = stream.trained.empty() || stream.trained[next] != 0;
      tokens[size_t(r * seq + i)] = stream.tokens[size_t(at + i)];
      targets[size_t(r * seq + i)] = trained ? stream.tokens[next] : -100;
      w.trained += trained ? 1 : 0;
    }
  }
  w.tokens = Array::from_values<int32_t>(ctx, {n, seq}, tokens);
  w.targets = Array::from_values<int32_t>(ctx, {n, seq}, targets);
  return w;
}

uint64_t stream_hash(const TokenStream& stream) {
  // Every token with its mark (1 where the marks are absent: all trained), as the finetuner's.
  Fnv1a hash;
  hash.mix(stream.tokens.size());
  for (size_t i = 0; i < stream.tokens.size(); ++i)
    hash.mix(uint64_t(uint32_t(stream.tokens[i])) << 1 | (stream.trained.empty() ? 1u : stream.trained[i]));
  return hash.value;
}

Pretrainer::Pretrainer(ExecContext& ctx, TrainableQwen3& model, const TokenStream& train, const PretrainOptions& o)
    : ctx_(ctx), model_(model), train_(train), options_(o) {
  check(o.batch >= 1 && o.seq >= 1 && o.batch <= kMaxWindowTokens / o.seq, kOp, "batch ", o.batch, " and seq ", o.seq,
        " must be at least 1, with batch x seq at most ", kMaxWindowTokens);
  check(int64_t(train.tokens.size()) >= o.seq + 1, kOp, "the training stream holds ", train.tokens.size(),
        " tokens: fewer than one window of ", o.seq + 1);
  check(train.trained.empty() || train.trained.size() == train.tokens.size(), kOp, "the stream has ",
        train.trained.size(), " marks for ", train.tokens.size(), " tokens");
  check(o.clip >= 0, kOp, "clip ", o.clip, " must not be negative");
  schedule_ = optim::LrSchedule::warmup_cosine(std::min(o.warmup, o.steps), o.steps, o.min_lr_ratio);
  optim::MuonOptions adam;
  adam.use_muon = false;
  std::vector<optim::Group<optim::MuonOptions>> groups;
  groups.push_back({.params = model.matrices, .lr = o.lr_matrix, .weight_decay = o.weight_decay, .options = {}});
  groups.push_back({.params = model.others, .lr = o.lr_other, .weight_decay = 0.0, .options = adam});
  optimizer_ = std::make_unique<optim::Muon>(std::move(groups));
}

PretrainStep Pretrainer::step() {
  const int64_t s = steps_done();
  const int64_t span = int64_t(train_.tokens.size()) - options_.seq - 1;  // last start: span
  std::vector<int64_t> offsets;
  for (int64_t j = 0; j < options_.batch; ++j) {
    const uint64_t bits = CounterRng::bits(options_.seed, uint64_t(s * options_.batch + j));
    offsets.push_back(int64_t(bits % uint64_t(span + 1)));
  }
  const Windows w = stream_windows(ctx_, train_, offsets, options_.seq);
  optim::apply_schedule(*optimizer_, schedule_);
  PretrainStep r{.tokens = options_.batch * options_.seq, .lr_matrix = optimizer_->groups()[0].lr};
  optimizer_->zero_grad();
  if (w.trained == 0) {  // nothing to learn in these windows: the step still counts
    optimizer_->step(ctx_);
    return r;
  }
  // Checkpointed blocks rerun whole: qwen3_logits replays no products of weights that train.
  TrainForwardOptions forward;
  forward.checkpoint = options_.checkpoint_activations;
  const Array loss = lm_loss(ctx_, qwen3_logits(ctx_, model_.weights, w.tokens, forward), w.targets);
  ag::backward(ctx_, loss);
  r.loss = loss.at({});
  // clip 0 measures the norm only (an infinite bound scales nothing).
  const double bound = options_.clip > 0 ? options_.clip : std::numeric_limits<double>::infinity();
  r.grad_norm = optim::clip_grad_norm(*optimizer_, bound);
  optimizer_->step(ctx_);
  return r;
}

double Pretrainer::eval_bpb(const TokenStream& val, const llm::Tokenizer& tokenizer, int64_t max_windows) const {
  const int64_t seq = options_.seq;
  const int64_t n_windows = std::min<int64_t>(max_windows, (int64_t(val.tokens.size()) - 1) / seq);
  check(n_windows >= 1, kOp, "the validation stream holds ", val.tokens.size(), " tokens: fewer than one window of ",
        seq + 1);
  for (const int32_t id : val.tokens)
    check(id >= 0 && id < tokenizer.size(), kOp, "validation token ", id, " is outside the vocab of ",
          tokenizer.size());
  // Bytes per token, 0 for special tokens (they are not scored).
  std::vector<int64_t> bytes(size_t(tokenizer.size()));
  for (int32_t id = 0; id < tokenizer.size(); ++id)
    bytes[size_t(id)] = (tokenizer.attr(id) & llm::kAttrNormal) ? int64_t(tokenizer.piece(id).size()) : 0;
  NoGradGuard no_grad;
  double nats = 0;
  int64_t total_bytes = 0;
  for (int64_t first = 0; first < n_windows; first += options_.batch) {
    std::vector<int64_t> offsets;
    for (int64_t r = first; r < std::min(n_windows, first + options_.batch); ++r) offsets.push_back(r * seq);
    Windows w = stream_windows(ctx_, val, offsets, seq);
    // Special targets are not scored: -100, as untrained ones.
    int32_t* targets = w.targets.data<int32_t>();
    for (int64_t i = 0; i < w.targets.numel(); ++i)
      if (targets[i] >= 0 && bytes[size_t(targets[i])] == 0) targets[i] = -100;
    const Array logits = qwen3_logits(ctx_, model_.weights, w.tokens);
    const Array losses = cross_entropy(ctx_, logits.reshape({-1, logits.dim(2)}), w.targets.reshape({-1}),
                                       {.ignore_index = -100, .reduction = Reduction::none});
    const float* l = losses.data<float>();
    for (int64_t i = 0; i < w.targets.numel(); ++i) {
      if (targets[i] < 0) continue;
      nats += double(l[i]);
      total_bytes += bytes[size_t(targets[i])];
    }
  }
  check(total_bytes > 0, kOp, "the validation windows hold no scored bytes");
  return nats / std::numbers::ln2 / double(total_bytes);
}

std::map<std::string, std::string> Pretrainer::identity() const {
  const llm::DecoderConfig& c = model_.weights.config;
  return {{"model", std::to_string(c.n_layer) + "x" + std::to_string(c.n_embd) + " ff " + std::to_string(c.n_ff) +
                        " vocab " + std::to_string(model_.weights.token_embd.dim(0))},
          {"batch", std::to_string(options_.batch)},
          {"seq", std::to_string(options_.seq)},
          {"steps", std::to_string(options_.steps)},
          {"warmup", std::to_string(options_.warmup)},
          {"lr_matrix", shortest_decimal(options_.lr_matrix)},
          {"lr_other", shortest_decimal(options_.lr_other)},
          {"clip", shortest_decimal(options_.clip)},
          {"min_lr_ratio", shortest_decimal(options_.min_lr_ratio)},
          {"weight_decay", shortest_decimal(options_.weight_decay)},
          {"seed", std::to_string(options_.seed)},
          {"train_tokens", std::to_string(train_.tokens.size())},
          {"train_data_fnv1a", std::to_string(stream_hash(train_))}};
}

void Pretrainer::save(const std::filesystem::path& path) const {
  optim::save_checkpoint(ctx_, path, model_.params(), optimizer_.get(), schedule_, identity());
}

void Pretrainer::load(const std::filesystem::path& path) {
  check_run_identity(path, identity());
  optim::load_checkpoint(ctx_, path, model_.params(), optimizer_.get());
}

}  // namespace tempra::train
