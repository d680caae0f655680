// tempra/llm/model/synth.cpp: see synth.h. Tensor names and shapes come from each architecture's
// table (which follows llama.cpp's src/models/ARCH.cpp) and the hparams from its loader; the vocab
// follows convert_hf_to_gguf.py (get_vocab_base, _set_vocab_gpt2) and gguf-py's SpecialVocab.
#include "tempra/llm/model/synth.h"

#include "tempra/llm/model/architectures.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tempra/backend/kernels.h"
#include "tempra/core/error.h"
#include "tempra/core/half.h"
#include "tempra/core/rng.h"
#include "tempra/core/thread_pool.h"
#include "tempra/io/atomic_write.h"
#include "tempra/io/ggml_types.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;
using io::GgufArray;

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;  // llama_token_type

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  check(bool(in), "synth", "cannot read ", path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("synth", path.string(), ": ", e.what());
  }
}

bool looks_special(const std::string& text) {  // convert_hf_to_gguf.py, does_token_look_special
  const auto wrapped = [&](std::string_view open, std::string_view close) {
    return text.size() >= open.size() + close.size() && text.starts_with(open) && text.ends_with(close);
  };
  return text == "<pad>" || text == "<mask>" || text == "<2mass>" || text == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

int64_t max_token_id(const nlohmann::json& tokenizer) {
  int64_t top = -1;
  for (const auto& [text, id] : tokenizer.at("model").at("vocab").items()) top = std::max(top, id.get<int64_t>());
  for (const auto& added : tokenizer.at("added_tokens")) top = std::max(top, added.at("id").get<int64_t>());
  return top;
}

// A special token of tokenizer_config.json: a string, or {"content": ...} in older files.
std::optional<std::string> config_token(const nlohmann::json& config, const char* key) {
  if (!config.contains(key) || config.at(key).is_null()) return std::nullopt;
  const auto& v = config.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v.at("content").get<std::string>();
  return std::nullopt;
}

// GPT-2's bytes_to_unicode: the byte-level alphabet, as UTF-8, indexed by byte.
std::vector<std::string> byte_alphabet() {
  std::vector<std::string> out(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const int cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {  // every code point here is below 0x800: two UTF-8 bytes
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    out[static_cast<size_t>(b)] = s;
  }
  return out;
}

void add_synthetic_tokenizer_metadata(io::GgufMetadata& m, int64_t n_vocab) {
  const std::vector<std::string> bytes = byte_alphabet();
  std::vector<std::string> tokens(bytes);
  std::vector<std::string> merges;
  const int64_t n_regular = n_vocab - 3;  // the last three are the special tokens
  // Bigrams of (space or a letter) + letter, so text tokenizes into more than single bytes.
  std::vector<std::string> firsts{bytes[' ']};
  for (char c = 'a'; c <= 'z'; ++c) firsts.push_back(bytes[static_cast<unsigned char>(c)]);
  for (const auto& first : firsts)
    for (char c = 'a'; c <= 'z'; ++c) {
      if (static_cast<int64_t>(tokens.size()) >= n_regular) break;
      const std::string& second = bytes[static_cast<unsigned char>(c)];
      tokens.push_back(first + second);
      merges.push_back(first + " " + second);
    }
  const auto n_named = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> types(static_cast<size_t>(n_vocab), kNormal);
  for (int64_t i = n_named; i < n_regular; ++i) {
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    types[static_cast<size_t>(i)] = kUnused;
  }
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    types[tokens.size()] = kControl;
    tokens.emplace_back(special);
  }
  const auto endoftext = static_cast<uint32_t>(n_vocab - 3), im_end = static_cast<uint32_t>(n_vocab - 1);
  m.add("tokenizer.ggml.model", {std::string("gpt2")});
  m.add("tokenizer.ggml.pre", {std::string("qwen2")});
  m.add("tokenizer.ggml.tokens", {GgufArray{std::move(tokens)}});
  m.add("tokenizer.ggml.token_type", {GgufArray{std::move(types)}});
  m.add("tokenizer.ggml.merges", {GgufArray{std::move(merges)}});
  m.add("tokenizer.ggml.eos_token_id", {im_end});
  m.add("tokenizer.ggml.padding_token_id", {endoftext});
  m.add("tokenizer.ggml.bos_token_id", {endoftext});
  m.add("tokenizer.ggml.add_bos_token", {false});
}

// How one tensor's values are drawn.
struct TensorPlan {
  std::string name;
  std::vector<int64_t> ne;  // ggml order, innermost first
  int32_t ggml_type = 0;
  float mean = 0.0f, std = 1.0f;
  std::vector<float> values = {};  // a fixed tensor's (f32), else empty: drawn
  uint64_t numel() const {
    uint64_t n = 1;
    for (int64_t e : ne) n *= static_cast<uint64_t>(e);
    return n;
  }
  uint64_t nbytes() const { return numel() * (ggml_type == 0 ? 4u : 2u); }
};

std::vector<TensorPlan> plan_tensors(const SynthSpec& s, int32_t weight_type) {
  std::vector<TensorPlan> plans;
  for (SynthTensor& t : synth_tensors(s)) {
    switch (t.kind) {
      case SynthTensor::Kind::embedding:
        plans.push_back({std::move(t.name), std::move(t.ne), weight_type, 0.0f, 0.02f});
        break;
      case SynthTensor::Kind::f32_matrix:
      case SynthTensor::Kind::matrix: {
        const auto scale = static_cast<float>(1.0 / std::sqrt(t.ne[0]));  // 1/sqrt(row length)
        const int32_t type = t.kind == SynthTensor::Kind::f32_matrix ? 0 : weight_type;
        plans.push_back({std::move(t.name), std::move(t.ne), type, 0.0f, scale});
        break;
      }
      case SynthTensor::Kind::norm:
        plans.push_back({std::move(t.name), std::move(t.ne), 0, 1.0f, 0.05f});
        break;
      case SynthTensor::Kind::fixed:
        plans.push_back({std::move(t.name), std::move(t.ne), 0, 0.0f, 0.0f, std::move(t.values)});
        break;
    }
  }
  return plans;
}

// values[j] = mean + std * normal(stream, first + j) for j < count.
void normal_fill(ThreadPool& pool, const TensorPlan& t, uint64_t stream, int64_t first, int64_t count, float* values) {
  pool.parallel_for(count, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) values[j] = t.mean + t.std * CounterRng::normal(stream, uint64_t(first + j));
  });
}

// Tensor k's bytes: element i is mean + std * normal(stream k, i), rounded to its type.
void fill_tensor(ThreadPool& pool, const TensorPlan& t, uint64_t seed, uint64_t k, std::byte* out) {
  const uint64_t stream = splitmix64_mix(seed ^ (0x5157454e33ull + k * CounterRng::kGolden));  // "QWEN3" + k
  const auto n = static_cast<int64_t>(t.numel());
  if (!t.values.empty()) {
    std::memcpy(out, t.values.data(), t.values.size() * sizeof(float));
    return;
  }
  if (t.ggml_type == 0) {
    normal_fill(pool, t, stream, 0, n, reinterpret_cast<float*>(out));
    return;
  }
  // F16 and BF16: a chunk at a time in f32, then the native backend's rounding, vectorized and
  // bit-equal to tempra/core/half.h's.
  const Kernels& kernels = kernels_for(Backend::native);
  constexpr int64_t kChunk = int64_t{1} << 22;
  std::vector<float> values(size_t(std::min(n, kChunk)));
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t count = std::min(kChunk, n - begin);
    normal_fill(pool, t, stream, begin, count, values.data());
    if (t.ggml_type == 1)
      kernels.f32_to_f16(values.data(), reinterpret_cast<f16_t*>(out) + begin, count, pool);
    else
      kernels.f32_to_bf16(values.data(), reinterpret_cast<bf16_t*>(out) + begin, count, pool);
  }
}

void store(const TensorPlan& t, std::byte* out, uint64_t i, float v) {
  if (t.ggml_type == 0) {
    std::memcpy(out + i * 4, &v, 4);
  } else {
    const uint16_t h = t.ggml_type == 1 ? f32_to_f16_bits(v) : f32_to_bf16_bits(v);
    std::memcpy(out + i * 2, &h, 2);
  }
}

// A scripted model's tensors (SynthSpec::scripts): the layers' outputs zero, one-hot
// embeddings for the script's tokens, an output matrix from each to its successor.
void script_tensor(const SynthSpec& s, const TensorPlan& t, std::byte* out) {
  const bool layer_output = t.name.ends_with("attn_output.weight") || t.name.ends_with("ffn_down.weight");
  const bool embedding = t.name == "token_embd.weight", head = t.name == "output.weight";
  if (t.name == "output_norm.weight") {
    for (uint64_t i = 0; i < t.numel(); ++i) store(t, out, i, 1.0f);
    return;
  }
  if (!layer_output && !embedding && !head) return;
  std::memset(out, 0, t.nbytes());
  if (layer_output) return;
  std::map<int32_t, int64_t> slot;  // a distinct script token -> its embedding dimension
  for (const auto& chain : s.scripts)
    for (int32_t id : chain) slot.emplace(id, int64_t(slot.size()));
  // token_embd [n_vocab, n_embd] and output [n_vocab, n_embd], row-major (ggml ne = {n_embd, n_vocab}).
  if (embedding)
    for (const auto& [id, dim] : slot) store(t, out, uint64_t(id) * uint64_t(s.n_embd) + uint64_t(dim), 1.0f);
  if (head)
    for (const auto& chain : s.scripts)
      for (size_t i = 0; i < chain.size(); ++i) {
        const int32_t next = i + 1 < chain.size() ? chain[i + 1] : chain[i];
        store(t, out, uint64_t(next) * uint64_t(s.n_embd) + uint64_t(slot.at(chain[i])), 4.0f);
      }
}

}  // namespace

SynthSpec SynthSpec::tiny() {
  return {.n_layer = 2,
          .n_embd = 256,
          .n_ff = 768,
          .n_head = 4,
          .n_head_kv = 2,
          .head_dim = 128,
          .n_vocab = 151936,
          .tied_embeddings = true,
          .context_length = 4096};
}

SynthSpec SynthSpec::qwen3_0_6b() {
  return {.n_layer = 28,
          .n_embd = 1024,
          .n_ff = 3072,
          .n_head = 16,
          .n_head_kv = 8,
          .head_dim = 128,
          .n_vocab = 151936,
          .tied_embeddings = true,
          .context_length = 40960};
}

SynthSpec SynthSpec::llama_tiny() {
  return {.n_layer = 2,
          .n_embd = 256,
          .n_ff = 768,
          .n_head = 4,
          .n_head_kv = 2,
          .head_dim = 64,
          .n_vocab = 128256,
          .tied_embeddings = false,
          .rope_freq_base = 500000.0,
          .rms_norm_eps = 1e-5,
          .context_length = 4096,
          .architecture = "llama",
          .llama3_rope_scaling = true};
}

SynthSpec SynthSpec::llama_1b() {
  return {.n_layer = 16,
          .n_embd = 2048,
          .n_ff = 8192,
          .n_head = 32,
          .n_head_kv = 8,
          .head_dim = 64,
          .n_vocab = 128256,
          .tied_embeddings = true,
          .rope_freq_base = 500000.0,
          .rms_norm_eps = 1e-5,
          .context_length = 131072,
          .architecture = "llama",
          .llama3_rope_scaling = true};
}

SynthSpec SynthSpec::gemma3_tiny() {
  return {.n_layer = 2,
          .n_embd = 256,
          .n_ff = 768,
          .n_head = 4,
          .n_head_kv = 1,
          .head_dim = 64,
          .n_vocab = 32000,
          .tied_embeddings = true,
          .rope_freq_base = 1e6,
          .rms_norm_eps = 1e-6,
          .context_length = 4096,
          .architecture = "gemma3",
          .sliding_window = 16,
          .sliding_window_pattern = 2};
}

SynthSpec SynthSpec::gemma3_1b() {
  return {.n_layer = 26,
          .n_embd = 1152,
          .n_ff = 6912,
          .n_head = 4,
          .n_head_kv = 1,
          .head_dim = 256,
          .n_vocab = 262144,
          .tied_embeddings = true,
          .rope_freq_base = 1e6,
          .rms_norm_eps = 1e-6,
          .context_length = 32768,
          .architecture = "gemma3",
          .sliding_window = 512,
          .sliding_window_pattern = 6};
}

SynthSpec SynthSpec::qwen3moe_tiny() {
  return {.n_layer = 2,
          .n_embd = 256,
          .n_ff = 768,
          .n_head = 4,
          .n_head_kv = 2,
          .head_dim = 64,
          .n_vocab = 1000,
          .tied_embeddings = false,
          .context_length = 4096,
          .architecture = "qwen3moe",
          .n_expert = 8,
          .n_expert_used = 2,
          .n_ff_exp = 128};
}

SynthSpec SynthSpec::qwen3moe_a3b_8l() {
  return {.n_layer = 8,
          .n_embd = 2048,
          .n_ff = 6144,
          .n_head = 32,
          .n_head_kv = 4,
          .head_dim = 128,
          .n_vocab = 151936,
          .tied_embeddings = false,
          .context_length = 40960,
          .architecture = "qwen3moe",
          .n_expert = 128,
          .n_expert_used = 8,
          .n_ff_exp = 768};
}

SynthSpec SynthSpec::deepseek2_tiny() {
  return {.n_layer = 3,
          .n_embd = 256,
          .n_ff = 512,
          .n_head = 4,
          .n_head_kv = 1,
          .head_dim = 128 + 32,
          .n_vocab = 1000,
          .tied_embeddings = false,
          .rope_freq_base = 10000.0,
          .context_length = 4096,
          .architecture = "deepseek2",
          .n_expert = 8,
          .n_expert_used = 2,
          .n_ff_exp = 128,
          .n_expert_shared = 1,
          .n_layer_dense_lead = 1,
          .kv_lora_rank = 128,
          .qk_nope_dim = 64,
          .qk_rope_dim = 32,
          .v_head_dim = 64,
          .yarn_factor = 40,
          .yarn_original_context = 512,
          .yarn_mscale_all_dim = 0.707};
}

SynthSpec SynthSpec::deepseek2_lite_4l() {
  return {.n_layer = 4,
          .n_embd = 2048,
          .n_ff = 10944,
          .n_head = 16,
          .n_head_kv = 1,
          .head_dim = 512 + 64,
          .n_vocab = 102400,
          .tied_embeddings = false,
          .rope_freq_base = 10000.0,
          .context_length = 163840,
          .architecture = "deepseek2",
          .n_expert = 64,
          .n_expert_used = 6,
          .n_ff_exp = 1408,
          .n_expert_shared = 2,
          .n_layer_dense_lead = 1,
          .kv_lora_rank = 512,
          .qk_nope_dim = 128,
          .qk_rope_dim = 64,
          .v_head_dim = 128,
          .yarn_factor = 40,
          .yarn_original_context = 4096,
          .yarn_mscale_all_dim = 0.707};
}

SynthSpec SynthSpec::qwen35_tiny() {
  return {.n_layer = 4,
          .n_embd = 256,
          .n_ff = 768,
          .n_head = 4,
          .n_head_kv = 2,
          .head_dim = 64,
          .n_vocab = 1000,
          .tied_embeddings = false,
          .rope_freq_base = 1e7,
          .context_length = 4096,
          .architecture = "qwen35",
          .rope_dim = 16,
          .ssm_conv_kernel = 4,
          .ssm_state_size = 32,
          .ssm_group_count = 2,
          .ssm_time_step_rank = 4};
}

SynthSpec SynthSpec::qwen35_0_8b() {
  return {.n_layer = 24,
          .n_embd = 1024,
          .n_ff = 3584,
          .n_head = 8,
          .n_head_kv = 2,
          .head_dim = 256,
          .n_vocab = 248320,
          .tied_embeddings = true,
          .rope_freq_base = 1e7,
          .context_length = 262144,
          .architecture = "qwen35",
          .rope_dim = 64,
          .ssm_conv_kernel = 4,
          .ssm_state_size = 128,
          .ssm_group_count = 16,
          .ssm_time_step_rank = 16};
}

SynthSpec SynthSpec::preset(std::string_view architecture, std::string_view name) {
  if (architecture == "qwen3" && name == "tiny") return tiny();
  if (architecture == "qwen3" && (name == "0.6b" || name == "0.6B")) return qwen3_0_6b();
  if (architecture == "llama" && name == "tiny") return llama_tiny();
  if (architecture == "llama" && (name == "1b" || name == "1B")) return llama_1b();
  if (architecture == "qwen3moe" && name == "tiny") return qwen3moe_tiny();
  if (architecture == "qwen3moe" && (name == "a3b-8l" || name == "A3B-8L")) return qwen3moe_a3b_8l();
  if (architecture == "deepseek2" && name == "tiny") return deepseek2_tiny();
  if (architecture == "deepseek2" && (name == "lite-4l" || name == "LITE-4L")) return deepseek2_lite_4l();
  if (architecture == "qwen35" && name == "tiny") return qwen35_tiny();
  if (architecture == "qwen35" && (name == "0.8b" || name == "0.8B")) return qwen35_0_8b();
  if (architecture == "gemma3" && name == "tiny") return gemma3_tiny();
  if (architecture == "gemma3" && (name == "1b" || name == "1B")) return gemma3_1b();
  check(find_architecture(architecture) != nullptr, "synth", "architecture '", architecture,
        "' is not supported (supported: ", supported_architectures(), ")");
  const char* presets = architecture == "qwen3"       ? "tiny, 0.6b"
                        : architecture == "qwen3moe"  ? "tiny, a3b-8l"
                        : architecture == "deepseek2" ? "tiny, lite-4l"
                        : architecture == "qwen35"    ? "tiny, 0.8b"
                                                      : "tiny, 1b";
  fail("synth", "no preset '", name, "' for ", architecture, " (", presets, ")");
}

SynthTable::SynthTable(const SynthSpec& s) {
  tensors_.push_back({"token_embd.weight", {s.n_embd, s.n_vocab}, SynthTensor::Kind::embedding});
  norm("output_norm", s.n_embd);
  if (!s.tied_embeddings) matrix("output", s.n_embd, s.n_vocab);
}

void SynthTable::matrix(const std::string& name, int64_t cols, int64_t rows) {
  tensors_.push_back({prefix_ + name + ".weight", {cols, rows}, SynthTensor::Kind::matrix});
}

void SynthTable::norm(const std::string& name, int64_t n) {
  tensors_.push_back({prefix_ + name + ".weight", {n}, SynthTensor::Kind::norm});
}

void SynthTable::bias(const std::string& name, int64_t n) {
  tensors_.push_back({prefix_ + name + ".bias", {n}, SynthTensor::Kind::norm});
}

void SynthTable::experts(const std::string& name, int64_t cols, int64_t rows, int64_t n_expert) {
  tensors_.push_back({prefix_ + name + ".weight", {cols, rows, n_expert}, SynthTensor::Kind::matrix});
}

void SynthTable::f32_matrix(const std::string& name, int64_t cols, int64_t rows) {
  tensors_.push_back({prefix_ + name + ".weight", {cols, rows}, SynthTensor::Kind::f32_matrix});
}

void SynthTable::fixed(const std::string& name, std::vector<float> values, const std::string& suffix) {
  const auto n = static_cast<int64_t>(values.size());
  tensors_.push_back({prefix_ + name + suffix, {n}, SynthTensor::Kind::fixed, std::move(values)});
}

std::vector<SynthTensor> synth_tensors(const SynthSpec& s) {
  const Architecture* arch = find_architecture(s.architecture);
  check(arch != nullptr, "synth", "architecture '", s.architecture, "' is not supported (supported: ",
        supported_architectures(), ")");
  return arch->synth_tensors(s);
}

std::vector<float> llama3_rope_factors(int64_t head_dim, double freq_base, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_context) {
  const double pi = 3.14159265358979323846;
  const double low_freq_wavelen = original_context / low_freq_factor;
  const double high_freq_wavelen = original_context / high_freq_factor;
  std::vector<float> factors;
  for (int64_t i = 0; i < head_dim; i += 2) {
    const double freq = 1.0 / std::pow(freq_base, double(i) / double(head_dim));
    const double wavelen = 2 * pi / freq;
    if (wavelen < high_freq_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_freq_wavelen) {
      factors.push_back(float(factor));
    } else {
      const double smooth =
          (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      factors.push_back(float(1.0 / ((1 - smooth) / factor + smooth)));
    }
  }
  return factors;
}

void add_synth_hparams(io::GgufMetadata& m, const SynthSpec& s) {
  const std::string a = s.architecture + ".";
  m.add(a + "block_count", {uint32_t(s.n_layer)});
  m.add(a + "context_length", {uint32_t(s.context_length)});
  m.add(a + "embedding_length", {uint32_t(s.n_embd)});
  m.add(a + "feed_forward_length", {uint32_t(s.n_ff)});
  m.add(a + "attention.head_count", {uint32_t(s.n_head)});
  m.add(a + "attention.head_count_kv", {uint32_t(s.n_head_kv)});
  m.add(a + "rope.freq_base", {static_cast<float>(s.rope_freq_base)});
  m.add(a + "attention.layer_norm_rms_epsilon", {static_cast<float>(s.rms_norm_eps)});
  m.add(a + "attention.key_length", {uint32_t(s.head_dim)});
  // Latent attention: the value is the cache row's latent (llama.cpp's converter).
  m.add(a + "attention.value_length", {uint32_t(s.kv_lora_rank > 0 ? s.kv_lora_rank : s.head_dim)});
  if (s.yarn_factor > 0) {
    m.add(a + "rope.scaling.type", {std::string("yarn")});
    m.add(a + "rope.scaling.factor", {static_cast<float>(s.yarn_factor)});
    m.add(a + "rope.scaling.original_context_length", {uint32_t(s.yarn_original_context)});
  }
  const Architecture* arch = find_architecture(s.architecture);
  if (arch != nullptr && arch->synth_hparams != nullptr) arch->synth_hparams(m, s);
}

int64_t gguf_vocab_size(const fs::path& vocab_gguf) {
  const io::GgufFile file = io::GgufFile::open(vocab_gguf);
  const auto& tokens = file.metadata().get<GgufArray>("tokenizer.ggml.tokens");
  return int64_t(tokens.size());
}

void copy_tokenizer_metadata(io::GgufMetadata& m, const fs::path& vocab_gguf) {
  const io::GgufFile file = io::GgufFile::open(vocab_gguf);
  for (const auto& [key, value] : file.metadata().entries())
    if (key.starts_with("tokenizer.")) m.add(key, value);
}

int64_t hf_tokenizer_size(const fs::path& tokenizer_dir) {
  return max_token_id(read_json(tokenizer_dir / "tokenizer.json")) + 1;
}

void add_qwen3_tokenizer_metadata(io::GgufMetadata& m, const fs::path& tokenizer_dir, int64_t n_vocab) {
  const fs::path json_path = tokenizer_dir / "tokenizer.json";
  const nlohmann::json json = read_json(json_path);
  const nlohmann::json config = read_json(tokenizer_dir / "tokenizer_config.json");
  const int64_t size = max_token_id(json) + 1;
  check(n_vocab >= size, "synth", "vocab size ", n_vocab, " is smaller than the tokenizer's ", size, " (",
        json_path.string(), ")");
  check(n_vocab <= (int64_t{1} << 31) - 1, "synth", "vocab size ", n_vocab, " does not fit a token id");

  const auto n = static_cast<size_t>(n_vocab);
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, kUnused);
  std::vector<bool> present(n, false);
  for (const auto& [text, id] : json.at("model").at("vocab").items()) {
    const auto i = id.get<size_t>();
    tokens[i] = text;
    types[i] = kNormal;
    present[i] = true;
  }
  for (const auto& added : json.at("added_tokens")) {
    const auto i = added.at("id").get<size_t>();
    tokens[i] = added.at("content").get<std::string>();
    types[i] = added.at("special").get<bool>() || looks_special(tokens[i]) ? kControl : kUserDefined;
    present[i] = true;
  }
  for (size_t i = 0; i < n; ++i)
    if (!present[i]) tokens[i] = "[PAD" + std::to_string(i) + "]";

  std::vector<std::string> merges;
  merges.reserve(json.at("model").at("merges").size());
  for (const auto& merge : json.at("model").at("merges")) {
    if (merge.is_string()) {
      merges.push_back(merge.get<std::string>());
    } else {  // newer tokenizers store [left, right]
      merges.push_back(merge.at(0).get<std::string>() + " " + merge.at(1).get<std::string>());
    }
  }

  const auto id_of = [&](const std::optional<std::string>& text) -> std::optional<uint32_t> {
    if (!text) return std::nullopt;
    for (size_t i = 0; i < n; ++i)
      if (present[i] && tokens[i] == *text) return static_cast<uint32_t>(i);
    return std::nullopt;
  };
  const std::optional<uint32_t> eos = id_of(config_token(config, "eos_token"));
  const std::optional<uint32_t> pad = id_of(config_token(config, "pad_token"));
  std::optional<uint32_t> bos;
  if (fs::exists(tokenizer_dir / "config.json")) {
    const nlohmann::json model_config = read_json(tokenizer_dir / "config.json");
    if (model_config.contains("bos_token_id") && model_config.at("bos_token_id").is_number_unsigned())
      bos = model_config.at("bos_token_id").get<uint32_t>();
  }
  if (!bos) bos = id_of(config_token(config, "bos_token"));
  if (!bos) bos = pad;

  m.add("tokenizer.ggml.model", {std::string("gpt2")});
  m.add("tokenizer.ggml.pre", {std::string("qwen2")});
  m.add("tokenizer.ggml.tokens", {GgufArray{std::move(tokens)}});
  m.add("tokenizer.ggml.token_type", {GgufArray{std::move(types)}});
  m.add("tokenizer.ggml.merges", {GgufArray{std::move(merges)}});
  if (eos) m.add("tokenizer.ggml.eos_token_id", {*eos});
  if (pad) m.add("tokenizer.ggml.padding_token_id", {*pad});
  if (bos) m.add("tokenizer.ggml.bos_token_id", {*bos});
  if (config.contains("add_bos_token") && config.at("add_bos_token").is_boolean())
    m.add("tokenizer.ggml.add_bos_token", {config.at("add_bos_token").get<bool>()});
  if (config.contains("chat_template") && config.at("chat_template").is_string())
    m.add("tokenizer.chat_template", {config.at("chat_template").get<std::string>()});
}

void validate(const SynthSpec& s) {
  const auto positive = [](int64_t v, const char* name) {
    check(v > 0, "synth", name, " must be positive, got ", v);
  };
  check(find_architecture(s.architecture) != nullptr, "synth", "architecture '", s.architecture,
        "' is not supported (supported: ", supported_architectures(), ")");
  check(!s.llama3_rope_scaling || s.architecture == "llama", "synth", "Llama 3's rope scaling is for llama, not ",
        s.architecture);
  const bool moe = s.architecture == "qwen3moe" || s.architecture == "deepseek2";
  check(moe == (s.n_expert > 0), "synth", "experts (n_expert ", s.n_expert,
        ") are for qwen3moe and deepseek2, which need them");
  check((s.architecture == "deepseek2") == (s.kv_lora_rank > 0), "synth", "latent attention (kv_lora_rank ",
        s.kv_lora_rank, ") is for deepseek2, which needs it");
  if (s.kv_lora_rank > 0) {
    check(s.qk_nope_dim > 0 && s.qk_rope_dim > 0 && s.qk_rope_dim % 2 == 0 && s.v_head_dim > 0 && s.q_lora_rank >= 0,
          "synth", "latent attention needs positive qk_nope_dim, v_head_dim and an even qk_rope_dim");
    check(s.head_dim == s.kv_lora_rank + s.qk_rope_dim && s.n_head_kv == 1, "synth", "latent attention caches rows of ",
          "kv_lora_rank + qk_rope_dim = ", s.kv_lora_rank + s.qk_rope_dim, " in 1 KV head: head_dim ", s.head_dim,
          " and n_head_kv ", s.n_head_kv, " must say so");
    check(s.n_layer_dense_lead >= 0 && s.n_layer_dense_lead < s.n_layer && s.n_expert_shared >= 0, "synth",
          "n_layer_dense_lead ", s.n_layer_dense_lead, " must leave a layer of experts");
  }
  const bool hybrid = s.architecture == "qwen35";
  check(hybrid == (s.ssm_conv_kernel > 0), "synth", "gated delta nets (ssm_conv_kernel ", s.ssm_conv_kernel,
        ") are for qwen35, which needs them");
  if (hybrid)
    check(s.ssm_conv_kernel >= 2 && s.ssm_state_size > 0 && s.ssm_group_count > 0 && s.ssm_time_step_rank > 0 &&
              s.ssm_time_step_rank % s.ssm_group_count == 0 && s.full_attention_interval >= 1 &&
              s.full_attention_interval <= s.n_layer,
          "synth", "gated delta nets need at least 2 taps, positive state size and heads (value heads a multiple of ",
          "the groups) and an attention layer every full_attention_interval ", s.full_attention_interval,
          " within the ", s.n_layer, " layers");
  check(s.rope_dim >= 0 && s.rope_dim <= s.head_dim && s.rope_dim % 2 == 0 && (s.rope_dim == 0 || hybrid), "synth",
        "rope_dim ", s.rope_dim, " must be even and at most head_dim ", s.head_dim, " (qwen35 only)");
  check(s.yarn_factor == 0 || (s.yarn_factor >= 1 && s.yarn_original_context > 0), "synth",
        "YaRN needs a factor of at least 1 and an original context");
  check(s.n_expert == 0 || (s.n_expert_used >= 1 && s.n_expert_used <= s.n_expert && s.n_ff_exp >= 1), "synth",
        "n_expert_used ", s.n_expert_used, " must be in [1, n_expert ", s.n_expert, "] and n_ff_exp positive");
  check(s.sliding_window >= 0 && s.sliding_window_pattern >= 1 && s.rope_freq_base_swa > 0 &&
            s.final_logit_softcapping >= 0,
        "synth", "sliding_window, its pattern, rope_freq_base_swa and final_logit_softcapping must be positive");
  check(s.vocab_gguf.empty() || s.tokenizer_dir.empty(), "synth", "a vocab GGUF and a tokenizer folder are exclusive");
  positive(s.n_layer, "n_layer");
  positive(s.n_embd, "n_embd");
  positive(s.n_ff, "n_ff");
  positive(s.n_head, "n_head");
  positive(s.n_head_kv, "n_head_kv");
  positive(s.head_dim, "head_dim");
  positive(s.n_vocab, "n_vocab");
  positive(s.context_length, "context_length");
  // GGUF stores the hyperparameters as u32.
  for (int64_t v : {s.n_embd, s.n_ff, s.n_head, s.n_head_kv, s.head_dim, s.context_length})
    check(v <= int64_t{0xffffffff}, "synth", "a hyperparameter of ", v, " does not fit GGUF's u32");
  check(s.n_head % s.n_head_kv == 0, "synth", "n_head ", s.n_head, " is not a multiple of n_head_kv ",
        s.n_head_kv);
  check(s.head_dim % 2 == 0, "synth", "head_dim ", s.head_dim, " is odd; rope rotates pairs");
  check(s.weight_type == DType::f32 || s.weight_type == DType::f16 || s.weight_type == DType::bf16, "synth",
        "weight type must be f32, f16 or bf16, got ", s.weight_type);
  check(s.rope_freq_base > 0 && s.rms_norm_eps > 0, "synth", "rope_freq_base and rms_norm_eps must be positive");
  if (!s.scripts.empty()) {
    check(!s.tied_embeddings, "synth", "a scripted model needs untied embeddings (its output is not its input)");
    std::map<int32_t, int32_t> successor;
    for (const std::vector<int32_t>& chain : s.scripts) {
      check(!chain.empty(), "synth", "a script chain is empty");
      for (size_t i = 0; i < chain.size(); ++i) {
        const int32_t t = chain[i];
        check(t >= 0 && t < s.n_vocab, "synth", "script token ", t, " is outside the vocab [0, ", s.n_vocab, ")");
        const int32_t next = i + 1 < chain.size() ? chain[i + 1] : t;
        const auto [it, inserted] = successor.emplace(t, next);
        check(inserted || it->second == next, "synth", "script token ", t, " is followed by ", it->second,
              " and by ", next, ": a scripted model's next token depends on the current one only");
      }
    }
    check(int64_t(successor.size()) <= s.n_embd, "synth", "the scripts have ", successor.size(),
          " distinct tokens, more than n_embd ", s.n_embd);
  }
  if (!s.vocab_gguf.empty()) {
    const int64_t size = gguf_vocab_size(s.vocab_gguf);
    check(s.n_vocab == size, "synth", "n_vocab ", s.n_vocab, " differs from the ", size, " tokens of ",
          s.vocab_gguf.string());
  } else if (s.tokenizer_dir.empty()) {
    check(s.n_vocab >= 259, "synth", "n_vocab ", s.n_vocab,
          " is too small for the synthetic vocab (256 bytes + 3 special tokens)");
    check(s.n_vocab <= (int64_t{1} << 31) - 1, "synth", "n_vocab ", s.n_vocab, " does not fit a token id");
  } else {
    check(fs::is_directory(s.tokenizer_dir), "synth", "tokenizer folder ", s.tokenizer_dir.string(),
          " does not exist");
  }
}

void write_synthetic_model(const fs::path& out, const SynthSpec& s) {
  validate(s);
  const int32_t weight_type = *io::ggml_type_for_dtype(s.weight_type);

  io::GgufWriter w;
  auto& m = w.metadata();
  m.add("general.architecture", {s.architecture});
  m.add("general.type", {std::string("model")});
  m.add("general.name", {"tempra-synthetic-" + s.architecture});
  m.add("general.file_type", {uint32_t(weight_type == 0 ? 0 : weight_type == 1 ? 1 : 32)});  // LLAMA_FTYPE_*
  m.add("general.quantization_version", {uint32_t{2}});
  add_synth_hparams(m, s);
  if (!s.vocab_gguf.empty())
    copy_tokenizer_metadata(m, s.vocab_gguf);
  else if (s.tokenizer_dir.empty())
    add_synthetic_tokenizer_metadata(m, s.n_vocab);
  else
    add_qwen3_tokenizer_metadata(m, s.tokenizer_dir, s.n_vocab);

  // Pass 1: the file with every tensor's data zero, from one calloc'd block as large as the
  // largest tensor (its pages stay the kernel's shared zero page: reading them costs no memory).
  const std::vector<TensorPlan> plans = plan_tensors(s, weight_type);
  uint64_t largest = 0;
  for (const auto& t : plans) largest = std::max(largest, t.nbytes());
  std::shared_ptr<std::byte> zeros(static_cast<std::byte*>(std::calloc(largest, 1)), std::free);
  check(zeros != nullptr, "synth", "cannot allocate ", largest, " bytes");
  for (const auto& t : plans) w.add_tensor(t.name, t.ggml_type, t.ne, {zeros.get(), t.nbytes()}, zeros);

  io::write_atomically(out, "synth", [&](std::FILE* f, const std::string& temp) {
    w.write(f, temp);
    if (std::fflush(f) != 0) fail("synth", "writing ", temp, " failed: ", std::strerror(errno));
    uint64_t data_offset = 0;
    std::vector<uint64_t> offsets;
    {
      const io::GgufFile file = io::GgufFile::open(temp);
      data_offset = file.data_offset();
      for (const auto& info : file.tensors()) offsets.push_back(info.offset);
    }
    zeros.reset();

    // Pass 2: each tensor's values, generated and written one at a time.
    ThreadPool pool(ThreadPool::default_thread_count());
    std::vector<std::byte> buffer;
    for (size_t k = 0; k < plans.size(); ++k) {
      buffer.resize(plans[k].nbytes());
      fill_tensor(pool, plans[k], s.seed, k, buffer.data());
      if (!s.scripts.empty()) script_tensor(s, plans[k], buffer.data());
      if (::fseeko(f, static_cast<off_t>(data_offset + offsets[k]), SEEK_SET) != 0 ||
          std::fwrite(buffer.data(), 1, buffer.size(), f) != buffer.size())
        fail("synth", "writing ", plans[k].name, " to ", temp, " failed: ", std::strerror(errno));
    }
  });
}

}  // namespace tempra::llm
