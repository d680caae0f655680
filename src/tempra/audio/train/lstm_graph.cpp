// tempra/audio/train/lstm_graph.cpp: NAM's LSTM, trainable (see the header).
#include "tempra/audio/train/lstm_graph.h"

#include <cmath>
#include <memory>

#include "tempra/ag/custom_op.h"
#include "tempra/core/error.h"
#include "tempra/core/rng.h"
#include "tempra/ops/dispatch.h"
#include "tempra/ops/ops.h"

namespace tempra::audio {
namespace {

constexpr const char* kOp = "lstm_sequence";
constexpr int64_t kSilenceForInitialState = 48000;  // NAM's _get_initial_state_burn_in

template <class T>
T logistic(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

struct Sizes {
  int64_t batch, steps, in, hidden;
  int64_t gates() const { return 4 * hidden; }
  int64_t row() const { return in + hidden; }  // W's row: [x; h]
};

// The forward for one batch row: fills gates[t] (after their nonlinearities: i, f, g, o) and
// out[t] = (h_t, c_t).
template <class T>
void forward_row(const Sizes& s, const T* x, const T* w, const T* b, const T* h0, const T* c0, T* gates, T* out) {
  const T* h_prev = h0;
  const T* c_prev = c0;
  const int64_t H = s.hidden;
  for (int64_t t = 0; t < s.steps; ++t) {
    T* gate = gates + t * s.gates();
    for (int64_t j = 0; j < s.gates(); ++j) {
      const T* wj = w + j * s.row();
      T z = b[j];
      for (int64_t k = 0; k < s.in; ++k) z += wj[k] * x[t * s.in + k];
      for (int64_t k = 0; k < H; ++k) z += wj[s.in + k] * h_prev[k];
      gate[j] = (j >= 2 * H && j < 3 * H) ? std::tanh(z) : logistic(z);
    }
    T* h = out + t * 2 * H;
    T* c = h + H;
    for (int64_t k = 0; k < H; ++k) {
      c[k] = gate[H + k] * c_prev[k] + gate[k] * gate[2 * H + k];
      h[k] = gate[3 * H + k] * std::tanh(c[k]);
    }
    h_prev = h;
    c_prev = c;
  }
}

// Backpropagation through time for one batch row, from the gradient g of out; accumulates gw,
// gb (this row's own buffers) and writes gx, gh0, gc0.
template <class T>
void backward_row(const Sizes& s, const T* x, const T* w, const T* h0, const T* c0, const T* gates, const T* out,
                  const T* g, T* gx, T* gw, T* gb, T* gh0, T* gc0) {
  const int64_t H = s.hidden;
  std::vector<T> dh_next(size_t(H), T(0)), dc_next(size_t(H), T(0)), dz(size_t(s.gates())), dxh(size_t(s.row()));
  for (int64_t t = s.steps - 1; t >= 0; --t) {
    const T* gate = gates + t * s.gates();
    const T* c = out + t * 2 * H + H;
    const T* h_prev = t > 0 ? out + (t - 1) * 2 * H : h0;
    const T* c_prev = t > 0 ? out + (t - 1) * 2 * H + H : c0;
    const T* gh = g + t * 2 * H;
    const T* gc = gh + H;
    for (int64_t k = 0; k < H; ++k) {
      const T i = gate[k], f = gate[H + k], gg = gate[2 * H + k], o = gate[3 * H + k], tc = std::tanh(c[k]);
      const T dh = gh[k] + dh_next[size_t(k)];
      const T dc = gc[k] + dc_next[size_t(k)] + dh * o * (T(1) - tc * tc);
      dz[size_t(k)] = dc * gg * i * (T(1) - i);
      dz[size_t(H + k)] = dc * c_prev[k] * f * (T(1) - f);
      dz[size_t(2 * H + k)] = dc * i * (T(1) - gg * gg);
      dz[size_t(3 * H + k)] = dh * tc * o * (T(1) - o);
      dc_next[size_t(k)] = dc * f;
    }
    std::fill(dxh.begin(), dxh.end(), T(0));
    for (int64_t j = 0; j < s.gates(); ++j) {
      const T d = dz[size_t(j)];
      const T* wj = w + j * s.row();
      T* gwj = gw + j * s.row();
      gb[j] += d;
      for (int64_t k = 0; k < s.in; ++k) gwj[k] += d * x[t * s.in + k], dxh[size_t(k)] += wj[k] * d;
      for (int64_t k = 0; k < H; ++k) gwj[s.in + k] += d * h_prev[k], dxh[size_t(s.in + k)] += wj[s.in + k] * d;
    }
    for (int64_t k = 0; k < s.in; ++k) gx[t * s.in + k] = dxh[size_t(k)];
    for (int64_t k = 0; k < H; ++k) dh_next[size_t(k)] = dxh[size_t(s.in + k)];
  }
  std::copy(dh_next.begin(), dh_next.end(), gh0);
  std::copy(dc_next.begin(), dc_next.end(), gc0);
}

}  // namespace

Array lstm_sequence(ExecContext& ctx, const Array& x, const Array& w, const Array& b, const Array& h0,
                    const Array& c0) {
  check(x.rank() == 3 && w.rank() == 2 && b.rank() == 1 && h0.rank() == 2 && c0.rank() == 2, kOp,
        "expected x [B, T, in], w [4H, in + H], b [4H], h0 and c0 [B, H]; got ", x.shape(), ", ", w.shape(), ", ",
        b.shape(), ", ", h0.shape(), ", ", c0.shape());
  const Sizes s{x.shape()[0], x.shape()[1], x.shape()[2], h0.shape()[1]};
  check(w.shape() == Dims{s.gates(), s.row()} && b.shape() == Dims{s.gates()} &&
            h0.shape() == Dims{s.batch, s.hidden} && c0.shape() == Dims{s.batch, s.hidden},
        kOp, "shapes disagree: x ", x.shape(), ", w ", w.shape(), ", b ", b.shape(), ", h0 ", h0.shape(), ", c0 ",
        c0.shape());
  for (const Array* a : {&w, &b, &h0, &c0}) detail::require_same_dtype(x, *a, kOp);
  auto gates = std::make_shared<Array>();
  auto forward = [s, gates](ExecContext& c, const std::vector<Array>& in) {
    const Array xs = contiguous(c, in[0]), ws = contiguous(c, in[1]), bs = contiguous(c, in[2]),
                hs = contiguous(c, in[3]), cs = contiguous(c, in[4]);
    Array out = Array::empty(c, {s.batch, s.steps, 2 * s.hidden}, xs.dtype());
    *gates = Array::empty(c, {s.batch, s.steps, s.gates()}, xs.dtype());
    detail::with_float_type(xs.dtype(), kOp, [&](auto tag) {
      using T = decltype(tag);
      c.threads().parallel_for(s.batch, 1, [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r)
          forward_row<T>(s, xs.data<T>() + r * s.steps * s.in, ws.data<T>(), bs.data<T>(), hs.data<T>() + r * s.hidden,
                         cs.data<T>() + r * s.hidden, gates->data<T>() + r * s.steps * s.gates(),
                         out.data<T>() + r * s.steps * 2 * s.hidden);
      });
    });
    return out;
  };
  const Array saved_x = x.detach(), saved_w = w.detach(), saved_h0 = h0.detach(), saved_c0 = c0.detach();
  auto result = std::make_shared<Array>();
  Array out = ag::custom_op(
      ctx, kOp, {x, w, b, h0, c0}, forward,
      [s, gates, result, saved_x, saved_w, saved_h0, saved_c0](ExecContext& c, const Array& grad,
                                                               const std::vector<bool>&) {
        const Array xs = contiguous(c, saved_x), ws = contiguous(c, saved_w), hs = contiguous(c, saved_h0),
                    cs = contiguous(c, saved_c0), gs = contiguous(c, grad);
        const DType dtype = xs.dtype();
        Array gx = Array::empty(c, xs.shape(), dtype), gh0 = Array::empty(c, hs.shape(), dtype),
              gc0 = Array::empty(c, cs.shape(), dtype);
        // Each batch row sums its own weight gradients; the rows are added in order after, so
        // the result does not depend on the thread count.
        Array gw_rows = Array::zeros(c, {s.batch, s.gates(), s.row()}, dtype),
              gb_rows = Array::zeros(c, {s.batch, s.gates()}, dtype);
        detail::with_float_type(dtype, kOp, [&](auto tag) {
          using T = decltype(tag);
          c.threads().parallel_for(s.batch, 1, [&](int64_t first, int64_t last) {
            for (int64_t r = first; r < last; ++r)
              backward_row<T>(s, xs.data<T>() + r * s.steps * s.in, ws.data<T>(), hs.data<T>() + r * s.hidden,
                              cs.data<T>() + r * s.hidden, gates->data<T>() + r * s.steps * s.gates(),
                              result->data<T>() + r * s.steps * 2 * s.hidden, gs.data<T>() + r * s.steps * 2 * s.hidden,
                              gx.data<T>() + r * s.steps * s.in, gw_rows.data<T>() + r * s.gates() * s.row(),
                              gb_rows.data<T>() + r * s.gates(), gh0.data<T>() + r * s.hidden,
                              gc0.data<T>() + r * s.hidden);
          });
        });
        Array gw = Array::zeros(c, {s.gates(), s.row()}, dtype), gb = Array::zeros(c, {s.gates()}, dtype);
        detail::with_float_type(dtype, kOp, [&](auto tag) {
          using T = decltype(tag);
          for (int64_t r = 0; r < s.batch; ++r) {
            for (int64_t i = 0; i < gw.numel(); ++i) gw.data<T>()[i] += gw_rows.data<T>()[r * gw.numel() + i];
            for (int64_t i = 0; i < gb.numel(); ++i) gb.data<T>()[i] += gb_rows.data<T>()[r * gb.numel() + i];
          }
        });
        return std::vector<Array>{gx, gw, gb, gh0, gc0};
      });
  *result = out.detach();
  return out;
}

TrainableLstm TrainableLstm::build(ExecContext& ctx, const LstmConfig& config, LstmTraining training,
                                   const std::function<void(std::vector<float>&, const char* part)>& fill) {
  NamFile probe;
  probe.config = config;
  probe.weights.assign(size_t(weight_count(config)), 0.0f);
  validate(probe, "amp train");
  check(config.input_size == 1, "amp train", "a trained LSTM takes the signal alone (input_size 1), got ",
        config.input_size);
  check(training.burn_in >= 0 && training.truncate >= 1, "amp train", "burn-in must be >= 0 and truncation >= 1");
  TrainableLstm net;
  net.config_ = config;
  net.training_ = training;
  const int64_t H = config.hidden_size;
  auto leaf = [&](const Dims& shape, const char* part) {
    std::vector<float> values(size_t(shape.product()));
    fill(values, part);
    Array a = Array::from_values<float>(ctx, shape, values);
    a.set_requires_grad();
    return a;
  };
  // In the file's order: per layer W, b, h0, c0; then the head's weights and bias.
  for (int l = 0; l < config.num_layers; ++l) {
    const int64_t in = l == 0 ? config.input_size : H;
    Layer layer;
    layer.w = leaf({4 * H, in + H}, "weight");
    layer.b = leaf({4 * H}, "bias");
    layer.h0 = leaf({H}, "state");
    layer.c0 = leaf({H}, "state");
    net.layers_.push_back(std::move(layer));
  }
  net.head_w_ = leaf({1, H}, "weight");
  net.head_b_ = leaf({1}, "head bias");
  return net;
}

TrainableLstm TrainableLstm::init(ExecContext& ctx, const LstmConfig& config, uint64_t seed, LstmTraining training) {
  const int64_t H = config.hidden_size;
  const float bound = 1.0f / std::sqrt(float(H));
  uint64_t index = 0;
  auto uniform = [&]() { return (2.0f * CounterRng::uniform(seed, index++) - 1.0f) * bound; };
  return build(ctx, config, training, [&](std::vector<float>& values, const char* part) {
    const std::string_view what = part;
    for (size_t j = 0; j < values.size(); ++j) {
      if (what == "state") {
        values[j] = 0.0f;  // NAM's learned initial state starts at zeros
      } else if (what == "bias") {
        // PyTorch's two bias vectors, each uniform, each with NAM's -2 (input gate) and +2
        // (forget gate): their sum is the one bias here.
        const float shift = j < size_t(H) ? -4.0f : (j < size_t(2 * H) ? 4.0f : 0.0f);
        values[j] = uniform() + uniform() + shift;
      } else {
        values[j] = uniform();
      }
    }
  });
}

TrainableLstm TrainableLstm::from_weights(ExecContext& ctx, const LstmConfig& config, std::span<const float> weights,
                                          LstmTraining training) {
  check(int64_t(weights.size()) == weight_count(config), "amp train", "expected ", weight_count(config),
        " weights for this LSTM, got ", weights.size());
  size_t next = 0;
  return build(ctx, config, training, [&](std::vector<float>& values, const char*) {
    for (float& v : values) v = weights[next++];
  });
}

Array TrainableLstm::run(ExecContext& ctx, const Array& x, std::vector<std::pair<Array, Array>>& state,
                         bool detach_after) const {
  const int64_t H = config_.hidden_size, steps = x.shape()[1];
  Array input = x;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Array out = lstm_sequence(ctx, input, layers_[l].w, layers_[l].b, state[l].first, state[l].second);
    const Array last = out.select(1, steps - 1);  // [B, 2H]
    state[l] = {last.slice(1, 0, H), last.slice(1, H, 2 * H)};
    if (detach_after) state[l] = {state[l].first.detach(), state[l].second.detach()};
    input = out.slice(2, 0, H);
  }
  return input;  // [B, T, H]: the last layer's h
}

Array TrainableLstm::forward(ExecContext& ctx, const Array& x, bool training) const {
  check(x.rank() == 3 && x.shape()[1] == 1 && x.shape()[2] >= 1, "amp train",
        "LSTM input must be [batch, 1, samples], got ", x.shape());
  const int64_t batch = x.shape()[0], length = x.shape()[2];
  const Array sequence = contiguous(ctx, x).reshape({batch, length, 1});
  std::vector<std::pair<Array, Array>> state;
  for (const Layer& layer : layers_)
    state.emplace_back(layer.h0.broadcast_to({batch, config_.hidden_size}),
                       layer.c0.broadcast_to({batch, config_.hidden_size}));
  // The last layer's features, then the head over all of them: the burn-in's features are
  // detached (no gradient into the layers) but the head still learns from their outputs, as in
  // NAM (it detaches the core's output features, not the head's).
  std::vector<Array> outputs;
  if (!training || length <= training_.burn_in) {
    outputs.push_back(run(ctx, sequence, state, false));
  } else {
    if (training_.burn_in > 0)
      outputs.push_back(run(ctx, sequence.slice(1, 0, training_.burn_in), state, false).detach());
    for (int64_t start = training_.burn_in; start < length; start += training_.truncate) {
      const int64_t stop = std::min(length, start + training_.truncate);
      // The state is cut between chunks, but not after the burn-in, so the initial state learns.
      if (start > training_.burn_in)
        for (auto& [h, c] : state) h = h.detach(), c = c.detach();
      outputs.push_back(run(ctx, sequence.slice(1, start, stop), state, false));
    }
  }
  const Array features = outputs.size() == 1 ? outputs[0] : concat(ctx, outputs, 1);
  const Array y = add(ctx, linear(ctx, contiguous(ctx, features), head_w_), head_b_);  // [B, T, 1]
  return y.reshape({batch, 1, length});
}

std::vector<optim::Param> TrainableLstm::params() const {
  std::vector<optim::Param> out;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const std::string p = "layer" + std::to_string(l);
    out.push_back({p + ".weight", layers_[l].w});
    out.push_back({p + ".bias", layers_[l].b});
    out.push_back({p + ".initial_hidden", layers_[l].h0});
    out.push_back({p + ".initial_cell", layers_[l].c0});
  }
  out.push_back({"head.weight", head_w_});
  out.push_back({"head.bias", head_b_});
  return out;
}

NamFile TrainableLstm::profile(ExecContext& ctx) const {
  NoGradGuard no_grad;
  // NAM's exported initial state: where 48000 samples of silence take the layers from zeros.
  const int64_t H = config_.hidden_size;
  std::vector<std::pair<Array, Array>> state;
  for (size_t l = 0; l < layers_.size(); ++l)
    state.emplace_back(Array::zeros(ctx, {1, H}, DType::f32), Array::zeros(ctx, {1, H}, DType::f32));
  run(ctx, Array::zeros(ctx, {1, kSilenceForInitialState, 1}, DType::f32), state, true);
  NamFile file;
  file.config = config_;
  auto append = [&](const Array& a) {
    const Array c = contiguous(ctx, a);
    file.weights.insert(file.weights.end(), c.data<float>(), c.data<float>() + c.numel());
  };
  for (size_t l = 0; l < layers_.size(); ++l) {
    append(layers_[l].w);
    append(layers_[l].b);
    append(state[l].first);
    append(state[l].second);
  }
  append(head_w_);
  append(head_b_);
  return file;
}

}  // namespace tempra::audio
