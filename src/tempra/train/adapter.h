// tempra/train/adapter.h: LoRA adapters as files, and folded into a base model.
//
// The file is llama.cpp's LoRA adapter GGUF (src/llama-adapter.cpp, llama_adapter_lora_init):
// general.type = "adapter", general.architecture = the base's, adapter.type = "lora",
// adapter.lora.alpha (f32), and per adapted weight W = "blk.N.attn_q.weight" the pair
// "W.lora_a" (ggml ne {in, rank}: A [rank, in] row-major) and "W.lora_b" (ne {rank, out}: B
// [out, rank]). llama.cpp scales by alpha / rank (by 1 when alpha is 0), as LoraConfig::scale.
//
// Contract:
// - write_lora_gguf writes the adapter's pairs in f32, atomically (temporary file + rename).
// - read_lora_gguf reads such a file against the base it will adapt and checks everything before
//   it returns: the keys above, the architecture, every tensor a lora_a/lora_b pair of one rank
//   over a layer's q, k, v, o, gate, up or down weight that the base has, with that weight's
//   shape, in f32, f16 or bf16. A corrupt or mismatched file throws tempra::Error naming the file
//   and what is wrong, and nothing of the base is touched.
// - merge_lora replaces each adapted weight of `base` (io::GgufModel::replace_tensor) by the f32
//   matrix W + scale * B A, W decoded from its type: the model then loads (llm::load_model) with
//   the adapter folded in. merged_weight is that matrix.
#pragma once

#include <filesystem>
#include <string>

#include "tempra/core/array.h"
#include "tempra/core/exec_context.h"
#include "tempra/io/gguf_model.h"
#include "tempra/train/lora.h"

namespace tempra::train {

void write_lora_gguf(const std::filesystem::path& path, const LoraAdapter& adapter, const std::string& architecture);

LoraAdapter read_lora_gguf(ExecContext& ctx, const std::filesystem::path& path, const io::GgufModel& base);

Array merged_weight(ExecContext& ctx, const Array& w, const LoraPair& pair, double scale);

void merge_lora(ExecContext& ctx, io::GgufModel& base, const LoraAdapter& adapter);

}  // namespace tempra::train
