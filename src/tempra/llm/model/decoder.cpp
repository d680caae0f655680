// tempra/llm/model/decoder.cpp: see decoder.h. The steps were Qwen3's forward pass, which
// mirrors llama.cpp's src/models/qwen3.cpp; every architecture now shares them.
#include "tempra/llm/model/decoder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "tempra/backend/kernels.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/core/error.h"
#include "tempra/core/half.h"
#include "tempra/quant/formats.h"

namespace tempra::llm {

ModelInfo DecoderConfig::info(std::string architecture) const {
  return ModelInfo{.architecture = std::move(architecture),
                   .n_vocab = n_vocab,
                   .n_embd = n_embd,
                   .n_head = n_head,
                   .context_length = context_length,
                   .cache = KvCacheShape{.n_layer = n_layer - n_recurrent(),
                                         .n_head_kv = n_head_kv,
                                         .head_dim = head_dim,
                                         .capacity = 0,
                                         .values_in_keys = latent_attention(),
                                         .n_recurrent = n_recurrent(),
                                         .recurrent_floats = n_recurrent() > 0 ? delta_net.state_floats() : 0}};
}

RopeParams DecoderConfig::rope(RopeMode mode, int64_t n_dims) const {
  RopeParams p{.mode = mode, .n_dims = n_dims, .freq_base = rope_freq_base, .freq_scale = rope_freq_scale,
               .ext_factor = yarn_ext_factor, .attn_factor = yarn_attn_factor()};
  if (yarn_ext_factor != 0.0) rope_yarn_corr_dims(p, n_ctx_orig_yarn, yarn_beta_fast, yarn_beta_slow);
  return p;
}

double DecoderConfig::yarn_attn_factor() const {
  float attn_factor = 1.0f;
  if (yarn_ext_factor != 0.0) {
    const auto mscale = [](float scale, float m) { return scale <= 1.0f ? 1.0f : 0.1f * m * std::log(scale) + 1.0f; };
    const float factor = 1.0f / float(rope_freq_scale), log_mul = float(rope_yarn_log_mul);
    const float m = yarn_log_mul_sets_mscale && log_mul != 1.0f ? log_mul : 1.0f;
    attn_factor = log_mul != 0.0f ? mscale(factor, m) / mscale(factor, log_mul) : mscale(factor, 1.0f);
    attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));
  }
  return double(attn_factor * float(rope_attn_factor));
}

DecoderConfig DecoderConfig::read(const ModelLoader& in, bool latent_attention) {
  DecoderConfig c;
  constexpr int64_t kMaxLayers = 4096;
  const auto bounded = [&](const char* key, int64_t v, int64_t max) {
    if (v > max) in.fail(key, " = ", v, " exceeds ", max);
    return v;
  };
  c.n_layer = static_cast<int>(bounded("block_count", in.integer("block_count"), kMaxLayers));
  c.n_embd = bounded("embedding_length", in.integer("embedding_length"), kMaxWidth);
  c.n_ff = bounded("feed_forward_length", in.integer("feed_forward_length"), kMaxWidth);
  c.n_head = bounded("attention.head_count", in.integer("attention.head_count"), kMaxWidth);
  c.n_head_kv = bounded("attention.head_count_kv", in.integer("attention.head_count_kv", c.n_head), kMaxWidth);
  c.head_dim = in.integer("attention.key_length", std::max<int64_t>(1, c.n_embd / c.n_head));
  if (c.head_dim * c.n_head > kMaxWidth) in.fail("attention.key_length ", c.head_dim, " x ", c.n_head, " heads exceeds ", kMaxWidth);
  if (!latent_attention && in.integer("attention.value_length", c.head_dim) != c.head_dim)
    in.fail("attention.value_length differs from key_length");
  if (c.n_head % c.n_head_kv != 0)
    in.fail("head_count ", c.n_head, " is not a multiple of head_count_kv ", c.n_head_kv);
  if (c.head_dim % 2 != 0) in.fail("head dim ", c.head_dim, " is odd; rope needs pairs");
  c.n_rot = in.integer("rope.dimension_count", c.head_dim);
  if (!latent_attention && (c.n_rot <= 0 || c.n_rot > c.head_dim || c.n_rot % 2 != 0))
    in.fail("rope.dimension_count ", c.n_rot, " must be even and in (0, head dim ", c.head_dim, "]");
  c.context_length = in.integer("context_length");
  c.rms_norm_eps = in.real("attention.layer_norm_rms_epsilon", 1e-6);
  c.rope_freq_base = in.real("rope.freq_base", 10000.0);
  // llama.cpp: rope.scaling.factor (or the older rope.scale_linear) divides every position
  // (never under scaling type none); YaRN blends that with the unscaled angles (RopeParams);
  // LongRoPE's factor tensors are not implemented, so a file asking for them is refused.
  const double factor = in.real("rope.scaling.factor", in.real("rope.scale_linear", 0.0));
  const std::string scaling = in.string("rope.scaling.type", "linear");
  if (scaling != "none" && scaling != "linear" && scaling != "yarn")
    in.fail("rope scaling '", scaling, "' is not supported (none, linear and yarn are)");
  c.rope_freq_scale = factor == 0.0 || scaling == "none" ? 1.0 : 1.0 / factor;
  if (scaling == "yarn") {
    c.yarn_ext_factor = 1.0;
    c.n_ctx_orig_yarn = in.integer("rope.scaling.original_context_length", c.context_length);
  }
  c.rope_attn_factor = in.real("rope.scaling.attn_factor", 1.0);
  if (!(c.rope_attn_factor > 0 && c.rope_attn_factor < 1e3) || !(c.rope_freq_scale > 0 && c.rope_freq_scale <= 1e3))
    in.fail("rope scaling factor ", factor, " or attn_factor ", c.rope_attn_factor, " is out of range");
  return c;
}

void DecoderConfig::read_experts(const ModelLoader& in) {
  n_expert = in.integer("expert_count");
  n_expert_used = in.integer("expert_used_count");
  if (n_expert > 1024) in.fail("expert_count ", n_expert, " exceeds llama.cpp's LLAMA_MAX_EXPERTS (1024)");
  if (n_expert_used > n_expert) in.fail("expert_used_count ", n_expert_used, " exceeds expert_count ", n_expert);
  n_expert_groups = in.count("expert_group_count", 0);
  n_group_used = in.count("expert_group_used_count", 0);
  if (n_expert_groups >= n_expert) in.fail("expert_group_count ", n_expert_groups, " must be below expert_count ", n_expert);
  if (n_expert_groups > 1 && (n_expert % n_expert_groups != 0 || n_group_used < 1 || n_group_used >= n_expert_groups ||
                              n_group_used * (n_expert / n_expert_groups) < n_expert_used))
    in.fail("expert_group_count ", n_expert_groups, " and expert_group_used_count ", n_group_used,
            " must divide the ", n_expert, " experts into groups of which 0 < used < count hold the ", n_expert_used,
            " used");
}

void DecoderConfig::require_full_rotation(const ModelLoader& in) const {
  if (n_rot != head_dim)
    in.fail("rope.dimension_count ", n_rot, " differs from the head dim ", head_dim,
            ": partial rotation is not supported for ", in.architecture(), " (nor by llama.cpp)");
}

namespace {

// Past this many rows, exact numerics multiply block-quantized weights with the decoding GEMM
// (Kernels::gemm_quant_weights), whose decode of all n k weights is spread over the rows; fewer
// rows, decode steps among them, keep the quantized dots, which never dequantize. The value is
// the native GEMM's skinny/packed threshold (kSkinnyRows in backend/native/gemm.cpp), not
// measured as a crossover. The two paths round differently (f32 activations against Q8_0/Q8_K
// ones), so under exact numerics a quantized model's logits depend on how a prompt is split into
// forward passes; standard and ggml numerics take the dots (as an integer GEMM) at every size.
constexpr int64_t kDecodedWeightRows = 32;

// Which kernels a sequence's rows take in a batch: the ones they would take alone. A sequence of
// at most kDecodedWeightRows rows (kBf16ProductRows for bf16 products; a decode step, a short
// chunk, a draft) takes `few`: the quantized dots, or the float GEMM in slices of at most 32
// rows (its skinny path); a longer one
// takes `many`: the decoding GEMM, or the float GEMM's packed path. Each path computes every
// output element in one fixed order whatever the number of rows (backend/native/gemm.cpp), so
// a sequence's logits do not depend on what else is in its batch.
// bf16 matrices under standard and ggml numerics move to `many` sooner: there it is
// Kernels::gemm_bf16_products, whose vdpbf16ps panels give every output the same bits at any
// number of rows, and whose per-call packing pays off from about 10 rows (Qwen3-0.6B BF16 on an
// AMD EPYC Zen 4, tempra bench, 1 and 2 threads: pp8 0.81-0.96x the f32 dots, pp10 a tie, pp12
// 1.1-1.2x, pp32 1.6x); `few` keeps the f32 dots on the widened weights, faster for decode steps
// (native/bf16_gemm_avx512.cpp).
constexpr int64_t kBf16ProductRows = 10;
enum class RowPath : uint8_t { few, many };
RowPath row_path(int64_t rows, DType w, Numerics numerics) {
  const bool bf16_products = w == DType::bf16 && numerics != Numerics::exact;
  return rows > (bf16_products ? kBf16ProductRows : kDecodedWeightRows) ? RowPath::many : RowPath::few;
}

// y [m, n] = x [m, k] w^T, w [n, k] row-major: ops::linear's dispatch and kernel arguments
// (tempra/ops/linalg.cpp, ops/quantize.cpp), without its allocations. Two dispatches differ:
// bf16 weights meet activations rounded to bf16 unless the numerics are exact (through
// Kernels::gemm_bf16_products on the `many` path, rounded here for the f32 dots on the `few`
// one), where ops::linear keeps f32 activations; and block-quantized weights on the `many` path
// take the decoding GEMM under exact numerics (and under standard ones on a native arm without
// an integer GEMM for the format), where ops::linear always takes the quantized dots
// (quant_dot_gemm). `quantized`: room for m activation rows in the weight's partner format. The
// `many` path is only asked for with more rows than row_path's threshold. `prepared` (optional)
// says what `quantized` holds of these m rows of x already: their f16 or bf16 rounding (for
// 16-bit products: ggml numerics' f16, the `few` path's bf16) or their encoding in a partner
// format, none (DType::f32) at first; a product that prepares x in the same format again skips
// it, and one that prepares another sets it.
void product_rows(ExecContext& ctx, const float* x, int64_t m, const Array& w, float* y, void* quantized,
                 Numerics numerics, RowPath path, DType* prepared = nullptr) {
  const int64_t n = w.dim(0), k = w.dim(1);
  const Kernels& kernels = kernels_for(ctx.backend());
  // Whether `quantized` holds x in `format` already; if not, the caller writes it now.
  const auto ready = [&](DType format) {
    if (prepared != nullptr && *prepared == format) return true;
    if (prepared != nullptr) *prepared = format;
    return false;
  };
  const bool bf16_products = w.dtype() == DType::bf16 && numerics != Numerics::exact;
  if (bf16_products && path == RowPath::many) {
    // The activations rounded to bf16 (ggml's vec_dot_type for BF16) inside the kernel.
    kernels.gemm_bf16_products(m, n, k, x, k, w.data<bf16_t>(), k, y, n, ctx.threads());
    return;
  }
  if (bf16_products || (numerics == Numerics::ggml && w.dtype() == DType::f16)) {
    // ggml's from_float to the weight's vec_dot_type (round to nearest even), kept as f32.
    auto* rounded = static_cast<float*>(quantized);
    const bool to_f16 = w.dtype() == DType::f16;
    if (!ready(w.dtype()))
      ctx.threads().parallel_for(m * k, 1 << 14, [&](int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i)
          rounded[i] = to_f16 ? f16_bits_to_f32(f32_to_f16_bits(x[i])) : bf16_bits_to_f32(f32_to_bf16_bits(x[i]));
      });
    x = rounded;
  }
  if (w.dtype() == DType::f32 || w.dtype() == DType::f16 || w.dtype() == DType::bf16) {
    // The `few` path in slices the GEMM takes through its skinny path, as each row would alone.
    const int64_t slice = path == RowPath::few ? kDecodedWeightRows : m;
    for (int64_t r = 0; r < m; r += slice) {
      const int64_t rows = std::min(slice, m - r);
      const float* xr = x + r * k;
      float* yr = y + r * n;
      if (w.dtype() == DType::f32)
        kernels.f32.gemm(rows, n, k, xr, k, 1, w.data<float>(), 1, k, yr, n, ctx.threads());
      else if (w.dtype() == DType::f16)
        kernels.gemm_f16_weights(rows, n, k, xr, k, w.data<f16_t>(), k, yr, n, ctx.threads());
      else
        kernels.gemm_bf16_weights(rows, n, k, xr, k, w.data<bf16_t>(), k, yr, n, ctx.threads());
    }
    return;
  }
  const QuantDot* dot = find_quant_dot(w.dtype(), ctx.backend());
  const bool decoded = numerics == Numerics::exact ||
                       (numerics == Numerics::standard && dot->gemm == nullptr && ctx.backend() == Backend::native);
  if (path == RowPath::many && decoded) {
    // Prefill: the weights decoded exactly, the activations kept in f32 (no partner rounding).
    kernels.gemm_quant_weights(m, n, k, x, k, w.raw_data(), w.dtype(), y, n, ctx.threads());
  } else {
    if (!ready(dot->activation)) quantize_activations(*dot, x, m, k, quantized, ctx.threads());
    quant_dot_gemm(*dot, m, n, k, quantized, w.raw_data(), y, n, ctx.threads());
  }
}

// y = x w^T over a batch whose rows lie sequence after sequence, rows_of(seq) rows each (none:
// the sequence is skipped): one linear_rows per maximal run of consecutive sequences on the same
// path, so each weight is read once unless decode rows and long prompt chunks alternate.
template <class RowsOf>
void linear_runs(ExecContext& ctx, std::span<const SequenceRows> batch, RowsOf rows_of, const float* x,
                 const Array& w, float* y, void* quantized, Numerics numerics) {
  const int64_t k = w.dim(1), n = w.dim(0);
  int64_t first = 0, run = 0;
  RowPath path = RowPath::few;
  for (const SequenceRows& seq : batch) {
    const int64_t rows = rows_of(seq);
    if (rows == 0) continue;
    if (run > 0 && row_path(rows, w.dtype(), numerics) != path) {
      product_rows(ctx, x + first * k, run, w, y + first * n, quantized, numerics, path);
      first += run;
      run = 0;
    }
    path = row_path(rows, w.dtype(), numerics);
    run += rows;
  }
  if (run > 0) product_rows(ctx, x + first * k, run, w, y + first * n, quantized, numerics, path);
}

// ggml's ggml_table_gelu_f16 (ggml-cpu.c): gelu_tanh in f32 of every f16 value, rounded to f16.
const std::array<uint16_t, 65536>& ggml_gelu_f16_table() {
  static const std::array<uint16_t, 65536> table = [] {
    std::array<uint16_t, 65536> t{};
    for (uint32_t i = 0; i < 65536; ++i) {
      const float x = f16_bits_to_f32(uint16_t(i));
      const float gelu = 0.5f * x * (1.0f + std::tanh(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x)));
      t[i] = f32_to_f16_bits(gelu);
    }
    return t;
  }();
  return table;
}

TensorRef<const float> rows_ref(const float* p, int64_t rows, int64_t n) { return {p, {rows, n}, {n, 1}}; }
TensorRef<float> rows_ref(float* p, int64_t rows, int64_t n) { return {p, {rows, n}, {n, 1}}; }

DecoderBuffers& decoder_buffers(std::string_view op, ForwardBuffers& buffers) {
  auto* b = dynamic_cast<DecoderBuffers*>(&buffers);
  check(b != nullptr, op, "forward needs buffers made by the model's make_buffers");
  return *b;
}

}  // namespace

DecoderBuffers::DecoderBuffers(ExecContext& ctx, const DecoderConfig& c, size_t quantized_row_bytes,
                               int64_t tokens_in, int64_t logit_rows_in, int64_t kv_capacity_in)
    : ForwardBuffers(tokens_in, logit_rows_in, kv_capacity_in) {
  check(tokens > 0 && logit_rows >= 0 && logit_rows <= tokens && kv_capacity > 0, "DecoderBuffers",
        "need 0 < tokens ", tokens, ", 0 <= logit_rows ", logit_rows, " <= tokens, kv_capacity ", kv_capacity,
        " > 0");
  const int64_t n = tokens, q_dim = c.q_dim(), kv_dim = c.kv_dim();
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
  // The dense FFN's buffers also serve the shared experts.
  if (const int64_t width = std::max(c.dense_ffn ? c.n_ff : 0, c.n_ff_shexp); width > 0) {
    ffn_gate = rows(n, width);
    ffn_up = rows(n, width);
    ffn_act = rows(n, width);
  }
  if (c.latent_attention()) {
    if (c.q_lora_rank > 0) {
      q_a = rows(n, c.q_lora_rank);
      q_a_norm = rows(n, c.q_lora_rank);
    }
    q = rows(n, c.n_head * (c.qk_nope_dim + c.rope_dim));
    q_pe = rows(n, c.n_head * c.rope_dim);
    q_pe_rope = rows(n, c.n_head * c.rope_dim);
    head_in = rows(n, std::max(c.qk_nope_dim, c.kv_lora_rank));
    head_out = rows(n, std::max(c.kv_lora_rank, c.v_head_dim));
    kv_cmpr = rows(n, c.kv_lora_rank);
    kv_cmpr_norm = rows(n, c.kv_lora_rank);
    k_pe = rows(n, c.rope_dim);
    k_pe_rope = rows(n, c.rope_dim);
    kqv_heads = rows(n, c.n_head * c.v_head_dim);
  }
  if (c.delta_net.defined()) {
    const DeltaNetShape& d = c.delta_net;
    qkv_mixed = rows(n, d.channels());
    conv_output = rows(n, d.channels());
    z = rows(n, d.value_dim());
    delta_out = rows(n, d.value_dim());
    delta_norm = rows(n, d.value_dim());
    beta = rows(n, d.v_heads);
    gate = rows(n, d.v_heads);
    Qcur_full = rows(n, 2 * q_dim);
    Qgate = rows(n, q_dim);
  }
  ffn_out = rows(n, c.n_embd);
  result_norm = rows(std::max<int64_t>(logit_rows, 1), c.n_embd);
  logits = rows(std::max<int64_t>(logit_rows, 1), c.n_vocab);
  if (c.n_expert > 0) {
    const int64_t slots = n * c.n_expert_used;
    check(slots <= INT32_MAX, "DecoderBuffers", tokens, " tokens x ", c.n_expert_used,
          " experts each overflow the routing lists");
    moe_probs = rows(n, c.n_expert);
    moe_weights = rows(n, c.n_expert_used);
    moe_rows = rows(n, c.n_embd);
    moe_gate = rows(n, c.n_ff_exp);
    moe_up = rows(n, c.n_ff_exp);
    moe_act = rows(n, c.n_ff_exp);
    moe_down = rows(n, c.n_embd);
    moe_slots = rows(slots, c.n_embd);
    moe_selected.resize(size_t(slots));
    moe_order.resize(size_t(slots));
    moe_offsets.resize(size_t(c.n_expert + 1));
    moe_cursor.resize(size_t(c.n_expert));
    moe_routes.resize(size_t(c.n_layer) * size_t(slots));
    moe_margins.resize(size_t(c.n_layer) * size_t(n));
    moe_sequence.resize(size_t(n));
    moe_rank.resize(size_t(c.n_expert));
    moe_selection.resize(size_t(c.n_expert));
    moe_group_scores.resize(size_t(std::max<int64_t>(c.n_expert_groups, 1)));
    moe_group_rank.resize(size_t(std::max<int64_t>(c.n_expert_groups, 1)));
  }
  // One sequence attends at a time: at most min(tokens, kv_capacity) queries over kv_capacity keys.
  kq_scratch = Array::empty(ctx, {c.n_head * std::min(n, kv_capacity) * kv_capacity}, DType::f32);
  quantized_scratch =
      Array::empty(ctx, {int64_t(std::max<size_t>(1, quantized_row_bytes * size_t(n)))}, DType::u8);
  positions.resize(size_t(n));
  rope_rotations.resize(size_t(kRopeTables * n * std::max({c.head_dim, c.n_rot, c.rope_dim})));
}

void DecoderModel::load_embeddings_and_head(ModelLoader& in, bool latent_attention) {
  config_ = DecoderConfig::read(in, latent_attention);
  config_.n_vocab = in.tensor_rows("token_embd.weight");
  token_embd_ = in.matrix("token_embd.weight", config_.n_vocab, config_.n_embd);
  output_norm_ = in.vector("output_norm.weight", config_.n_embd);
  output_ = in.has("output.weight") ? in.matrix("output.weight", config_.n_vocab, config_.n_embd) : token_embd_;
}

void DecoderModel::load_experts(ModelLoader& in, const std::string& prefix,
                                const std::optional<ExpertStreaming>& stream) {
  const DecoderConfig& c = config_;
  const std::string gate = prefix + "ffn_gate_exps.weight", up = prefix + "ffn_up_exps.weight",
                    down = prefix + "ffn_down_exps.weight";
  stream_ = stream;
  if (stream) {
    streamed_experts_.push_back(ExpertCache::Layer{in.stacked_experts(gate, c.n_expert, c.n_ff_exp, c.n_embd),
                                                   in.stacked_experts(up, c.n_expert, c.n_ff_exp, c.n_embd),
                                                   in.stacked_experts(down, c.n_expert, c.n_embd, c.n_ff_exp)});
    return;
  }
  if (resident_experts_ == nullptr) resident_experts_ = std::make_shared<ResidentExperts>();
  resident_experts_->add_layer(in.experts(gate, c.n_expert, c.n_ff_exp, c.n_embd),
                               in.experts(up, c.n_expert, c.n_ff_exp, c.n_embd),
                               in.experts(down, c.n_expert, c.n_embd, c.n_ff_exp));
}

void DecoderModel::finish_load(const ModelLoader& in) {
  quantized_row_bytes_ = in.quantized_row_bytes();
  info_ = config_.info(in.architecture());
  if (stream_) {
    expert_cache_ = std::make_shared<ExpertCache>(std::move(streamed_experts_), *stream_);
    experts_ = expert_cache_;
  } else {
    experts_ = std::move(resident_experts_);
  }
  streamed_experts_.clear();
  resident_experts_.reset();
}

std::unique_ptr<ForwardBuffers> DecoderModel::make_buffers(ExecContext& ctx, int64_t tokens, int64_t logit_rows,
                                                           int64_t kv_capacity) const {
  return std::make_unique<DecoderBuffers>(ctx, config_, quantized_row_bytes_, tokens, logit_rows, kv_capacity);
}

ForwardPass::ForwardPass(std::string_view op, ExecContext& ctx, std::span<const SequenceRows> batch,
                         ForwardBuffers& buffers, Numerics numerics)
    : ctx_(ctx), batch_(batch), b_(decoder_buffers(op, buffers)), numerics_(numerics) {
  std::fill(b_.moe_margins.begin(), b_.moe_margins.end(), 1.0f);
  b_.rope_tables = 0;  // new positions
  for (const SequenceRows& seq : batch) {
    for (size_t i = 0; i < seq.tokens.size(); ++i)
      b_.positions[size_t(n_) + i] = int32_t(seq.cache->size() + int64_t(i));
    n_ += int64_t(seq.tokens.size());
  }
}

void ForwardPass::embed(const Array& table, float* out) const {
  const int64_t k = table.dim(1);
  const Kernels& kernels = kernels_for(ctx_.backend());
  const auto* data = static_cast<const uint8_t*>(table.raw_data());
  for (const SequenceRows& seq : batch_)
    for (int32_t id : seq.tokens) {
      const uint8_t* row = data + table.dtype().bytes_for(k) * size_t(id);
      if (table.dtype() == DType::f32)
        std::memcpy(out, row, size_t(k) * sizeof(float));
      else if (table.dtype() == DType::f16)
        kernels.f16_to_f32(reinterpret_cast<const f16_t*>(row), out, k, ctx_.threads());
      else if (table.dtype() == DType::bf16)
        kernels.bf16_to_f32(reinterpret_cast<const bf16_t*>(row), out, k, ctx_.threads());
      else
        quant::find_format(table.dtype())->dequantize_row(row, out, k);
      out += k;
    }
}

void ForwardPass::linear(const float* x, const Array& w, float* y) const {
  linear_runs(ctx_, batch_, [](const SequenceRows& seq) { return int64_t(seq.tokens.size()); }, x, w, y,
              b_.quantized_scratch.raw_data(), numerics_);
}

void ForwardPass::linear(const float* x, const Array& w, float* y, const Array& bias) const {
  linear(x, w, y);
  add_bias(w.dim(0), bias, y);
}

void ForwardPass::linears(const float* x, std::initializer_list<Product> products) const {
  // One run of rows on one path (a prompt, or decode steps alone): x is prepared once for every
  // weight that takes it in the same format. A batch mixing both paths takes linear's runs.
  if (n_ == 0) return;
  const auto first =
      std::find_if(batch_.begin(), batch_.end(), [](const SequenceRows& seq) { return !seq.tokens.empty(); });
  DType prepared = DType::f32;  // nothing yet
  for (const Product& p : products) {
    const RowPath path = row_path(int64_t(first->tokens.size()), p.w.dtype(), numerics_);
    const bool one_run = std::all_of(batch_.begin(), batch_.end(), [&](const SequenceRows& seq) {
      return seq.tokens.empty() || row_path(int64_t(seq.tokens.size()), p.w.dtype(), numerics_) == path;
    });
    if (one_run) {
      product_rows(ctx_, x, n_, p.w, p.y, b_.quantized_scratch.raw_data(), numerics_, path, &prepared);
    } else {
      linear(x, p.w, p.y);
    }
    if (p.bias != nullptr) add_bias(p.w.dim(0), *p.bias, p.y);
  }
}

void ForwardPass::add_bias(int64_t width, const Array& bias, float* y) const {
  if (!bias.defined()) return;
  const float* b = bias.data<float>();
  for (int64_t r = 0; r < n_; ++r)
    for (int64_t j = 0; j < width; ++j) y[r * width + j] += b[j];
}

void ForwardPass::moe_ffn(const float* x, const Array& router, const ExpertSource& experts, int layer,
                          const MoeRouting& routing, float* out) const {
  const int64_t E = router.dim(1), n_expert = router.dim(0), n_used = routing.n_used;
  float* probs = b_.moe_probs.data<float>();
  float* weights = b_.moe_weights.data<float>();
  int32_t* selected = b_.moe_selected.data();
  // Router: logits, then softmax as ggml_soft_max (max, exp, sum in double, times 1/sum) or
  // ggml's sigmoid 1 / (1 + exp(-x)).
  linear(x, router, probs);
  for (int64_t t = 0; t < n_; ++t) {
    float* p = probs + t * n_expert;
    if (routing.sigmoid) {
      for (int64_t e = 0; e < n_expert; ++e) p[e] = 1.0f / (1.0f + std::exp(-p[e]));
    } else {
      const float peak = *std::max_element(p, p + n_expert);
      double sum = 0;
      for (int64_t e = 0; e < n_expert; ++e) sum += double(p[e] = std::exp(p[e] - peak));
      const float inv = float(1.0 / sum);
      for (int64_t e = 0; e < n_expert; ++e) p[e] *= inv;
    }
    // The selection scores: the probabilities plus the selection bias (ggml_add).
    float* selection = b_.moe_selection.data();
    if (routing.selection_bias != nullptr) {
      for (int64_t e = 0; e < n_expert; ++e) selection[e] = p[e] + routing.selection_bias[e];
    } else {
      std::copy(p, p + n_expert, selection);
    }
    // Group-limited routing: the experts outside the best groups_used groups (by the sum of each
    // group's two best scores) cannot be chosen.
    float group_margin = 1.0f;
    if (routing.groups > 1) {
      const int64_t size = n_expert / routing.groups;
      float* scores = b_.moe_group_scores.data();
      for (int64_t g = 0; g < routing.groups; ++g) {
        const float* q = selection + g * size;
        const int64_t top = std::max_element(q, q + size) - q;
        float second = -INFINITY;
        for (int64_t e = 0; e < size; ++e)
          if (e != top) second = std::max(second, q[e]);
        scores[g] = size > 1 ? q[top] + second : q[top];
      }
      int32_t* groups = b_.moe_group_rank.data();
      std::iota(groups, groups + routing.groups, 0);
      std::partial_sort(groups, groups + routing.groups_used, groups + routing.groups,
                        [&](int32_t a, int32_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
      const float last_group = scores[groups[routing.groups_used - 1]], next_group = scores[groups[routing.groups_used]];
      group_margin = last_group != 0 ? (last_group - next_group) / std::abs(last_group) : 0.0f;
      for (int64_t r = routing.groups_used; r < routing.groups; ++r)
        std::fill(selection + groups[r] * size, selection + (groups[r] + 1) * size, -INFINITY);
    }
    // The n_used best scored, best first (the lower id first among equals).
    int32_t* chosen = selected + t * n_used;
    int32_t* ranked = b_.moe_rank.data();
    std::iota(ranked, ranked + n_expert, 0);
    std::partial_sort(ranked, ranked + n_used, ranked + n_expert, [&](int32_t a, int32_t b) {
      return selection[a] > selection[b] || (selection[a] == selection[b] && a < b);
    });
    std::copy(ranked, ranked + n_used, chosen);
    // How close the choice was: the last chosen expert's lead over the best one left out,
    // relative to it (1 when every expert is used), and the last chosen group's, kept per
    // layer and row with the choice.
    float left_out = -INFINITY;  // masked experts are -inf: never the best left out
    for (int64_t r = n_used; r < n_expert; ++r) left_out = std::max(left_out, selection[ranked[r]]);
    const float last = selection[chosen[n_used - 1]];
    const float expert_margin = left_out == -INFINITY ? 1.0f : last != 0 ? (last - left_out) / std::abs(last) : 0.0f;
    const float margin = std::min(group_margin, expert_margin);
    b_.moe_margins[size_t(layer) * size_t(b_.tokens) + size_t(t)] = margin;
    int32_t* route = b_.moe_routes.data() + (size_t(layer) * size_t(b_.tokens) + size_t(t)) * size_t(n_used);
    std::copy(chosen, chosen + n_used, route);
    float* w = weights + t * n_used;
    double sum_w = 0;  // ggml_sum_rows sums in double, then rounds
    for (int64_t k = 0; k < n_used; ++k) sum_w += (w[k] = p[chosen[k]]);
    if (routing.normalize) {
      const float total = std::max(float(sum_w), 6.103515625e-5f);  // ggml_clamp's floor in build_moe_ffn
      for (int64_t k = 0; k < n_used; ++k) w[k] /= total;
    }
    if (routing.scale != 0.0f && routing.scale != 1.0f)
      for (int64_t k = 0; k < n_used; ++k) w[k] *= routing.scale;
  }
  // Routing lists: the (token, choice) slots of each expert, in token order.
  int32_t* order = b_.moe_order.data();
  int32_t* offsets = b_.moe_offsets.data();
  std::fill(offsets, offsets + n_expert + 1, 0);
  for (int64_t s = 0; s < n_ * n_used; ++s) ++offsets[selected[s] + 1];
  for (int64_t e = 0; e < n_expert; ++e) offsets[e + 1] += offsets[e];
  int32_t* next = b_.moe_cursor.data();
  std::copy(offsets, offsets + n_expert, next);
  for (int32_t s = 0; s < int32_t(n_ * n_used); ++s) order[next[selected[s]]++] = s;
  float *rows = b_.moe_rows.data<float>(), *g = b_.moe_gate.data<float>(), *u = b_.moe_up.data<float>(),
        *act = b_.moe_act.data<float>(), *d = b_.moe_down.data<float>(), *slots = b_.moe_slots.data<float>();
  const Kernels& kernels = kernels_for(ctx_.backend());
  // The sequence each batch row belongs to: an expert's rows from one sequence take the path
  // that many rows take (RowPath), as they would with that sequence alone in the batch.
  int32_t* sequence_of = b_.moe_sequence.data();
  {
    int64_t row = 0;
    for (size_t s = 0; s < batch_.size(); ++s)
      for (size_t i = 0; i < batch_[s].tokens.size(); ++i) sequence_of[row++] = int32_t(s);
  }
  // The experts the batch uses, for the source to count and start reading (routing is done with
  // moe_rank by now).
  int32_t* used = b_.moe_rank.data();
  int64_t n_used_experts = 0;
  for (int64_t e = 0; e < n_expert; ++e)
    if (offsets[e + 1] > offsets[e]) used[n_used_experts++] = int32_t(e);
  experts.will_use(layer, {used, size_t(n_used_experts)});
  for (int64_t i = 0; i < n_used_experts; ++i) {
    const int32_t e = used[i];
    const int64_t m = offsets[e + 1] - offsets[e];
    const int32_t* mine = order + offsets[e];
    const ExpertMatrices matrices = experts.get(layer, e);
    const int64_t F = matrices.gate->dim(0);
    for (int64_t r = 0; r < m; ++r)
      std::copy(x + (mine[r] / n_used) * E, x + (mine[r] / n_used + 1) * E, rows + r * E);
    // y = x w^T over the m gathered rows, one product per maximal run of consecutive
    // sequences on the same path (the list is in token order, so a sequence's rows are adjacent).
    const auto expert_linear = [&](const float* in, const Array& w, float* y) {
      const int64_t k = w.dim(1), n = w.dim(0);
      int64_t first = 0, run = 0;
      RowPath path = RowPath::few;
      for (int64_t r = 0; r < m;) {
        int64_t end = r + 1;
        while (end < m && sequence_of[mine[end] / n_used] == sequence_of[mine[r] / n_used]) ++end;
        const RowPath here = row_path(end - r, w.dtype(), numerics_);
        if (run > 0 && here != path) {
          product_rows(ctx_, in + first * k, run, w, y + first * n, b_.quantized_scratch.raw_data(), numerics_, path);
          first += run;
          run = 0;
        }
        path = here;
        run += end - r;
        r = end;
      }
      product_rows(ctx_, in + first * k, run, w, y + first * n, b_.quantized_scratch.raw_data(), numerics_, path);
    };
    expert_linear(rows, *matrices.up, u);
    expert_linear(rows, *matrices.gate, g);
    kernels.f32.unary(UnaryOp::silu, rows_ref(static_cast<const float*>(g), m, F), rows_ref(g, m, F), ctx_.threads());
    for (int64_t j = 0; j < m * F; ++j) act[j] = g[j] * u[j];
    expert_linear(act, *matrices.down, d);
    for (int64_t r = 0; r < m; ++r) {
      const float w = weights[mine[r]];
      float* slot = slots + int64_t(mine[r]) * E;
      for (int64_t j = 0; j < E; ++j) slot[j] = d[r * E + j] * w;
    }
  }
  // Each token's experts summed in the order they were chosen (ggml adds the views in turn).
  for (int64_t t = 0; t < n_; ++t) {
    const float* first = slots + t * n_used * E;
    std::copy(first, first + E, out + t * E);
    for (int64_t k = 1; k < n_used; ++k)
      for (int64_t j = 0; j < E; ++j) out[t * E + j] += first[k * E + j];
  }
}

void ForwardPass::rms_norm(const float* x, int64_t rows, int64_t width, const Array& weight, double eps,
                           float* y) const {
  kernels_for(ctx_.backend()).f32.rms_norm(x, rows, width, weight.data<float>(), eps, y, ctx_.threads());
}

void ForwardPass::rope(const float* x, int64_t heads, int64_t head_dim, const RopeParams& params, float* y) const {
  // The rotations of the pass's positions, computed by the first layer with these parameters.
  RopeParams with_table = params;
  const int64_t width = int64_t(b_.rope_rotations.size()) / (DecoderBuffers::kRopeTables * b_.tokens);
  // (Scalar, the specification, computes its own: no table for it.)
  const bool tables = ctx_.backend() == Backend::native && params.n_dims <= width;
  for (int t = 0; t < DecoderBuffers::kRopeTables && tables; ++t) {
    float* table = b_.rope_rotations.data() + t * b_.tokens * width;
    if (t == b_.rope_tables) {
      pool().parallel_for(n_, 16, [&](int64_t first, int64_t last) {
        fill_rope_rotations(params, positions() + first, last - first, table + first * 2 * (params.n_dims / 2));
      });
      b_.rope_keys[size_t(t)] = params;
      ++b_.rope_tables;
    }
    if (b_.rope_keys[size_t(t)] == params) {
      with_table.rotations = table;
      break;
    }
  }
  kernels_for(ctx_.backend()).f32.rope(x, 1, n_, heads, head_dim, positions(), with_table, y, ctx_.threads());
}

void ForwardPass::attention(int il, const float* q, const float* k, const float* v, int64_t n_head, double scale,
                            float* out, int64_t window) const {
  int64_t row = 0;
  for (const SequenceRows& seq : batch_) {
    KvCache& cache = *seq.cache;
    const int64_t head_dim = cache.shape().head_dim, q_dim = n_head * head_dim;
    const int64_t kv_dim = cache.shape().n_head_kv * head_dim;
    const auto m = static_cast<int64_t>(seq.tokens.size());
    const int64_t start = cache.size(), kv_len = start + m;
    cache.write_rows(ctx_, il, start, m, k + row * kv_dim, v ? v + row * kv_dim : nullptr);
    // ggml takes its f16-accumulator kernel for fewer than GGML_FA_TILE_Q (64) query rows and
    // a tiled f32 one, like tempra's own attention, from 64 on (ggml-cpu/ops.cpp).
    if (numerics_ == Numerics::ggml && cache.type() == KvCacheType::f16 && m < 64)
      cache.attend_ggml(ctx_, il, kv_len, q + row * q_dim, m, n_head, scale, out + row * q_dim, window);
    else
      cache.attend(ctx_, il, kv_len, q + row * q_dim, m, n_head, scale, b_.kq_scratch.data<float>(),
                   out + row * q_dim, window);
    row += m;
  }
}

namespace {
// dst[r, dst_at + j] = src[r, src_at + j] for j < width over `rows` rows of the given widths.
void copy_columns(const float* src, int64_t src_width, int64_t src_at, float* dst, int64_t dst_width,
                  int64_t dst_at, int64_t width, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy(src + r * src_width + src_at, src + r * src_width + src_at + width, dst + r * dst_width + dst_at);
}
}  // namespace

void ForwardPass::latent_attention(int il, const float* x, const LatentAttentionWeights& w, const RopeParams& rope,
                                   double kq_scale, double eps, float* out) const {
  const int64_t H = int64_t(w.attn_k_b.size()), nope = w.attn_k_b.front().dim(1);
  const int64_t R = rope.n_dims, L = w.attn_k_b.front().dim(0), V = w.attn_v_b.front().dim(0);
  const int64_t qk = nope + R, row = L + R;  // a query head before absorption; a cache row
  float *q = b_.q.data<float>(), *q_pe = b_.q_pe.data<float>(), *q_pe_rope = b_.q_pe_rope.data<float>(),
        *head_in = b_.head_in.data<float>(), *head_out = b_.head_out.data<float>(),
        *kv_cmpr_pe = b_.Kcur.data<float>(), *kv_cmpr = b_.kv_cmpr.data<float>(),
        *kv_cmpr_norm = b_.kv_cmpr_norm.data<float>(), *k_pe = b_.k_pe.data<float>(),
        *k_pe_rope = b_.k_pe_rope.data<float>(), *Kcur = b_.Krope.data<float>(), *Qcur = b_.Qcur.data<float>(),
        *kqv_out = b_.kqv_out.data<float>(), *kqv_heads = b_.kqv_heads.data<float>();
  if (w.attn_q_a.defined()) {
    linear(x, w.attn_q_a, b_.q_a.data<float>());
    rms_norm(b_.q_a.data<float>(), n_, w.attn_q_a.dim(0), w.attn_q_a_norm, eps, b_.q_a_norm.data<float>());
    linear(b_.q_a_norm.data<float>(), w.attn_q_b, q);
  } else {
    linear(x, w.attn_q, q);
  }
  linear(x, w.attn_kv_a_mqa, kv_cmpr_pe);
  copy_columns(kv_cmpr_pe, row, 0, kv_cmpr, L, 0, L, n_);
  copy_columns(kv_cmpr_pe, row, L, k_pe, R, 0, R, n_);
  this->rope(k_pe, 1, R, rope, k_pe_rope);
  rms_norm(kv_cmpr, n_, L, w.attn_kv_a_norm, eps, kv_cmpr_norm);
  // The cache row [latent | k_pe] (llama.cpp's Kcur) and the query rows [absorbed | q_pe].
  copy_columns(kv_cmpr_norm, L, 0, Kcur, row, 0, L, n_);
  copy_columns(k_pe_rope, R, 0, Kcur, row, L, R, n_);
  for (int64_t h = 0; h < H; ++h) copy_columns(q, H * qk, h * qk + nope, q_pe, H * R, h * R, R, n_);
  this->rope(q_pe, H, R, rope, q_pe_rope);
  for (int64_t h = 0; h < H; ++h) {
    copy_columns(q, H * qk, h * qk, head_in, nope, 0, nope, n_);
    linear(head_in, w.attn_k_b[size_t(h)], head_out);
    copy_columns(head_out, L, 0, Qcur, H * row, h * row, L, n_);
    copy_columns(q_pe_rope, H * R, h * R, Qcur, H * row, h * row + L, R, n_);
  }
  // Each value is its key row; the first L dims of every head's output are the attended latent.
  attention(il, Qcur, Kcur, nullptr, H, kq_scale, kqv_out);
  for (int64_t h = 0; h < H; ++h) {
    copy_columns(kqv_out, H * row, h * row, head_in, L, 0, L, n_);
    linear(head_in, w.attn_v_b[size_t(h)], head_out);
    copy_columns(head_out, V, 0, kqv_heads, H * V, h * V, V, n_);
  }
  linear(kqv_heads, w.attn_output, out);
}

void ForwardPass::gated_ffn(const float* x, const Array& gate, const Array& up, const Array& down,
                            UnaryOp act, float* out) const {
  const int64_t F = gate.dim(0);
  float *ffn_gate = b_.ffn_gate.data<float>(), *ffn_up = b_.ffn_up.data<float>(), *ffn_act = b_.ffn_act.data<float>();
  linears(x, {{gate, ffn_gate}, {up, ffn_up}});
  if (act == UnaryOp::gelu_tanh && numerics_ == Numerics::ggml) {
    // ggml_vec_geglu_f32 under GGML_GELU_FP16: gelu looked up at the gate rounded to f16.
    const std::array<uint16_t, 65536>& table = ggml_gelu_f16_table();
    ctx_.threads().parallel_for(n_ * F, 1 << 14, [&](int64_t first, int64_t last) {
      for (int64_t j = first; j < last; ++j) {
        const float g = ffn_gate[j];
        const float gelu = g <= -10.0f ? 0.0f : g >= 10.0f ? g : f16_bits_to_f32(table[f32_to_f16_bits(g)]);
        ffn_act[j] = gelu * ffn_up[j];
      }
    });
    linear(ffn_act, down, out);
    return;
  }
  unary(act, ffn_gate, F);
  mul(ffn_gate, ffn_up, F, ffn_act);
  linear(ffn_act, down, out);
}

void ForwardPass::add(const float* a, const float* b, int64_t width, float* out) const {
  for (int64_t j = 0; j < n_ * width; ++j) out[j] = a[j] + b[j];
}

void ForwardPass::mul(const float* a, const float* b, int64_t width, float* out) const {
  for (int64_t j = 0; j < n_ * width; ++j) out[j] = a[j] * b[j];
}

void ForwardPass::unary(UnaryOp op, float* x, int64_t width) const {
  kernels_for(ctx_.backend()).f32.unary(op, rows_ref(static_cast<const float*>(x), n_, width), rows_ref(x, n_, width),
                                        ctx_.threads());
}

void ForwardPass::scale(float* x, int64_t width, float s) const {
  for (int64_t j = 0; j < n_ * width; ++j) x[j] *= s;
}

void ForwardPass::output(const float* hidden, const Array& norm, double eps, const Array& head, double softcap) const {
  // Only each sequence's last logit_rows positions reach the head (llama.cpp's output ids do the
  // same), gathered into consecutive rows of result_norm; the head's path follows each
  // sequence's count of logit rows (its row count alone).
  const int64_t E = norm.dim(0);
  int64_t row = 0, logit_rows = 0;
  float* result_norm = b_.result_norm.data<float>();
  for (const SequenceRows& seq : batch_) {
    row += int64_t(seq.tokens.size());
    if (seq.logit_rows == 0) continue;
    rms_norm(hidden + (row - seq.logit_rows) * E, seq.logit_rows, E, norm, eps, result_norm + logit_rows * E);
    logit_rows += seq.logit_rows;
  }
  linear_runs(ctx_, batch_, [](const SequenceRows& seq) { return seq.logit_rows; }, result_norm, head,
              b_.logits.data<float>(), b_.quantized_scratch.raw_data(), numerics_);
  if (softcap > 0) {
    // ggml: scale by 1/cap, tanh, scale by cap, each in f32.
    const float cap = float(softcap), inv = 1.0f / cap;
    float* logits = b_.logits.data<float>();
    for (int64_t j = 0; j < logit_rows * head.dim(0); ++j) logits[j] = std::tanh(logits[j] * inv) * cap;
  }
  for (const SequenceRows& seq : batch_) seq.cache->advance(int64_t(seq.tokens.size()));
}

}  // namespace tempra::llm
