// tests/apps/qwen3_fixture.cpp: see qwen3_fixture.h. Shapes follow llama.cpp's
// src/models/qwen3.cpp (ggml order, innermost first); keys follow its qwen3 hparams loader and
// llama-vocab.cpp's gpt2 branch.
#include "apps/qwen3_fixture.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tempra/core/half.h"
#include "tempra/io/gguf_writer.h"

namespace tempra::testing {
namespace {

using io::GgufArray;
using io::GgufValue;

class Weights {
 public:
  explicit Weights(uint32_t seed) : rng_(seed) {}

  // Rows of uniform noise times a per-row scale spread over four decades (plus an occasional
  // outlier), stored as `type`.
  std::shared_ptr<std::vector<std::byte>> matrix(int64_t cols, int64_t rows, int32_t type) {
    std::vector<float> v(static_cast<size_t>(cols * rows));
    for (int64_t r = 0; r < rows; ++r) {
      const float scale = 0.001f * std::pow(10.0f, 3.0f * uniform01());
      for (int64_t c = 0; c < cols; ++c) v[r * cols + c] = scale * (2.0f * uniform01() - 1.0f);
      v[r * cols + static_cast<int64_t>(uniform01() * cols) % cols] *= 8.0f;
    }
    return encode(v, type);
  }
  std::shared_ptr<std::vector<std::byte>> norm(int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = 1.0f + 0.1f * (2.0f * uniform01() - 1.0f);
    return encode(v, 0);
  }

 private:
  float uniform01() { return static_cast<float>(rng_() >> 8) * (1.0f / 16777216.0f); }

  static std::shared_ptr<std::vector<std::byte>> encode(const std::vector<float>& v, int32_t type) {
    auto out = std::make_shared<std::vector<std::byte>>();
    if (type == 0) {
      out->resize(v.size() * 4);
      std::memcpy(out->data(), v.data(), out->size());
      return out;
    }
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = type == 1 ? f32_to_f16_bits(v[i]) : f32_to_bf16_bits(v[i]);
    out->resize(h.size() * 2);
    std::memcpy(out->data(), h.data(), out->size());
    return out;
  }

  std::mt19937 rng_;
};

GgufValue strings(std::vector<std::string> v) {
  return {GgufArray{std::move(v)}};
}

}  // namespace

void write_qwen3_model(const std::filesystem::path& path, const Qwen3Spec& s) {
  io::GgufWriter w;
  auto& m = w.metadata();
  m.add("general.architecture", {std::string("qwen3")});
  m.add("general.name", {std::string("tempra-tiny-qwen3")});
  m.add("general.file_type", {uint32_t{s.weight_type == 0 ? 0u : s.weight_type == 1 ? 1u : 32u}});
  m.add("qwen3.block_count", {uint32_t(s.n_layer)});
  m.add("qwen3.context_length", {uint32_t{256}});
  m.add("qwen3.embedding_length", {uint32_t(s.n_embd)});
  m.add("qwen3.feed_forward_length", {uint32_t(s.n_ff)});
  m.add("qwen3.attention.head_count", {uint32_t(s.n_head)});
  m.add("qwen3.attention.head_count_kv", {uint32_t(s.n_head_kv)});
  m.add("qwen3.attention.key_length", {uint32_t(s.head_dim)});
  m.add("qwen3.attention.value_length", {uint32_t(s.head_dim)});
  m.add("qwen3.rope.freq_base", {1000000.0f});
  m.add("qwen3.attention.layer_norm_rms_epsilon", {1e-6f});

  // gpt2 BPE: single characters, their merges "t 0".."t 9", then unique filler names; the last
  // token is the control token <|endoftext|> (bos and eos).
  std::vector<std::string> tokens{"t"};
  for (char c = '0'; c <= '9'; ++c) tokens.emplace_back(1, c);
  std::vector<std::string> merges;
  for (char c = '0'; c <= '9'; ++c) merges.push_back(std::string("t ") + c);
  for (int i = 0; static_cast<int>(tokens.size()) < s.n_vocab - 1; ++i)
    tokens.push_back(std::string("t").append(std::to_string(i)));  // not "t" + ...: g++ 12 -Wrestrict
  tokens.emplace_back("<|endoftext|>");
  std::vector<int32_t> token_type(tokens.size(), 1);
  token_type.back() = 3;
  m.add("tokenizer.ggml.model", {std::string("gpt2")});
  m.add("tokenizer.ggml.pre", {std::string("qwen2")});
  m.add("tokenizer.ggml.tokens", strings(tokens));
  m.add("tokenizer.ggml.token_type", {GgufArray{token_type}});
  m.add("tokenizer.ggml.merges", strings(merges));
  m.add("tokenizer.ggml.bos_token_id", {uint32_t(tokens.size() - 1)});
  m.add("tokenizer.ggml.eos_token_id", {uint32_t(tokens.size() - 1)});
  m.add("tokenizer.ggml.add_bos_token", {false});

  Weights gen(s.seed);
  const int32_t wt = s.weight_type;
  auto add = [&](const std::string& name, std::vector<int64_t> ne, std::shared_ptr<std::vector<std::byte>> bytes,
                 int32_t type) { w.add_tensor(name, type, ne, *bytes, bytes); };
  auto add_matrix = [&](const std::string& name, int64_t cols, int64_t rows) {
    add(name, {cols, rows}, gen.matrix(cols, rows, wt), wt);
  };
  auto add_norm = [&](const std::string& name, int64_t n) { add(name, {n}, gen.norm(n), 0); };

  const int64_t q_dim = int64_t(s.n_head) * s.head_dim, kv_dim = int64_t(s.n_head_kv) * s.head_dim;
  add_matrix("token_embd.weight", s.n_embd, s.n_vocab);
  add_norm("output_norm.weight", s.n_embd);
  if (!s.tied_embeddings) add_matrix("output.weight", s.n_embd, s.n_vocab);
  for (int i = 0; i < s.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add_norm(p + "attn_norm.weight", s.n_embd);
    add_matrix(p + "attn_q.weight", s.n_embd, q_dim);
    add_matrix(p + "attn_k.weight", s.n_embd, kv_dim);
    add_matrix(p + "attn_v.weight", s.n_embd, kv_dim);
    add_matrix(p + "attn_output.weight", q_dim, s.n_embd);
    add_norm(p + "attn_q_norm.weight", s.head_dim);
    add_norm(p + "attn_k_norm.weight", s.head_dim);
    add_norm(p + "ffn_norm.weight", s.n_embd);
    add_matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
    add_matrix(p + "ffn_up.weight", s.n_embd, s.n_ff);
    add_matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
  }
  w.write(path);
}

}  // namespace tempra::testing
