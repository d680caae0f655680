// tempra/llm/model/qwen3_synth.h: synthesized Qwen3 models (random weights, real or synthetic vocab).
//
// Contract: write_synthetic_qwen3(out, spec) writes a GGUF of general.architecture = qwen3 that
// both tempra (llm::Qwen3Model) and llama.cpp load: the hyperparameters llama.cpp's qwen3 loader
// reads, every tensor src/models/qwen3.cpp creates (with its shape; no output.weight when the
// embeddings are tied), weight matrices in spec.weight_type (f32, f16 or bf16) and f32 norms.
// The weights are seeded and deterministic: element i of tensor k is a pure function of
// (spec.seed, k, i) (core/rng.h), whatever the thread count. Scales follow the advice,
// so activations keep a sane magnitude through the layers: matrices N(0, 1/sqrt(row length)),
// the token embedding N(0, 0.02), norms 1 + N(0, 0.05).
//
// The vocab: with spec.tokenizer_dir, the Hugging Face tokenizer in it (tokenizer.json,
// tokenizer_config.json) exactly as llama.cpp's convert_hf_to_gguf.py writes it for Qwen3
// (add_qwen3_tokenizer_metadata below); spec.n_vocab must be at least the tokenizer's size and
// the rows past it are "[PAD<id>]" UNUSED tokens, as in Qwen3's own 151936-row embedding.
// Without it, a synthetic byte-level BPE vocab of n_vocab tokens (at least 259): the 256 byte
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
#include <vector>

#include "tempra/core/dtype.h"
#include "tempra/io/gguf_value.h"

namespace tempra::llm {

struct SynthQwen3Spec {
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

  // A small body on Qwen3's real vocab size: 2 layers, hidden 256, FFN 768, 2 query heads per
  // KV head (4:2) of head dim 128 (Qwen3's), 151936 rows, tied, context 4096.
  static SynthQwen3Spec tiny();
  // Qwen3-0.6B's shape: 28 layers, hidden 1024, 16 query / 8 KV heads of dim 128, FFN 3072,
  // vocab 151936, tied, theta 1e6, eps 1e-6, context 40960.
  static SynthQwen3Spec qwen3_0_6b();
};

// One tensor of a Qwen3 GGUF: its name, its shape in ggml order (innermost first) and what it
// holds (norms are f32; the embedding and the matrices are in spec.weight_type).
struct Qwen3Tensor {
  enum class Kind { embedding, matrix, norm };
  std::string name;
  std::vector<int64_t> ne;
  Kind kind = Kind::matrix;
};

// Every tensor llama.cpp's src/models/qwen3.cpp creates for spec's shape, in the order the
// synthesizer writes them: token_embd, output_norm, output (only when not tied), then per layer
// attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm, ffn_norm, ffn_gate,
// ffn_up, ffn_down. Reads only the shape fields and tied_embeddings.
std::vector<Qwen3Tensor> qwen3_tensors(const SynthQwen3Spec& spec);

// The qwen3.* hyperparameters llama.cpp's qwen3 loader reads (block count, context length,
// widths, head counts, rope base, norm epsilon, key/value lengths), from spec.
void add_qwen3_hparams(io::GgufMetadata& metadata, const SynthQwen3Spec& spec);

// Throws tempra::Error naming the first invalid field (positive sizes, n_head a multiple of
// n_head_kv, even head_dim, weight type, vocab large enough for the tokenizer, a script that is
// a function of its previous token).
void validate(const SynthQwen3Spec& spec);

void write_synthetic_qwen3(const std::filesystem::path& out, const SynthQwen3Spec& spec);

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
// The tokenizer's size: its largest token id + 1 (151669 for Qwen3).
int64_t hf_tokenizer_size(const std::filesystem::path& tokenizer_dir);

}  // namespace tempra::llm
