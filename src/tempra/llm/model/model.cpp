// tempra/llm/model/model.cpp: see model.h. What every architecture shares: the batch checks,
// the one-sequence convenience forward, and the loader that picks the architecture by name.
#include "tempra/llm/model/model.h"

#include <algorithm>
#include <string>

#include "tempra/core/error.h"
#include "tempra/llm/model/architectures.h"

namespace tempra::llm {

void check_batch(std::string_view op, const ModelInfo& info, std::span<const SequenceRows> batch,
                 const ForwardBuffers& buffers) {
  check(!batch.empty(), op, "forward needs at least one sequence");
  int64_t rows = 0, logit_rows = 0;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SequenceRows& seq = batch[s];
    check(seq.cache != nullptr, op, "sequence ", s, " has no KV cache");
    const auto n = static_cast<int64_t>(seq.tokens.size());
    check(n > 0, op, "sequence ", s, " has no tokens; forward needs at least one");
    check(seq.logit_rows >= 0 && seq.logit_rows <= n, op, "sequence ", s, " asks for the logits of ", seq.logit_rows,
          " of its ", n, " tokens");
    const KvCacheShape& shape = seq.cache->shape();
    check(shape.same_layers(info.cache), op, "sequence ", s, "'s KV cache has ", shape.n_layer, " layers of ",
          shape.n_head_kv, " x ", shape.head_dim, " and ", shape.n_recurrent, " recurrent of ", shape.recurrent_floats,
          ", the model needs ", info.cache.n_layer, " of ", info.cache.n_head_kv, " x ", info.cache.head_dim,
          info.cache.values_in_keys ? " holding the values in the keys" : "", " and ", info.cache.n_recurrent,
          " recurrent of ", info.cache.recurrent_floats);
    const int64_t kv_len = seq.cache->size() + n;
    check(kv_len <= seq.cache->capacity(), op, "forward of ", n, " tokens after ", seq.cache->size(),
          " overflows the KV cache capacity ", seq.cache->capacity(), " (sequence ", s, ")");
    check(kv_len <= buffers.kv_capacity, op, "sequence ", s, " reaches ", kv_len,
          " positions, the buffers hold sequences of ", buffers.kv_capacity);
    for (size_t j = 0; j < s; ++j)
      check(batch[j].cache != seq.cache, op, "sequences ", j, " and ", s, " share one KV cache");
    for (int32_t id : seq.tokens)
      check(id >= 0 && id < info.n_vocab, op, "token id ", id, " out of range [0, ", info.n_vocab, ") (sequence ",
            s, ")");
    rows += n;
    logit_rows += seq.logit_rows;
  }
  check(rows <= buffers.tokens && logit_rows <= buffers.logit_rows, op, "a batch of ", rows, " rows with ",
        logit_rows, " rows of logits does not fit buffers for ", buffers.tokens, " rows and ", buffers.logit_rows,
        " rows of logits");
}

Array Model::forward(ExecContext& ctx, std::span<const int32_t> tokens, KvCache& cache) const {
  const auto n = static_cast<int64_t>(tokens.size());
  check(n > 0, info().architecture, "forward needs at least one token");
  check(cache.size() + n <= cache.capacity(), info().architecture, "forward of ", n, " tokens after ", cache.size(),
        " overflows the KV cache capacity ", cache.capacity());
  const auto buffers = make_buffers(ctx, n, n, cache.size() + n);
  const SequenceRows seq{&cache, tokens, n};
  forward(ctx, std::span<const SequenceRows>(&seq, 1), *buffers);
  return buffers->logits;
}

KvCache Model::make_cache(ExecContext& ctx, int64_t capacity, KvCacheType type, int64_t max_rows) const {
  KvCacheShape shape = info().cache;
  shape.capacity = capacity > 0 ? capacity : info().context_length;
  shape.window_rows = max_rows > 0 ? std::max(max_rows, kMinWindowRows) : 0;
  return KvCache(ctx, shape, type);
}

std::unique_ptr<Model> load_model(const io::GgufModel& gguf, const LoadOptions& options) {
  const std::string file = gguf.shards().front().name();
  const auto* arch = gguf.metadata().find("general.architecture");
  check(arch != nullptr && arch->is<std::string>(), "load_model", file,
        ": metadata key 'general.architecture' is missing");
  const std::string& name = std::get<std::string>(arch->value);
  if (const Architecture* a = find_architecture(name)) {
    std::unique_ptr<Model> model = a->load(gguf, options);
    if (options.moe_stream && model->expert_cache() == nullptr)
      fail("load_model", file, ": --moe-stream: architecture '", name, "' has no routed experts to stream");
    return model;
  }
  fail("load_model", file, ": architecture '", name, "' is not supported (supported: ", supported_architectures(),
       ")");
}

std::unique_ptr<Model> load_model(const std::filesystem::path& path, const LoadOptions& options) {
  return load_model(io::GgufModel::open(path, options.tensor_mapping()), options);
}

}  // namespace tempra::llm
