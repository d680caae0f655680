// tests/apps/qwen3_fixture.cpp: see qwen3_fixture.h. The hyperparameter keys and the tensor
// table are the synthesizer's (llm/model/synth.h: llama.cpp's qwen3 hparams loader and
// src/models/qwen3.cpp); the tokenizer keys follow llama-vocab.cpp's gpt2 branch.
#include "apps/qwen3_fixture.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "quantize.h"
#include "tempra/core/half.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/llm/model/synth.h"

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
  // The synthesizer's table of hyperparameters and tensors, for this spec's shape.
  const llm::SynthSpec shape{.n_layer = s.n_layer,
                                  .n_embd = s.n_embd,
                                  .n_ff = s.n_ff,
                                  .n_head = s.n_head,
                                  .n_head_kv = s.n_head_kv,
                                  .head_dim = s.head_dim,
                                  .n_vocab = s.n_vocab,
                                  .tied_embeddings = s.tied_embeddings,
                                  .context_length = 256};
  llm::add_synth_hparams(m, shape);

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
  for (const llm::SynthTensor& t : llm::synth_tensors(shape)) {
    const bool norm = t.kind == llm::SynthTensor::Kind::norm;
    const int32_t type = norm ? 0 : s.weight_type;
    std::shared_ptr<std::vector<std::byte>> bytes = norm ? gen.norm(t.ne[0]) : gen.matrix(t.ne[0], t.ne[1], type);
    w.add_tensor(t.name, type, t.ne, *bytes, bytes);
  }
  w.write(path);
}

std::filesystem::path qwen3_model_file(const std::filesystem::path& dir, const std::string& name, const Qwen3Spec& spec,
                                       const std::string& file_type) {
  const std::filesystem::path source = dir / (name + ".gguf");
  if (!std::filesystem::exists(source)) write_qwen3_model(source, spec);
  if (file_type.empty()) return source;
  const std::filesystem::path out = dir / (name + "_" + file_type + ".gguf");
  if (!std::filesystem::exists(out)) app::quantize_model(source, out, *app::find_file_type(file_type));
  return out;
}

}  // namespace tempra::testing
