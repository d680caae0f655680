// apps/spirals/spirals.cpp: dataset, model, optimizers and the training step (see spirals.h).
#include "spirals.h"

#include <cmath>
#include <cstring>

#include "tempra/ag/backward.h"
#include "tempra/core/grad_node.h"
#include "tempra/core/rng.h"
#include "tempra/io/safetensors.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/adamw.h"
#include "tempra/optim/apollo.h"
#include "tempra/optim/checkpoint.h"
#include "tempra/optim/muon.h"
#include "tempra/optim/sgd.h"

namespace spirals {

using tempra::Array;
using tempra::CounterRng;
using tempra::DType;
using tempra::ExecContext;
using tempra::Tensor;
namespace optim = tempra::optim;

Dataset make_spirals(uint64_t seed, int64_t n_per_class, double noise) {
  tempra::check(n_per_class >= 1, "spirals", "need at least one point per class, got ", n_per_class);
  constexpr double kPi = 3.141592653589793;
  constexpr double kTurns = 1.5;
  Dataset d;
  d.x.reserve(static_cast<size_t>(4 * n_per_class));
  d.y.reserve(static_cast<size_t>(2 * n_per_class));
  // Point i draws four values from the stream: its position along the arm and three for noise
  // (two used); classes interleave so a prefix of the data is balanced.
  for (int64_t i = 0; i < n_per_class; ++i) {
    for (int c = 0; c < 2; ++c) {
      const uint64_t base = static_cast<uint64_t>(4 * (2 * i + c));
      // sqrt spreads points evenly along the arm's length rather than its angle.
      const double t = 0.05 + 0.95 * std::sqrt(static_cast<double>(CounterRng::uniform(seed, base)));
      const double angle = t * kTurns * 2 * kPi + c * kPi;
      const double r = t;
      d.x.push_back(static_cast<float>(r * std::cos(angle) + noise * CounterRng::normal(seed, base + 1)));
      d.x.push_back(static_cast<float>(r * std::sin(angle) + noise * CounterRng::normal(seed, base + 2)));
      d.y.push_back(c);
    }
  }
  return d;
}

namespace {

Array param(ExecContext& ctx, const tempra::Dims& shape, double stddev) {
  Array a = stddev > 0 ? tempra::normal(ctx, shape, 0.0, stddev) : Array::zeros(ctx, shape, DType::f32);
  a.set_requires_grad();
  return a;
}

}  // namespace

Mlp Mlp::init(ExecContext& ctx, int64_t hidden) {
  // The first layer gets a large gain: the spirals wind three times across [-1, 1], so the
  // first features must vary that fast. The others are Xavier-like (1 / sqrt(fan_in)).
  Mlp m;
  m.w1 = Tensor<h1, in>::from(param(ctx, {hidden, 2}, 3.0));
  m.b1 = Tensor<h1>::from(param(ctx, {hidden}, 0.0));
  m.w2 = Tensor<h2, h1>::from(param(ctx, {hidden, hidden}, 1.0 / std::sqrt(static_cast<double>(hidden))));
  m.b2 = Tensor<h2>::from(param(ctx, {hidden}, 0.0));
  m.w3 = Tensor<cls, h2>::from(param(ctx, {2, hidden}, 1.0 / std::sqrt(static_cast<double>(hidden))));
  m.b3 = Tensor<cls>::from(param(ctx, {2}, 0.0));
  return m;
}

std::vector<optim::Param> Mlp::params() const {
  return {{"fc1.weight", w1.array()}, {"fc1.bias", b1.array()},   {"fc2.weight", w2.array()},
          {"fc2.bias", b2.array()},   {"out.weight", w3.array()}, {"out.bias", b3.array()}};
}

Tensor<batch, cls> forward(ExecContext& ctx, const Mlp& m, const Tensor<batch, in>& x) {
  using namespace tempra;
  auto a1 = tanh(ctx, add(ctx, x.dot<in>(ctx, m.w1), m.b1));   // Tensor<batch, h1>
  auto a2 = tanh(ctx, add(ctx, a1.dot<h1>(ctx, m.w2), m.b2));  // Tensor<batch, h2>
  return add(ctx, a2.dot<h2>(ctx, m.w3), m.b3);                // Tensor<batch, cls>
}

Array loss(ExecContext& ctx, const Tensor<batch, cls>& logits, const Array& labels) {
  return tempra::cross_entropy(ctx, logits.array(), labels);
}

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names{"sgd", "sgd-momentum", "adamw", "muon", "apollo"};
  return names;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, const Mlp& model) {
  const std::vector<optim::Param> p = model.params();
  if (name == "sgd") return std::make_unique<optim::Sgd>(p, 0.5);
  if (name == "sgd-momentum") return std::make_unique<optim::Sgd>(p, 0.1, optim::SgdOptions{0.9, 0.0, true});
  if (name == "adamw") return std::make_unique<optim::AdamW>(p, 1e-2, optim::AdamWOptions{}, 1e-4);
  // Muon orthogonalizes the hidden 2-D weight; the input and output layers and the biases take
  // AdamW, as its authors recommend.
  const std::vector<optim::Param> hidden{p[2]};
  const std::vector<optim::Param> rest{p[0], p[1], p[3], p[4], p[5]};
  if (name == "muon") {
    optim::MuonOptions adam;
    adam.use_muon = false;
    adam.beta2 = 0.999;
    return std::make_unique<optim::Muon>(
        std::vector<optim::Group<optim::MuonOptions>>{{hidden, 0.05, 0.0, {}}, {rest, 1e-2, 1e-4, adam}});
  }
  if (name == "apollo") {
    // Channel-wise scaling from a rank-8 random projection of the hidden weight's gradient.
    optim::ApolloOptions projected;
    projected.rank = 8;
    projected.update_proj_gap = 100;
    projected.seed = 17;
    return std::make_unique<optim::Apollo>(
        std::vector<optim::Group<optim::ApolloOptions>>{{hidden, 1e-2, 1e-4, projected}, {rest, 1e-2, 1e-4, {}}});
  }
  std::string choices;
  for (const auto& n : optimizer_names()) choices += (choices.empty() ? "" : ", ") + n;
  tempra::fail("spirals", "unknown optimizer '", name, "' (choose from ", choices, ")");
}

Trainer::Trainer(const std::string& optimizer, uint64_t seed, int64_t total_steps, int threads, const Dataset& train)
    : ctx_(tempra::ExecOptions{.threads = threads, .seed = seed}),
      train_(train),
      model_(Mlp::init(ctx_)),
      optimizer_(make_optimizer(optimizer, model_)),
      schedule_(optim::LrSchedule::warmup_cosine(std::max<int64_t>(1, total_steps / 20), total_steps, 0.05)),
      kind_(optimizer) {}

namespace {

struct Batch {
  Tensor<batch, in> x;
  Array y;  // i32 [n]
};

// Rows `index` of `data` (plain copies: the data needs no gradient).
Batch gather_rows(ExecContext& ctx, const Dataset& data, int64_t n, const auto& index) {
  Array x = Array::empty(ctx, {n, 2}, DType::f32);
  Array y = Array::empty(ctx, {n}, DType::i32);
  float* xp = x.data<float>();
  int32_t* yp = y.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    const auto r = static_cast<size_t>(index(i));
    xp[2 * i] = data.x[2 * r];
    xp[2 * i + 1] = data.x[2 * r + 1];
    yp[i] = data.y[r];
  }
  return {Tensor<batch, in>::from(x), y};
}

// Accuracy of 2-class logits against labels (class 1 wins when its logit is larger).
double accuracy(const Tensor<batch, cls>& logits, const Array& y) {
  const Array l = logits.array();
  const float* lp = l.data<float>();
  const int32_t* yp = y.data<int32_t>();
  int64_t right = 0;
  for (int64_t i = 0; i < y.numel(); ++i) right += ((lp[2 * i + 1] > lp[2 * i]) ? 1 : 0) == yp[i];
  return static_cast<double>(right) / static_cast<double>(y.numel());
}

}  // namespace

Evaluation Trainer::step() {
  optim::apply_schedule(*optimizer_, schedule_);
  // The minibatch is drawn from ctx.rng() (sampling with replacement), so it is part of the
  // state a checkpoint saves.
  const uint64_t first = ctx_.rng().advance(kBatch);
  const uint64_t stream = ctx_.rng().seed ^ 0x5b1a15ull;
  const auto n = static_cast<uint64_t>(train_.size());
  const Batch b = gather_rows(ctx_, train_, kBatch, [&](int64_t i) {
    return static_cast<int64_t>(CounterRng::bits(stream, first + static_cast<uint64_t>(i)) % n);
  });
  const Tensor<batch, cls> logits = forward(ctx_, model_, b.x);
  const Array l = loss(ctx_, logits, b.y);
  tempra::ag::backward(ctx_, l);
  optimizer_->step(ctx_);
  optimizer_->zero_grad();
  return {l.at({}), accuracy(logits, b.y)};
}

Evaluation Trainer::evaluate(const Dataset& data) {
  tempra::NoGradGuard no_grad;
  const Batch b = gather_rows(ctx_, data, data.size(), [](int64_t i) { return i; });
  const Tensor<batch, cls> logits = forward(ctx_, model_, b.x);
  const Array loss = tempra::cross_entropy(ctx_, logits.array(), b.y);
  return {loss.at({}), accuracy(logits, b.y)};
}

std::vector<float> Trainer::predict(const std::vector<float>& xy) {
  tempra::NoGradGuard no_grad;
  const auto n = static_cast<int64_t>(xy.size() / 2);
  const auto x = Tensor<batch, in>::from(Array::from_values<float>(ctx_, {n, 2}, std::span<const float>(xy)));
  const auto p = tempra::softmax<cls>(ctx_, forward(ctx_, model_, x));
  const float* pp = p.array().data<float>();
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = pp[2 * i + 1];
  return out;
}

void Trainer::save(const std::string& path) {
  optim::save_checkpoint(
      ctx_, path, model_.params(), optimizer_.get(), schedule_,
      {{"spirals.optimizer", kind_}, {"spirals.total_steps", std::to_string(schedule_.total_steps)}});
}

void Trainer::load(const std::string& path) {
  // The kind ("sgd-momentum" vs "sgd") and the schedule are configuration: a checkpoint of
  // another run must not silently continue under this one's settings. Read them first; the
  // load itself validates tensors and state before it changes anything.
  const tempra::io::SafetensorsFile file = tempra::io::SafetensorsFile::open(path);
  const auto field = [&](const std::string& key) {
    const auto it = file.metadata().find("user.spirals." + key);
    return it == file.metadata().end() ? std::string("(none)") : it->second;
  };
  tempra::check(field("optimizer") == kind_, "spirals", path, ": is a checkpoint of a '", field("optimizer"),
                "' run, not of '", kind_, "'");
  tempra::check(field("total_steps") == std::to_string(schedule_.total_steps), "spirals", path,
                ": was saved by a run of ", field("total_steps"), " steps (its lr schedule), not ",
                schedule_.total_steps);
  const optim::CheckpointInfo info = optim::load_checkpoint(ctx_, path, model_.params(), optimizer_.get());
  (void)info;
}

uint64_t Trainer::params_hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const optim::Param& p : model_.params()) {
    const auto* bytes = static_cast<const unsigned char*>(p.value.raw_data());
    for (size_t i = 0; i < p.value.nbytes(); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  }
  return h;
}

}  // namespace spirals
