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
  m.info_ = ModelInfo{.architecture = "qwen3",
                      .n_vocab = c.n_vocab,
                      .n_embd = c.n_embd,
                      .n_head = c.n_head,
                      .context_length = c.context_length,
                      .cache = KvCacheShape{c.n_layer, c.n_head_kv, c.head_dim, 0}};
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
// the native GEMM's skinny/packed threshold (kSkinnyRows in backend/native/gemm.cpp), not
// measured as a crossover. The two paths round differently (f32 activations against Q8_0/Q8_K
// ones), so under exact numerics a quantized model's logits depend on how a prompt is split into
// forward passes; standard and ggml numerics take the dots (as an integer GEMM) at every size.
constexpr int64_t kDecodedWeightRows = 32;

// Which kernels a sequence's rows take in a batch: the ones they would take alone. A sequence of
// at most kDecodedWeightRows rows (a decode step, a short chunk, a draft) takes `few`: the
// quantized dots, or the float GEMM in slices of at most 32 rows (its skinny path); a longer one
// takes `many`: the decoding GEMM, or the float GEMM's packed path. Each path computes every
// output element in one fixed order whatever the number of rows (backend/native/gemm.cpp), so
// a sequence's logits do not depend on what else is in its batch.
enum class RowPath : uint8_t { few, many };
RowPath row_path(int64_t rows) { return rows > kDecodedWeightRows ? RowPath::many : RowPath::few; }

// y [m, n] = x [m, k] w^T, w [n, k] row-major: ops::linear's dispatch and kernel arguments
// (tempra/ops/linalg.cpp, ops/quantize.cpp), without its allocations. One dispatch differs:
// block-quantized weights on the `many` path take the decoding GEMM under exact numerics (and
// under standard ones on a native arm without an integer GEMM for the format), where
// ops::linear always takes the quantized dots (quant_dot_gemm). `quantized`: room for m
// activation rows in the weight's partner format. The `many` path is only asked for with more
// than 32 rows.
void linear_rows(ExecContext& ctx, const float* x, int64_t m, const Array& w, float* y, void* quantized,
                 Qwen3Numerics numerics, RowPath path) {
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
  const bool decoded = numerics == Qwen3Numerics::exact ||
                       (numerics == Qwen3Numerics::standard && dot->gemm == nullptr && ctx.backend() == Backend::native);
  if (path == RowPath::many && decoded) {
    // Prefill: the weights decoded exactly, the activations kept in f32 (no partner rounding).
    kernels.gemm_quant_weights(m, n, k, x, k, w.raw_data(), w.dtype(), y, n, ctx.threads());
  } else {
    quantize_activations(*dot, x, m, k, quantized, ctx.threads());
    quant_dot_gemm(*dot, m, n, k, quantized, w.raw_data(), y, n, ctx.threads());
  }
}

// y = x w^T over a batch whose rows lie sequence after sequence, rows_of(seq) rows each (none:
// the sequence is skipped): one linear_rows per maximal run of consecutive sequences on the same
// path, so each weight is read once unless decode rows and long prompt chunks alternate.
template <class RowsOf>
void linear_runs(ExecContext& ctx, std::span<const SequenceRows> batch, RowsOf rows_of, const float* x,
                 const Array& w, float* y, void* quantized, Qwen3Numerics numerics) {
  const int64_t k = w.dim(1), n = w.dim(0);
  int64_t first = 0, run = 0;
  RowPath path = RowPath::few;
  for (const SequenceRows& seq : batch) {
    const int64_t rows = rows_of(seq);
    if (rows == 0) continue;
    if (run > 0 && row_path(rows) != path) {
      linear_rows(ctx, x + first * k, run, w, y + first * n, quantized, numerics, path);
      first += run;
      run = 0;
    }
    path = row_path(rows);
    run += rows;
  }
  if (run > 0) linear_rows(ctx, x + first * k, run, w, y + first * n, quantized, numerics, path);
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
    : ForwardBuffers(tokens_in, logit_rows_in, kv_capacity_in) {
  const Qwen3Config& c = model.config();
  check(tokens > 0 && logit_rows >= 0 && logit_rows <= tokens && kv_capacity > 0, "Qwen3Buffers",
        "need 0 < tokens ", tokens, ", 0 <= logit_rows ", logit_rows, " <= tokens, kv_capacity ", kv_capacity,
        " > 0");
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
  logits = rows(std::max<int64_t>(logit_rows, 1), c.n_vocab);
  // One sequence attends at a time: at most min(tokens, kv_capacity) queries over kv_capacity keys.
  kq_scratch = Array::empty(ctx, {c.n_head * std::min(n, kv_capacity) * kv_capacity}, DType::f32);
  quantized_scratch = Array::empty(ctx, {int64_t(std::max<size_t>(1, model.quantized_row_bytes() * size_t(n)))},
                                   DType::u8);
  positions.resize(size_t(n));
}

std::unique_ptr<ForwardBuffers> Qwen3Model::make_buffers(ExecContext& ctx, int64_t tokens, int64_t logit_rows,
                                                         int64_t kv_capacity) const {
  return std::make_unique<Qwen3Buffers>(ctx, *this, tokens, logit_rows, kv_capacity);
}

void Qwen3Model::forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const {
  auto* qwen3_buffers = dynamic_cast<Qwen3Buffers*>(&buffers);
  check(qwen3_buffers != nullptr, "qwen3", "forward needs buffers made by Qwen3Model::make_buffers");
  Qwen3Buffers& b = *qwen3_buffers;
  check_batch("qwen3", info_, batch, b);
  const Qwen3Config& c = config_;
  int64_t n = 0;  // rows in the batch, sequence after sequence
  for (const SequenceRows& seq : batch) {
    for (size_t i = 0; i < seq.tokens.size(); ++i) b.positions[size_t(n) + i] = int32_t(seq.cache->size() + int64_t(i));
    n += int64_t(seq.tokens.size());
  }
  const int64_t E = c.n_embd, F = c.n_ff, q_dim = c.n_head * c.head_dim, kv_dim = c.n_head_kv * c.head_dim;
  const FloatKernels<float>& k = kernels_for(ctx.backend()).f32;
  ThreadPool& pool = ctx.threads();
  const RopeParams rope_params{.mode = RopeMode::neox, .n_dims = c.head_dim, .freq_base = c.rope_freq_base};
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim)), eps = c.rms_norm_eps;
  void* quantized = b.quantized_scratch.raw_data();

  const auto token_rows = [](const SequenceRows& seq) { return int64_t(seq.tokens.size()); };
  auto linear = [&](const float* x, const Array& w, float* y) {
    linear_runs(ctx, batch, token_rows, x, w, y, quantized, numerics_);
  };

  float* inpL = b.inpL.data<float>();
  {
    int64_t row = 0;
    for (const SequenceRows& seq : batch)
      for (int32_t id : seq.tokens) embedding_row(ctx, token_embd_, id, inpL + row++ * E);
  }
  float *attn_norm = b.attn_norm.data<float>(), *Qcur = b.Qcur.data<float>(), *Kcur = b.Kcur.data<float>(),
        *Vcur = b.Vcur.data<float>(), *Qcur_normed = b.Qcur_normed.data<float>(),
        *Kcur_normed = b.Kcur_normed.data<float>(), *Qrope = b.Qrope.data<float>(), *Krope = b.Krope.data<float>(),
        *kqv_out = b.kqv_out.data<float>(), *attn_out = b.attn_out.data<float>(), *ffn_inp = b.ffn_inp.data<float>(),
        *ffn_norm = b.ffn_norm.data<float>(), *ffn_gate = b.ffn_gate.data<float>(), *ffn_up = b.ffn_up.data<float>(),
        *ffn_act = b.ffn_act.data<float>(), *ffn_out = b.ffn_out.data<float>();
  for (int il = 0; il < c.n_layer; ++il) {
    const Qwen3Layer& layer = layers_[static_cast<size_t>(il)];
    // Row-wise steps and the projections run on every row of the batch at once: each weight
    // matrix is read once for all the sequences.
    k.rms_norm(inpL, n, E, layer.attn_norm.data<float>(), eps, attn_norm, pool);
    linear(attn_norm, layer.attn_q, Qcur);  // [n, n_head, hd]
    linear(attn_norm, layer.attn_k, Kcur);  // [n, n_head_kv, hd]
    linear(attn_norm, layer.attn_v, Vcur);
    k.rms_norm(Qcur, n * c.n_head, c.head_dim, layer.attn_q_norm.data<float>(), eps, Qcur_normed, pool);
    k.rms_norm(Kcur, n * c.n_head_kv, c.head_dim, layer.attn_k_norm.data<float>(), eps, Kcur_normed, pool);
    k.rope(Qcur_normed, 1, n, c.n_head, c.head_dim, b.positions.data(), rope_params, Qrope, pool);
    k.rope(Kcur_normed, 1, n, c.n_head_kv, c.head_dim, b.positions.data(), rope_params, Krope, pool);

    // Attention, per sequence over its own cache: its query i sits at position start + i and
    // sees that sequence's keys 0 ... start + i.
    int64_t row = 0;
    for (const SequenceRows& seq : batch) {
      KvCache& cache = *seq.cache;
      const auto m = static_cast<int64_t>(seq.tokens.size());
      const int64_t start = cache.size(), kv_len = start + m;
      cache.write_rows(ctx, il, start, m, Krope + row * kv_dim, Vcur + row * kv_dim);
      // ggml takes its f16-accumulator kernel for fewer than GGML_FA_TILE_Q (64) query rows and
      // a tiled f32 one, like tempra's own attention, from 64 on (ggml-cpu/ops.cpp).
      if (numerics_ == Qwen3Numerics::ggml && cache.type() == KvCacheType::f16 && m < 64)
        cache.attend_ggml(ctx, il, kv_len, Qrope + row * q_dim, m, c.n_head, scale, kqv_out + row * q_dim);
      else
        cache.attend(ctx, il, kv_len, Qrope + row * q_dim, m, c.n_head, scale, b.kq_scratch.data<float>(),
                     kqv_out + row * q_dim);
      row += m;
    }
    linear(kqv_out, layer.attn_output, attn_out);
    for (int64_t j = 0; j < n * E; ++j) ffn_inp[j] = attn_out[j] + inpL[j];

    k.rms_norm(ffn_inp, n, E, layer.ffn_norm.data<float>(), eps, ffn_norm, pool);
    linear(ffn_norm, layer.ffn_gate, ffn_gate);
    k.unary(UnaryOp::silu, rows_ref(static_cast<const float*>(ffn_gate), n, F), rows_ref(ffn_gate, n, F), pool);
    linear(ffn_norm, layer.ffn_up, ffn_up);
    for (int64_t j = 0; j < n * F; ++j) ffn_act[j] = ffn_gate[j] * ffn_up[j];
    linear(ffn_act, layer.ffn_down, ffn_out);
    for (int64_t j = 0; j < n * E; ++j) inpL[j] = ffn_out[j] + ffn_inp[j];
  }
  // Only each sequence's last logit_rows positions reach the head (llama.cpp's output ids do the
  // same), gathered into consecutive rows of result_norm; the head's path follows each
  // sequence's count of logit rows (its row count alone).
  int64_t row = 0, logit_rows = 0;
  float* result_norm = b.result_norm.data<float>();
  for (const SequenceRows& seq : batch) {
    row += int64_t(seq.tokens.size());
    if (seq.logit_rows == 0) continue;
    k.rms_norm(inpL + (row - seq.logit_rows) * E, seq.logit_rows, E, output_norm_.data<float>(), eps,
               result_norm + logit_rows * E, pool);
    logit_rows += seq.logit_rows;
  }
  linear_runs(ctx, batch, [](const SequenceRows& seq) { return seq.logit_rows; }, result_norm, output_,
              b.logits.data<float>(), quantized, numerics_);
  for (const SequenceRows& seq : batch) seq.cache->advance(int64_t(seq.tokens.size()));
}

}  // namespace tempra::llm
