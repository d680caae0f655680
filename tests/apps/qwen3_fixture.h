// tests/apps/qwen3_fixture.h: a tiny, valid Qwen3-architecture GGUF with seeded random weights.
//
// Contract: write_qwen3_model(path, spec) writes a model that llama.cpp's qwen3 loader accepts
// (llama_model_load_from_file, llama_model_quantize): the hyperparameters qwen3 reads, a
// minimal gpt2-style BPE tokenizer whose token count equals the embedding's rows, and every
// tensor create_tensor asks for (llm::synth_tensors, the synthesizer's table). Weights are 2-D
// matrices in spec.weight_type (f32, f16 or bf16) with per-row scales drawn from `seed`, so
// the k-quant encoders see rows of very different magnitude; norms are f32 near 1.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace tempra::testing {

struct Qwen3Spec {
  int n_layer = 2;
  int n_embd = 256;
  int n_ff = 512;
  int n_head = 4;
  int n_head_kv = 2;
  int head_dim = 64;
  int n_vocab = 512;
  bool tied_embeddings = false;  // no output.weight: the output reuses token_embd
  int32_t weight_type = 0;       // ggml type of the 2-D weights: 0 f32, 1 f16, 30 bf16
  uint32_t seed = 1234;
};

void write_qwen3_model(const std::filesystem::path& path, const Qwen3Spec& spec);

// The model of `spec` as dir/name.gguf (written on the first call), or, with a file type
// (`tempra quantize`'s: "Q8_0", "Q4_K_M", ...), quantized from it by quantize_model into
// dir/name_TYPE.gguf (also written once): what the tests over several weight types share.
std::filesystem::path qwen3_model_file(const std::filesystem::path& dir, const std::string& name, const Qwen3Spec& spec,
                                       const std::string& file_type = "");

}  // namespace tempra::testing
