// apps/tempra/merge.cpp: see merge.h.
#include "merge.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "tempra/core/error.h"
#include "tempra/io/ggml_types.h"
#include "tempra/io/gguf_model.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/ops/ops.h"
#include "tempra/train/adapter.h"

namespace tempra::app {
namespace {

// The merged f32 weight in `dtype`, as a contiguous array GGUF stores.
Array encode_as(ExecContext& ctx, const Array& merged, DType dtype) {
  if (dtype.is_block_quantized()) return quantize(ctx, merged, dtype);
  return contiguous(ctx, cast(ctx, merged, dtype));
}

// Removes a file when it goes out of scope (the intermediate of --type).
struct RemoveOnExit {
  std::filesystem::path path;
  ~RemoveOnExit() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

}  // namespace

size_t write_model_replacing(const io::GgufModel& model, const std::map<std::string, Array>& replaced,
                             const std::filesystem::path& output, const FileType* type) {
  ExecContext ctx;
  io::GgufWriter writer;
  for (const auto& [key, value] : model.metadata().entries())
    if (!key.starts_with("split.")) writer.metadata().add(key, value);
  size_t changed = 0;
  for (const io::GgufModel::Location& at : model.tensors()) {
    const io::GgufTensorInfo& t = model.info(at);
    const auto it = replaced.find(t.name);
    if (it == replaced.end()) {
      const io::GgufFile& shard = model.shards()[at.shard];
      writer.add_tensor(t.name, t.ggml_type, std::span<const int64_t>(t.ne.data(), t.n_dims),
                        shard.tensor_bytes(at.index), nullptr);  // the model's mapping outlives write()
      continue;
    }
    // With --type the intermediate keeps new weights in f32 so that quantize encodes them once.
    writer.add_tensor(t.name, encode_as(ctx, it->second, type ? DType::f32 : t.dtype));
    ++changed;
  }
  if (type == nullptr) {
    writer.write(output);
    return changed;
  }
  const RemoveOnExit intermediate{output.string() + ".merged-f32.tmp-" + std::to_string(::getpid())};
  writer.write(intermediate.path);
  quantize_model(intermediate.path, output, *type);
  return changed;
}

MergeSummary merge_model(const std::filesystem::path& base, const std::filesystem::path& lora,
                         const std::filesystem::path& output, const FileType* type) {
  ExecContext ctx;
  const io::GgufModel model = io::GgufModel::open(base);
  const train::LoraAdapter adapter = train::read_lora_gguf(ctx, lora, model);
  std::map<std::string, Array> merged;  // by the base tensor's name
  for (int layer = 0; layer < adapter.n_layer(); ++layer)
    for (train::LoraTarget t : adapter.config().targets)
      if (adapter.has(layer, t)) {
        const std::string name = train::adapted_tensor(layer, t);
        merged.emplace(name, train::merged_weight(ctx, model.tensor(name), adapter.pair(layer, t),
                                                  adapter.config().scale()));
      }
  return {.tensors = model.tensors().size(), .merged = write_model_replacing(model, merged, output, type)};
}

cli::Command merge_command() {
  return {.name = "merge",
          .summary = "Fold a LoRA adapter GGUF into its base model and write the merged GGUF (any type).",
          .options = {{.spellings = {"-m", "--model"}, .kind = cli::Kind::String, .help = "the base .gguf model",
                       .required = true, .metavar = "FILE"},
                      {.spellings = {"--lora"}, .kind = cli::Kind::String, .help = "the LoRA adapter .gguf",
                       .required = true, .metavar = "FILE"},
                      {.spellings = {"-o", "--output"}, .kind = cli::Kind::String,
                       .help = "the merged .gguf to write (via a temporary file)", .required = true, .metavar = "FILE"},
                      {.spellings = {"--type"}, .kind = cli::Kind::String,
                       .help = "quantize the merged model to this type (" + file_type_names() +
                               "); default: each tensor keeps the base's type",
                       .metavar = "TYPE"}}};
}

int run_merge(const cli::Args& args) {
  const FileType* type = nullptr;
  if (args.given("--type")) {
    type = find_file_type(args.string("--type"));
    if (type == nullptr)
      throw cli::UsageError("unknown --type '" + args.string("--type") + "'; expected one of " + file_type_names());
  }
  const std::string out = args.string("--output");
  const MergeSummary s = merge_model(args.string("--model"), args.string("--lora"), out, type);
  std::printf("%s: %zu tensors, %zu merged with the adapter%s\n", out.c_str(), s.tensors, s.merged,
              type ? (", quantized to " + std::string(type->name)).c_str() : "");
  return 0;
}

}  // namespace tempra::app
