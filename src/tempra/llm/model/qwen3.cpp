// tempra/llm/model/qwen3.cpp: see qwen3.h. The forward pass mirrors llama.cpp's src/models/qwen3.cpp
// line for line; intermediates carry its debug-dump names (attn_norm, Qcur, ffn_inp, ...).
//
// The pass calls the kernel table directly on the buffers of a Qwen3Buffers, with the very
// arguments the ops (rms_norm, linear, rope, silu, add, mul) would pass for the same arrays, so
// its bits are those of the op-by-op graph; shapes were validated at load and at the API entry.
#include "tempra/llm/model/qwen3.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <cstring>

#include "tempra/backend/kernels.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/core/error.h"
#include "tempra/core/half.h"
#include "tempra/ops/ops.h"
#include "tempra/quant/formats.h"

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
  auto require_weight = [&](const Array& w, const std::string& name, bool matrix) {
    if (!matrix) {
      check(w.dtype() == DType::f32, "qwen3", file, ": tensor '", name, "' must be f32, got ", w.dtype().name());
      return;
    }
    if (w.dtype().is_block_quantized()) {
      const QuantDot* dot = find_quant_dot(w.dtype());
      check(dot != nullptr, "qwen3", file, ": tensor '", name, "' is ", w.dtype().name(),
            ", which has no quantized dot product");
      m.quantized_row_bytes_ = std::max(m.quantized_row_bytes_, dot->activation.bytes_for(w.dim(1)));
    } else {
      check(w.dtype() == DType::f32 || w.dtype() == DType::f16 || w.dtype() == DType::bf16, "qwen3", file,
            ": tensor '", name, "' has unsupported type ", w.dtype().name());
      // Qwen3Numerics::ggml rounds the activation rows into the same scratch.
      if (w.dtype() != DType::f32) m.quantized_row_bytes_ = std::max(m.quantized_row_bytes_, sizeof(float) * w.dim(1));
    }
    check(w.strides()[1] == 1 && w.strides()[0] == w.dim(1), "qwen3", file, ": tensor '", name,
          "' is not stored row-major");
  };
  check(quant::find_format(m.token_embd_.dtype()) != nullptr || !m.token_embd_.dtype().is_block_quantized(), "qwen3",
        file, ": token_embd.weight has an undecodable type");
  require_weight(m.token_embd_, "token_embd.weight", true);
  require_weight(m.output_norm_, "output_norm.weight", false);
  require_weight(m.output_, "output.weight", true);
  for (const Qwen3Layer& l : m.layers_) {
    for (const Array* w : {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_gate, &l.ffn_up, &l.ffn_down})
      require_weight(*w, "a layer matrix", true);
    for (const Array* w : {&l.attn_norm, &l.attn_q_norm, &l.attn_k_norm, &l.ffn_norm})
      require_weight(*w, "a layer norm", false);
  }
  return m;
}

namespace {

// Past this many rows, exact numerics multiply block-quantized weights with the decoding GEMM
// (Kernels::gemm_quant_weights), whose decode of all n k weights is spread over the rows; fewer
// rows, decode steps among them, keep the quantized dots, which never dequantize. The value is
// borrowed from the native GEMM's skinny/packed threshold, not measured as a crossover (only
// 512-token prefills were timed: docs/BENCHMARK.md). The two paths round differently (f32
// activations against Q8_0/Q8_K ones), so a quantized model's logits depend on the batch split.
constexpr int64_t kDecodedWeightRows = 32;

// y [m, n] = x [m, k] w^T, w [n, k] row-major: ops::linear's dispatch and kernel arguments
// (tempra/ops/linalg.cpp, ops/quantize.cpp), without its allocations. One dispatch differs:
// block-quantized weights under exact numerics past kDecodedWeightRows rows take the decoding
// GEMM, where ops::linear always takes the quantized dots. `quantized`: room for m activation
// rows in the weight's partner format.
void linear_rows(ExecContext& ctx, const float* x, int64_t m, const Array& w, float* y, void* quantized,
                 Qwen3Numerics numerics) {
  const int64_t n = w.dim(0), k = w.dim(1);
  const Kernels& kernels = kernels_for(ctx.backend());
  if (numerics == Qwen3Numerics::ggml && (w.dtype() == DType::f16 || w.dtype() == DType::bf16)) {
    // ggml's from_float to the weight's vec_dot_type (round to nearest even), kept as f32.
    auto* rounded = static_cast<float*>(quantized);
    const bool to_f16 = w.dtype() == DType::f16;
    ctx.threads().parallel_for(m * k, 1 << 14, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i)
        rounded[i] = to_f16 ? f16_bits_to_f32(f32_to_f16_bits(x[i])) : bf16_bits_to_f32(f32_to_bf16_bits(x[i]));
    });
    x = rounded;
  }
  if (w.dtype() == DType::f32) {
    kernels.f32.gemm(m, n, k, x, k, 1, w.data<float>(), 1, k, y, n, ctx.threads());
  } else if (w.dtype() == DType::f16) {
    kernels.gemm_f16_weights(m, n, k, x, k, w.data<f16_t>(), k, y, n, ctx.threads());
  } else if (w.dtype() == DType::bf16) {
    kernels.gemm_bf16_weights(m, n, k, x, k, w.data<bf16_t>(), k, y, n, ctx.threads());
  } else if (numerics == Qwen3Numerics::exact && m > kDecodedWeightRows) {
    // Prefill: the weights decoded exactly, the activations kept in f32 (no partner rounding).
    kernels.gemm_quant_weights(m, n, k, x, k, w.raw_data(), w.dtype(), y, n, ctx.threads());
  } else {
    const QuantDot* dot = find_quant_dot(w.dtype(), ctx.backend());
    const quant::QuantFormat* partner = quant::find_format(dot->activation);
    const size_t w_row = w.dtype().bytes_for(k), x_row = dot->activation.bytes_for(k);
    auto* xq = static_cast<uint8_t*>(quantized);
    ctx.threads().parallel_for(m, 1 + 16384 / (k + 1), [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) partner->quantize_row(x + r * k, xq + size_t(r) * x_row, k);
    });
    const auto* wp = static_cast<const uint8_t*>(w.raw_data());
    // A task is a block of kWeightRows weight rows against every activation row: the block
    // (~17 KiB of Q8_0 at k = 1024) stays in L1 while the activations stream past it, so a
    // prompt of m rows reads the weights from memory once, not m times. Each output element is
    // still one dot with one owner: any split, any blocking gives the same bits.
    constexpr int64_t kWeightRows = 16;
    const int64_t blocks = (n + kWeightRows - 1) / kWeightRows;
    ctx.threads().parallel_for(blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t j0 = first * kWeightRows; j0 < std::min(n, last * kWeightRows); j0 += kWeightRows) {
        const int64_t j1 = std::min(n, j0 + kWeightRows);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = j0; j < j1; ++j) y[r * n + j] = dot->dot(k, wp + size_t(j) * w_row, xq + size_t(r) * x_row);
      }
    });
  }
}

// Row `id` of the token embedding, widened to f32 (exact for f16/bf16; the format's reference
// decoder for block-quantized tables, as ops::embedding decodes them).
void embedding_row(ExecContext& ctx, const Array& table, int32_t id, float* out) {
  const int64_t k = table.dim(1);
  const auto* row = static_cast<const uint8_t*>(table.raw_data()) + table.dtype().bytes_for(k) * size_t(id);
  const Kernels& kernels = kernels_for(ctx.backend());
  if (table.dtype() == DType::f32) std::memcpy(out, row, size_t(k) * sizeof(float));
  else if (table.dtype() == DType::f16) kernels.f16_to_f32(reinterpret_cast<const f16_t*>(row), out, k, ctx.threads());
  else if (table.dtype() == DType::bf16)
    kernels.bf16_to_f32(reinterpret_cast<const bf16_t*>(row), out, k, ctx.threads());
  else quant::find_format(table.dtype())->dequantize_row(row, out, k);
}

TensorRef<const float> rows_ref(const float* p, int64_t rows, int64_t n) { return {p, {rows, n}, {n, 1}}; }
TensorRef<float> rows_ref(float* p, int64_t rows, int64_t n) { return {p, {rows, n}, {n, 1}}; }

}  // namespace

Qwen3Buffers::Qwen3Buffers(ExecContext& ctx, const Qwen3Model& model, int64_t tokens_in, int64_t logit_rows_in,
                           int64_t kv_capacity_in)
    : tokens(tokens_in), logit_rows(logit_rows_in), kv_capacity(kv_capacity_in) {
  const Qwen3Config& c = model.config();
  check(tokens > 0 && logit_rows >= 0 && logit_rows <= tokens && kv_capacity >= tokens, "Qwen3Buffers",
        "need 0 < tokens ", tokens, ", 0 <= logit_rows ", logit_rows, " <= tokens, kv_capacity ", kv_capacity,
        " >= tokens");
  const int64_t n = tokens, q_dim = c.n_head * c.head_dim, kv_dim = c.n_head_kv * c.head_dim;
  auto rows = [&](int64_t r, int64_t width) { return Array::empty(ctx, {r, width}, DType::f32); };
  inpL = rows(n, c.n_embd);
  attn_norm = rows(n, c.n_embd);
  Qcur = rows(n, q_dim);
  Kcur = rows(n, kv_dim);
  Vcur = rows(n, kv_dim);
  Qcur_normed = rows(n, q_dim);
  Kcur_normed = rows(n, kv_dim);
  Qrope = rows(n, q_dim);
  Krope = rows(n, kv_dim);
  kqv_out = rows(n, q_dim);
  attn_out = rows(n, c.n_embd);
  ffn_inp = rows(n, c.n_embd);
  ffn_norm = rows(n, c.n_embd);
  ffn_gate = rows(n, c.n_ff);
  ffn_up = rows(n, c.n_ff);
  ffn_act = rows(n, c.n_ff);
  ffn_out = rows(n, c.n_embd);
  result_norm = rows(std::max<int64_t>(logit_rows, 1), c.n_embd);
  result_output = rows(std::max<int64_t>(logit_rows, 1), c.n_vocab);
  kq_scratch = Array::empty(ctx, {c.n_head * n * kv_capacity}, DType::f32);
  quantized_scratch = Array::empty(ctx, {int64_t(std::max<size_t>(1, model.quantized_row_bytes() * size_t(n)))},
                                   DType::u8);
  positions.resize(size_t(n));
}

void Qwen3Model::forward(ExecContext& ctx, std::span<const int32_t> token_ids, KvCache& cache,
                         Qwen3Buffers& b) const {
  const Qwen3Config& c = config_;
  const auto n = static_cast<int64_t>(token_ids.size());
  const int64_t start = cache.size(), kv_len = start + n;
  check(n > 0, "qwen3", "forward needs at least one token");
  check(kv_len <= cache.capacity(), "qwen3", "forward of ", n, " tokens after ", start,
        " overflows the KV cache capacity ", cache.capacity());
  check(n <= b.tokens && kv_len <= b.kv_capacity, "qwen3", "forward of ", n, " tokens over ", kv_len,
        " positions does not fit buffers for ", b.tokens, " tokens and ", b.kv_capacity, " positions");
  for (int32_t id : token_ids)
    check(id >= 0 && id < c.n_vocab, "qwen3", "token id ", id, " out of range [0, ", c.n_vocab, ")");
  const int64_t E = c.n_embd, F = c.n_ff;
  const int64_t logit_rows = std::min(b.logit_rows, n);
  const FloatKernels<float>& k = kernels_for(ctx.backend()).f32;
  ThreadPool& pool = ctx.threads();
  const RopeParams rope_params{.mode = RopeMode::neox, .n_dims = c.head_dim, .freq_base = c.rope_freq_base};
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim)), eps = c.rms_norm_eps;
  for (int64_t i = 0; i < n; ++i) b.positions[size_t(i)] = static_cast<int32_t>(start + i);
  void* quantized = b.quantized_scratch.raw_data();

  float* inpL = b.inpL.data<float>();
  for (int64_t i = 0; i < n; ++i) embedding_row(ctx, token_embd_, token_ids[size_t(i)], inpL + i * E);
  float *attn_norm = b.attn_norm.data<float>(), *Qcur = b.Qcur.data<float>(), *Kcur = b.Kcur.data<float>(),
        *Vcur = b.Vcur.data<float>(), *Qcur_normed = b.Qcur_normed.data<float>(),
        *Kcur_normed = b.Kcur_normed.data<float>(), *Qrope = b.Qrope.data<float>(), *Krope = b.Krope.data<float>(),
        *kqv_out = b.kqv_out.data<float>(), *attn_out = b.attn_out.data<float>(), *ffn_inp = b.ffn_inp.data<float>(),
        *ffn_norm = b.ffn_norm.data<float>(), *ffn_gate = b.ffn_gate.data<float>(), *ffn_up = b.ffn_up.data<float>(),
        *ffn_act = b.ffn_act.data<float>(), *ffn_out = b.ffn_out.data<float>();
  for (int il = 0; il < c.n_layer; ++il) {
    const Qwen3Layer& layer = layers_[static_cast<size_t>(il)];
    k.rms_norm(inpL, n, E, layer.attn_norm.data<float>(), eps, attn_norm, pool);
    linear_rows(ctx, attn_norm, n, layer.attn_q, Qcur, quantized, numerics_);  // [n, n_head, hd]
    linear_rows(ctx, attn_norm, n, layer.attn_k, Kcur, quantized, numerics_);  // [n, n_head_kv, hd]
    linear_rows(ctx, attn_norm, n, layer.attn_v, Vcur, quantized, numerics_);
    k.rms_norm(Qcur, n * c.n_head, c.head_dim, layer.attn_q_norm.data<float>(), eps, Qcur_normed, pool);
    k.rms_norm(Kcur, n * c.n_head_kv, c.head_dim, layer.attn_k_norm.data<float>(), eps, Kcur_normed, pool);
    k.rope(Qcur_normed, 1, n, c.n_head, c.head_dim, b.positions.data(), rope_params, Qrope, pool);
    k.rope(Kcur_normed, 1, n, c.n_head_kv, c.head_dim, b.positions.data(), rope_params, Krope, pool);

    // Attention over the cache: query i sits at position start + i and sees keys 0 ... start + i.
    cache.write_rows(ctx, il, start, n, Krope, Vcur);
    // ggml takes its f16-accumulator kernel for fewer than GGML_FA_TILE_Q (64) query rows and
    // a tiled f32 one, like tempra's own attention, from 64 on (ggml-cpu/ops.cpp).
    if (numerics_ == Qwen3Numerics::ggml && cache.type() == KvCacheType::f16 && n < 64)
      cache.attend_ggml(ctx, il, kv_len, Qrope, n, c.n_head, scale, kqv_out);
    else
      cache.attend(ctx, il, kv_len, Qrope, n, c.n_head, scale, b.kq_scratch.data<float>(), kqv_out);
    linear_rows(ctx, kqv_out, n, layer.attn_output, attn_out, quantized, numerics_);
    for (int64_t j = 0; j < n * E; ++j) ffn_inp[j] = attn_out[j] + inpL[j];

    k.rms_norm(ffn_inp, n, E, layer.ffn_norm.data<float>(), eps, ffn_norm, pool);
    linear_rows(ctx, ffn_norm, n, layer.ffn_gate, ffn_gate, quantized, numerics_);
    k.unary(UnaryOp::silu, rows_ref(static_cast<const float*>(ffn_gate), n, F), rows_ref(ffn_gate, n, F), pool);
    linear_rows(ctx, ffn_norm, n, layer.ffn_up, ffn_up, quantized, numerics_);
    for (int64_t j = 0; j < n * F; ++j) ffn_act[j] = ffn_gate[j] * ffn_up[j];
    linear_rows(ctx, ffn_act, n, layer.ffn_down, ffn_out, quantized, numerics_);
    for (int64_t j = 0; j < n * E; ++j) inpL[j] = ffn_out[j] + ffn_inp[j];
  }
  // Only the last logit_rows positions reach the head (llama.cpp's output ids do the same).
  const float* last = inpL + (n - logit_rows) * E;
  if (logit_rows > 0) {
    k.rms_norm(last, logit_rows, E, output_norm_.data<float>(), eps, b.result_norm.data<float>(), pool);
    linear_rows(ctx, b.result_norm.data<float>(), logit_rows, output_, b.result_output.data<float>(), quantized,
                numerics_);
  }
  cache.advance(n);
}

Array Qwen3Model::forward(ExecContext& ctx, std::span<const int32_t> token_ids, KvCache& cache) const {
  const auto n = static_cast<int64_t>(token_ids.size());
  check(n > 0, "qwen3", "forward needs at least one token");
  check(cache.size() + n <= cache.capacity(), "qwen3", "forward of ", n, " tokens after ", cache.size(),
        " overflows the KV cache capacity ", cache.capacity());
  Qwen3Buffers buffers(ctx, *this, n, n, cache.size() + n);
  forward(ctx, token_ids, cache, buffers);
  return buffers.result_output;
}

Qwen3Session::Qwen3Session(ExecContext& ctx, const Qwen3Model& model, const Qwen3SessionOptions& options)
    : model_(&model),
      batch_(options.batch),
      cache_(ctx,
             KvCacheShape{model.config().n_layer, model.config().n_head_kv, model.config().head_dim,
                          options.context > 0 ? options.context : model.config().context_length},
             options.cache_type),
      step_(ctx, model, 1, 1, cache_.capacity()) {
  check(batch_ > 0, "Qwen3Session", "batch must be positive, got ", batch_);
}

Array Qwen3Session::forward(ExecContext& ctx, std::span<const int32_t> token_ids) {
  const auto n = static_cast<int64_t>(token_ids.size());
  if (n == 1) {  // a decode step: the session's buffers, then a copy the caller may keep
    const std::span<const float> logits = decode(ctx, token_ids[0]);
    return Array::from_values<float>(ctx, {1, model_->config().n_vocab}, logits);
  }
  if (n <= batch_) return model_->forward(ctx, token_ids, cache_);
  std::vector<Array> parts;
  for (int64_t first = 0; first < n; first += batch_)
    parts.push_back(model_->forward(ctx, token_ids.subspan(first, std::min(batch_, n - first)), cache_));
  return concat(ctx, parts, 0);
}

std::span<const float> Qwen3Session::prefill(ExecContext& ctx, std::span<const int32_t> token_ids) {
  const auto n = static_cast<int64_t>(token_ids.size());
  check(n > 0, "Qwen3Session", "prefill needs at least one token");
  if (n == 1) return decode(ctx, token_ids[0]);
  check(cache_.size() + n <= cache_.capacity(), "qwen3", "forward of ", n, " tokens after ", cache_.size(),
        " overflows the KV cache capacity ", cache_.capacity());
  // One set of batch-sized buffers for every batch; only the last batch computes logits.
  Qwen3Buffers buffers(ctx, *model_, std::min(batch_, n), 1, cache_.size() + n);
  for (int64_t first = 0; first < n; first += batch_) {
    const int64_t count = std::min(batch_, n - first);
    buffers.logit_rows = first + count == n ? 1 : 0;
    model_->forward(ctx, token_ids.subspan(first, count), cache_, buffers);
  }
  const float* logits = buffers.result_output.data<float>();
  std::copy(logits, logits + model_->config().n_vocab, step_.result_output.data<float>());
  return {step_.result_output.data<float>(), size_t(model_->config().n_vocab)};
}

std::span<const float> Qwen3Session::decode(ExecContext& ctx, int32_t token) {
  model_->forward(ctx, std::span<const int32_t>(&token, 1), cache_, step_);
  return {step_.result_output.data<float>(), size_t(model_->config().n_vocab)};
}

}  // namespace tempra::llm
