// apps/tempra/merge.h: `tempra merge -m BASE.gguf --lora ADAPTER.gguf -o OUT.gguf [--type TYPE]`,
// a LoRA adapter folded into its base model (llama.cpp's llama-export-lora).
//
// Contract: the adapter is read and checked against the base first (train/adapter.h: a corrupt
// or mismatched file exits 1 naming what is wrong, and nothing is written). Every adapted
// weight becomes W + (alpha / rank) B A, computed in f32 from W decoded; the output keeps the
// base's metadata and tensor order, and stores each merged weight in the base tensor's own type
// (f32, f16, bf16, or its block format, through tempra's encoders, which are byte-exact with
// ggml's). With --type, the merged model is then quantized as `tempra quantize TYPE` does
// (quantize.h; from a temporary file next to OUT, removed after). OUT is written atomically.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"

#include "args.h"
#include "quantize.h"

namespace tempra::app {

struct MergeSummary {
  size_t tensors = 0;  // in the output
  size_t merged = 0;   // weights an adapter changed
};

// Writes `model` to `output` with the tensors named in `replaced` (f32 values of their shapes)
// in place of the file's, as merge does: each in the tensor's own type, or the whole model
// quantized to `type` when it is not null. Returns how many tensors were replaced.
size_t write_model_replacing(const io::GgufModel& model, const std::map<std::string, Array>& replaced,
                             const std::filesystem::path& output, const FileType* type = nullptr);

// `type`: null keeps each tensor's type.
MergeSummary merge_model(const std::filesystem::path& base, const std::filesystem::path& lora,
                         const std::filesystem::path& output, const FileType* type = nullptr);

cli::Command merge_command();
int run_merge(const cli::Args& args);

}  // namespace tempra::app
