// tempra/llm/model/synth.h: synthesized models of every supported architecture (random weights,
// real or synthetic vocab), which is how each family is tested without downloads.
//
// Contract: write_synthetic_model(out, spec) writes a GGUF of general.architecture =
// spec.architecture that both tempra (load_model) and llama.cpp load: the hyperparameters
// llama.cpp's loader reads for it, every tensor its src/models/ARCH.cpp creates (with its shape;
// no output.weight when the embeddings are tied), as the architecture's synth_tensors table
// lists them (qwen3.h, llama.h, gemma3.h, qwen3moe.h, deepseek2.h), weight matrices in spec.weight_type (f32, f16 or bf16) and f32
// norms. The weights are seeded and deterministic: element i of tensor k is a pure function of
// (spec.seed, k, i) (core/rng.h), whatever the thread count. Scales keep activations at a sane
// magnitude through the layers: matrices N(0, 1/sqrt(row length)), the token embedding
// N(0, 0.02), norms 1 + N(0, 0.05); fixed tensors (Llama 3's rope_freqs) hold their values.
//
// The vocab, one of: spec.vocab_gguf, a GGUF whose tokenizer.* keys are copied as they are (the
// vocab-only files llama.cpp ships, models/ggml-vocab-*.gguf; n_vocab becomes its token count);
// spec.tokenizer_dir, the Hugging Face Qwen tokenizer in it (tokenizer.json,
// tokenizer_config.json) exactly as llama.cpp's convert_hf_to_gguf.py writes it for Qwen3
// (add_qwen3_tokenizer_metadata below; spec.n_vocab must be at least the tokenizer's size and
// the rows past it are "[PAD<id>]" UNUSED tokens, as in Qwen3's own 151936-row embedding); or
// neither, a synthetic byte-level BPE vocab of n_vocab tokens (at least 259): the 256 byte
// tokens, bigram merges of space/letters, [PAD] fillers, and <|endoftext|> (bos, pad),
// <|im_start|>, <|im_end|> (eos) as the last three.
//
// Writing: the tensor data streams to disk one tensor at a time (only the largest tensor is
// ever in memory), into a temporary file flushed and renamed into place at the end
// (io/atomic_write.h). Invalid specs throw tempra::Error naming the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tempra/core/dtype.h"
#include "tempra/io/gguf_value.h"

namespace tempra::llm {

struct SynthSpec {
  int n_layer = 0;
  int64_t n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_vocab = 0;
  bool tied_embeddings = true;
  double rope_freq_base = 1e6, rms_norm_eps = 1e-6;
  int64_t context_length = 0;
  DType weight_type = DType::f16;  // of the 2-D weights: f32, f16 or bf16
  uint64_t seed = 0;
  std::filesystem::path tokenizer_dir = {};  // tokenizer.json + tokenizer_config.json; empty: synthetic vocab
  // A scripted model (for API tests, whose clients need a model that answers something known):
  // in each chain, the model's most likely next token after chain[i] is chain[i + 1] (and after
  // the last token, itself), by a margin no sampler setting undoes (logit 4 sqrt(n_embd)
  // against 0), so a prompt ending in a chain's token continues that chain. Every layer's
  // attn_output and ffn_down are zero, so the residual stream is the current token's embedding:
  // a one-hot row per distinct chain token, which the untied output matrix maps to its
  // successor. Needs untied embeddings, at most n_embd distinct tokens, and one successor per
  // token across all chains (validate() names a token followed by two different ones).
  std::vector<std::vector<int32_t>> scripts = {};
  std::string architecture = "qwen3";  // general.architecture: one of supported_architectures()
  // Llama 3's rope scaling (llama only): a rope_freqs.weight of Llama 3.1's factors (factor 8,
  // low/high frequency factors 1 and 4, original context 8192), as convert_hf_to_gguf.py writes.
  bool llama3_rope_scaling = false;
  std::filesystem::path vocab_gguf = {};  // a GGUF whose tokenizer.* keys to copy; empty: see above
  // Gemma 3's local layers (gemma3 only): every layer but each pattern-th slides over the last
  // sliding_window positions (0: none) with rope base rope_freq_base_swa.
  int64_t sliding_window = 0;
  int sliding_window_pattern = 6;
  double rope_freq_base_swa = 10000.0;
  double final_logit_softcapping = 0;  // logits = cap * tanh(logits / cap); 0: none
  // Mixtures of experts (qwen3moe, deepseek2): experts per layer, used per token, each expert's
  // width; deepseek2's shared experts, the leading layers with a dense FFN (n_ff) and the
  // routing weights' scale.
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  int64_t n_expert_shared = 0;
  int n_layer_dense_lead = 0;
  double expert_weights_scale = 1.0;
  bool expert_weights_norm = false;
  bool sigmoid_gating = false;  // deepseek2: sigmoid router with a selection bias per layer (V3's)
  int64_t n_expert_groups = 0, n_group_used = 0;  // group-limited routing (deepseek2; 0: none)
  // Multi-head latent attention (deepseek2): the query's bottleneck (0: one matrix, as the
  // "lite" models), the compressed KV width, each head's unrotated and rotated query/key dims
  // and its value dim. head_dim must be kv_lora_rank + qk_rope_dim (the cache row) and
  // n_head_kv 1, as llama.cpp's converter writes them.
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;
  // YaRN rope scaling (0: none): factor, the original training context and (deepseek2)
  // mscale_all_dim, written as rope.scaling.yarn_log_multiplier = 0.1 mscale_all_dim.
  double yarn_factor = 0;
  int64_t yarn_original_context = 0;
  double yarn_mscale_all_dim = 0;
  // The leading dims of each head that rope rotates (0: all of head_dim; Qwen3.5 rotates a
  // quarter).
  int64_t rope_dim = 0;
  // Gated delta nets (qwen35): the short convolution's taps, each head's dims, the query/key
  // heads and the value heads; every full_attention_interval-th layer attends, the others are
  // gated delta nets.
  int64_t ssm_conv_kernel = 0, ssm_state_size = 0, ssm_group_count = 0, ssm_time_step_rank = 0;
  int full_attention_interval = 4;

  // A small body on Qwen3's real vocab size: 2 layers, hidden 256, FFN 768, 2 query heads per
  // KV head (4:2) of head dim 128 (Qwen3's), 151936 rows, tied, context 4096.
  static SynthSpec tiny();
  // Qwen3-0.6B's shape: 28 layers, hidden 1024, 16 query / 8 KV heads of dim 128, FFN 3072,
  // vocab 151936, tied, theta 1e6, eps 1e-6, context 40960.
  static SynthSpec qwen3_0_6b();
  // A small Llama 3 body: 2 layers, hidden 256, FFN 768, 4 query / 2 KV heads of dim 64,
  // theta 500000, eps 1e-5, Llama 3's rope scaling, untied, context 4096, vocab 128256
  // (Llama 3's; with a synthetic vocab unless vocab_gguf is set).
  static SynthSpec llama_tiny();
  // Llama 3.2 1B's shape: 16 layers, hidden 2048, FFN 8192, 32 query / 8 KV heads of dim 64,
  // vocab 128256, tied, theta 500000, eps 1e-5, rope scaling (factor 32 in the real model; the
  // synthesizer writes 3.1's factor 8), context 131072.
  static SynthSpec llama_1b();
  // A small Gemma 3 body: 2 layers (the first local with a window of 16, the second global),
  // hidden 256, FFN 768, 4 query heads / 1 KV head of dim 64, theta 1e6 (local 1e4), tied,
  // context 4096, vocab 32000.
  static SynthSpec gemma3_tiny();
  // Gemma 3 1B's shape: 26 layers (5 local of window 512 to 1 global), hidden 1152, FFN 6912,
  // 4 query heads / 1 KV head of dim 256, vocab 262144, tied, context 32768.
  static SynthSpec gemma3_1b();
  // A small Qwen3 MoE body: 2 layers, hidden 256, 8 experts of width 128 (2 used per token),
  // Qwen3's attention (4 query / 2 KV heads of dim 64), untied, context 4096, vocab 1000.
  static SynthSpec qwen3moe_tiny();
  // Qwen3-30B-A3B scaled to fit a small machine: its 48 layers cut to 8, hidden 2048, 32/4 heads
  // of dim 128, 128 experts of width 768 with 8 used per token, vocab 151936, untied.
  static SynthSpec qwen3moe_a3b_8l();
  // A small DeepSeek-V2 body: 3 layers (the first dense, FFN 512), hidden 256, 4 heads of latent
  // attention (KV latent 128, query/key 64 + 32 rotated, value 64; no query bottleneck), 8
  // routed experts of width 128 (2 used) plus 1 shared, YaRN (factor 40 over 512 positions,
  // mscale_all_dim 0.707), untied, context 4096, vocab 1000.
  static SynthSpec deepseek2_tiny();
  // DeepSeek-V2-Lite's widths with its 27 layers cut to 4 (the first dense): hidden 2048, 16
  // heads (latent 512, query/key 128 + 64, value 128), 64 experts of width 1408 (6 used) plus
  // 2 shared, dense FFN 10944, YaRN factor 40 over 4096, vocab 102400, untied.
  static SynthSpec deepseek2_lite_4l();
  // A small Qwen3.5 body: 4 layers (3 gated delta nets, then attention), hidden 256, FFN 768;
  // delta nets of 2 query/key heads and 4 value heads of dim 32 with 4 taps; gated attention of
  // 4 query / 2 KV heads of dim 64, a quarter of it rotated; theta 1e7, untied, context 4096,
  // vocab 1000.
  static SynthSpec qwen35_tiny();
  // Qwen3.5-0.8B's shape: 24 layers (every 4th attends), hidden 1024, FFN 3584; delta nets of
  // 16 query/key and 16 value heads of dim 128 with 4 taps; attention of 8 query / 2 KV heads of
  // dim 256, 64 dims rotated; vocab 248320, tied, theta 1e7, context 262144.
  static SynthSpec qwen35_0_8b();
  // The preset `name` (tiny; 0.6b for qwen3; 1b for llama and gemma3; a3b-8l for qwen3moe;
  // lite-4l for deepseek2; 0.8b for qwen35) of
  // `architecture`; throws naming the presets of the architecture otherwise.
  static SynthSpec preset(std::string_view architecture, std::string_view name);
};

// One tensor of a synthesized GGUF: its name, its shape in ggml order (innermost first) and what
// it holds (norms are f32; the embedding and the matrices are in spec.weight_type, f32_matrix
// ones in f32 (what llama.cpp keeps f32, as ssm_conv1d); fixed ones are f32 `values`).
struct SynthTensor {
  enum class Kind { embedding, matrix, f32_matrix, norm, fixed };
  std::string name;
  std::vector<int64_t> ne;
  Kind kind = Kind::matrix;
  std::vector<float> values = {};  // Kind::fixed
};

// What the architecture tables are written with: token_embd, output_norm and output (unless
// tied) first, then each layer's tensors under "blk.<i>.".
class SynthTable {
 public:
  explicit SynthTable(const SynthSpec& spec);
  void layer(int i) { prefix_ = "blk." + std::to_string(i) + "."; }
  // A weight [rows, cols] (ggml ne {cols, rows}) named prefix + name + ".weight".
  void matrix(const std::string& name, int64_t cols, int64_t rows);
  void norm(const std::string& name, int64_t n);
  // An f32 vector named prefix + name + ".bias", of the norms' values.
  void bias(const std::string& name, int64_t n);
  // A weight [rows, cols] as matrix() names it, always f32.
  void f32_matrix(const std::string& name, int64_t cols, int64_t rows);
  // An f32 vector of `values` named prefix + name + suffix.
  void fixed(const std::string& name, std::vector<float> values, const std::string& suffix = ".weight");
  // n_expert stacked weights [n_expert, rows, cols] (ggml ne {cols, rows, n_expert}).
  void experts(const std::string& name, int64_t cols, int64_t rows, int64_t n_expert);
  std::vector<SynthTensor> take() { return std::move(tensors_); }

 private:
  std::vector<SynthTensor> tensors_;
  std::string prefix_;
};

// Every tensor llama.cpp's src/models/ARCH.cpp creates for spec's shape, in the order the
// synthesizer writes them: the architecture's table (Qwen3Model::synth_tensors, ...).
std::vector<SynthTensor> synth_tensors(const SynthSpec& spec);

// The ARCH.* hyperparameters llama.cpp's loader reads (block count, context length, widths,
// head counts, rope base, norm epsilon, key/value lengths), from spec.
void add_synth_hparams(io::GgufMetadata& metadata, const SynthSpec& spec);

// Llama 3.1's rope frequency factors for head_dim / 2 pairs (convert_hf_to_gguf.py,
// LlamaModel.generate_extra_tensors): 1 for short wavelengths, `factor` for long ones, smooth
// between.
std::vector<float> llama3_rope_factors(int64_t head_dim, double freq_base, double factor = 8.0,
                                       double low_freq_factor = 1.0, double high_freq_factor = 4.0,
                                       double original_context = 8192.0);

// Throws tempra::Error naming the first invalid field (a supported architecture, positive
// sizes, n_head a multiple of n_head_kv, even head_dim, weight type, vocab large enough for the
// tokenizer, a script that is a function of its previous token).
void validate(const SynthSpec& spec);

void write_synthetic_model(const std::filesystem::path& out, const SynthSpec& spec);

// The tokenizer.* keys of a Hugging Face Qwen tokenizer folder as convert_hf_to_gguf.py writes
// them (get_vocab_base, _set_vocab_gpt2, gguf.SpecialVocab): model gpt2, pre qwen2, n_vocab
// tokens (ids absent from tokenizer.json are "[PAD<id>]" UNUSED; added tokens CONTROL when
// special or looking special, USER_DEFINED otherwise; the rest NORMAL), token types, merges
// "a b", eos/pad from tokenizer_config.json, bos from config.json's bos_token_id when the
// folder has one, else tokenizer_config's bos_token, else the pad token (Qwen3's config.json
// says 151643, its pad), add_bos_token, and chat_template. Throws when n_vocab is smaller than
// the tokenizer (the largest id + 1).
void add_qwen3_tokenizer_metadata(io::GgufMetadata& metadata, const std::filesystem::path& tokenizer_dir,
                                  int64_t n_vocab);
// The tokenizer.* keys of a GGUF (a vocab-only file of llama.cpp's, a model), as they are.
void copy_tokenizer_metadata(io::GgufMetadata& metadata, const std::filesystem::path& vocab_gguf);
// Its token count (tokenizer.ggml.tokens).
int64_t gguf_vocab_size(const std::filesystem::path& vocab_gguf);
// The tokenizer's size: its largest token id + 1 (151669 for Qwen3).
int64_t hf_tokenizer_size(const std::filesystem::path& tokenizer_dir);

}  // namespace tempra::llm
