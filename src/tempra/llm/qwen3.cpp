// tempra/llm/qwen3.cpp: see qwen3.h. The forward pass mirrors llama.cpp's src/models/qwen3.cpp
// line for line; intermediates carry its debug-dump names (attn_norm, Qcur, ffn_inp, ...).
#include "tempra/llm/qwen3.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "tempra/core/error.h"
#include "tempra/ops/ops.h"

namespace tempra::llm {
namespace {

class Loader {
 public:
  explicit Loader(const io::GgufModel& gguf) : gguf_(gguf), file_(gguf.shards().front().name()) {}

  int64_t integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
    const io::GgufValue* value = gguf_.metadata().find(key);
    if (value == nullptr && fallback) return *fallback;
    check(value != nullptr, "qwen3", file_, ": metadata key '", key, "' is missing");
    const std::optional<int64_t> v = io::integer_value(*value);
    check(v && *v > 0, "qwen3", file_, ": metadata key '", key, "' must be a positive integer");
    return *v;
  }
  double real(const std::string& key, double fallback) const {
    const io::GgufValue* value = gguf_.metadata().find(key);
    if (value == nullptr) return fallback;
    if (value->is<float>()) return std::get<float>(value->value);
    if (value->is<double>()) return std::get<double>(value->value);
    fail("qwen3", file_, ": metadata key '", key, "' must be a float");
  }
  bool has(const std::string& name) const { return gguf_.find_tensor(name) != nullptr; }
  // The tensor `name`, required to have tempra shape `shape` (outermost first).
  Array tensor(const std::string& name, const Dims& shape) const {
    check(has(name), "qwen3", file_, ": tensor '", name, "' is missing");
    Array t = gguf_.tensor(name);
    check(t.shape() == shape, "qwen3", file_, ": tensor '", name, "' has shape ", t.shape(), ", expected ", shape);
    return t;
  }

 private:
  const io::GgufModel& gguf_;
  std::string file_;
};

}  // namespace

Qwen3Model Qwen3Model::load(const std::filesystem::path& path) {
  return load(io::GgufModel::open(path));
}

Qwen3Model Qwen3Model::load(const io::GgufModel& gguf) {
  const Loader in(gguf);
  const std::string file = gguf.shards().front().name();
  const auto* arch = gguf.metadata().find("general.architecture");
  check(arch != nullptr && arch->is<std::string>(), "qwen3", file, ": metadata key 'general.architecture' is missing");
  check(std::get<std::string>(arch->value) == "qwen3", "qwen3", file, ": general.architecture is '",
        std::get<std::string>(arch->value), "', expected 'qwen3'");

  Qwen3Model m;
  Qwen3Config& c = m.config_;
  c.n_layer = static_cast<int>(in.integer("qwen3.block_count"));
  c.n_embd = in.integer("qwen3.embedding_length");
  c.n_ff = in.integer("qwen3.feed_forward_length");
  c.n_head = in.integer("qwen3.attention.head_count");
  c.n_head_kv = in.integer("qwen3.attention.head_count_kv", c.n_head);
  c.head_dim = in.integer("qwen3.attention.key_length", c.n_embd / c.n_head);
  check(in.integer("qwen3.attention.value_length", c.head_dim) == c.head_dim, "qwen3", file,
        ": attention.value_length differs from key_length");
  check(c.n_head % c.n_head_kv == 0, "qwen3", file, ": head_count ", c.n_head, " is not a multiple of head_count_kv ",
        c.n_head_kv);
  check(c.head_dim % 2 == 0, "qwen3", file, ": head dim ", c.head_dim, " is odd; rope needs pairs");
  c.context_length = in.integer("qwen3.context_length");
  c.rms_norm_eps = in.real("qwen3.attention.layer_norm_rms_epsilon", 1e-6);
  c.rope_freq_base = in.real("qwen3.rope.freq_base", 10000.0);

  check(in.has("token_embd.weight"), "qwen3", file, ": tensor 'token_embd.weight' is missing");
  c.n_vocab = gguf.tensor("token_embd.weight").dim(0);
  const int64_t q_dim = c.n_head * c.head_dim, kv_dim = c.n_head_kv * c.head_dim;
  m.token_embd_ = in.tensor("token_embd.weight", {c.n_vocab, c.n_embd});
  m.output_norm_ = in.tensor("output_norm.weight", {c.n_embd});
  m.output_ = in.has("output.weight") ? in.tensor("output.weight", {c.n_vocab, c.n_embd}) : m.token_embd_;
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    m.layers_.push_back(Qwen3Layer{
        .attn_norm = in.tensor(p + "attn_norm.weight", {c.n_embd}),
        .attn_q = in.tensor(p + "attn_q.weight", {q_dim, c.n_embd}),
        .attn_k = in.tensor(p + "attn_k.weight", {kv_dim, c.n_embd}),
        .attn_v = in.tensor(p + "attn_v.weight", {kv_dim, c.n_embd}),
        .attn_output = in.tensor(p + "attn_output.weight", {c.n_embd, q_dim}),
        .attn_q_norm = in.tensor(p + "attn_q_norm.weight", {c.head_dim}),
        .attn_k_norm = in.tensor(p + "attn_k_norm.weight", {c.head_dim}),
        .ffn_norm = in.tensor(p + "ffn_norm.weight", {c.n_embd}),
        .ffn_gate = in.tensor(p + "ffn_gate.weight", {c.n_ff, c.n_embd}),
        .ffn_up = in.tensor(p + "ffn_up.weight", {c.n_ff, c.n_embd}),
        .ffn_down = in.tensor(p + "ffn_down.weight", {c.n_embd, c.n_ff}),
    });
  }
  return m;
}

Array Qwen3Model::forward(ExecContext& ctx, std::span<const int32_t> token_ids, KvCache& cache) const {
  const Qwen3Config& c = config_;
  const auto n = static_cast<int64_t>(token_ids.size());
  const int64_t start = cache.size(), kv_len = start + n;
  check(n > 0, "qwen3", "forward needs at least one token");
  check(kv_len <= cache.capacity(), "qwen3", "forward of ", n, " tokens after ", start,
        " overflows the KV cache capacity ", cache.capacity());
  for (int32_t id : token_ids)
    check(id >= 0 && id < c.n_vocab, "qwen3", "token id ", id, " out of range [0, ", c.n_vocab, ")");
  std::vector<int32_t> pos_values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pos_values[static_cast<size_t>(i)] = static_cast<int32_t>(start + i);
  const Array ids = Array::from_values<int32_t>(ctx, {n}, token_ids);
  const Array inp_pos = Array::from_values<int32_t>(ctx, {n}, pos_values);
  const RopeParams rope_params{.mode = RopeMode::neox, .n_dims = c.head_dim, .freq_base = c.rope_freq_base};
  const AttentionOptions attn_options{.causal = true, .scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim))};
  const double eps = c.rms_norm_eps;

  Array inpL = cast(ctx, embedding(ctx, token_embd_, ids), DType::f32);  // [n, n_embd]
  for (int il = 0; il < c.n_layer; ++il) {
    const Qwen3Layer& layer = layers_[static_cast<size_t>(il)];
    const Array attn_norm = rms_norm(ctx, inpL, layer.attn_norm, eps);
    const Array Qcur = linear(ctx, attn_norm, layer.attn_q).reshape({n, c.n_head, c.head_dim});
    const Array Kcur = linear(ctx, attn_norm, layer.attn_k).reshape({n, c.n_head_kv, c.head_dim});
    const Array Vcur = linear(ctx, attn_norm, layer.attn_v).reshape({n, c.n_head_kv, c.head_dim});
    const Array Qcur_normed = rms_norm(ctx, Qcur, layer.attn_q_norm, eps);
    const Array Kcur_normed = rms_norm(ctx, Kcur, layer.attn_k_norm, eps);
    const Array Qrope = rope(ctx, Qcur_normed, inp_pos, rope_params);  // [n, n_head, head_dim]
    const Array Krope = rope(ctx, Kcur_normed, inp_pos, rope_params);

    // Attention over the cache: keys/values [1, n_head_kv, kv_len, head_dim]; query i sits at
    // position start + i and sees keys 0 ... start + i (the op's causal offset kv_len - n).
    cache.write(ctx, il, start, Krope.permute({1, 0, 2}), Vcur.permute({1, 0, 2}));
    const Array kqv = attention(ctx, Qrope.permute({1, 0, 2}).unsqueeze(0), cache.keys(ctx, il, kv_len),
                                cache.values(ctx, il, kv_len), attn_options);  // [1, n_head, n, head_dim]
    const Array kqv_out = contiguous(ctx, kqv.select(0, 0).permute({1, 0, 2})).reshape({n, c.n_head * c.head_dim});
    const Array attn_out = linear(ctx, kqv_out, layer.attn_output);
    const Array ffn_inp = add(ctx, attn_out, inpL);

    const Array ffn_norm = rms_norm(ctx, ffn_inp, layer.ffn_norm, eps);
    const Array ffn_gate = silu(ctx, linear(ctx, ffn_norm, layer.ffn_gate));
    const Array ffn_up = linear(ctx, ffn_norm, layer.ffn_up);
    const Array ffn_out = linear(ctx, mul(ctx, ffn_gate, ffn_up), layer.ffn_down);
    inpL = add(ctx, ffn_out, ffn_inp);
  }
  const Array result_norm = rms_norm(ctx, inpL, output_norm_, eps);
  Array result_output = linear(ctx, result_norm, output_);  // [n, n_vocab]
  cache.advance(n);
  return result_output;
}

Qwen3Session::Qwen3Session(ExecContext& ctx, const Qwen3Model& model, const Qwen3SessionOptions& options)
    : model_(&model),
      batch_(options.batch),
      cache_(ctx,
             KvCacheShape{model.config().n_layer, model.config().n_head_kv, model.config().head_dim,
                          options.context > 0 ? options.context : model.config().context_length},
             options.cache_type) {
  check(batch_ > 0, "Qwen3Session", "batch must be positive, got ", batch_);
}

Array Qwen3Session::forward(ExecContext& ctx, std::span<const int32_t> token_ids) {
  const auto n = static_cast<int64_t>(token_ids.size());
  if (n <= batch_) return model_->forward(ctx, token_ids, cache_);
  std::vector<Array> parts;
  for (int64_t first = 0; first < n; first += batch_)
    parts.push_back(model_->forward(ctx, token_ids.subspan(first, std::min(batch_, n - first)), cache_));
  return concat(ctx, parts, 0);
}

}  // namespace tempra::llm
