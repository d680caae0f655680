// apps/tempra/quantize.h: `tempra quantize IN.gguf OUT.gguf TYPE`, after llama.cpp's
// llama_model_quantize (src/llama-quant.cpp at the oracle's commit 5b4ebc5).
//
// Contract: for a model in f32, f16 or bf16 and no importance matrix, the output has the
// same tensors in the same order with the same types and byte-identical data as
// llama_model_quantize(IN, OUT, {ftype = TYPE, defaults otherwise}); the metadata is the
// input's with general.quantization_version (2) and general.file_type (TYPE's LLAMA_FTYPE_*)
// moved to the end, and split.* removed. Checked against llama.cpp itself by
// tests/apps/quantize_oracle_test.cpp.
//
// What is replicated (llama-quant.cpp): which tensors are quantized at all (2-D or 3-D tensors
// whose name ends in "weight", never norms, positional or token-type embeddings, and the
// other tiny tensors llama.cpp lists); the per-tensor type of the *_S / *_M / *_L mixes by
// tensor role and layer (attn_v / ffn_down use_more_bits, the output tensor's Q6_K, tied
// embeddings quantized like the output); the fallbacks when a row length is not a multiple of
// the block (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, 256-block types -> Q4_0, IQ4_XS ->
// IQ4_NL, then F16); `pure` (TYPE everywhere, fallbacks still apply); the tensor order of
// llama.cpp's loader (non-layer tensors first, then by layer number, by name within each).
// Rows are encoded with tempra's reference encoders (quant/formats.h), which ggml's
// ggml_quantize_chunk uses when no importance matrix is given; rows are independent, so the
// bytes do not depend on the thread count.
//
// Mixtures of experts as llama.cpp: 3-D expert tensors encoded row by row, an FFN tensor's layer
// read from its name (a name outside the layers refused), and the extra bits of 8-expert models:
// attn_v (with attn_qkv and attn_kv_b) and attn_k to Q8_0, attn_output to Q5_K under Q2_K,
// Q3_K_S, Q3_K_M, Q4_K_S, Q4_K_M, IQ4_NL and IQ4_XS (and under Q3_K_L it keeps the default).
//
// Not replicated, refused with a message: falcon and 80-layer llama (their own rules), re-quantizing an already
// quantized tensor to another type (llama.cpp refuses it by default too), types that need an
// importance matrix or have no encoder here (IQ1/IQ2/IQ3, Q2_K_S, MXFP4, NVFP4).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "tempra/io/gguf_model.h"

namespace tempra::app {

// A llama.cpp file type (enum llama_ftype) that `tempra quantize` produces.
struct FileType {
  std::string_view name;  // as llama-quantize spells it: "Q4_K_M"
  int32_t ftype;          // LLAMA_FTYPE_MOSTLY_Q4_K_M == 15, written to general.file_type
  int32_t default_type;   // the ggml type of most weights: GGML_TYPE_Q4_K == 12
};

std::span<const FileType> file_types();
// Case-insensitive; also llama-quantize's aliases Q3_K, Q4_K, Q5_K (the _M mixes). Null if unknown.
const FileType* find_file_type(std::string_view name);

// One output tensor: where it comes from, its ggml type before and after.
struct TensorPlan {
  io::GgufModel::Location source;
  std::string name;
  int32_t from_type = 0;
  int32_t to_type = 0;
  bool fallback = false;  // the mix's type did not fit the row length
};

// The output's tensors in llama.cpp's order with their target types. Throws tempra::Error for
// an input this module does not replicate (see above).
std::vector<TensorPlan> plan_quantization(const io::GgufModel& model, const FileType& type, bool pure);

struct QuantizeOptions {
  bool pure = false;
  int threads = 0;  // 0: ThreadPool::default_thread_count()
  // Called before each tensor is written: (index from 0, count, the tensor's plan).
  std::function<void(size_t, size_t, const TensorPlan&)> on_tensor = {};
};

struct QuantizeSummary {
  size_t tensors = 0;
  size_t converted = 0;  // tensors whose type changed
  size_t fallbacks = 0;
  uint64_t bytes_in = 0;   // tensor data, before
  uint64_t bytes_out = 0;  // tensor data, after
};

// Reads `input` (a single file or the first shard), writes `output` atomically.
QuantizeSummary quantize_model(const std::filesystem::path& input, const std::filesystem::path& output,
                               const FileType& type, const QuantizeOptions& options = {});

// The subcommand: positionals input, output, type; --pure, -t/--threads, --progress.
int run_quantize(const cli::Args& args);
// "Q4_0, Q4_1, ..., F32": for the help text.
std::string file_type_names();

}  // namespace tempra::app
